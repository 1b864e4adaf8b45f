//! The order model's ranks, degrees of freedom and F tests against an independent
//! computation: the full dummy-variable designs of METHOD.md ("Order effects") solved by
//! singular value decomposition (nalgebra), with the rank read from the singular values.

use analyze::model::{Cells, OrderEffects};
use analyze::reading::{self, Options};
use nalgebra::{DMatrix, DVector};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

/// Rank and residual sum of squares of `y` on the columns `x`: the rank from the singular
/// values (SVD), the residual from a Householder QR with column pivoting, `y` less its
/// projection on the first `rank` columns of `Q`.
fn svd_fit(x: &DMatrix<f64>, y: &[f64]) -> (usize, f64) {
    let singular = x.clone().singular_values();
    let tol = singular.max() * (x.nrows().max(x.ncols()) as f64) * f64::EPSILON * 16.0;
    let rank = singular.iter().filter(|&&s| s > tol).count();
    let q = x.clone().col_piv_qr().q();
    let yv = DVector::from_column_slice(y);
    let mut residual = yv.clone();
    for k in 0..rank {
        let column = q.column(k);
        residual -= column * column.dot(&yv);
    }
    (rank, residual.norm_squared())
}

/// The design's dummy columns: pass, arm, and optionally slot and previous arm.
fn design(cells: &Cells, slot: bool, prev: bool) -> DMatrix<f64> {
    let rows = cells.y.len();
    let mut columns: Vec<Vec<f64>> = Vec::new();
    let indicator =
        |f: &dyn Fn(usize) -> bool| (0..rows).map(|i| f64::from(u8::from(f(i)))).collect();
    for p in 0..cells.passes {
        columns.push(indicator(&|i| i / cells.arms == p));
    }
    for a in 0..cells.arms {
        columns.push(indicator(&|i| i % cells.arms == a));
    }
    if slot {
        for s in 0..cells.arms {
            columns.push(indicator(&|i| cells.slot[i] == s));
        }
    }
    if prev {
        for g in 0..=cells.arms {
            columns.push(indicator(&|i| cells.prev[i] == g));
        }
    }
    DMatrix::from_fn(rows, columns.len(), |r, c| columns[c][r])
}

/// (p, df1, df2) of the F test that drops the `drop` terms, by SVD.
fn independent_test(cells: &Cells, drop_slot: bool) -> Option<(f64, usize, usize)> {
    let (full_rank, full_rss) = svd_fit(&design(cells, true, true), &cells.y);
    let (reduced_rank, reduced_rss) = svd_fit(&design(cells, !drop_slot, drop_slot), &cells.y);
    let df1 = full_rank - reduced_rank;
    let df2 = cells.y.len() - full_rank;
    if df1 == 0 || df2 == 0 {
        return None;
    }
    let f = ((reduced_rss - full_rss) / df1 as f64) / (full_rss / df2 as f64);
    let p = FisherSnedecor::new(df1 as f64, df2 as f64)
        .unwrap()
        .sf(f.max(0.0));
    Some((p, df1, df2))
}

fn assert_agrees(cells: &Cells, e: &OrderEffects) {
    let position = independent_test(cells, true);
    let carry = independent_test(cells, false);
    assert_eq!(
        e.position_df,
        position.map(|t| [t.1, t.2]),
        "position df: {e:?}"
    );
    if let (Some(p), Some(t)) = (e.position_p, position) {
        assert!((p - t.0).abs() < 1e-9, "position p {p} against {}", t.0);
    }
    if e.carry_over_estimable {
        assert_eq!(
            e.carry_over_df,
            carry.map(|t| [t.1, t.2]),
            "carry-over df: {e:?}"
        );
        let (p, t) = (e.carry_over_p.unwrap(), carry.unwrap());
        assert!((p - t.0).abs() < 1e-9, "carry-over p {p} against {}", t.0);
    }
}

/// A rotate design: arm `(s + p) mod n` in slot `s` of pass `p`, `prev` the cell before.
fn rotate(arms: usize, passes: usize, seed: u64) -> Cells {
    let mut cells = Cells {
        passes,
        arms,
        y: vec![0.0; arms * passes],
        slot: vec![0; arms * passes],
        prev: vec![0; arms * passes],
    };
    let mut state = seed;
    let mut noise = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01
    };
    for p in 0..passes {
        for s in 0..arms {
            let a = (s + p) % arms;
            let prev = match (s, p) {
                (0, 0) => arms,
                (0, _) => (arms - 1 + p - 1) % arms,
                _ => (s - 1 + p) % arms,
            };
            cells.slot[p * arms + a] = s;
            cells.prev[p * arms + a] = prev;
            cells.y[p * arms + a] = 0.3 * p as f64 + 0.01 * a as f64 + noise();
        }
    }
    cells
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|a| format!("a{a}")).collect()
}

#[test]
fn a_rotate_ladder_with_fewer_passes_than_arms_has_the_ranks_of_its_design() {
    for (arms, passes) in [(17, 6), (9, 4), (6, 3), (5, 5), (3, 8)] {
        let cells = rotate(arms, passes, arms as u64 * 31 + passes as u64);
        let e = cells.order_effects(&names(arms), 0);
        assert_agrees(&cells, &e);
    }
}

#[test]
fn the_l2_sweep_mtp_ladder_tests_carry_over_on_5_and_59_degrees_of_freedom() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../raw/l2-sweep-mtp-h200_h200-133d95a.csv"
    );
    let options = Options {
        allow_defects: false,
        extras: analyze::analysis::ExtrasConfig {
            resamples: 0,
            seed: 1,
        },
        compare: Vec::new(),
        margin_pct: None,
    };
    let reading = reading::read(&[path.into()], &options).unwrap();
    let metric = &reading.reports[0].metrics[0];
    let e = &metric.order_effects;
    assert_eq!(e.carry_over_df, Some([5, 59]), "{e:?}");
    assert!((e.carry_over_p.unwrap() - 0.116).abs() < 0.001, "{e:?}");
    assert!((e.position_p.unwrap() - 0.391).abs() < 0.001, "{e:?}");
    let grid = &reading.grids[0][0];
    let cells = analyze::analysis::model_cells(
        grid,
        metric.better,
        reading.files[0].ladder.as_ref().unwrap().analysis_passes(),
    )
    .unwrap();
    assert_agrees(&cells, e);
}

#[test]
fn a_metric_with_no_residual_is_not_testable_and_never_flags() {
    // The same value in every cell of an arm: F would be 0/0.
    let mut cells = rotate(3, 9, 5);
    for (i, y) in cells.y.iter_mut().enumerate() {
        *y = (64.0 + (i % 3) as f64).ln();
    }
    let e = cells.order_effects(&names(3), 0);
    assert_eq!((e.position_p, e.carry_over_p), (None, None), "{e:?}");
    assert!(!e.position_testable && !e.carry_over_testable);
    assert!(!e.sensitive());
}

/// A Williams design of 3 arms over 12 passes in which the cell after arm 2 is 1 % slower.
fn williams_with_carry_over() -> Cells {
    let rows = [
        [0, 1, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
        [0, 2, 1],
        [1, 0, 2],
    ];
    let passes = 12;
    let mut cells = Cells {
        passes,
        arms: 3,
        y: vec![0.0; 36],
        slot: vec![0; 36],
        prev: vec![0; 36],
    };
    let mut last = 3;
    for p in 0..passes {
        for (s, &a) in rows[p % 6].iter().enumerate() {
            let noise = (((p * 7 + a * 3 + s * 5) % 11) as f64 - 5.0) * 1e-3;
            cells.slot[p * 3 + a] = s;
            cells.prev[p * 3 + a] = last;
            cells.y[p * 3 + a] = noise + if last == 2 { -0.01 } else { 0.0 } + 0.002 * a as f64;
            last = a;
        }
    }
    cells
}

#[test]
fn the_carry_over_adjusted_estimate_and_interval_are_the_full_models() {
    let cells = williams_with_carry_over();
    let e = cells.order_effects(&names(3), 0);
    assert_eq!(e.adjusted.len(), 2, "{e:?}");
    // The full model by least squares with a generalized inverse of XᵀX.
    let x = design(&cells, true, true);
    let xtx = x.transpose() * &x;
    let g = xtx.clone().pseudo_inverse(1e-10).unwrap();
    let y = DVector::from_column_slice(&cells.y);
    let beta = &g * x.transpose() * &y;
    let (rank, rss) = svd_fit(&x, &cells.y);
    let df = cells.y.len() - rank;
    let sigma2 = rss / df as f64;
    let t = ladder::stats::t975(df);
    for (k, adjusted) in e.adjusted.iter().enumerate() {
        let arm = k + 1;
        let mut c = DVector::zeros(x.ncols());
        c[cells.passes + arm] = 1.0;
        c[cells.passes] = -1.0;
        let estimate = c.dot(&beta);
        let half = t * (sigma2 * (c.transpose() * &g * &c)[0]).sqrt();
        let pct = |l: f64| 100.0 * l.exp_m1();
        assert!(
            (adjusted.estimate_pct - pct(estimate)).abs() < 1e-9,
            "{adjusted:?} against {}",
            pct(estimate)
        );
        assert!(
            (adjusted.ci_low_pct - pct(estimate - half)).abs() < 1e-9,
            "{adjusted:?}"
        );
        assert!(
            (adjusted.ci_high_pct - pct(estimate + half)).abs() < 1e-9,
            "{adjusted:?}"
        );
    }
}

#[test]
fn williams_separates_carry_over_and_removes_it() {
    let e = williams_with_carry_over().order_effects(&names(3), 0);
    assert!(e.carry_over_estimable);
    assert!(e.carry_over_p.unwrap() < 1e-6, "{e:?}");
    assert_eq!(e.adjusted.len(), 2);
    // The arms' true effects are 0.2 % and 0.4 %. Arm 2 never follows itself, so its naive
    // estimate carries half of the 1 % carry-over; the adjusted interval must not.
    for (k, a) in e.adjusted.iter().enumerate() {
        let truth = 100.0 * (0.002 * (k + 1) as f64).exp_m1();
        assert!((a.ci_low_pct..=a.ci_high_pct).contains(&truth), "{e:?}");
        assert!(a.ci_high_pct - a.ci_low_pct < 0.5, "{e:?}");
    }
}
