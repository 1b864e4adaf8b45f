//! A child's output as the runner keeps it: all of it when it is to be parsed, else a head
//! and a tail of at most the cap, with the byte count, so that a program that prints
//! megabytes (compressed data, a log) cannot flood the side log or the runner's memory.

use std::collections::VecDeque;
use std::io::{self, Write};

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Every byte the child wrote, kept or not.
    pub total: u64,
    cap: usize,
}

impl Captured {
    /// Keeps at most `cap` bytes: the first half and the last half (`usize::MAX`: all).
    pub fn new(cap: usize) -> Captured {
        Captured {
            cap,
            ..Default::default()
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_cap = if self.cap == usize::MAX {
            usize::MAX
        } else {
            self.cap.div_ceil(2)
        };
        let into_head = bytes.len().min(head_cap - self.head.len().min(head_cap));
        self.head.extend_from_slice(&bytes[..into_head]);
        let rest = &bytes[into_head..];
        let tail_cap = self.cap / 2;
        if rest.len() >= tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - tail_cap..]);
        } else {
            self.tail.extend(rest);
            let over = self.tail.len().saturating_sub(tail_cap);
            self.tail.drain(..over);
        }
    }

    /// The whole output, or `None` when the cap cut some of it.
    pub fn whole(&self) -> Option<&[u8]> {
        (self.tail.is_empty() && self.head.len() as u64 == self.total).then_some(&self.head)
    }

    /// Writes the output as kept; where bytes were dropped a line says how many, and of how
    /// many in all. Binary output is written as it is: the side log is for people to open.
    pub fn write_to(&self, log: &mut impl Write, label: &str) -> io::Result<()> {
        if self.total == 0 {
            return Ok(());
        }
        writeln!(log, "--- {label} ({} bytes):", self.total)?;
        log.write_all(&self.head)?;
        let kept = self.head.len() + self.tail.len();
        if (kept as u64) < self.total {
            write!(
                log,
                "\n[... {} of {} bytes left out: output_cap_mib keeps the head and the tail ...]\n",
                self.total - kept as u64,
                self.total
            )?;
            let (a, b) = self.tail.as_slices();
            log.write_all(a)?;
            log.write_all(b)?;
        }
        if !self.head.ends_with(b"\n") || !self.tail.is_empty() {
            log.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Everything written to one buffer; with a cap the whole output is not there.
    #[cfg(test)]
    fn kept(&self) -> Vec<u8> {
        self.head.iter().chain(self.tail.iter()).copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Captured::new(10);
        c.push(b"abc");
        c.push(b"de");
        assert_eq!(c.whole(), Some(&b"abcde"[..]));
    }

    #[test]
    fn a_large_output_keeps_its_head_and_tail_and_the_count() {
        let mut c = Captured::new(6);
        for chunk in [&b"0123"[..], b"4567", b"89"] {
            c.push(chunk);
        }
        assert_eq!(c.total, 10);
        assert_eq!(c.kept(), b"012789");
        assert_eq!(c.whole(), None);
        let mut log = Vec::new();
        c.write_to(&mut log, "stdout").unwrap();
        let text = String::from_utf8(log).unwrap();
        assert!(
            text.starts_with("--- stdout (10 bytes):\n012\n[... 4 of 10 bytes left out"),
            "{text}"
        );
        assert!(text.ends_with("...]\n789\n"), "{text}");
    }

    #[test]
    fn one_chunk_larger_than_the_cap() {
        let mut c = Captured::new(4);
        c.push(b"abcdefghij");
        assert_eq!(c.kept(), b"abij");
    }

    #[test]
    fn uncapped_keeps_everything() {
        let mut c = Captured::new(usize::MAX);
        c.push(&[7u8; 100_000]);
        assert_eq!(c.whole().map(<[u8]>::len), Some(100_000));
    }
}
