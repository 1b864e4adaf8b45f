//! The decode pad (`ENGINE_DECODE_PAD_PCT`, the known-effect control): every padded decode
//! round ends with a busy-wait of P % of the round's own time, the host's turnaround before
//! the round included, so that the decode's wall time grows by P % and its speed changes by
//! `1/(1 + P/100)`, with no repetition spent timing the rounds first.
//!
//! The rule is here once; the CPU backend runs it on the host's clock and `kernels/pad.cu` on
//! the device's (its GPU test checks the kernel against [`wait_ns`]).

use std::time::{Duration, Instant};

/// The turnaround counted before a round: the time since the previous padded round ended,
/// where that is no longer than the round itself (the rounds ran back to back), else the last
/// turnaround counted (a prefill, the end of a rep, or nothing lies before: the first round).
pub fn turnaround_ns(own_ns: u64, since_previous_ns: Option<u64>, last_ns: u64) -> u64 {
    match since_previous_ns {
        Some(since) if since <= own_ns => since,
        _ => last_ns,
    }
}

/// The wait that ends a round: `fraction` of the round's own time and its turnaround.
pub fn wait_ns(fraction: f64, own_ns: u64, turnaround_ns: u64) -> u64 {
    (fraction * own_ns.saturating_add(turnaround_ns) as f64) as u64
}

/// What the pads of a span counted, on their own clock: the time they waited, the rounds' own
/// time and turnarounds their waits were a fraction of, and the rounds. A pad's wait that
/// does not reach the decode's wall shows here as rounds whose own time or turnaround shrank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PadTally {
    pub waited_seconds: f64,
    pub own_seconds: f64,
    pub turnaround_seconds: f64,
    pub rounds: u64,
}

impl PadTally {
    /// The mean of `seconds` over the rounds counted.
    pub fn per_round(&self, seconds: f64) -> f64 {
        seconds / self.rounds.max(1) as f64
    }
}

/// Both spans together.
impl std::ops::Add for PadTally {
    type Output = PadTally;

    fn add(self, other: PadTally) -> PadTally {
        PadTally {
            waited_seconds: self.waited_seconds + other.waited_seconds,
            own_seconds: self.own_seconds + other.own_seconds,
            turnaround_seconds: self.turnaround_seconds + other.turnaround_seconds,
            rounds: self.rounds + other.rounds,
        }
    }
}

/// The pad on the host's clock (the CPU backend's rounds).
#[derive(Debug)]
pub struct HostPad {
    fraction: f64,
    round_start: Instant,
    previous_end: Option<Instant>,
    last_turnaround_ns: u64,
    tally: PadTally,
}

impl HostPad {
    pub fn new(fraction: f64) -> Self {
        Self {
            fraction,
            round_start: Instant::now(),
            previous_end: None,
            last_turnaround_ns: 0,
            tally: PadTally::default(),
        }
    }

    /// Marks the start of a round.
    pub fn start_round(&mut self) {
        self.round_start = Instant::now();
    }

    /// Spins [`wait_ns`] of the round begun at the last [`HostPad::start_round`]. A spin, not
    /// a sleep: a sleep wakes up late by however long the scheduler takes, and the pad must
    /// add what it says. No `spin_loop` (PAUSE) hint: in a virtual machine a PAUSE loop makes
    /// the hypervisor take the vCPU away (pause-loop exiting), which slowed the rounds after
    /// each pad too: a 10 % pad read as +13 to +16 % on the 2-core VM, +10.3 % without it.
    pub fn end_round(&mut self) {
        let now = Instant::now();
        let own = nanos(now - self.round_start);
        let since = self.previous_end.map(|end| nanos(self.round_start - end));
        let turnaround = turnaround_ns(own, since, self.last_turnaround_ns);
        let wait = Duration::from_nanos(wait_ns(self.fraction, own, turnaround));
        let spun = spin(wait);
        self.last_turnaround_ns = turnaround;
        // On `now`'s footing, as the spin's start: P > 0's turnarounds read as P = 0's.
        self.previous_end = Some(now + spun);
        self.tally = self.tally
            + PadTally {
                waited_seconds: spun.as_secs_f64(),
                own_seconds: own as f64 * 1e-9,
                turnaround_seconds: turnaround as f64 * 1e-9,
                rounds: 1,
            };
    }

    /// What the pads counted since the last call.
    pub fn take_tally(&mut self) -> PadTally {
        std::mem::take(&mut self.tally)
    }
}

/// Spins `wait` from a reading taken once the wait is known, which a wait of zero never takes:
/// what the work before it costs, P = 0 pays too, so that what a pad adds is what it spun (on
/// the device the state's loads arrive after the round's end is read, and a spin counted from
/// that reading added less than it waited). Ends on the reading that passes `wait`, with none
/// after it, as the kernel does.
fn spin(wait: Duration) -> Duration {
    if wait.is_zero() {
        return Duration::ZERO;
    }
    let from = Instant::now();
    let mut end = from;
    while end - from < wait {
        end = Instant::now();
    }
    end - from
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_rounds_count_the_turnaround_and_others_the_last_one() {
        assert_eq!(turnaround_ns(1000, Some(30), 7), 30, "back to back");
        assert_eq!(
            turnaround_ns(1000, Some(1000), 7),
            1000,
            "as long as the round"
        );
        assert_eq!(turnaround_ns(1000, Some(1001), 7), 7, "a prefill between");
        assert_eq!(turnaround_ns(1000, None, 0), 0, "the first round");
    }

    #[test]
    fn the_wait_is_the_fraction_of_the_round_and_its_turnaround() {
        assert_eq!(wait_ns(0.05, 1960, 40), 100);
        assert_eq!(wait_ns(0.0, 1960, 40), 0);
        assert_eq!(wait_ns(10.0, 1000, 0), 10_000);
    }

    /// A pad of 100 % doubles a round: the rounds' own work is a spin of 2 ms each.
    #[test]
    fn a_host_round_waits_its_own_time_and_counts_it() {
        let mut pad = HostPad::new(1.0);
        let work = Duration::from_millis(2);
        for _ in 0..3 {
            pad.start_round();
            let t = Instant::now();
            while t.elapsed() < work {}
            pad.end_round();
        }
        let tally = pad.take_tally();
        assert_eq!(tally.rounds, 3);
        let work_s = 3.0 * work.as_secs_f64();
        assert!(
            tally.own_seconds >= work_s && tally.own_seconds < 2.0 * work_s,
            "3 rounds of 2 ms counted {} s of their own",
            tally.own_seconds
        );
        // Each wait is the round's own time and its turnaround, less the clock's last step.
        let rule = tally.own_seconds + tally.turnaround_seconds;
        assert!(
            tally.waited_seconds >= rule - 3e-6,
            "waited {} s for {rule} s",
            tally.waited_seconds
        );
        assert!(
            tally.turnaround_seconds < tally.own_seconds,
            "back to back, turnarounds of {} s",
            tally.turnaround_seconds
        );
        assert_eq!(pad.take_tally(), PadTally::default(), "taken");
    }

    /// A turnaround is the gap between one round's pad and the next round's start, without
    /// the pad: rounds of 2 ms with 1 ms between them, padded by half, count 1 ms each (the
    /// first round, with none before it, counts none).
    #[test]
    fn a_turnaround_is_the_gap_after_the_pad_not_the_pad() {
        let busy = |d: Duration| {
            let t = Instant::now();
            while t.elapsed() < d {}
        };
        let mut pad = HostPad::new(0.5);
        for _ in 0..3 {
            pad.start_round();
            busy(Duration::from_millis(2));
            pad.end_round();
            busy(Duration::from_millis(1));
        }
        let t = pad.take_tally();
        assert!(
            (0.002..0.004).contains(&t.turnaround_seconds),
            "two turnarounds of 1 ms counted {} s (waited {} s)",
            t.turnaround_seconds,
            t.waited_seconds
        );
    }

    /// At P = 0 the pad waits nothing at all, not one reading of the clock: what P > 0 adds
    /// to a round is then what it waited.
    #[test]
    fn a_pad_of_zero_waits_nothing() {
        let mut pad = HostPad::new(0.0);
        for _ in 0..100 {
            pad.start_round();
            pad.end_round();
        }
        let tally = pad.take_tally();
        assert_eq!((tally.waited_seconds, tally.rounds), (0.0, 100));
    }
}
