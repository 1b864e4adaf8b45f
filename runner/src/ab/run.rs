//! Running `runner ab`: the generated spec written, the ladder run from it, and `analyze`
//! asked for the summary and the exports.

use super::*;

/// What `runner ab` did: the spec it wrote, the ladder, and what `analyze` said of it.
pub struct AbRun {
    pub spec: PathBuf,
    pub outcome: Outcome,
    /// For a complete ladder, `analyze report --summary`'s output, or why there is none.
    pub summary: Option<Result<String, String>>,
}

/// Writes the generated spec and runs it; then, for a complete ladder, `analyze report`
/// prints its summary and writes the exports.
pub fn run(request: &AbRequest, card: u32, colour: bool) -> Result<AbRun, String> {
    let generated = generate(request)?;
    write_new(&request.out, &generated)?;
    let options = RunOptions {
        spec: generated.path.clone(),
        tag: Some(request.tag.clone()),
        out_dir: request.out.clone(),
        card,
        card_playback: None,
        exit_fix: ExitFix::AbFlag,
    };
    let outcome = ladder_run::run_ladder(&options).map_err(|e| format!("{e:#}"))?;
    let summary = outcome.aborted.is_none().then(|| {
        analyze_report(
            analyze_beside_runner().as_deref(),
            &outcome.path,
            &request.exports,
            colour,
        )
    });
    Ok(AbRun {
        spec: generated.path,
        outcome,
        summary,
    })
}

/// Creates the spec file; an existing one is never overwritten.
fn write_new(folder: &Path, generated: &GeneratedSpec) -> Result<(), String> {
    use std::io::Write;
    std::fs::create_dir_all(folder)
        .and_then(|_| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&generated.path)?
                .write_all(generated.text.as_bytes())
        })
        .map_err(|e| format!("cannot write {}: {e}", generated.path.display()))
}

/// The `analyze` executable beside this `runner`, when there is one.
pub fn analyze_beside_runner() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("analyze");
    path.is_file().then_some(path)
}

/// `analyze report FILE --summary`'s output (with the exports written), or why it could not
/// be had. With `colour`, analyze is told to keep its colour although its stdout is a pipe.
pub fn analyze_report(
    analyze: Option<&Path>,
    ladder_file: &Path,
    exports: &Exports,
    colour: bool,
) -> Result<String, String> {
    let analyze = analyze.ok_or("analyze was not found beside the runner")?;
    let mut command = std::process::Command::new(analyze);
    command.arg("report").arg(ladder_file).arg("--summary");
    for (_, option, path) in exports.each() {
        command.arg(option).arg(path);
    }
    if colour {
        command.env("CLICOLOR_FORCE", "1");
    }
    let out = command
        .output()
        .map_err(|e| format!("{} could not be started: {e}", analyze.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || stdout.trim().is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr.lines().next().unwrap_or("no output");
        return Err(format!(
            "{} report --summary failed ({}): {why}",
            analyze.display(),
            out.status
        ));
    }
    Ok(stdout)
}
