//! Variance components of the paired log ratios (METHOD.md "Variance components", after
//! Kalibera and Jones 2013): a one-way random-effects ANOVA of the per-repetition log ratios,
//! paired within the pass and by repetition number, with the passes as groups. It says how
//! much of a pass's variance lies between processes, which only more passes remove, and how
//! much between repetitions, which more repetitions a cell also remove.

use ladder::repetitions::REP_COLUMN;
use ladder::spec::MetricSpec;
use ladder::stats::log_ratio;
use ladder::Ladder;
use serde::Serialize;
use std::ops::Range;

/// The components of every metric and non-base arm of one ladder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VarianceComponents {
    /// `R`, the repetitions of every cell.
    pub reps: usize,
    /// `m`, the analysis passes.
    pub passes: usize,
    pub arms: Vec<ArmComponents>,
}

/// One metric's components for one arm against the base.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmComponents {
    pub column: String,
    pub arm: String,
    pub against: String,
    /// `100·s_w`: the sd of one repetition's paired log ratio inside a pass.
    pub within_sd_pct: f64,
    /// `100·s_b`: the sd the pass's two processes add.
    pub between_sd_pct: f64,
    /// `100·√(MSB/R)`: the measured sd of a pass's mean log ratio.
    pub pass_sd_pct: f64,
    /// `s_b² / (s_b² + s_w²/R)`.
    pub between_share: f64,
}

impl ArmComponents {
    /// `s_b²`, in log units.
    pub fn between_var(&self) -> f64 {
        (self.between_sd_pct / 100.0).powi(2)
    }

    /// `s_w²`, in log units.
    pub fn within_var(&self) -> f64 {
        (self.within_sd_pct / 100.0).powi(2)
    }
}

/// The one-way ANOVA of `groups` (one group per pass, `R` values each, `R ≥ 2`, two groups
/// or more): `(s_b², s_w², MSB)`.
pub fn one_way(groups: &[Vec<f64>]) -> (f64, f64, f64) {
    let (m, r) = (groups.len() as f64, groups[0].len() as f64);
    let means: Vec<f64> = groups.iter().map(|g| g.iter().sum::<f64>() / r).collect();
    let grand = means.iter().sum::<f64>() / m;
    let within: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, mean)| g.iter().map(|l| (l - mean).powi(2)).sum::<f64>())
        .sum();
    let msw = within / (m * (r - 1.0));
    let msb = r * means.iter().map(|x| (x - grand).powi(2)).sum::<f64>() / (m - 1.0);
    // A between-cell variance below 0 is an estimate of none.
    (((msb - msw) / r).max(0.0), msw, msb)
}

/// The rows of one cell as the reading needs them: its repetition rows' indices into
/// `ladder.rows`, by repetition number.
struct Reps {
    /// `cells[pass][arm]`: row indices ordered by `rep`, empty where the cell has none.
    cells: Vec<Vec<Vec<usize>>>,
}

/// The ladder's components over `passes`: `Ok(None)` when it has no repetition rows, an
/// error naming the cell or line (and the fix) when they cannot be read.
pub fn components(
    ladder: &Ladder,
    metrics: &[MetricSpec],
    passes: Range<usize>,
) -> Result<Option<VarianceComponents>, String> {
    let Some(reps) = repetition_rows(ladder)? else {
        return Ok(None);
    };
    let base = ladder.start.base_index();
    let names: Vec<&str> = ladder.start.arms.iter().map(|a| a.name.as_str()).collect();
    let r = common_count(&reps, &names, passes.clone())?;
    let mut arms = Vec::new();
    for metric in metrics {
        let column = ladder.column(&metric.column).ok_or_else(|| {
            format!(
                "the repetition rows lack the metric column {:?}",
                metric.column
            )
        })?;
        for a in (0..names.len()).filter(|&a| a != base) {
            let groups = paired(ladder, &reps, metric, column, a, base, passes.clone())?;
            if groups.len() < 2 {
                return Err(format!(
                    "{} of {} has {} complete analysis pass(es); the components need two",
                    metric.column,
                    names[a],
                    groups.len()
                ));
            }
            let (between, within, msb) = one_way(&groups);
            arms.push(ArmComponents {
                column: metric.column.clone(),
                arm: names[a].to_string(),
                against: names[base].to_string(),
                within_sd_pct: 100.0 * within.sqrt(),
                between_sd_pct: 100.0 * between.sqrt(),
                pass_sd_pct: 100.0 * (msb / r as f64).sqrt(),
                between_share: between / (between + within / r as f64),
            });
        }
    }
    Ok(Some(VarianceComponents {
        reps: r,
        passes: passes.len(),
        arms,
    }))
}

/// Every repetition row of the ladder, by cell; `None` when there is none.
fn repetition_rows(ladder: &Ladder) -> Result<Option<Reps>, String> {
    let Some(rep) = ladder.column(REP_COLUMN) else {
        return Ok(None);
    };
    let (passes, arms) = (ladder.start.order.passes, ladder.start.arms.len());
    let mut cells = vec![vec![Vec::<(usize, usize)>::new(); arms]; passes];
    for (i, row) in ladder.rows.iter().enumerate().filter(|(_, r)| r.row > 0) {
        let number = row
            .fields
            .get(rep)
            .and_then(|v| v.trim().parse::<usize>().ok());
        if let Some(n) = number.filter(|&n| n >= 1) {
            cells[row.pass][row.arm].push((n, i));
        }
    }
    if cells.iter().flatten().all(Vec::is_empty) {
        return Ok(None);
    }
    let mut ordered = vec![vec![Vec::new(); arms]; passes];
    for (p, pass) in cells.iter_mut().enumerate() {
        for (a, cell) in pass.iter_mut().enumerate() {
            cell.sort_unstable();
            if cell.iter().enumerate().any(|(k, &(n, _))| n != k + 1) {
                let line = ladder.rows[cell[0].1].line;
                let arm = &ladder.start.arms[a].name;
                return Err(format!(
                    "line {line}: the repetition rows of pass {p} {arm} are not numbered 1…R once each"
                ));
            }
            ordered[p][a] = cell.iter().map(|&(_, i)| i).collect();
        }
    }
    Ok(Some(Reps { cells: ordered }))
}

/// `R`: the repetition rows of every analysis cell that has any, the same for all, at least 2.
fn common_count(reps: &Reps, names: &[&str], passes: Range<usize>) -> Result<usize, String> {
    let mut counts = passes.flat_map(|p| {
        reps.cells[p]
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.is_empty())
            .map(move |(a, c)| (p, a, c.len()))
    });
    let Some((_, _, r)) = counts.next() else {
        return Err("no analysis cell has repetition rows".into());
    };
    if let Some((p, a, n)) = counts.find(|&(_, _, n)| n != r) {
        return Err(format!(
            "pass {p} {} has {n} repetition rows where the first analysis cell has {r}; every cell needs the same -r",
            names[a]
        ));
    }
    match r {
        1 => Err(
            "one repetition a cell has no within-cell variance; run the engine with -r 2 or more"
                .into(),
        ),
        _ => Ok(r),
    }
}

/// The per-repetition log ratios of arm `a` against `base`, one group per analysis pass in
/// which both cells have their repetition rows.
fn paired(
    ladder: &Ladder,
    reps: &Reps,
    metric: &MetricSpec,
    column: usize,
    a: usize,
    base: usize,
    passes: Range<usize>,
) -> Result<Vec<Vec<f64>>, String> {
    let value = |i: usize| -> Result<f64, String> {
        let row = &ladder.rows[i];
        let text = row.fields.get(column).unwrap_or_default();
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err(format!(
                "line {}: {} is {text:?} on a repetition row, not a positive number",
                row.line, metric.column
            )),
        }
    };
    let mut groups = Vec::new();
    for p in passes {
        let (xs, bs) = (&reps.cells[p][a], &reps.cells[p][base]);
        if xs.is_empty() || bs.is_empty() {
            continue;
        }
        let group = xs
            .iter()
            .zip(bs)
            .map(|(&x, &b)| Ok(log_ratio(metric.better, value(x)?, value(b)?)))
            .collect::<Result<Vec<f64>, String>>()?;
        groups.push(group);
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_way_anova_by_hand() {
        // Groups [1, 3] and [5, 7]: means 2 and 6, grand 4; MSW = (1+1+1+1)/(2·1) = 2,
        // MSB = 2·(4 + 4)/1 = 16, s_b² = (16 − 2)/2 = 7.
        assert_eq!(one_way(&[vec![1.0, 3.0], vec![5.0, 7.0]]), (7.0, 2.0, 16.0));
        // Means closer than the repetitions allow: no between-cell variance.
        let (between, within, _) = one_way(&[vec![0.0, 4.0], vec![1.0, 3.0]]);
        assert_eq!((between, within), (0.0, 5.0));
        // Three repetitions: MSW = (2 + 2)/(2·2) = 1, MSB = 3·(2.25 + 2.25)/1 = 13.5.
        let three = one_way(&[vec![0.0, 1.0, 2.0], vec![3.0, 4.0, 5.0]]);
        assert_eq!(three, ((13.5 - 1.0) / 3.0, 1.0, 13.5));
    }
}
