//! What `runner ab` and `runner run` print is plain text: no markup (`<`, `&#`, backquote)
//! with colour forced off or on, colour only when asked for, and analyze's colour kept
//! when the runner's own output wants it.

mod common;

use common::runner;
use std::path::Path;
use std::process::{Command, Output};

/// The colour settings a user may have: none wanted, or forced on a pipe.
const COLOUR: [(&str, bool); 2] = [("NO_COLOR", false), ("CLICOLOR_FORCE", true)];

/// Both streams of `out`, asserting that no markup reached them and that escape codes are
/// in them exactly when colour was forced.
fn assert_plain(what: &str, out: &Output, coloured: bool) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for markup in ["<", "&#", "`"] {
        assert!(!text.contains(markup), "{what}: {markup:?} in:\n{text}");
    }
    assert_eq!(
        text.contains('\u{1b}'),
        coloured,
        "{what}: colour {coloured} expected in:\n{text}"
    );
    text
}

fn command(program: &Path, dir: &Path, colour: &str) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env(colour, "1");
    command
}

#[test]
fn runner_ab_and_runner_run_print_plain_text_with_colour_only_when_forced() {
    let analyze = Path::new(runner()).with_file_name("analyze");
    assert!(
        analyze.is_file(),
        "{} is missing: cargo build --release -p analyze",
        analyze.display()
    );
    for (colour, coloured) in COLOUR {
        let dir = tempfile::tempdir().unwrap();
        let ab = command(Path::new(runner()), dir.path(), colour)
            .args(["ab", "sleep 0.002", "true", "--passes", "3", "--tag", "t"])
            .output()
            .unwrap();
        assert!(
            ab.status.success(),
            "{}",
            String::from_utf8_lossy(&ab.stderr)
        );
        let text = assert_plain("runner ab", &ab, coloured);
        // The report's summary came through, and its colour with it when forced.
        assert!(
            text.contains("QUALIFIED") || text.contains("DISQUALIFIED"),
            "{text}"
        );
        assert!(text.contains("against the base"), "{text}");
        assert!(text.contains("wrote raw/ab-a-b_t.csv (9 cells)"), "{text}");
        let run = command(Path::new(runner()), dir.path(), colour)
            .args(["run", "raw/ab-a-b_t.toml", "--tag", "again"])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let text = assert_plain("runner run", &run, coloured);
        assert!(text.contains("wall s/cell"), "{text}");
    }
}

#[test]
fn the_runners_own_reading_and_an_abort_are_plain_text_too() {
    let dir = tempfile::tempdir().unwrap();
    // A runner with no analyze beside it reads the ladder itself.
    let lone = dir.path().join("bin/runner");
    std::fs::create_dir_all(lone.parent().unwrap()).unwrap();
    std::fs::copy(runner(), &lone).unwrap();
    for (colour, coloured) in COLOUR {
        let tag = format!("t-{coloured}");
        let ab = command(&lone, dir.path(), colour)
            .args(["ab", "sleep 0.02", "true", "--passes", "3", "--tag", &tag])
            .output()
            .unwrap();
        assert!(
            ab.status.success(),
            "{}",
            String::from_utf8_lossy(&ab.stderr)
        );
        let text = assert_plain("the runner's reading", &ab, coloured);
        // It speaks as the report does: a time as a ratio, the faster arm the subject.
        let b = text.lines().find(|l| l.starts_with("  b ")).unwrap();
        assert!(
            b.contains("ran ") && b.contains("× faster than a ["),
            "{text}"
        );
        let failed = command(&lone, dir.path(), colour)
            .args([
                "ab",
                "true",
                "false",
                "--passes",
                "3",
                "--tag",
                &format!("f{tag}"),
            ])
            .output()
            .unwrap();
        assert_eq!(failed.status.code(), Some(1));
        let text = assert_plain("an abort", &failed, coloured);
        assert!(text.contains("rerun with --ok-exit 0,1"), "{text}");
    }
}

/// Runs `program ARGS` with its stdout on a new pseudo-terminal and returns what it wrote.
fn on_a_terminal(program: &Path, dir: &Path, args: &[&str]) -> String {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let (mut leader, mut follower) = (0, 0);
    // SAFETY: openpty fills two descriptors, which are owned by the Files below.
    let opened = unsafe {
        libc::openpty(
            &mut leader,
            &mut follower,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    let (mut leader, follower) = unsafe {
        (
            std::fs::File::from_raw_fd(leader),
            std::fs::File::from_raw_fd(follower),
        )
    };
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env("TERM", "xterm-256color")
        .stdin(std::process::Stdio::null())
        .stdout(follower)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    // Once the runner has exited and closed its end, reading the leader fails (EIO).
    while let Ok(n) = leader.read(&mut buf) {
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    let status = child.wait_with_output().unwrap().status;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(status.success(), "{text}");
    text
}

#[test]
fn on_a_terminal_the_reports_colour_comes_through_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["ab", "sleep 0.002", "true", "--passes", "3", "--tag", "t"];
    let text = on_a_terminal(Path::new(runner()), dir.path(), &args);
    for markup in ["<", "&#", "`"] {
        assert!(!text.contains(markup), "{markup:?} in:\n{text}");
    }
    // The status word of analyze's summary is coloured, though analyze wrote to a pipe.
    assert!(text.contains("ab-a-b / t: \u{1b}["), "{text}");
}
