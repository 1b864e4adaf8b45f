//! `analyze report`: read ladder files as METHOD.md says and write the markdown (with SVG
//! figures beside it) and the JSON report.

use crate::across::{self, ArmPair, Replication};
use crate::analysis::{self, ExtrasConfig, LadderReport};
use crate::frames::{self, Grid, LoadedFile};
use crate::markdown::{self, Doc};
use crate::plots::{self, DeltaColumn, ForestRow};
use anyhow::Context;
use rayon::prelude::*;
use std::io::Write;
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

/// The JSON report: `{"ladders": [...], "across": [...], "arm_pairs": [...]}`. Ladders are
/// serialized in parallel, a chunk at a time so that the text is never all in memory.
pub fn write_json(reading: &Reading, mut out: impl Write) -> anyhow::Result<()> {
    out.write_all(b"{\"ladders\":[")?;
    for (c, chunk) in reading.reports.chunks(256).enumerate() {
        let texts: Vec<Vec<u8>> = chunk
            .par_iter()
            .map(|r| {
                let mut text = Vec::with_capacity(16 << 10);
                serde_json::to_writer(&mut text, r).map(|_| text)
            })
            .collect::<Result<_, _>>()?;
        for (i, text) in texts.iter().enumerate() {
            if c + i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(text)?;
        }
    }
    out.write_all(b"],\"across\":")?;
    serde_json::to_writer(&mut out, &reading.replications)?;
    out.write_all(b",\"arm_pairs\":")?;
    serde_json::to_writer(&mut out, &reading.pairs)?;
    out.write_all(b"}\n")?;
    Ok(())
}

/// `name` with every character a file name should not hold replaced by `_`.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes the markdown and its figures beside it.
pub fn write_markdown(reading: &Reading, path: &Path) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "report".into());
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create {}; pass -o with a writable directory",
            dir.display()
        )
    })?;
    let mut used = std::collections::HashSet::new();
    let mut metric_svgs = Vec::new();
    for r in &reading.reports {
        let mut names = Vec::new();
        for m in &r.metrics {
            let base = format!(
                "{stem}_{}_{}_{}",
                file_part(r.ladder.as_deref().unwrap_or("")),
                file_part(r.tag.as_deref().unwrap_or("")),
                file_part(&m.column)
            );
            let mut name = format!("{base}.svg");
            let mut k = 2;
            while !used.insert(name.clone()) {
                name = format!("{base}_{k}.svg");
                k += 1;
            }
            let columns: Vec<DeltaColumn> = m
                .arms
                .iter()
                .map(|a| DeltaColumn {
                    arm: &a.arm,
                    deltas: &a.deltas_pct,
                    estimate: a.figures.estimate_pct,
                    ci: (a.figures.ci_low_pct, a.figures.ci_high_pct),
                })
                .collect();
            let title = format!(
                "{} / {}: {} ({} is better){}",
                r.ladder.as_deref().unwrap_or("?"),
                r.tag.as_deref().unwrap_or("?"),
                m.column,
                m.better,
                if r.qualified {
                    String::new()
                } else {
                    format!(" [{}]", markdown::status(r))
                }
            );
            plots::deltas_svg(&dir.join(&name), &title, &columns)?;
            names.push(name);
        }
        metric_svgs.push(names);
    }
    let mut forest_svgs = Vec::new();
    for q in &reading.replications {
        if forest_svgs
            .iter()
            .any(|(s, _): &(String, String)| *s == q.spec)
        {
            continue;
        }
        let rows: Vec<ForestRow> = reading
            .replications
            .iter()
            .filter(|r| r.spec == q.spec)
            .flat_map(|r| {
                (0..r.ladders.len()).map(move |i| ForestRow {
                    label: format!("{} · {}", r.quantity, r.ladders[i]),
                    estimate: r.estimates_pct[i],
                    ci: (r.ci_low_pct[i], r.ci_high_pct[i]),
                    marked: !r.qualified[i],
                })
            })
            .collect();
        let name = format!("{stem}_across_{}.svg", file_part(&q.spec));
        plots::forest_svg(
            &dir.join(&name),
            &format!("{}: each quantity per ladder", q.spec),
            &rows,
        )?;
        forest_svgs.push((q.spec.clone(), name));
    }
    let doc = Doc {
        reports: &reading.reports,
        replications: &reading.replications,
        pairs: &reading.pairs,
        metric_svgs: &metric_svgs,
        forest_svgs: &forest_svgs,
        extras: reading.extras,
    };
    std::fs::write(path, markdown::render(&doc))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
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
        if path.as_os_str() == "-" {
            write_json(&reading, std::io::stdout().lock())?;
        } else {
            let file = std::fs::File::create(path).with_context(|| {
                format!(
                    "cannot create {}; pass --json with a writable path",
                    path.display()
                )
            })?;
            write_json(&reading, std::io::BufWriter::new(file))?;
        }
    }
    if let Some(path) = &args.out {
        write_markdown(&reading, path)?;
    } else if args.json.is_none() {
        let doc = Doc {
            reports: &reading.reports,
            replications: &reading.replications,
            pairs: &reading.pairs,
            metric_svgs: &[],
            forest_svgs: &[],
            extras: reading.extras,
        };
        print!("{}", markdown::render(&doc));
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
