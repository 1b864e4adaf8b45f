//! `runner fleet`: one complete ladder per card (or CPU slot) of one host, run concurrently.
//!
//! Each ladder is its own `runner run` process writing its own file, so that every file is
//! one connected run exactly as a single ladder's would be; the fleet only starts them,
//! shows one progress display for all, forwards a stop to each, and says at the end which
//! files are connected.

use anyhow::{bail, Context};
use ladder::spec::Spec;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// What `runner fleet` was asked to do.
pub struct FleetOptions {
    pub spec: PathBuf,
    /// Card indices (NVML numbering) or CPU slot numbers; `None` reads the spec's `cards`,
    /// else every card.
    pub cards: Option<Vec<u32>>,
    pub tag: Option<String>,
    pub out_dir: PathBuf,
    /// CPUs pinned to each ladder; given, or where no GPU is found, the slots are CPU slots.
    pub cpus_per_ladder: Option<usize>,
}

/// Where one ladder of the fleet runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A GPU: its cells see `CUDA_VISIBLE_DEVICES=<index>` and the witness reads it.
    Card(u32),
    /// A set of CPUs the ladder's runner and its cells are pinned to.
    Cpus { index: u32, cpus: Vec<usize> },
}

impl Slot {
    pub fn index(&self) -> u32 {
        match self {
            Slot::Card(i) | Slot::Cpus { index: i, .. } => *i,
        }
    }
}

/// One finished ladder of the fleet.
pub struct Member {
    pub slot: Slot,
    pub path: PathBuf,
    pub exit: Option<i32>,
    /// `analyze verify`'s verdict of the file, in words.
    pub verdict: String,
    pub connected: bool,
}

/// The slots a fleet runs on: CPU slots when asked or when no card is found.
pub fn slots(
    cards: &[u32],
    cpus_per_ladder: Option<usize>,
    gpus: u32,
    cpus: usize,
) -> anyhow::Result<Vec<Slot>> {
    if cards.is_empty() {
        bail!("no cards to run on; pass --cards 0,1 (card indices, or CPU slots with --cpus-per-ladder)");
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = cards.iter().find(|c| !seen.insert(**c)) {
        bail!("card {dup} is listed twice in --cards; each card runs one ladder");
    }
    match cpus_per_ladder {
        None if gpus > 0 => {
            if let Some(missing) = cards.iter().find(|&&c| c >= gpus) {
                bail!(
                    "card {missing} does not exist: this host has {gpus} card(s), 0 to {}",
                    gpus - 1
                );
            }
            Ok(cards.iter().map(|&c| Slot::Card(c)).collect())
        }
        per => {
            let per = per.unwrap_or(1).max(1);
            cards
                .iter()
                .map(|&c| {
                    let first = c as usize * per;
                    if first + per > cpus {
                        bail!(
                            "CPU slot {c} needs CPUs {first}..{} but this host has {cpus}; \
                             use fewer slots or a smaller --cpus-per-ladder",
                            first + per - 1
                        );
                    }
                    Ok(Slot::Cpus {
                        index: c,
                        cpus: (first..first + per).collect(),
                    })
                })
                .collect()
        }
    }
}

/// The cards the spec or the command line asks for; `all` is every card (or CPU slot).
pub fn wanted_cards(
    given: Option<&[u32]>,
    spec: &Spec,
    gpus: u32,
    cpus: usize,
    per: Option<usize>,
) -> Vec<u32> {
    if let Some(cards) = given {
        return cards.to_vec();
    }
    match &spec.cards {
        Some(ladder::spec::Cards::List(list)) => list.clone(),
        _ if gpus > 0 && per.is_none() => (0..gpus).collect(),
        _ => (0..(cpus / per.unwrap_or(1).max(1)) as u32).collect(),
    }
}

/// The host's short name, made safe for a file name.
pub fn host_name() -> String {
    let full = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let short = full.split('.').next().unwrap_or_default();
    let safe: String = short
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "host".into()
    } else {
        safe
    }
}

/// The tag of one ladder of the fleet: `<tag>-<host>-card<N>`.
pub fn member_tag(tag: &str, host: &str, slot: &Slot) -> String {
    format!("{tag}-{host}-card{}", slot.index())
}

fn gpu_count() -> u32 {
    nvml_wrapper::Nvml::init()
        .ok()
        .and_then(|n| n.device_count().ok())
        .unwrap_or(0)
}

/// Runs the fleet to its end (or its interruption) and verifies every file.
pub fn run_fleet(options: &FleetOptions) -> anyhow::Result<Vec<Member>> {
    let loaded = Spec::load(&options.spec)?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let gpus = gpu_count();
    let cards = wanted_cards(
        options.cards.as_deref(),
        &loaded.spec,
        gpus,
        cpus,
        options.cpus_per_ladder,
    );
    let slots = slots(&cards, options.cpus_per_ladder, gpus, cpus)?;
    let tag = options
        .tag
        .clone()
        .unwrap_or_else(crate::ladder_run::default_tag);
    let host = host_name();
    let runner = std::env::current_exe().context("cannot find the runner's own executable")?;
    let signal = crate::stop_signal::catch()?;
    let (lines, inbox) = mpsc::channel();
    let mut children = Vec::new();
    for (i, slot) in slots.iter().enumerate() {
        let member = member_tag(&tag, &host, slot);
        let child = spawn(&runner, options, slot, &member)
            .with_context(|| format!("cannot start the ladder on {}", label(slot)))?;
        children.push(watch(child, i, lines.clone()));
    }
    drop(lines);
    let mut display = Display::new(&slots);
    let exits = wait_all(&mut children, &inbox, &signal, &mut display);
    display.finish();
    Ok(slots
        .into_iter()
        .zip(exits)
        .map(|(slot, exit)| {
            let path = options.out_dir.join(format!(
                "{}_{}.csv",
                loaded.spec.name,
                member_tag(&tag, &host, &slot)
            ));
            let (connected, verdict) = verify(&path);
            Member {
                slot,
                path,
                exit,
                verdict,
                connected,
            }
        })
        .collect())
}

fn label(slot: &Slot) -> String {
    match slot {
        Slot::Card(i) => format!("card {i}"),
        Slot::Cpus { index, cpus } => format!("CPU slot {index} (CPUs {cpus:?})"),
    }
}

fn spawn(runner: &Path, options: &FleetOptions, slot: &Slot, tag: &str) -> std::io::Result<Child> {
    let mut command = Command::new(runner);
    command
        .arg("run")
        .arg(&options.spec)
        .args(["--tag", tag, "--card", &slot.index().to_string()])
        .arg("--out")
        .arg(&options.out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match slot {
        Slot::Card(index) => {
            command.env("CUDA_VISIBLE_DEVICES", index.to_string());
        }
        Slot::Cpus { cpus, .. } => {
            let cpus = cpus.clone();
            // SAFETY: only sched_setaffinity, which is async-signal-safe, runs in the child.
            unsafe {
                command.pre_exec(move || pin(&cpus));
            }
        }
    }
    command.spawn()
}

/// Pins the calling process (and so everything it starts) to `cpus`.
fn pin(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A running member and the thread forwarding its stderr lines.
struct Watched {
    child: Child,
    exit: Option<i32>,
}

fn watch(mut child: Child, member: usize, lines: mpsc::Sender<(usize, String)>) -> Watched {
    let stderr = child.stderr.take().expect("stderr is piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send((member, line)).is_err() {
                break;
            }
        }
    });
    Watched { child, exit: None }
}

/// Waits for every member, updating the display and forwarding a stop signal once.
fn wait_all(
    members: &mut [Watched],
    inbox: &mpsc::Receiver<(usize, String)>,
    signal: &AtomicUsize,
    display: &mut Display,
) -> Vec<Option<i32>> {
    let mut forwarded = false;
    loop {
        while let Ok((member, line)) = inbox.recv_timeout(Duration::from_millis(100)) {
            display.line(member, &line);
        }
        let received = signal.load(Ordering::SeqCst);
        if received != 0 && !forwarded {
            forwarded = true;
            display.note(&format!(
                "stopping: signal {received} forwarded to every ladder"
            ));
            for m in members.iter().filter(|m| m.exit.is_none()) {
                // SAFETY: kill only sends a signal to our own, still unreaped child.
                unsafe {
                    libc::kill(m.child.id() as libc::pid_t, received as libc::c_int);
                }
            }
        }
        for m in members.iter_mut().filter(|m| m.exit.is_none()) {
            if let Ok(Some(status)) = m.child.try_wait() {
                m.exit = Some(status.code().unwrap_or(-1));
            }
        }
        if members.iter().all(|m| m.exit.is_some()) {
            for (member, line) in inbox.try_iter() {
                display.line(member, &line);
            }
            return members.iter().map(|m| m.exit).collect();
        }
    }
}

/// One status line for all ladders: on a terminal redrawn in place, elsewhere one line per
/// change. Lines a member prints that are not progress are passed on, labelled.
struct Display {
    labels: Vec<String>,
    states: Vec<String>,
    terminal: bool,
}

impl Display {
    fn new(slots: &[Slot]) -> Display {
        Display {
            labels: slots.iter().map(|s| format!("card{}", s.index())).collect(),
            states: vec!["starting".into(); slots.len()],
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn line(&mut self, member: usize, line: &str) {
        match progress_of(line) {
            Some(state) => {
                self.states[member] = state;
                self.draw();
            }
            None => self.note(&format!("{}: {line}", self.labels[member])),
        }
    }

    fn note(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            writeln!(err, "\r\x1b[2K{text}")
        } else {
            writeln!(err, "{text}")
        };
        drop(err);
        self.draw();
    }

    fn draw(&self) {
        let status: Vec<String> = self
            .labels
            .iter()
            .zip(&self.states)
            .map(|(l, s)| format!("{l} {s}"))
            .collect();
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[2Kfleet: {}", status.join(" | "))
        } else {
            writeln!(err, "fleet: {}", status.join(" | "))
        };
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

/// `cell k/N` from a member's plain progress line.
fn progress_of(line: &str) -> Option<String> {
    let rest = line.strip_prefix("cell ")?;
    let count = rest.split_whitespace().next()?;
    let (done, total) = count.split_once('/')?;
    let (done, total): (usize, usize) = (
        done.parse().ok()?,
        total.trim_end_matches(':').parse().ok()?,
    );
    Some(format!("{done}/{total}"))
}

/// The replay's verdict of one member's file.
fn verify(path: &Path) -> (bool, String) {
    match std::fs::read(path) {
        Ok(bytes) => {
            let verdict = ladder::replay(&bytes).verdict;
            let mut words = verdict.summary();
            if let Some(first) = verdict.defects.first() {
                words.push_str(&format!(
                    "; line {}: {}: {}",
                    first.line, first.kind, first.detail
                ));
            }
            (verdict.connected, words)
        }
        Err(e) => (false, format!("no file: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_slots_take_consecutive_cpus() {
        let slots = slots(&[0, 1], Some(2), 0, 4).unwrap();
        assert_eq!(
            slots[1],
            Slot::Cpus {
                index: 1,
                cpus: vec![2, 3]
            }
        );
        let e = slots_err(&[0, 2], Some(2), 0, 4);
        assert!(
            e.contains("CPU slot 2 needs CPUs 4..5") && e.contains("has 4"),
            "{e}"
        );
    }

    #[test]
    fn cards_must_exist_and_be_distinct() {
        assert_eq!(slots(&[1], None, 2, 4).unwrap(), vec![Slot::Card(1)]);
        assert!(slots_err(&[2], None, 2, 4).contains("card 2 does not exist"));
        assert!(slots_err(&[0, 0], None, 2, 4).contains("listed twice"));
        // Without a GPU the same --cards are CPU slots of one CPU each.
        assert_eq!(
            slots(&[0, 1], None, 0, 2).unwrap()[1],
            Slot::Cpus {
                index: 1,
                cpus: vec![1]
            }
        );
    }

    fn slots_err(cards: &[u32], per: Option<usize>, gpus: u32, cpus: usize) -> String {
        slots(cards, per, gpus, cpus).unwrap_err().to_string()
    }

    #[test]
    fn progress_lines_are_read_and_others_passed_on() {
        assert_eq!(
            progress_of("cell 3/30 pass 0 slot 2 (arm off): 1.2 s").as_deref(),
            Some("3/30")
        );
        assert_eq!(progress_of("runner: ladder aborted after 3 cells"), None);
    }

    #[test]
    fn member_tags_name_host_and_card() {
        assert_eq!(member_tag("t1", "node7", &Slot::Card(3)), "t1-node7-card3");
    }
}
