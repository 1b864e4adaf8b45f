//! Output identity: every non-base cell of the analysis passes against the base cell of
//! the same pass, on the spec's identity column.

use ladder::Ladder;
use ladder::Spec;
use serde::Serialize;
use std::collections::HashSet;
use std::ops::Range;

#[derive(Clone, Debug, Serialize)]
pub struct Identity {
    pub column: String,
    pub comparisons: usize,
    pub identical: usize,
    pub distinct: usize,
    pub differing: Vec<DifferingCell>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DifferingCell {
    pub pass: usize,
    pub slot: usize,
    pub arm: String,
    pub digest: String,
    pub base_digest: String,
}

/// `None` when the spec names no identity column; an error naming the file when the
/// header lacks it. `passes` are the analysis passes.
pub fn read(
    shown: &str,
    spec: &Spec,
    ladder: &Ladder,
    passes: Range<usize>,
) -> anyhow::Result<Option<Identity>> {
    let Some(spec) = &spec.identity else {
        return Ok(None);
    };
    let column = ladder.column(&spec.column).ok_or_else(|| {
        anyhow::anyhow!(
            "{shown}: the spec's [identity] column {:?} is not in the file's header; correct it to one of: {}",
            spec.column,
            ladder.columns.join(", ")
        )
    })?;
    let n = ladder.start.arms.len();
    let base = ladder.start.base_index();
    // digest[p][a] over the analysis passes, row 0 of every cell.
    let mut digests: Vec<Vec<Option<(usize, &str)>>> = vec![vec![None; n]; passes.end];
    for r in ladder
        .rows
        .iter()
        .filter(|r| r.row == 0 && passes.contains(&r.pass))
    {
        digests[r.pass][r.arm] = Some((r.slot, r.fields.get(column).unwrap_or_default()));
    }
    let mut identity = Identity {
        column: spec.column.clone(),
        comparisons: 0,
        identical: 0,
        distinct: 0,
        differing: Vec::new(),
    };
    let mut seen = HashSet::new();
    for p in passes {
        let base_digest = digests[p][base].map(|(_, d)| d);
        for (a, cell) in digests[p].iter().enumerate() {
            let Some((slot, digest)) = *cell else {
                continue;
            };
            seen.insert(digest);
            let Some(base_digest) = base_digest.filter(|_| a != base) else {
                continue;
            };
            identity.comparisons += 1;
            if digest == base_digest {
                identity.identical += 1;
            } else {
                identity.differing.push(DifferingCell {
                    pass: p,
                    slot,
                    arm: ladder.start.arms[a].name.clone(),
                    digest: digest.to_string(),
                    base_digest: base_digest.to_string(),
                });
            }
        }
    }
    identity.distinct = seen.len();
    Ok(Some(identity))
}
