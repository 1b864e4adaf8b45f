//! What the runner checks before it creates the ladder file, beyond the spec's own checks:
//! that every program the spec names can be run, and that the file names it will create
//! are safe and free. A refusal here leaves nothing behind.

use ladder::names;
use ladder::spec::LoadedSpec;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Every program the spec names (the command's, and each arm's own) exists, is a file and
/// is executable; `Err` names the spec's file and line.
pub fn programs(loaded: &LoadedSpec) -> anyhow::Result<()> {
    let spec = &loaded.spec;
    let arm_programs = spec
        .arms
        .iter()
        .filter_map(|a| a.command.as_ref()?.first().cloned());
    for program in std::iter::once(spec.default_program()).chain(arm_programs) {
        if let Err(problem) = runnable(&program) {
            let line = loaded
                .line_of(&program)
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            anyhow::bail!(
                "{}{line}: the command's program {program:?} {problem}",
                loaded.path.display()
            );
        }
    }
    Ok(())
}

/// The tag is a safe file-name part, and neither the ladder file nor its side log exists.
pub fn file_names(tag: &str, path: &Path) -> anyhow::Result<()> {
    names::file_part("the tag", tag).map_err(|e| anyhow::anyhow!("{e}; pass another --tag"))?;
    let log = path.with_extension("stderr.log");
    if log.exists() {
        anyhow::bail!(
            "the side log {} already exists, left by an earlier run; remove it or pick another --tag",
            log.display()
        );
    }
    Ok(())
}

/// `Err` says what is wrong with `program` in words that fit after its name.
fn runnable(program: &str) -> Result<PathBuf, String> {
    let path = locate(program)?;
    let meta = std::fs::metadata(&path)
        .map_err(|e| format!("cannot be read ({}): {e}", path.display()))?;
    if meta.is_dir() {
        return Err(format!(
            "is a directory ({}); name the executable inside it",
            path.display()
        ));
    }
    if !meta.is_file() {
        return Err(format!("is not a regular file ({})", path.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "is not executable ({}); chmod +x it or name the right file",
            path.display()
        ));
    }
    Ok(path)
}

/// The path the OS would run: `program` itself when it holds a `/`, else the first entry
/// of PATH that holds a file of that name (or, failing that, anything of that name).
fn locate(program: &str) -> Result<PathBuf, String> {
    let not_found = || {
        "was not found (as a path or in PATH); build it first (e.g. cargo build --release) or fix command in the spec"
            .to_string()
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.exists() {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let candidates: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(program))
        .filter(|c| c.exists())
        .collect();
    candidates
        .iter()
        .find(|c| c.is_file())
        .or(candidates.first())
        .cloned()
        .ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_and_plain_files_are_not_runnable() {
        let dir = tempfile::tempdir().unwrap();
        let shown = dir.path().display().to_string();
        assert!(runnable(&shown).unwrap_err().starts_with("is a directory"));
        let file = dir.path().join("engine");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let shown = file.display().to_string();
        assert!(runnable(&shown)
            .unwrap_err()
            .starts_with("is not executable"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(runnable(&shown).unwrap(), file);
        assert!(runnable("/no/such/engine")
            .unwrap_err()
            .starts_with("was not found"));
        assert!(runnable("sh").is_ok());
    }

    #[test]
    fn tags_are_file_name_parts_and_side_logs_are_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo_t.csv");
        assert!(file_names("t", &path).is_ok());
        assert!(file_names("../t", &path)
            .unwrap_err()
            .to_string()
            .contains("--tag"));
        std::fs::write(path.with_extension("stderr.log"), "").unwrap();
        assert!(file_names("t", &path)
            .unwrap_err()
            .to_string()
            .contains("already exists"));
    }
}
