//! Progress on stderr: a bar on a terminal (cell k of N, arm, pass, elapsed, ETA), one plain
//! line per cell elsewhere (CI logs, device runs).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ladder::order::{cell_words, Cell};
use std::io::IsTerminal;
use std::time::Instant;

pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    started: Instant,
    current: String,
    /// After a `[stop]` ladder's first look: the planned passes and what set them.
    plan: String,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} cell {pos}/{len} {msg}  elapsed {elapsed}  eta {eta}",
                )
                .expect("the template is valid"),
            );
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
            started: Instant::now(),
            current: String::new(),
            plan: String::new(),
        }
    }

    pub fn start_cell(&mut self, cell: Cell, arm: &str) {
        self.current = format!("{}{}", cell_words(cell.pass, cell.slot, arm), self.plan);
        if let Some(bar) = &self.bar {
            bar.set_message(self.current.clone());
        }
    }

    pub fn end_cell(&mut self, wall_s: f64) {
        self.done += 1;
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => {
                let elapsed = self.started.elapsed().as_secs_f64();
                let eta = elapsed / self.done as f64 * (self.total - self.done) as f64;
                eprintln!(
                    "cell {}/{} {}: {wall_s:.3} s  (elapsed {elapsed:.0} s, eta {eta:.0} s)",
                    self.done, self.total, self.current
                );
            }
        }
    }

    /// After a `[stop]` ladder's first look: the cells it now runs, and why.
    pub fn replan(&mut self, total: usize, short: String, note: String) {
        self.total = total;
        self.plan = format!(" [{short}]");
        match &self.bar {
            Some(bar) => {
                bar.set_length(total as u64);
                bar.println(&note);
            }
            None => eprintln!("{note}"),
        }
    }

    /// Runs `print` with the bar hidden, so that what it writes to stderr stays whole.
    pub fn suspend(&self, print: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
