//! The device's measured limits (kernels/ceiling.cu): the read ceiling, which the GEMV and the
//! whole decode step are quoted against, what a decode stage pays to wait for the one before
//! it, which bounds any launch structure, and how near the ceiling a decode's chain of
//! dependent stages can stream when nothing but its dependencies stands in the way.

use anyhow::{ensure, Context, Result};
use cudarc::driver::{CudaSlice, LaunchConfig};
use half::bf16;

use super::synthetic::synthetic_key;
use super::Gpu;
use crate::chain::Stage;

impl Gpu {
    /// Read bandwidth in GB/s (1e9 B/s) of a float4 grid-stride read over `bytes` of non-zero
    /// data: the median of 10 timed launches after 2 warm-up launches. Use several times the
    /// L2 size (GPU.md measured with 4 GiB).
    pub fn measure_read_ceiling_gbs(&self, bytes: usize) -> Result<f64> {
        ensure!(
            bytes >= 16 && bytes.is_multiple_of(16),
            "read ceiling buffer of {bytes} B: give a positive multiple of 16"
        );
        let mut data = self
            .stream
            .alloc_zeros::<bf16>(bytes / 2)
            .with_context(|| format!("allocating {bytes} B for the read ceiling"))?;
        // Non-zero data: zeros can be compressed and read faster than weights.
        self.fill_synthetic(&mut data, 1, synthetic_key("read_ceiling"), 1.0, 0.5)?;
        let blocks = self.info.sm_count * 4;
        let mut sink = self
            .stream
            .alloc_zeros::<f32>(blocks as usize)
            .context("allocating the read ceiling sink")?;
        let n = (bytes / 16) as u64;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (512, 1, 1),
            shared_mem_bytes: 0,
        };
        let ms = self.time_median_ms(2, 10, || {
            let data = super::args::input("read ceiling data", &data, 0, &self.stream)?;
            let sink = super::args::output("read ceiling sink", &mut sink, 0, &self.stream)?;
            launch!(self, "read_ceiling", cfg, &data, &n, &sink);
            Ok(())
        })?;
        Ok(bytes as f64 / (ms * 1e-3) / 1e9)
    }

    /// What one decode stage pays to wait for the one before, in µs, with one 128-thread
    /// block per SM, each way with and without a handoff (after its wait, each block reads a
    /// value another block wrote before it): a dependent launch (kernels that only wait, or
    /// hand off, in a graph of 64, with dependent launch as [`super::GpuOptions`] say), and a
    /// grid-wide barrier inside one launch (256 barriers against none, so the launch itself
    /// cancels). Each the median of 10 timed runs. The handoffs check what they read, so a
    /// wait that let a block through early is an error, not a fast number. The barrier needs
    /// every block resident at once: run it with the device to itself.
    pub fn measure_stage_sync_us(&self) -> Result<StageSync> {
        let mut values = self
            .stream
            .alloc_zeros::<u32>(2 * self.info.sm_count as usize)
            .context("allocating the handoff values")?;
        Ok(StageSync {
            launch_us: self.launch_chain_us(None)?,
            launch_handoff_us: self.launch_chain_us(Some(&mut values))?,
            barrier_us: self.grid_barrier_us(None)?,
            barrier_handoff_us: self.grid_barrier_us(Some(&mut values))?,
        })
    }

    /// The shape both ways of waiting are measured at: one block of 128 threads per SM.
    fn stage_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.info.sm_count, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// µs a launch of `stage_step` costs in a graph of [`STAGE_LAUNCHES`]. With `handoff` (two
    /// values a block, zeros), launches alternate between its halves, each reading the other,
    /// and every value must end at the number of launches run.
    fn launch_chain_us(&self, mut handoff: Option<&mut CudaSlice<u32>>) -> Result<f64> {
        let blocks = self.info.sm_count as usize;
        let halves = match handoff.as_deref_mut() {
            Some(v) => {
                let a = super::args::output("handoff values", v, 2 * blocks, &self.stream)?;
                [a, a + 4 * blocks as u64]
            }
            None => [0, 0],
        };
        let graph = self.capture(|gpu| {
            for i in 0..STAGE_LAUNCHES {
                let (from, to) = (halves[i % 2], halves[(i + 1) % 2]);
                launch!(gpu, "stage_step", self.stage_config(), &from, &to);
            }
            Ok(())
        })?;
        let ms = self.time_median_ms(STAGE_WARMUP, STAGE_REPS, || {
            graph.launch().context("launching the stage graph")
        })?;
        if let Some(v) = handoff {
            let last = self
                .stream
                .clone_dtoh(&v.slice(..blocks))
                .context("reading the handoff values back")?;
            self.synchronize()?;
            let launches = ((STAGE_WARMUP + STAGE_REPS) * STAGE_LAUNCHES) as u32;
            ensure!(last.iter().all(|&n| n == launches), "a dependent launch read the launch before it too early: after {launches} launches the values are {last:?}");
        }
        Ok(ms * 1e3 / STAGE_LAUNCHES as f64)
    }

    /// µs a grid-wide barrier costs inside one `grid_barriers` launch ([`STAGE_ROUNDS`] of them
    /// against none). With `handoff` (two values a block), no block may see another's value
    /// from an older round after a barrier.
    fn grid_barrier_us(&self, mut handoff: Option<&mut CudaSlice<u32>>) -> Result<f64> {
        let blocks = self.info.sm_count as usize;
        let slots = match handoff.as_deref_mut() {
            Some(v) => super::args::output("barrier slots", v, 2 * blocks, &self.stream)?,
            None => 0,
        };
        let mut count = self
            .stream
            .alloc_zeros::<u32>(1)
            .context("allocating the barrier counter")?;
        let mut timed = |rounds: i32| {
            self.time_median_ms(STAGE_WARMUP, STAGE_REPS, || {
                self.stream.memset_zeros(&mut count)?;
                if let Some(v) = handoff.as_deref_mut() {
                    self.stream.memset_zeros(v)?;
                }
                let c = super::args::output("barrier counter", &mut count, 1, &self.stream)?;
                launch!(
                    self,
                    "grid_barriers",
                    self.stage_config(),
                    &c,
                    &slots,
                    &rounds
                );
                Ok(())
            })
        };
        let (none, many) = (timed(0)?, timed(STAGE_ROUNDS)?);
        if let Some(v) = handoff {
            let early = self
                .stream
                .clone_dtoh(&v.slice(blocks..))
                .context("reading the barrier check back")?;
            self.synchronize()?;
            ensure!(early.iter().all(|&n| n == 0), "the grid barrier let blocks through before every block had arrived (rounds seen early, per block: {early:?})");
        }
        Ok((many - none) * 1e3 / STAGE_ROUNDS as f64)
    }
}

/// A chain's stages laid out on the device for [`Gpu::time_chain_us`]: every stage its own
/// bytes of non-zero data, so that no stage reads another's from the L2.
pub struct ChainData {
    data: CudaSlice<bf16>,
    /// Per stage, its first 16-byte chunk and its chunks, and both on the device for the
    /// persistent launch.
    start: Vec<u64>,
    len: Vec<u64>,
    start_dev: CudaSlice<u64>,
    len_dev: CudaSlice<u64>,
    /// Per stage, whether it knows its bytes before the stage before it ends.
    known: Vec<bool>,
    /// 16-byte chunks a token reads.
    chunks: u64,
}

impl ChainData {
    /// Bytes a token of the chain reads (each stage's rounded up to 16).
    pub fn bytes(&self) -> u64 {
        16 * self.chunks
    }

    /// Per stage, the kernels' `early`: 0 loads after the wait, 1 a batch before it, 2 also
    /// pulls its share into the L2.
    fn early_flags(&self, early: ChainEarly) -> Vec<i32> {
        let mode = |known: bool| match early {
            ChainEarly::Never => 0,
            ChainEarly::Known => i32::from(known),
            ChainEarly::KnownToL2 => 2 * i32::from(known),
            ChainEarly::Always => 1,
        };
        self.known.iter().map(|&k| mode(k)).collect()
    }
}

/// Which stages of a chain request their first batch before waiting for the stage before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainEarly {
    Never,
    /// The stages that know their bytes then ([`Stage::early`]).
    Known,
    /// The same, each block also pulling the rest of its share, up to 256 KB, into the L2
    /// (33 MB over the H200's 132 SMs).
    KnownToL2,
    /// Every stage, as if the routing were known in advance.
    Always,
}

/// How a chain's stages wait for each other in [`Gpu::time_chain_us`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainForm {
    /// One persistent launch; a stage waits on a counter every block adds itself to.
    Persistent,
    /// A launch a stage in a graph, each waiting for the one before (dependent launch).
    Launches,
}

/// Per-thread chunks the chain kernels load in one batch (`chain_*_b*`): with
/// `CHAIN_THREADS` (512) threads a block, 32 or 64 KB an SM requested before a stage's wait.
pub const CHAIN_BATCHES: [usize; 2] = [4, 8];

impl Gpu {
    /// Lays `stages` out on the device for [`Gpu::time_chain_us`].
    pub fn chain_data(&self, stages: &[Stage]) -> Result<ChainData> {
        ensure!(!stages.is_empty(), "a chain needs at least one stage");
        let len: Vec<u64> = stages.iter().map(|s| s.bytes.div_ceil(16)).collect();
        let start: Vec<u64> = len
            .iter()
            .scan(0, |at, &l| Some(std::mem::replace(at, *at + l)))
            .collect();
        let chunks: u64 = len.iter().sum();
        let mut data = self
            .stream
            .alloc_zeros::<bf16>((8 * chunks.max(1)) as usize)
            .with_context(|| format!("allocating the chain's {} B", 16 * chunks))?;
        self.fill_synthetic(&mut data, 1, synthetic_key("chain"), 1.0, 0.5)?;
        let (start_dev, len_dev) = (
            self.stream.clone_htod(&start)?,
            self.stream.clone_htod(&len)?,
        );
        Ok(ChainData {
            data,
            start,
            len,
            start_dev,
            len_dev,
            known: stages.iter().map(|s| s.early).collect(),
            chunks,
        })
    }

    /// µs a token of `chain` takes, one block of 512 threads per SM, each stage waiting for
    /// every block to finish the one before and reading a value another block wrote, `early`
    /// stages requesting their first batch of `batch` chunks a thread before that wait:
    /// `Persistent`, `tokens` tokens in one launch (median of 5 launches after one);
    /// `Launches`, a graph of a token's launches (median of 5 replays after one, each
    /// replayed `tokens` times). Every chunk must be read once a token (an error otherwise).
    /// The persistent launch's blocks wait for each other: run it with the device to itself.
    pub fn time_chain_us(
        &self,
        chain: &ChainData,
        form: ChainForm,
        tokens: usize,
        batch: usize,
        early: ChainEarly,
    ) -> Result<f64> {
        ensure!(
            CHAIN_BATCHES.contains(&batch),
            "chain batch {batch}: the kernels load {CHAIN_BATCHES:?} chunks a thread"
        );
        let blocks = self.info.sm_count as usize;
        let mut slots = self.stream.alloc_zeros::<u32>(blocks)?;
        let mut read = self.stream.alloc_zeros::<u64>(1)?;
        let mut sink = self.stream.alloc_zeros::<u32>(blocks)?;
        let data = super::args::input(
            "chain data",
            &chain.data,
            8 * chain.chunks as usize,
            &self.stream,
        )?;
        let sl = super::args::output("chain slots", &mut slots, blocks, &self.stream)?;
        let r = super::args::output("chain chunks read", &mut read, 1, &self.stream)?;
        let sk = super::args::output("chain sink", &mut sink, blocks, &self.stream)?;
        let out = ChainOut {
            data,
            slots: sl,
            read: r,
            sink: sk,
        };
        let flags = chain.early_flags(early);
        let ms = match form {
            ChainForm::Persistent => self.chain_persistent_ms(chain, &flags, tokens, batch, out)?,
            ChainForm::Launches => self.chain_launches_ms(chain, &flags, tokens, batch, out)?,
        } / tokens as f64;
        let got = self
            .stream
            .clone_dtoh(&read)
            .context("reading the chain's chunk count back")?;
        self.synchronize()?;
        let want = chain.chunks * (tokens * (1 + CHAIN_REPS)) as u64;
        ensure!(got[0] == want, "the chain ({form:?}, batch {batch}) read {} chunks in {} runs of {tokens} tokens, not the stages' {want}", got[0], 1 + CHAIN_REPS);
        Ok(ms * 1e3)
    }
}

/// Device addresses every chain kernel takes: the data, and what it writes.
#[derive(Clone, Copy)]
struct ChainOut {
    data: u64,
    slots: u64,
    read: u64,
    sink: u64,
}

impl Gpu {
    /// ms of `tokens` tokens of `chain` in one `chain_stages_b{batch}` launch.
    fn chain_persistent_ms(
        &self,
        chain: &ChainData,
        flags: &[i32],
        tokens: usize,
        batch: usize,
        out: ChainOut,
    ) -> Result<f64> {
        let n = chain.len.len();
        let flags = self.stream.clone_htod(flags)?;
        let mut count = self.stream.alloc_zeros::<u32>(1)?;
        let c = super::args::output("chain counter", &mut count, 1, &self.stream)?;
        let st = super::args::input("chain starts", &chain.start_dev, n, &self.stream)?;
        let ln = super::args::input("chain lengths", &chain.len_dev, n, &self.stream)?;
        let fl = super::args::input("chain flags", &flags, n, &self.stream)?;
        let (stages, t) = (
            super::args::dim("chain stages", n)?,
            super::args::dim("chain tokens", tokens)?,
        );
        let name = format!("chain_stages_b{batch}");
        self.time_median_ms(1, CHAIN_REPS, || {
            self.stream.memset_zeros(&mut count)?;
            launch!(
                self,
                name,
                self.chain_config(),
                &out.data,
                &st,
                &ln,
                &fl,
                &stages,
                &t,
                &c,
                &out.slots,
                &out.read,
                &out.sink
            );
            Ok(())
        })
    }

    /// ms of `tokens` replays of a graph of `chain_launch_b{batch}`, a launch a stage.
    fn chain_launches_ms(
        &self,
        chain: &ChainData,
        flags: &[i32],
        tokens: usize,
        batch: usize,
        out: ChainOut,
    ) -> Result<f64> {
        let name = format!("chain_launch_b{batch}");
        let graph = self.capture(|gpu| {
            for ((&start, &len), &flag) in chain.start.iter().zip(&chain.len).zip(flags) {
                launch!(
                    gpu,
                    name,
                    self.chain_config(),
                    &(out.data + 16 * start),
                    &len,
                    &flag,
                    &out.slots,
                    &out.read,
                    &out.sink
                );
            }
            Ok(())
        })?;
        self.time_median_ms(1, CHAIN_REPS, || {
            (0..tokens).try_for_each(|_| graph.launch().context("launching the chain graph"))
        })
    }

    /// One block of [`CHAIN_THREADS`] per SM.
    fn chain_config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.info.sm_count, 1, 1),
            block_dim: (CHAIN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// Threads a block of the chain kernels (`CHAIN_THREADS` in kernels/ceiling.cu), and the
/// timed runs of each median.
const CHAIN_THREADS: u32 = 512;
const CHAIN_REPS: usize = 5;

/// Launches in the graph that [`Gpu::measure_stage_sync_us`] times, barriers in its one
/// launch, and the runs before and of each median.
const STAGE_LAUNCHES: usize = 64;
const STAGE_ROUNDS: i32 = 256;
const STAGE_WARMUP: usize = 2;
const STAGE_REPS: usize = 10;

/// What a decode stage pays to wait for the one before ([`Gpu::measure_stage_sync_us`]), µs.
#[derive(Debug, Clone, Copy)]
pub struct StageSync {
    /// A dependent launch in a graph.
    pub launch_us: f64,
    /// The same, each block reading a value of the launch before.
    pub launch_handoff_us: f64,
    /// A grid-wide barrier inside one launch, one block per SM.
    pub barrier_us: f64,
    /// The same, each block reading a value written before the barrier.
    pub barrier_handoff_us: f64,
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;

    #[test]
    fn the_chain_launch_shape_mirrors_its_kernel() {
        assert_defines(
            "ceiling.cu",
            &[("CHAIN_THREADS", super::CHAIN_THREADS as usize)],
        );
        let source = super::super::nvrtc::KERNEL_FILES
            .iter()
            .find(|f| f.name == "ceiling.cu")
            .unwrap()
            .source;
        for batch in super::CHAIN_BATCHES {
            assert!(
                source.contains(&format!("CHAIN_KERNELS({batch})")),
                "kernels/ceiling.cu has no chain kernels of batch {batch}"
            );
        }
    }
}
