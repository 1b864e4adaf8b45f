//! The CPU backend's clock of its own operations: while `engine bench --rows ops` times its
//! reps, the calls and seconds of every operation; in every rep, the stretch of the one
//! operation `ENGINE_SLOW_OP` names.
//!
//! Every operation opens the clock first ([`OpClock::around`]) and the guard it gets back
//! closes it when the operation's body has run, so the body computes exactly what it computes
//! without the clock, and reads the clock not at all while nothing asks for it.

use crate::backend::OpTime;
use crate::options::{CpuOp, Named, SlowOp};
use clap::ValueEnum;
use std::cell::RefCell;
use std::time::Instant;

/// The clock's state: idle unless a breakdown is timed or an operation is slowed.
#[derive(Default)]
pub(super) struct OpClock {
    /// Calls and seconds of each operation (by `CpuOp as usize`) while the op rows are timed.
    /// A cell, because the guard holds the clock while the operation borrows the backend's
    /// other fields.
    totals: RefCell<Option<Vec<(u64, f64)>>>,
    slow: Option<SlowOp>,
}

/// One call of an operation on the clock: [`Drop`] ends it.
pub(super) struct Call<'a> {
    clock: &'a OpClock,
    op: CpuOp,
    /// When the call began; `None` when nothing times it.
    start: Option<Instant>,
}

impl OpClock {
    /// Opens a call of `op`. The clock is read only when a breakdown is timed or `op` is the
    /// slowed one, so a bench without `--rows ops` and `ENGINE_SLOW_OP` never reads it.
    pub(super) fn around(&self, op: CpuOp) -> Call<'_> {
        let timed = self.totals.borrow().is_some() || self.slow.is_some_and(|s| s.op == op);
        Call {
            clock: self,
            op,
            start: timed.then(Instant::now),
        }
    }

    /// Stretches every call of `slow.op` from now on.
    pub(super) fn slow(&mut self, slow: SlowOp) {
        self.slow = Some(slow);
    }

    /// Counts every operation from zero from now on.
    pub(super) fn start(&mut self) {
        *self.totals.get_mut() = Some(vec![(0, 0.0); CpuOp::value_variants().len()]);
    }

    /// The operations called since [`OpClock::start`]; the clock stops.
    pub(super) fn read(&mut self) -> Vec<OpTime> {
        let totals = self.totals.get_mut().take().unwrap_or_default();
        CpuOp::value_variants()
            .iter()
            .zip(totals)
            .filter(|(_, (calls, _))| *calls > 0)
            .map(|(op, (calls, seconds))| OpTime {
                name: op.name(),
                calls,
                seconds,
            })
            .collect()
    }

    /// The end of a call of `op` that began at `start`: a slowed operation spins until the
    /// call has taken `1 + pct/100` times its own time (a spin on the clock, as the decode
    /// pad's, so that it adds what it says), then the call is counted, spin included.
    fn ended(&self, op: CpuOp, start: Instant) {
        if let Some(slow) = self.slow.filter(|s| s.op == op) {
            let until = start.elapsed().mul_f64(1.0 + slow.pct / 100.0);
            while start.elapsed() < until {}
        }
        if let Some(totals) = self.totals.borrow_mut().as_mut() {
            let total = &mut totals[op as usize];
            total.0 += 1;
            total.1 += start.elapsed().as_secs_f64();
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            self.clock.ended(self.op, start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn call(clock: &OpClock, op: CpuOp, work: Duration) {
        let _call = clock.around(op);
        let start = Instant::now();
        while start.elapsed() < work {}
    }

    #[test]
    fn the_clock_counts_each_operation_while_started_and_only_then() {
        let mut clock = OpClock::default();
        assert!(
            clock.around(CpuOp::Matmul).start.is_none(),
            "idle by default"
        );
        call(&clock, CpuOp::Matmul, Duration::ZERO);
        clock.start();
        for _ in 0..3 {
            call(&clock, CpuOp::Matmul, Duration::from_micros(200));
        }
        call(&clock, CpuOp::LmHeadArgmax, Duration::from_micros(100));
        let mut rows = clock.read();
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(
            rows.iter()
                .map(|r| (r.name.as_str(), r.calls))
                .collect::<Vec<_>>(),
            [("lm_head_argmax", 1), ("matmul", 3)],
            "the call before start is not counted"
        );
        assert!(
            rows[1].seconds >= 600e-6 && rows[0].seconds >= 100e-6,
            "{rows:?}"
        );
        assert!(clock.around(CpuOp::Matmul).start.is_none(), "read stops it");
        assert!(clock.read().is_empty());
    }

    #[test]
    fn a_slowed_operation_takes_its_share_more_and_no_other_does() {
        let mut clock = OpClock::default();
        clock.slow(SlowOp {
            op: CpuOp::Matmul,
            pct: 50.0,
        });
        assert!(clock.around(CpuOp::Matmul).start.is_some());
        assert!(clock.around(CpuOp::Embed).start.is_none());
        // The least of twenty tries, so that preemptions of the test's thread on a loaded
        // machine (other tests, a build) cannot decide.
        let work = Duration::from_millis(2);
        let (mut slowed, mut plain) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..20 {
            clock.start();
            call(&clock, CpuOp::Matmul, work);
            call(&clock, CpuOp::Embed, work);
            let rows = clock.read();
            let seconds = |name: &str| rows.iter().find(|r| r.name == name).unwrap().seconds;
            slowed = slowed.min(seconds("matmul"));
            plain = plain.min(seconds("embed"));
        }
        assert!(
            slowed >= 1.5 * 2e-3 && slowed < 1.5 * plain + 0.5e-3,
            "matmul {slowed} s against embed {plain} s"
        );
        assert!(plain < 2e-3 + 0.5e-3, "embed is not slowed: {plain} s");
    }
}
