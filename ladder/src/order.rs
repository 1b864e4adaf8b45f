//! The legal order: which arm runs in every (pass, slot) of a ladder.
//!
//! LADDER-FORMAT.md fixes one legal order per header; this file is the only place that
//! computes it, for the runner (what to run next) and the verifier (what should have run).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the arms are ordered inside each pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Pass `p`, slot `s` runs arm `(s + p) mod n`.
    #[default]
    Rotate,
    /// Each pass sorted by a seeded blake3 of the arm's name.
    Shuffle,
    /// Williams design: balanced for first-order carry-over.
    Williams,
}

impl Scheme {
    pub const NAMES: [&'static str; 3] = ["rotate", "shuffle", "williams"];
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scheme::Rotate => "rotate",
            Scheme::Shuffle => "shuffle",
            Scheme::Williams => "williams",
        })
    }
}

impl FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rotate" => Ok(Scheme::Rotate),
            "shuffle" => Ok(Scheme::Shuffle),
            "williams" => Ok(Scheme::Williams),
            other => Err(format!(
                "unknown order scheme {other:?}; use one of {}",
                Scheme::NAMES.join(", ")
            )),
        }
    }
}

/// One ladder's order: the header fields that decide it, and the grid they give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    pub scheme: Scheme,
    pub arms: Vec<String>,
    pub passes: usize,
    pub seed: Option<u64>,
    /// `grid[p][s]` is the index (into `arms`) of the arm in pass `p`, slot `s`.
    grid: Vec<Vec<usize>>,
}

/// One cell of the legal order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub pass: usize,
    pub slot: usize,
    pub arm: usize,
}

/// How every message names a cell: "pass P slot S (arm NAME)".
pub fn cell_words(pass: usize, slot: usize, arm: &str) -> String {
    format!("pass {pass} slot {slot} (arm {arm})")
}

impl Order {
    pub fn new(scheme: Scheme, arms: Vec<String>, passes: usize, seed: Option<u64>) -> Order {
        let n = arms.len();
        let grid = (0..passes)
            .map(|p| match scheme {
                Scheme::Rotate => (0..n).map(|s| (s + p) % n).collect(),
                Scheme::Shuffle => shuffled_pass(&arms, p, seed.unwrap_or(0)),
                Scheme::Williams => williams_row(n, p),
            })
            .collect();
        Order {
            scheme,
            arms,
            passes,
            seed,
            grid,
        }
    }

    pub fn n_arms(&self) -> usize {
        self.arms.len()
    }

    pub fn n_cells(&self) -> usize {
        self.passes * self.arms.len()
    }

    /// The arm index that runs in `pass`, `slot`.
    pub fn arm_at(&self, pass: usize, slot: usize) -> usize {
        self.grid[pass][slot]
    }

    /// The arm indices of one pass, slot by slot.
    pub fn pass(&self, pass: usize) -> &[usize] {
        &self.grid[pass]
    }

    /// Every cell in the order it must be run and written: `k = p·n + s`.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        self.grid.iter().enumerate().flat_map(|(pass, row)| {
            row.iter()
                .enumerate()
                .map(move |(slot, &arm)| Cell { pass, slot, arm })
        })
    }
}

/// `shuffle`: the arms sorted ascending by the hex of `blake3("{seed}:{p}:{name}")`.
fn shuffled_pass(arms: &[String], pass: usize, seed: u64) -> Vec<usize> {
    let mut keyed: Vec<(String, usize)> = arms
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let key = blake3::hash(format!("{seed}:{pass}:{name}").as_bytes());
            (key.to_hex().to_string(), i)
        })
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Row `p mod R` of the Williams design for `n` arms.
fn williams_row(n: usize, pass: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let rows = if n % 2 == 1 { 2 * n } else { n };
    let r = pass % rows;
    let shifted: Vec<usize> = williams_first_row(n).iter().map(|&a| (a + r) % n).collect();
    if r >= n {
        shifted.into_iter().rev().collect()
    } else {
        shifted
    }
}

/// `0, 1, n−1, 2, n−2, 3, …`: alternating up from 1 and down from n−1.
fn williams_first_row(n: usize) -> Vec<usize> {
    let mut row = vec![0];
    let (mut up, mut down) = (1, n - 1);
    while row.len() < n {
        if row.len() % 2 == 1 {
            row.push(up);
            up += 1;
        } else {
            row.push(down);
            down -= 1;
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names a spec and a start record spell, both ways.
    #[test]
    fn schemes_read_and_write_their_names() {
        for (name, scheme) in
            Scheme::NAMES
                .iter()
                .zip([Scheme::Rotate, Scheme::Shuffle, Scheme::Williams])
        {
            assert_eq!(scheme.to_string(), *name);
            assert_eq!(name.parse::<Scheme>(), Ok(scheme));
        }
        let e = "latin".parse::<Scheme>().unwrap_err();
        assert!(
            e.contains("\"latin\"") && e.contains("rotate, shuffle, williams"),
            "{e}"
        );
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("arm{i}")).collect()
    }

    fn assert_each_arm_once_per_pass(order: &Order) {
        for p in 0..order.passes {
            let mut seen = order.pass(p).to_vec();
            seen.sort();
            assert_eq!(seen, (0..order.n_arms()).collect::<Vec<_>>(), "pass {p}");
        }
    }

    #[test]
    fn rotate_shifts_by_one_each_pass() {
        let order = Order::new(Scheme::Rotate, names(3), 4, None);
        assert_eq!(order.pass(0), &[0, 1, 2]);
        assert_eq!(order.pass(1), &[1, 2, 0]);
        assert_eq!(order.pass(2), &[2, 0, 1]);
        assert_eq!(order.pass(3), &[0, 1, 2]);
    }

    #[test]
    fn every_scheme_runs_each_arm_once_per_pass() {
        for scheme in [Scheme::Rotate, Scheme::Shuffle, Scheme::Williams] {
            for n in 1..=7 {
                assert_each_arm_once_per_pass(&Order::new(scheme, names(n), 15, Some(3)));
            }
        }
    }

    #[test]
    fn williams_first_rows_match_the_design() {
        assert_eq!(williams_first_row(4), vec![0, 1, 3, 2]);
        assert_eq!(williams_first_row(5), vec![0, 1, 4, 2, 3]);
        let order = Order::new(Scheme::Williams, names(3), 6, None);
        assert_eq!(order.pass(0), &[0, 1, 2]);
        assert_eq!(order.pass(1), &[1, 2, 0]);
        assert_eq!(order.pass(3), &[2, 1, 0]);
        assert_eq!(order.pass(4), &[0, 2, 1]);
    }

    /// Balanced for carry-over: over one full cycle of rows, every ordered pair (a, b) with
    /// a ≠ b appears as neighbours the same number of times.
    #[test]
    fn williams_is_balanced_for_carry_over() {
        for n in 2..=8 {
            let rows = if n % 2 == 1 { 2 * n } else { n };
            let order = Order::new(Scheme::Williams, names(n), rows, None);
            let mut count = vec![vec![0; n]; n];
            for p in 0..rows {
                for w in order.pass(p).windows(2) {
                    count[w[0]][w[1]] += 1;
                }
            }
            let expected = if n % 2 == 1 { 2 } else { 1 };
            for (a, row) in count.iter().enumerate() {
                for (b, &pairs) in row.iter().enumerate().filter(|&(b, _)| b != a) {
                    assert_eq!(pairs, expected, "n={n} pair ({a},{b})");
                }
            }
        }
    }

    #[test]
    fn shuffle_follows_the_blake3_rule_and_the_seed() {
        let arms = names(5);
        let order = Order::new(Scheme::Shuffle, arms.clone(), 3, Some(7));
        for p in 0..3 {
            let hexes: Vec<String> = order
                .pass(p)
                .iter()
                .map(|&a| {
                    blake3::hash(format!("7:{p}:{}", arms[a]).as_bytes())
                        .to_hex()
                        .to_string()
                })
                .collect();
            assert!(
                hexes.windows(2).all(|w| w[0] < w[1]),
                "pass {p} not sorted by hash"
            );
        }
        let again = Order::new(Scheme::Shuffle, arms.clone(), 3, Some(7));
        assert_eq!(order, again);
        let other_seed = Order::new(Scheme::Shuffle, arms, 3, Some(8));
        assert_ne!(order.grid, other_seed.grid);
    }

    #[test]
    fn cells_are_numbered_pass_by_pass() {
        let order = Order::new(Scheme::Rotate, names(2), 2, None);
        let cells: Vec<(usize, usize, usize)> =
            order.cells().map(|c| (c.pass, c.slot, c.arm)).collect();
        assert_eq!(cells, vec![(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)]);
    }
}
