//! Energy beside speed across ladders (METHOD.md "Across ladders"): every quantity of a
//! speed carries, in the same ladders, each energy metric's estimate for the same two arms,
//! so that a gain in speed is read with what it costs in energy.

use crate::across::{quantities, EnergyBeside, Replication};
use crate::analysis::LadderReport;
use ladder::card::ENERGY_J;

/// A ladder's energy metrics: `witness_energy_j` and its `[split] energy` column, each when
/// it is a metric.
fn energy_columns(report: &LadderReport) -> Vec<&str> {
    let split = report
        .round_split
        .as_ref()
        .and_then(|s| s.energy.as_deref());
    report
        .metrics
        .iter()
        .map(|m| m.column.as_str())
        .filter(|c| *c == ENERGY_J || Some(*c) == split)
        .collect()
}

/// Puts each energy metric beside every other quantity of the same spec, and leaves the
/// energy quantities out as rows of their own where a spec has another metric.
pub fn beside(replications: &mut Vec<Replication>, reports: &[LadderReport]) {
    let report = |file: &str| reports.iter().find(|r| r.file == file);
    let energy_of = |q: &Replication| -> Vec<String> {
        let mut columns: Vec<String> = Vec::new();
        for r in q.files.iter().filter_map(|f| report(f)) {
            for c in energy_columns(r) {
                if !columns.iter().any(|k| k == c) {
                    columns.push(c.to_string());
                }
            }
        }
        columns
    };
    for q in replications.iter_mut() {
        let columns = energy_of(q);
        if columns.contains(&q.key.0) {
            continue;
        }
        q.energy = columns
            .iter()
            .map(|column| {
                let estimates: Vec<Option<f64>> = q
                    .files
                    .iter()
                    .map(|f| report(f).and_then(|r| estimate(r, column, &q.key.1, &q.key.2)))
                    .collect();
                EnergyBeside {
                    column: column.clone(),
                    spread_pp: spread(&estimates),
                    estimates_pct: estimates,
                }
            })
            .collect();
    }
    let specs_with_energy_beside: Vec<String> = replications
        .iter()
        .filter(|q| !q.energy.is_empty())
        .map(|q| q.spec.clone())
        .collect();
    replications.retain(|q| {
        !(energy_of(q).contains(&q.key.0) && specs_with_energy_beside.contains(&q.spec))
    });
}

/// `column`'s estimate of `arm` against `against` in one ladder.
fn estimate(report: &LadderReport, column: &str, arm: &str, against: &str) -> Option<f64> {
    quantities(report)
        .into_iter()
        .find(|(key, _)| *key == (column, arm, against))
        .map(|(_, figures)| figures.estimate_pct)
}

/// `max − min` of the estimates present; NaN with fewer than two.
fn spread(estimates: &[Option<f64>]) -> f64 {
    let present: Vec<f64> = estimates.iter().flatten().copied().collect();
    if present.len() < 2 {
        return f64::NAN;
    }
    let max = present.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = present.iter().copied().fold(f64::INFINITY, f64::min);
    max - min
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn the_spread_is_max_minus_min_of_the_estimates_present() {
        assert_eq!(spread(&[Some(1.0), None, Some(3.5), Some(2.0)]), 2.5);
        assert_eq!(spread(&[Some(-1.0), Some(-1.5)]), 0.5);
        for fewer_than_two in [&[Some(1.0), None][..], &[None, None], &[]] {
            assert!(spread(fewer_than_two).is_nan(), "{fewer_than_two:?}");
        }
    }
}
