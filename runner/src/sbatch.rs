//! `runner sbatch`: replicate a ladder on a Slurm cluster as a job array, and read the
//! replicates as one with a dependent job.
//!
//! Slurm decides where each task runs; each task is one ordinary `runner run` with its own
//! tag, so every replicate is a ladder file like any other. Both batch scripts are written
//! beside the ladders before they are submitted: they are evidence of how the files came to be.

use anyhow::{bail, Context};
use ladder::spec::Spec;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `runner sbatch` was asked to do.
pub struct SbatchOptions {
    pub spec: PathBuf,
    pub replicas: usize,
    pub partition: Option<String>,
    pub gres: Option<String>,
    pub time: Option<String>,
    pub tag: Option<String>,
    pub out_dir: PathBuf,
    pub reports_dir: PathBuf,
    pub dry_run: bool,
}

/// The two batch scripts of one submission and where they go.
pub struct Scripts {
    pub ladders: String,
    pub ladders_path: PathBuf,
    /// Holds `{JOB}`, the array's job id, until it is known.
    pub report: String,
    pub report_path: PathBuf,
    pub report_md: PathBuf,
}

/// What was submitted.
pub struct Submitted {
    pub array_job: String,
    pub report_job: String,
    pub scripts: Scripts,
}

/// The absolute form of `path` (Slurm runs the scripts from wherever it likes).
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}

/// Quotes one word for a POSIX shell.
fn sh(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn sh_path(path: &Path) -> String {
    sh(&path.display().to_string())
}

/// Writes both scripts' text; nothing touches the disk or Slurm.
pub fn scripts(
    options: &SbatchOptions,
    runner: &Path,
    analyze: &Path,
    tag: &str,
) -> anyhow::Result<Scripts> {
    if options.replicas == 0 {
        bail!("--replicas 0 runs nothing; ask for at least 1 (2 or more give an across-ladder reading)");
    }
    if !tag
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        || tag.is_empty()
    {
        bail!("--tag {tag:?} may hold only letters, digits, '-', '_' and '.'");
    }
    let loaded = Spec::load(&options.spec)?;
    let name = &loaded.spec.name;
    let (spec, out, reports, cwd) = (
        absolute(&options.spec)?,
        absolute(&options.out_dir)?,
        absolute(&options.reports_dir)?,
        std::env::current_dir().context("cannot read the current folder")?,
    );
    let stem = format!("{name}_{tag}");
    let mut head = format!("#!/usr/bin/env bash\n#SBATCH --chdir={}\n", sh_path(&cwd));
    for (flag, value) in [("partition", &options.partition), ("time", &options.time)] {
        if let Some(v) = value {
            head.push_str(&format!("#SBATCH --{flag}={}\n", sh(v)));
        }
    }
    let mut ladders = head.clone();
    ladders.push_str(&format!(
        "#SBATCH --job-name=abab-{name}\n#SBATCH --array=0-{}\n#SBATCH --output={}\n",
        options.replicas - 1,
        sh_path(&out.join(format!("{stem}-%A_%a.slurm.log")))
    ));
    if let Some(gres) = &options.gres {
        ladders.push_str(&format!("#SBATCH --gres={}\n", sh(gres)));
    }
    ladders.push_str(&format!(
        "# One replicate of ladder {name}: task $SLURM_ARRAY_TASK_ID of job $SLURM_ARRAY_JOB_ID.\n\
         set -u\n\
         host=$(hostname -s)\n\
         # The card Slurm gave this task (its physical index, for the witness); 0 without one.\n\
         card=${{SLURM_STEP_GPUS:-${{SLURM_JOB_GPUS:-${{CUDA_VISIBLE_DEVICES:-0}}}}}}\n\
         card=${{card%%,*}}\n\
         exec {} run {} --tag \"{}-${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}-${{host}}\" --out {} --card \"$card\"\n",
        sh_path(runner),
        sh_path(&spec),
        tag,
        sh_path(&out)
    ));
    let files = format!("{}/{stem}-{{JOB}}_*.csv", sh_path(&out));
    let report_md = reports.join(format!("{stem}.md"));
    let mut report = head;
    report.push_str(&format!(
        "#SBATCH --job-name=abab-{name}-report\n#SBATCH --output={}\n\
         # Reads every replicate of job {{JOB}} as one: verify, then the report with the\n\
         # across-ladder table. A failed task's file ends in an abort record and is listed\n\
         # as a defect; the others are still read.\n\
         set -u\n\
         shopt -s nullglob\n\
         files=({files})\n\
         echo \"{{REPLICAS}} tasks, ${{#files[@]}} ladder files\"\n\
         mkdir -p {}\n\
         {} verify \"${{files[@]}}\"\n\
         {} report \"${{files[@]}}\" -o {} --json {}\n",
        sh_path(&out.join(format!("{stem}-{{JOB}}-report.slurm.log"))),
        sh_path(&reports),
        sh_path(analyze),
        sh_path(analyze),
        sh_path(&report_md),
        sh_path(&report_md.with_extension("json")),
    ));
    let report = report.replace("{REPLICAS}", &options.replicas.to_string());
    Ok(Scripts {
        ladders,
        ladders_path: out.join(format!("{stem}.sbatch")),
        report,
        report_path: out.join(format!("{stem}.report.sbatch")),
        report_md,
    })
}

/// The `analyze` binary beside the runner's own executable.
pub fn analyze_beside(runner: &Path) -> anyhow::Result<PathBuf> {
    let analyze = runner.with_file_name("analyze");
    if !analyze.is_file() {
        bail!(
            "{} is missing; the report job needs it: build it with cargo build --release -p analyze",
            analyze.display()
        );
    }
    Ok(analyze)
}

/// Writes the scripts and submits the array, then the report job after it.
pub fn submit(options: &SbatchOptions) -> anyhow::Result<Submitted> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("sbatch").is_file()));
    if !on_path {
        bail!(
            "sbatch is not on PATH: run this on a Slurm login node, or install Slurm's client \
             (Debian: apt-get install slurm-client); --dry-run prints the script without it"
        );
    }
    let runner = std::env::current_exe().context("cannot find the runner's own executable")?;
    let analyze = analyze_beside(&runner)?;
    let tag = options
        .tag
        .clone()
        .unwrap_or_else(crate::ladder_run::default_tag);
    let mut scripts = scripts(options, &runner, &analyze, &tag)?;
    std::fs::create_dir_all(&options.out_dir).with_context(|| {
        format!(
            "cannot create the output folder {}",
            options.out_dir.display()
        )
    })?;
    write_new(&scripts.ladders_path, &scripts.ladders)?;
    let array_job = sbatch(&[], &scripts.ladders_path)?;
    scripts.report = scripts.report.replace("{JOB}", &array_job);
    write_new(&scripts.report_path, &scripts.report)?;
    let report_job = sbatch(
        &[format!("--dependency=afterany:{array_job}")],
        &scripts.report_path,
    )
    .with_context(|| {
        format!("the ladders are submitted as job {array_job}, but their report job is not")
    })?;
    Ok(Submitted {
        array_job,
        report_job,
        scripts,
    })
}

/// Creates `path` exclusively: a script, like a ladder file, is never overwritten.
fn write_new(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path).with_context(|| {
        format!("cannot create {}; it exists already (pick another --tag) or the folder is not writable", path.display())
    })?;
    file.write_all(text.as_bytes())?;
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok(())
}

/// Runs `sbatch --parsable ARGS SCRIPT` and returns the job id.
fn sbatch(args: &[String], script: &Path) -> anyhow::Result<String> {
    let output = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .arg(script)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run sbatch: {e}"))?;
    if !output.status.success() {
        bail!(
            "sbatch rejected {} ({}): {}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!("sbatch answered {:?}, not a job id", text.trim());
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(sh("/a/b_c-1.csv"), "/a/b_c-1.csv");
        assert_eq!(sh("it's here"), r"'it'\''s here'");
        assert_eq!(sh(""), "''");
        assert_eq!(sh("$HOME"), "'$HOME'");
    }
}
