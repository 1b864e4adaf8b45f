//! `analyze report`: read ladder files as METHOD.md says; the outputs (markdown with SVG
//! figures beside it, JSON, CSV, the one-screen summary) are written by `export`.

use crate::across::{self, ArmPair, Replication};
use crate::analysis::{self, ExtrasConfig, LadderReport};
use crate::export::{csv, json, markdown};
use crate::frames::{self, Grid, LoadedFile};
use anyhow::Context;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Ladder files to report on.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the markdown report here (e.g. reports/NAME.md); the SVG figures go beside it.
    /// Without -o and --json the markdown goes to stdout, without figures.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Write the JSON report here (`-` for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a CSV summary here: one row per ladder × metric × arm (`-` for stdout).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Print only the one-screen summary (markdown) to stdout.
    #[arg(long)]
    pub summary: bool,
    /// Compute statistics from files that are not one connected run, marked as such.
    #[arg(long)]
    pub allow_defects: bool,
    /// Bootstrap resamples per arm for the interval of the median (0 leaves it out).
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compare two arms in every ladder that carries both, as ARM:AGAINST (repeatable).
    /// Without it, every pair of arms carried by ladders of two or more specs is compared.
    #[arg(long = "compare", value_name = "ARM:AGAINST", value_parser = parse_pair)]
    pub compare: Vec<(String, String)>,
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.into(), b.into())),
        _ => Err(format!(
            "{text:?} is not ARM:AGAINST; write e.g. --compare window:null"
        )),
    }
}

/// Options of a reading, the command line's flags less the outputs.
#[derive(Clone, Debug)]
pub struct Options {
    pub allow_defects: bool,
    pub extras: ExtrasConfig,
    pub compare: Vec<(String, String)>,
}

/// Everything read from a set of files.
pub struct Reading {
    pub files: Vec<LoadedFile>,
    pub grids: Vec<Vec<Grid>>,
    pub reports: Vec<LadderReport>,
    pub replications: Vec<Replication>,
    pub pairs: Vec<ArmPair>,
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
        .map(|((file, grids), spreads)| analysis::read(file, grids, spreads, options.extras))
        .collect();
    let replications = across::replications(&reports);
    let wanted = across::pairs_to_compare(&loaded.files, &reports, &options.compare);
    let pairs = across::arm_pairs(&loaded.files, &grids, &reports, &wanted);
    Ok(Reading {
        files: loaded.files,
        grids,
        reports,
        replications,
        pairs,
        extras: options.extras,
    })
}

/// Opens `path` for writing, `-` meaning stdout.
fn output(path: &Path, flag: &str) -> anyhow::Result<Box<dyn std::io::Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdout().lock()));
    }
    let file = std::fs::File::create(path).with_context(|| {
        format!(
            "cannot create {}; pass {flag} with a writable path",
            path.display()
        )
    })?;
    Ok(Box::new(std::io::BufWriter::new(file)))
}

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let options = Options {
        allow_defects: args.allow_defects,
        extras: ExtrasConfig {
            resamples: args.bootstrap,
            seed: args.seed,
        },
        compare: args.compare.clone(),
    };
    let reading = read(&args.files, &options)?;
    if let Some(path) = &args.json {
        json::write(&reading, output(path, "--json")?)?;
    }
    if let Some(path) = &args.csv {
        csv::write(&reading.reports, output(path, "--csv")?)?;
    }
    if let Some(path) = &args.out {
        markdown::write(&reading, path)?;
    }
    if args.summary {
        print!("{}", markdown::summary(&reading.reports));
    } else if args.out.is_none() && args.json.is_none() && args.csv.is_none() {
        print!(
            "{}",
            markdown::render(&markdown::Doc::without_figures(&reading))
        );
    }
    let unconnected: Vec<&str> = reading
        .reports
        .iter()
        .filter(|r| !r.connected)
        .map(|r| r.file.as_str())
        .collect();
    if !unconnected.is_empty() && !args.allow_defects {
        eprintln!(
            "analyze report: {} file(s) not one connected run, reported with their defects and no statistics: {}\n  fix: rerun those ladders, or pass --allow-defects to read them, marked as such",
            unconnected.len(),
            unconnected.join(", ")
        );
        return Ok(1);
    }
    Ok(0)
}
