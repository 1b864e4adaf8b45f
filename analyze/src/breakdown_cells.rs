//! A ladder's breakdown rows (`[breakdown]`, METHOD.md "Breakdown"), read while its rows are
//! at hand: every key's value in every cell, pass-major as the frame's grids are, for
//! `analysis::breakdown`.

use ladder::breakdown::BreakdownSpec;
use ladder::spec::Spec;
use ladder::Ladder;

/// Every key's value, launches and each cell's total.
#[derive(Clone, Debug)]
pub struct BreakdownCells {
    pub spec: BreakdownSpec,
    pub passes: usize,
    pub arms: usize,
    /// Every key a cell printed, in the order first seen.
    pub keys: Vec<String>,
    /// `values[key][pass · arms + arm]`: NaN where the cell printed no row of the key.
    values: Vec<Vec<f64>>,
    launches: Vec<Vec<f64>>,
    /// The total on each cell's row 0 (NaN where none or without `total`).
    totals: Vec<f64>,
    /// Whether the cell ran: a successful cell whose rows are in the file.
    ran: Vec<bool>,
}

impl BreakdownCells {
    /// The breakdown of a ladder whose spec has `[breakdown]`; cells that failed are left out
    /// (not run), and a value that is not a number is missing (`verify` names both).
    pub fn read(spec: &Spec, ladder: &Ladder) -> Option<BreakdownCells> {
        let table = spec.breakdown.clone()?;
        let column = |name: Option<&str>| name.and_then(|n| ladder.column(n));
        let key = column(Some(&table.key))?;
        let value = column(Some(&table.value))?;
        let (launches, total) = (
            column(table.launches.as_deref()),
            column(table.total.as_deref()),
        );
        let (passes, arms) = (ladder.start.order.passes, ladder.start.arms.len());
        let ok: Vec<String> = spec.ok_exit_codes().iter().map(i32::to_string).collect();
        let mut cells = BreakdownCells::empty(table, passes, arms);
        let number = |text: Option<&str>| {
            text.and_then(|t| t.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .unwrap_or(f64::NAN)
        };
        for r in ladder.rows.iter().filter(|r| ok.contains(&r.exit)) {
            if r.row == 0 {
                cells.record_total(r.pass, r.arm, number(total.and_then(|t| r.fields.get(t))));
            }
            let name = r.fields.get(key).unwrap_or_default();
            if name.is_empty() {
                continue;
            }
            let launches = number(launches.and_then(|l| r.fields.get(l)));
            cells.record(r.pass, r.arm, name, number(r.fields.get(value)), launches);
        }
        Some(cells)
    }

    /// No cell run yet.
    pub fn empty(spec: BreakdownSpec, passes: usize, arms: usize) -> BreakdownCells {
        BreakdownCells {
            spec,
            passes,
            arms,
            keys: Vec::new(),
            values: Vec::new(),
            launches: Vec::new(),
            totals: vec![f64::NAN; passes * arms],
            ran: vec![false; passes * arms],
        }
    }

    /// The cell of `arm` in `pass` ran, with this total on its row 0 (NaN: none).
    pub fn record_total(&mut self, pass: usize, arm: usize, total: f64) {
        let at = self.at(pass, arm);
        self.ran[at] = true;
        self.totals[at] = total;
    }

    /// That cell printed a row of `key` (NaN: a value or count that is not a number).
    pub fn record(&mut self, pass: usize, arm: usize, key: &str, value: f64, launches: f64) {
        let (k, at) = (self.key_index(key), self.at(pass, arm));
        self.values[k][at] = value;
        self.launches[k][at] = launches;
    }

    /// The index of the cell of `arm` in `pass` in every per-cell vector.
    fn at(&self, pass: usize, arm: usize) -> usize {
        pass * self.arms + arm
    }

    fn key_index(&mut self, name: &str) -> usize {
        if let Some(k) = self.keys.iter().position(|k| k == name) {
            return k;
        }
        let size = self.passes * self.arms;
        self.keys.push(name.to_string());
        self.values.push(vec![f64::NAN; size]);
        self.launches.push(vec![f64::NAN; size]);
        self.keys.len() - 1
    }

    /// Whether the cell of `arm` in `pass` ran.
    pub fn ran(&self, pass: usize, arm: usize) -> bool {
        self.ran[self.at(pass, arm)]
    }

    /// Whether that cell printed a row of key `k`.
    pub fn printed(&self, k: usize, pass: usize, arm: usize) -> bool {
        !self.values[k][self.at(pass, arm)].is_nan()
    }

    /// Key `k`'s value in that cell: 0 when the cell ran without it (the key did not run
    /// there), NaN when the cell did not run.
    pub fn value(&self, k: usize, pass: usize, arm: usize) -> f64 {
        match (self.ran(pass, arm), self.values[k][self.at(pass, arm)]) {
            (false, _) => f64::NAN,
            (true, v) if v.is_nan() => 0.0,
            (true, v) => v,
        }
    }

    /// Key `k`'s launches in that cell (NaN where it printed none).
    pub fn launches(&self, k: usize, pass: usize, arm: usize) -> f64 {
        self.launches[k][self.at(pass, arm)]
    }

    /// The cell's total (NaN without one).
    pub fn total(&self, pass: usize, arm: usize) -> f64 {
        self.totals[self.at(pass, arm)]
    }
}
