//! The engine's command line: its subcommands and flags, typed, and the bench plan they ask
//! for. The binary parses with [`parse`]; a test can read any spec's argv with [`try_parse`].

use crate::bench::BenchPlan;
use crate::config::{ModelConfig, MAX_DRAFT};
use crate::options::{self, BackendChoice, Lookup, Rows};
use anyhow::Result;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "engine",
    version,
    about = "Decode engine for the hybrid Gated DeltaNet + gated attention + MoE architecture with MTP speculative decoding"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Time prefill and decode; print a CSV header and one row on stdout.
    Bench(BenchArgs),
    /// Print the backend, the device and the model's sizes.
    Info(ModelArgs),
    /// List the ENGINE_* environment variables, their values and defaults.
    Options,
    /// Compile every kernel into the kernel cache without opening a device (NVRTC only), so
    /// that a GPU machine given the cache skips the compile on its first start.
    Kernels,
    /// Read the card's energy counter in a tight loop while the device streams memory: how
    /// often it moves, by how much, and the span a figure of 1 % needs.
    EnergyCounter {
        /// Seconds of load to poll through.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
}

#[derive(Args)]
pub struct ModelArgs {
    /// Model preset: tiny, small, qwen3.6-35b-a3b, dense-27b.
    #[arg(long, default_value = "small", conflicts_with = "config")]
    pub preset: String,
    /// Model shape from a JSON config file (the fields of a preset; see README).
    #[arg(long, value_name = "FILE.json")]
    pub config: Option<PathBuf>,
    /// Backend: cpu, cuda, or auto (cuda when available, else cpu). Default: $ENGINE_BACKEND or cpu.
    #[arg(long, value_enum)]
    pub backend: Option<BackendChoice>,
}

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Prompt tokens and generated tokens per prompt (`-pg` as in llama-bench).
    #[arg(long = "pg", value_name = "PP,TG", default_value = "128,64", value_parser = parse_pg)]
    pub pg: (usize, usize),
    /// Timed repetitions.
    #[arg(short = 'r', long = "reps", value_name = "REPS", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Untimed repetitions before the timed ones.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,
    /// Tokens each warm-up repetition decodes per prompt (default: as many as a timed one).
    #[arg(long, value_name = "N")]
    pub warmup_decode: Option<usize>,
    /// CUDA: build the model this many times in turn, each after a placement spacer of a
    /// random number of 2 MiB pages, with its own warm-up and `-r` timed reps: a cell that
    /// samples N placements of its memory. The summary row averages all N × REPS timed reps.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub layouts: u64,
    /// Prompt positions per prefill pass.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=8192))]
    pub prefill_chunk: u64,
    /// Speculative decoding with the MTP draft layer (omit for plain greedy decode).
    #[arg(long, value_enum)]
    pub spec: Option<Spec>,
    /// Draft tokens per speculative round (1..=5; default 3 with --spec).
    #[arg(long, value_name = "K", requires = "spec", value_parser = clap::value_parser!(u64).range(1..=MAX_DRAFT as u64))]
    pub draft_tokens: Option<u64>,
    /// Weights from a safetensors checkpoint (HF Qwen3.5 names) instead of synthetic ones.
    #[arg(long, value_name = "FILE.safetensors")]
    pub weights: Option<PathBuf>,
    /// Seed of the synthetic weights and prompts.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Prompts per rep (each prefilled and decoded in turn).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub prompts: u64,
    /// Worker threads (default: all cores).
    #[arg(short = 't', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,
    /// CUDA: run every decode round's kernels eagerly instead of replaying captured graphs.
    #[arg(long)]
    pub no_cuda_graph: bool,
    /// The read bandwidth (GB/s) to quote the decode against; CUDA measures it at start
    /// when omitted (a 4 GiB read), the CPU leaves the roofline columns empty.
    #[arg(long, value_name = "GB/S", value_parser = parse_ceiling)]
    pub read_ceiling_gbs: Option<f64>,
    /// The rows after the summary row: none, one per operation (CPU) or kernel (CUDA) of the
    /// decode timed in reps of their own after the timed ones, or one per timed rep.
    #[arg(long, value_enum, default_value_t = Rows::Summary)]
    pub rows: Rows,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Spec {
    Mtp,
}

fn parse_ceiling(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number of GB/s, got `{s}`")),
    }
}

fn parse_pg(s: &str) -> Result<(usize, usize), String> {
    let err = || format!("expected two positive integers PP,TG (e.g. 128,64), got `{s}`");
    let (a, b) = s.split_once(',').ok_or_else(err)?;
    let a: usize = a.trim().parse().map_err(|_| err())?;
    let b: usize = b.trim().parse().map_err(|_| err())?;
    if a == 0 || b == 0 {
        return Err(err());
    }
    Ok((a, b))
}

impl ModelArgs {
    pub fn config(&self) -> Result<ModelConfig> {
        match &self.config {
            Some(path) => ModelConfig::from_json_file(path),
            None => ModelConfig::preset(&self.preset),
        }
    }
}

impl BenchArgs {
    /// The plan these flags and the environment (`ENGINE_DECODE_PAD_PCT`) ask for, checked.
    pub fn plan(&self, lookup: Lookup) -> Result<BenchPlan> {
        let plan = BenchPlan {
            n_prompt: self.pg.0,
            n_gen: self.pg.1,
            reps: self.reps as usize,
            warmup: self.warmup,
            warmup_decode: self.warmup_decode,
            prefill_chunk: self.prefill_chunk as usize,
            draft_tokens: self
                .spec
                .map(|Spec::Mtp| self.draft_tokens.unwrap_or(3) as usize),
            prompts: self.prompts as usize,
            seed: self.seed,
            read_ceiling_gbs: self.read_ceiling_gbs,
            decode_pad_pct: options::decode_pad_pct(lookup)?,
        };
        plan.check()?;
        Ok(plan)
    }
}

/// The arguments with llama-bench's `-pg` spelled as the long flag `--pg` (clap has no
/// two-letter short flags).
fn with_long_pg(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|a| match a.to_str() {
            Some("-pg") => "--pg".into(),
            Some(s) if s.starts_with("-pg=") => format!("-{s}").into(),
            _ => a,
        })
        .collect()
}

/// The command line, its first word the program, as the binary reads it.
pub fn try_parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, clap::Error> {
    // Both subcommands list the variables they read (all of them: the CPU's arm, the
    // backend, the GPU's L2 and launches), as `engine options` does.
    let help = options::help();
    let command = Cli::command()
        .mut_subcommand("bench", |c| c.after_help(help.clone()))
        .mut_subcommand("info", |c| c.after_help(help.clone()));
    let matches = command.try_get_matches_from(with_long_pg(args))?;
    Cli::from_arg_matches(&matches)
}

/// The process's command line; a mistake (or `--help`) prints and exits as clap does.
pub fn parse() -> Cli {
    try_parse(std::env::args_os()).unwrap_or_else(|e| e.exit())
}
