//! CUDA graph capture of a decode round, and event timing.

use anyhow::{Context, Result};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaGraph;

use super::Gpu;

impl Gpu {
    /// Captures the launches `round` enqueues on [`Gpu::stream`] into an instantiated graph.
    /// Allocate every buffer before; per-round inputs must live in device buffers that the
    /// caller updates (copies on the stream) before each `graph.launch()`.
    pub fn capture(&self, round: impl FnOnce(&Gpu) -> Result<()>) -> Result<CudaGraph> {
        self.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .context("beginning CUDA graph capture")?;
        let recorded = round(self);
        // End the capture even when the round failed, so that the stream stays usable.
        let graph = self.stream.end_capture(CUgraphInstantiate_flags(0));
        recorded.context("recording the round for graph capture")?;
        graph
            .context("ending CUDA graph capture")?
            .context("graph capture recorded no work")
    }

    /// Median time in milliseconds of `reps` runs of `work` (after `warmup` untimed runs),
    /// each between two events on the stream; one synchronization at the end.
    pub fn time_median_ms(
        &self,
        warmup: usize,
        reps: usize,
        mut work: impl FnMut() -> Result<()>,
    ) -> Result<f64> {
        for _ in 0..warmup {
            work()?;
        }
        let mut events = Vec::with_capacity(reps + 1);
        for i in 0..=reps {
            let e = self
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .context("creating a timing event")?;
            e.record(&self.stream).context("recording a timing event")?;
            events.push(e);
            if i < reps {
                work()?;
            }
        }
        self.synchronize()?;
        let mut ms = events
            .windows(2)
            .map(|w| {
                w[0].elapsed_ms(&w[1])
                    .map(f64::from)
                    .context("reading a timing event")
            })
            .collect::<Result<Vec<_>>>()?;
        ms.sort_by(|a, b| a.total_cmp(b));
        Ok(ms[ms.len() / 2])
    }
}
