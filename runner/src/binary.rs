//! The measured executable: resolved once, hashed at the start and again before every cell,
//! so that a ladder never silently mixes two builds.

use std::path::{Path, PathBuf};

pub struct Binary {
    pub path: PathBuf,
    pub blake3: String,
}

impl Binary {
    /// Resolves `program` as the OS would (a path, or a name looked up in PATH), checks that
    /// it may be executed, and hashes it.
    pub fn resolve(program: &str) -> anyhow::Result<Binary> {
        let path = find(program).ok_or_else(|| {
            anyhow::anyhow!(
                "the program {program:?} was not found (as a path or in PATH); build it first (e.g. cargo build --release) or fix the command"
            )
        })?;
        if !is_executable(&path) {
            anyhow::bail!(
                "the program {} is not executable; chmod +x it or fix the command",
                path.display()
            );
        }
        let blake3 = hash(&path)?;
        Ok(Binary { path, blake3 })
    }

    /// `Err` names both hashes when the file changed since the ladder started.
    pub fn check_unchanged(&self) -> Result<(), String> {
        let now = hash(&self.path).map_err(|e| format!("{e:#}"))?;
        if now == self.blake3 {
            Ok(())
        } else {
            Err(format!(
                "binary-changed: the binary {} changed (blake3 {} at the start, {now} now)",
                self.path.display(),
                self.blake3
            ))
        }
    }
}

fn find(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = Path::new(program);
        return path
            .is_file()
            .then(|| path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file() && is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

fn hash(path: &Path) -> anyhow::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_mmap(path)
        .map_err(|e| anyhow::anyhow!("cannot read the binary {}: {e}", path.display()))?;
    Ok(hasher.finalize().to_hex().to_string())
}
