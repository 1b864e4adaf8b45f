//! Repetition rows for a generated ladder, as `engine bench --rows reps` prints them: each
//! cell's summary row, then one row per timed repetition with that repetition's own values
//! and `rep` = 1…R, and on every row the `startup_seconds` and `timed_seconds` columns.
//!
//! The values carry known variance components: a cell's level moves by a normal draw shared by
//! its repetitions (sd `between_pct`), each repetition by its own (sd `within_pct`), both in
//! log units. A paired log ratio of two cells then has the between-cell variance
//! `2·between²` and the within-cell variance `2·within²` a repetition (METHOD.md "Variance
//! components").

use super::{Noise, SampleMetric};
use crate::spec::Better;

/// The seconds a cell spends after its last timed repetition (exit and harness).
const EXIT_S: f64 = 0.25;

/// How every cell of a generated ladder repeats its measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleReps {
    /// Timed repetitions a cell: `ladder_row` 1…count after the summary row.
    pub count: usize,
    /// sd (log units, ×100) of a cell's level, shared by all of its repetitions.
    pub between_pct: f64,
    /// sd (log units, ×100) of one repetition around its cell's level.
    pub within_pct: f64,
    /// `startup_seconds` of every cell.
    pub startup_s: f64,
    /// Seconds of one timed repetition.
    pub rep_s: f64,
}

impl SampleReps {
    /// `count` repetitions of `rep_s` seconds after `startup_s` seconds of start-up, no noise.
    pub fn new(count: usize, startup_s: f64, rep_s: f64) -> SampleReps {
        SampleReps {
            count,
            between_pct: 0.0,
            within_pct: 0.0,
            startup_s,
            rep_s,
        }
    }

    /// The cell's wall time: start-up, the timed repetitions and the exit.
    pub(super) fn wall_us(&self) -> i64 {
        ((self.startup_s + self.count as f64 * self.rep_s + EXIT_S) * 1e6).round() as i64
    }

    /// One cell's values: `values[metric][rep]` around each metric's level moved by `gain`
    /// (the arm's effect), drawn metric by metric.
    pub(super) fn draw(
        &self,
        noise: &mut Noise,
        metrics: &[SampleMetric],
        gain: f64,
    ) -> Vec<Vec<f64>> {
        metrics
            .iter()
            .map(|m| {
                let cell = self.between_pct / 100.0 * noise.gaussian();
                let level = match m.better {
                    Better::Higher => m.level * gain,
                    Better::Lower => m.level / gain,
                };
                (0..self.count)
                    .map(|_| level * (cell + self.within_pct / 100.0 * noise.gaussian()).exp())
                    .collect()
            })
            .collect()
    }

    /// The summary row's value of a metric: the geometric mean of its repetitions, so that a
    /// summary log ratio is exactly the mean of the repetitions' log ratios.
    pub(super) fn summary(values: &[f64]) -> f64 {
        (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
    }

    /// The cell's rows: `summary` (its metrics at `first_metric…`, `ladder_row` at
    /// `row_index`) with the repetition columns appended, then one row per repetition.
    pub(super) fn rows(
        &self,
        mut summary: Vec<String>,
        row_index: usize,
        first_metric: usize,
        values: &[Vec<f64>],
    ) -> Vec<Vec<String>> {
        let timed = self.count as f64 * self.rep_s;
        let mut rows = Vec::with_capacity(self.count + 1);
        for rep in 1..=self.count {
            let mut row = summary.clone();
            row[row_index] = rep.to_string();
            for (k, metric) in values.iter().enumerate() {
                row[first_metric + k] = format!("{:.6}", metric[rep - 1]);
            }
            row.extend(self.tail(self.rep_s, rep));
            rows.push(row);
        }
        summary.extend(self.tail(timed, 0));
        rows.insert(0, summary);
        rows
    }

    /// `startup_seconds`, `timed_seconds` and `rep` of one row.
    fn tail(&self, timed: f64, rep: usize) -> [String; 3] {
        [
            format!("{:.6}", self.startup_s),
            format!("{timed:.6}"),
            rep.to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder_file::Role;
    use crate::repetitions::{REP_COLUMN, TIMED_COLUMN};
    use crate::sample::{Noise, Sample, SampleArm, SampleMetric};

    fn sample() -> Sample {
        let mut s = Sample::new(
            "reps",
            "t1",
            vec![
                SampleArm::new("off", Role::Base, 0.0),
                SampleArm::new("on", Role::Arm, 2.0),
            ],
        );
        s.reps = Some(SampleReps {
            between_pct: 1.0,
            within_pct: 2.0,
            ..SampleReps::new(4, 1.5, 0.5)
        });
        s
    }

    #[test]
    fn every_cell_holds_its_summary_and_its_repetitions() {
        let replay = crate::replay(sample().file_text().as_bytes());
        assert!(replay.verdict.connected, "{:?}", replay.verdict.defects);
        let ladder = replay.ladder.unwrap();
        assert_eq!(ladder.rows.len(), 16 * 5);
        let col = |name: &str| ladder.column(name).unwrap();
        let (rep, metric, timed) = (col(REP_COLUMN), col("decode_tok_s"), col(TIMED_COLUMN));
        let cell = &ladder.rows[..5];
        let field = |r: usize, c: usize| cell[r].fields.get(c).unwrap().to_string();
        let number = |r: usize, c: usize| field(r, c).parse::<f64>().unwrap();
        assert_eq!(
            (0..5).map(|r| field(r, rep)).collect::<Vec<_>>(),
            ["0", "1", "2", "3", "4"]
        );
        assert_eq!(
            (0..5).map(|r| cell[r].row).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        // The summary is the repetitions' geometric mean; timed is their sum.
        let mean_log = (1..5).map(|r| number(r, metric).ln()).sum::<f64>() / 4.0;
        assert!((number(0, metric).ln() - mean_log).abs() < 1e-7);
        assert_eq!((number(0, timed), number(1, timed)), (2.0, 0.5));
        let wall = number(0, col(crate::ladder_file::WALL_COLUMN));
        assert_eq!(wall, 1.5 + 2.0 + EXIT_S);
        assert_eq!(cell[0].ended_us - cell[0].started_us, 3_750_000);
    }

    /// 4000 cells of 4 repetitions: the level moved by the gain, the between-cell sd of 1 %
    /// and the within-cell sd of 2 % (log units) come back from the draws.
    #[test]
    fn a_draw_holds_its_level_and_both_variance_components() {
        let reps = SampleReps {
            between_pct: 1.0,
            within_pct: 2.0,
            ..SampleReps::new(4, 1.5, 0.5)
        };
        let metric = |better| SampleMetric {
            column: "x".into(),
            better,
            level: 100.0,
            noise_limit_pct: None,
        };
        let mut noise = Noise::new(7);
        let cells: Vec<Vec<f64>> = (0..4000)
            .map(|_| {
                let values = reps.draw(&mut noise, &[metric(Better::Higher)], 1.02);
                values[0].iter().map(|v| v.ln()).collect()
            })
            .collect();
        let means: Vec<f64> = cells.iter().map(|c| c.iter().sum::<f64>() / 4.0).collect();
        let grand = means.iter().sum::<f64>() / 4000.0;
        assert!((grand - 102f64.ln()).abs() < 0.0012, "{grand}");
        let within2 = cells
            .iter()
            .zip(&means)
            .flat_map(|(c, m)| c.iter().map(move |l| (l - m).powi(2)))
            .sum::<f64>()
            / (4000.0 * 3.0);
        assert!(
            (within2.sqrt() / 0.02 - 1.0).abs() < 0.03,
            "{}",
            within2.sqrt()
        );
        let means2 = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / 3999.0;
        let between = (means2 - within2 / 4.0).sqrt();
        assert!((between / 0.01 - 1.0).abs() < 0.1, "{between}");
        // Lower is better: the gain divides the level.
        let quiet = SampleReps::new(2, 1.5, 0.5);
        let lower = quiet.draw(&mut noise, &[metric(Better::Lower)], 1.25);
        assert_eq!(lower, vec![vec![80.0, 80.0]]);
    }

    #[test]
    fn repetitions_move_around_their_cell() {
        let ladder = crate::replay(sample().file_text().as_bytes())
            .ladder
            .unwrap();
        let metric = ladder.column("decode_tok_s").unwrap();
        let value =
            |i: usize| -> f64 { ladder.rows[i].fields.get(metric).unwrap().parse().unwrap() };
        // Within a cell the repetitions differ; the generator is not silent.
        assert_ne!(value(1), value(2));
        let mut quiet = sample();
        quiet.reps = Some(SampleReps::new(4, 1.5, 0.5));
        let ladder = crate::replay(quiet.file_text().as_bytes()).ladder.unwrap();
        let same: Vec<&str> = (0..5)
            .map(|i| ladder.rows[i].fields.get(metric).unwrap())
            .collect();
        assert!(same.iter().all(|v| *v == "100.000000"), "{same:?}");
    }
}
