//! A reading of ladder files: each file's figures (METHOD.md) and the readings across them.
//! `report` writes it through `export`; `calibrate --live` counts its controls.

use crate::across::{self, ArmPair, Replication};
use crate::analysis::{self, ExtrasConfig, LadderReport};
use crate::frames::{self, Grid, LoadedFile};
use crate::minute::{self, MinutePool};
use rayon::prelude::*;
use std::path::PathBuf;

/// Options of a reading, the command line's flags less the outputs.
#[derive(Clone, Debug)]
pub struct Options {
    pub allow_defects: bool,
    pub extras: ExtrasConfig,
    pub compare: Vec<(String, String)>,
    /// An equivalence margin given after the run (`--margin-pct`).
    pub margin_pct: Option<f64>,
}

/// Everything read from a set of files.
pub struct Reading {
    pub files: Vec<LoadedFile>,
    pub grids: Vec<Vec<Grid>>,
    pub reports: Vec<LadderReport>,
    pub replications: Vec<Replication>,
    pub pairs: Vec<ArmPair>,
    /// What a device-minute buys, pooled per design (METHOD.md "Across ladders").
    pub minute_pools: Vec<MinutePool>,
    pub extras: ExtrasConfig,
}

/// Loads the files into one frame and computes every figure.
pub fn read(paths: &[PathBuf], options: &Options) -> anyhow::Result<Reading> {
    let loaded = frames::load(paths, options.allow_defects)?;
    let grids = frames::grids(&loaded)?;
    let spreads = frames::base_spreads(&loaded)?;
    let reports: Vec<LadderReport> = loaded
        .files
        .par_iter()
        .zip(&grids)
        .zip(&spreads)
        .map(|((file, grids), spreads)| {
            analysis::read(file, grids, spreads, options.extras, options.margin_pct)
        })
        .collect();
    let mut replications = across::replications(&reports);
    crate::energy::beside(&mut replications, &reports);
    let wanted = across::pairs_to_compare(&loaded.files, &reports, &options.compare);
    let pairs = across::arm_pairs(&loaded.files, &grids, &reports, &wanted);
    let minutes: Vec<minute::LadderMinutes> = reports
        .iter()
        .filter_map(|r| {
            Some((
                r.ladder.as_deref()?,
                r.tag.as_deref()?,
                &r.minute_halfwidths[..],
            ))
        })
        .collect();
    let minute_pools = minute::pools(&minutes);
    Ok(Reading {
        files: loaded.files,
        grids,
        reports,
        replications,
        pairs,
        minute_pools,
        extras: options.extras,
    })
}
