//! The sane bounds of a ladder, with the error texts that name them.
//!
//! The runner refuses a spec beyond them before it creates a file, and the readers refuse a
//! start record beyond them before they allocate anything by its claims, so that no header,
//! however hostile, makes a reader panic, abort or hang.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The most cells (`passes × arms`) one ladder may have.
pub const MAX_CELLS: usize = 100_000;
/// The most arms one ladder may have (the report compares every pair of arms).
pub const MAX_ARMS: usize = 128;
/// The longest a cell may run: seven days.
pub const MAX_TIMEOUT_S: f64 = 7.0 * 24.0 * 3600.0;
/// The largest ladder file a reader reads: 1 GiB.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// `Err` names the limit when `passes × arms` cells are more than a ladder may have.
pub fn cells(passes: usize, arms: usize) -> Result<(), String> {
    if arms > MAX_ARMS {
        return Err(format!(
            "{arms} arms, more than the limit of {MAX_ARMS} arms a ladder may have"
        ));
    }
    match passes.checked_mul(arms) {
        Some(n) if n <= MAX_CELLS => Ok(()),
        _ => Err(format!(
            "{passes} passes × {arms} arms is more than the limit of {MAX_CELLS} cells a ladder may have"
        )),
    }
}

/// `Err` names the limit when a cell's timeout is not a positive number of at most 7 days.
pub fn timeout_s(value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 && value <= MAX_TIMEOUT_S {
        Ok(())
    } else {
        Err(format!(
            "timeout_s = {value} is not a positive number of seconds up to the limit of {MAX_TIMEOUT_S} (7 days)"
        ))
    }
}

/// Reads a ladder file: only a regular file (a FIFO, a directory or a device would block or
/// mislead a reader), and at most [`MAX_FILE_BYTES`]. `Err` says which and what to do.
pub fn read_ladder_file(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(format!(
            "{shown} is {what}; pass the path of a ladder file (raw/NAME_TAG.csv)"
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} holds {} bytes, more than the limit of {MAX_FILE_BYTES} bytes for a ladder file",
            meta.len()
        ));
    }
    // The file was regular when looked at; it could be swapped for a FIFO before the open,
    // so the open never blocks and the read stops at the limit whatever the file became.
    let file = open_nonblocking(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} grew past the limit of {MAX_FILE_BYTES} bytes while it was read"
        ));
    }
    Ok(bytes)
}

fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: an open of a FIFO without a writer returns at once instead of waiting.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is no longer a regular file"));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_bounded_without_overflow() {
        assert!(cells(781, 128).is_ok());
        assert!(cells(782, 128).unwrap_err().contains("100000 cells"));
        assert!(cells(usize::MAX, 2).unwrap_err().contains("limit"));
        assert!(cells(1, 129).unwrap_err().contains("128 arms"));
    }

    #[test]
    fn timeouts_are_positive_and_at_most_a_week() {
        assert!(timeout_s(600.0).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e20] {
            assert!(timeout_s(bad).unwrap_err().contains("7 days"), "{bad}");
        }
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_ladder_file(dir.path()).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Would block forever on a plain read: no writer ever opens the FIFO.
        let e = read_ladder_file(&fifo).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_ladder_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let file = dir.path().join("l.csv");
        std::fs::write(&file, "x\n").unwrap();
        assert_eq!(read_ladder_file(&file).unwrap(), b"x\n");
    }
}
