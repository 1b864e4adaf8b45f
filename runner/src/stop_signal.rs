//! The signals that stop a run (SIGINT, SIGTERM, SIGHUP): caught, not fatal, so that a ladder
//! ends between cells with its file whole and a fleet forwards the stop to every member.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

const STOPPING: [(i32, &str); 3] = [
    (signal_hook::consts::SIGINT, "SIGINT"),
    (signal_hook::consts::SIGTERM, "SIGTERM"),
    (signal_hook::consts::SIGHUP, "SIGHUP"),
];

/// Catches the stopping signals: the returned number is 0 until one arrives, then its number.
pub fn catch() -> std::io::Result<Arc<AtomicUsize>> {
    let received = Arc::new(AtomicUsize::new(0));
    for (sig, _) in STOPPING {
        signal_hook::flag::register_usize(sig, Arc::clone(&received), sig as usize)?;
    }
    Ok(received)
}

/// The name of a signal `catch` recorded, `None` while none has arrived.
pub fn name(signal: usize) -> Option<&'static str> {
    if signal == 0 {
        return None;
    }
    let named = STOPPING.iter().find(|&&(sig, _)| sig as usize == signal);
    Some(named.map_or("a signal", |&(_, name)| name))
}
