//! `analyze report`.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Ladder files to report on.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("report is not available yet for {:?}", args.files)
}
