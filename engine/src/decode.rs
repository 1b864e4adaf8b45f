//! Prefill, plain greedy decode and MTP speculative decode.
//!
//! A speculative round: the MTP layer catches up on the queued target hidden states and
//! drafts K tokens; the target verifies the pending token and the K drafts in one pass that
//! reads the live state slot and writes the spare; greedy acceptance keeps the longest
//! agreeing prefix plus the target's own next token. If every draft is accepted the spare
//! holds the right state; otherwise the accepted prefix is replayed from the live slot into
//! the spare from the stashed projections. Then the spare becomes live.

use crate::backend::{Backend, RoundKey};
use crate::config::MAX_DRAFT;
use crate::model::{Model, MtpTokens, Pass};
use anyhow::{bail, Result};

/// Speculation counters of one decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecStats {
    pub rounds: u64,
    /// Tokens decoded by a plain step while speculating (the last token of a decode,
    /// where a round cannot pay).
    pub fallback_steps: u64,
    pub drafted: u64,
    pub accepted: u64,
}

impl SpecStats {
    pub fn add(&mut self, o: SpecStats) {
        self.rounds += o.rounds;
        self.fallback_steps += o.fallback_steps;
        self.drafted += o.drafted;
        self.accepted += o.accepted;
    }

    pub fn acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }
}

impl<B: Backend> Model<B> {
    /// Checks that a sequence of this shape fits the context and the buffers.
    pub fn check_fit(&self, n_prompt: usize, n_gen: usize) -> Result<()> {
        let need = n_prompt + n_gen + MAX_DRAFT + 1;
        if n_prompt == 0 || need > self.cfg.max_context {
            bail!(
                "-pg {n_prompt},{n_gen}: the prompt must be non-empty and prompt + generated + {} lookahead must fit the model's max_context {}",
                MAX_DRAFT + 1,
                self.cfg.max_context
            );
        }
        Ok(())
    }

    /// Runs the prompt through the target in chunks of `chunk` positions (and through the
    /// MTP layer when `mtp`) and returns the first generated token.
    pub fn prefill(&mut self, prompt: &[u32], chunk: usize, mtp: bool) -> u32 {
        assert!(chunk >= 1 && chunk <= self.max_rows && !prompt.is_empty());
        self.reset();
        let n = prompt.len();
        let mut first = [0u32];
        for start in (0..n).step_by(chunk) {
            let end = (start + chunk).min(n);
            let t = end - start;
            self.backend
                .write_tokens(&mut self.s.tok_in, 0, &prompt[start..end]);
            let head = if end == n { t - 1..t } else { 0..0 };
            self.backend.set_positions(start);
            self.target_forward(t, start, Pass::InPlace, head);
            if end == n {
                self.backend.read_tokens(&self.s.tok_out, t - 1, &mut first);
            }
            if mtp {
                // MTP input p pairs the hidden of position p with token p + 1.
                let known = end.min(n - 1) - start;
                self.queue_mtp(0, &prompt[start + 1..start + 1 + known]);
                if end == n {
                    self.queue_mtp(t - 1, &first);
                } else {
                    self.flush_mtp();
                }
            }
        }
        self.pos = n;
        first[0]
    }

    /// Queues MTP inputs: target hidden rows `row0..` of the last pass with `next` tokens.
    fn queue_mtp(&mut self, row0: usize, next: &[u32]) {
        let h = self.cfg.hidden;
        let q = self.mtp_queued;
        self.backend
            .copy_rows(&self.s.hid, row0, &mut self.s.mtp_hid_in, q, next.len(), h);
        self.backend.write_tokens(&mut self.s.mtp_tok_in, q, next);
        self.mtp_queued += next.len();
    }

    /// Runs the MTP layer over the queue (filling its KV cache).
    fn flush_mtp(&mut self) {
        let t = self.mtp_queued;
        if t > 0 {
            self.mtp_forward(t, self.mtp_pos, MtpTokens::Queued, None);
            self.mtp_pos += t;
            self.mtp_queued = 0;
        }
    }

    /// One plain step on the token in `tok_in[0]` at the current position: the next token
    /// goes to `tok_out[0]`, `tok_in[0]` and `history[pos + 1]`, where the device left it,
    /// so steps queue back to back without a host round trip.
    fn queue_step(&mut self) {
        let pos = self.pos;
        self.round(RoundKey::Plain { live: self.live }, |m| {
            m.target_forward(1, pos, Pass::InPlace, 0..1);
            m.backend
                .feed_next(&m.s.tok_out, &mut m.s.tok_in, &mut m.s.history, pos);
        });
        self.pos += 1;
    }

    /// One plain step: feeds `token` at the current position, returns the next token.
    fn step(&mut self, token: u32) -> u32 {
        self.backend.write_tokens(&mut self.s.tok_in, 0, &[token]);
        self.queue_step();
        let mut next = [0u32];
        self.backend.read_tokens(&self.s.tok_out, 0, &mut next);
        next[0]
    }

    /// The launches of a speculative round: the MTP layer catches up on the `catch_up`
    /// queued inputs and drafts, chains on its own hidden state for the other `k − 1`
    /// drafts, then the target verifies the pending token and the drafts in one pass.
    /// Host state is left for the caller to advance (the round may be a replayed graph).
    fn draft_and_verify(&mut self, catch_up: usize, k: usize) {
        let (pos, h) = (self.pos, self.cfg.hidden);
        self.mtp_forward(catch_up, self.mtp_pos, MtpTokens::Queued, Some(1));
        let mut last_row = catch_up - 1;
        for i in 1..k {
            self.backend
                .copy_rows(&self.s.mtp_out, last_row, &mut self.s.mtp_hid_in, 0, 1, h);
            self.mtp_forward(1, pos + i - 1, MtpTokens::Drafts(i), Some(i + 1));
            last_row = 0;
        }
        self.target_forward(k + 1, pos, Pass::Verify, 0..k + 1);
    }

    /// Plain greedy decode of `n_gen` tokens after `first`, appended to `out`: every step
    /// is queued before any token is read back, each taking its input from the step before
    /// on the device, then the tokens are read from `history` in one transfer.
    pub fn decode_plain(&mut self, first: u32, n_gen: usize, out: &mut Vec<u32>) {
        self.backend.write_tokens(&mut self.s.tok_in, 0, &[first]);
        let start = self.pos;
        for _ in 0..n_gen {
            self.queue_step();
        }
        let at = out.len();
        out.resize(at + n_gen, 0);
        self.backend
            .read_tokens(&self.s.history, start + 1, &mut out[at..]);
    }

    /// Speculative greedy decode with `k` MTP drafts per round; the same tokens as
    /// `decode_plain`.
    pub fn decode_spec(
        &mut self,
        first: u32,
        n_gen: usize,
        k: usize,
        out: &mut Vec<u32>,
    ) -> SpecStats {
        assert!((1..=MAX_DRAFT).contains(&k));
        let mut stats = SpecStats::default();
        let mut pending = first;
        let (mut drafts, mut verdict) = ([0u32; MAX_DRAFT + 1], [0u32; MAX_DRAFT + 1]);
        let mut left = n_gen;
        while left > 0 {
            if left == 1 {
                let next = self.step(pending);
                self.queue_mtp(0, &[next]);
                out.push(next);
                stats.fallback_steps += 1;
                break;
            }
            self.backend.write_tokens(&mut self.s.tok_in, 0, &[pending]);
            let catch_up = self.mtp_queued;
            debug_assert!(catch_up > 0 && self.mtp_pos + catch_up == self.pos);
            self.round(
                RoundKey::Spec {
                    live: self.live,
                    k,
                    catch_up,
                },
                |m| m.draft_and_verify(catch_up, k),
            );
            self.mtp_pos += catch_up;
            self.mtp_queued = 0;
            self.backend
                .read_tokens(&self.s.tok_in, 1, &mut drafts[..k]);
            self.backend
                .read_tokens(&self.s.tok_out, 0, &mut verdict[..k + 1]);
            let a = (0..k).take_while(|&i| drafts[i] == verdict[i]).count();
            if a < k {
                self.round(
                    RoundKey::Replay {
                        live: self.live,
                        rows: a + 1,
                    },
                    |m| m.replay_gdn(a + 1),
                );
            }
            self.live = 1 - self.live;
            self.pos += a + 1;
            stats.rounds += 1;
            stats.drafted += k as u64;
            stats.accepted += a as u64;
            // Accepted drafts then the target's own token; the hidden of row i pairs with
            // token i + 1 for the MTP.
            let emitted = &verdict[..a + 1];
            self.queue_mtp(0, emitted);
            out.extend_from_slice(&emitted[..emitted.len().min(left)]);
            left -= emitted.len().min(left);
            pending = verdict[a];
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use crate::config::ModelConfig;
    use crate::cpu::CpuBackend;
    use crate::model::Model;
    use crate::options::Arm;
    use crate::weights::WeightSource;

    /// Queued steps that feed each other equal steps fed one at a time from the host, and
    /// leave the position where the host-fed ones do.
    #[test]
    fn queued_plain_decode_equals_host_fed_steps() {
        let cfg = ModelConfig::preset("tiny").unwrap();
        let mut m = Model::new(
            cfg.clone(),
            &WeightSource::Synthetic { seed: 9 },
            Arm::default(),
            CpuBackend::new(),
            8,
        )
        .unwrap();
        let prompt: Vec<u32> = (0..11)
            .map(|i| (i * 7919 + 13) % cfg.vocab as u32)
            .collect();
        let first = m.prefill(&prompt, 4, false);
        let mut fed = vec![first];
        for _ in 0..12 {
            let next = m.step(*fed.last().unwrap());
            fed.push(next);
        }
        let fed_pos = m.pos;
        assert_eq!(m.prefill(&prompt, 4, false), first);
        let mut queued = vec![first];
        m.decode_plain(first, 12, &mut queued);
        assert_eq!(queued, fed);
        assert_eq!(m.pos, fed_pos);
        let distinct: std::collections::BTreeSet<_> = fed.iter().collect();
        assert!(distinct.len() > 3, "degenerate output {fed:?}");
    }
}
