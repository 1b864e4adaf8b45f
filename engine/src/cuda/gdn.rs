//! Gated DeltaNet decode (kernels/gdn.cu): the conv update and the delta-rule state update,
//! reading one state slot and writing another.

use anyhow::{ensure, Result};
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output};
use super::Gpu;

/// Key and value head dimension (fixed by the architecture and the kernel).
pub const HEAD_DIM: usize = 128;

/// Shape of one GDN layer; value head h reads key head h / (hv / hk).
#[derive(Debug, Clone, Copy)]
pub struct GdnShape {
    pub hk: usize,
    pub hv: usize,
}

impl GdnShape {
    /// Channels of q||k||v through the conv.
    pub fn conv_channels(&self) -> usize {
        (2 * self.hk + self.hv) * HEAD_DIM
    }
    /// Bytes of one conv state slot (bf16, last 3 inputs): 49,152 for 16/32 heads.
    pub fn conv_slot_bytes(&self) -> usize {
        3 * self.conv_channels() * 2
    }
    /// Bytes of one recurrent state slot (fp32 `[hv][128][128]`): 2,097,152 for 32 heads.
    pub fn rec_slot_bytes(&self) -> usize {
        self.hv * HEAD_DIM * HEAD_DIM * 4
    }
    /// Bytes of one layer's pool `[conv s0][conv s1][rec s0][rec s1]`.
    pub fn layer_state_bytes(&self) -> usize {
        2 * (self.conv_slot_bytes() + self.rec_slot_bytes())
    }
    /// Checks the head counts against what the kernels take, naming the limit.
    pub(crate) fn check(&self) -> Result<()> {
        ensure!(
            self.hk > 0 && self.hv.is_multiple_of(self.hk),
            "GDN heads: {} value heads are not a multiple of {} key heads",
            self.hv,
            self.hk
        );
        ensure!(self.hv / self.hk <= MAX_HEADS_PER_KEY, "GDN heads: {} value heads per key head; the step kernel's clusters take at most {MAX_HEADS_PER_KEY}", self.hv / self.hk);
        Ok(())
    }
    /// The step launch's clusters: the value heads of one key head, each head's column
    /// slices (kernels/gdn.cu, `gdn_step`).
    fn step_cluster(&self) -> [u32; 3] {
        [(self.hv / self.hk) as u32, SLICES as u32, 1]
    }
}

/// Column slices of a value head, one block each (`SLICES` in kernels/gdn.cu).
const SLICES: usize = HEAD_DIM / 32;
/// Warps of a `gdn_step` block (`STEP_WARPS` in kernels/gdn.cu): 8 × 16 key rows.
const STEP_WARPS: usize = 8;
/// Value heads per key head that fit one step cluster: 16 blocks, the most sm_90 schedules.
const MAX_HEADS_PER_KEY: usize = 16 / SLICES;

/// The conv done by the `gdn_step` launch itself (device addresses): its taps `[C][4]` bf16
/// and the conv state slots `[3][C]` bf16 it reads and writes; the step's q‖k‖v is then the
/// projection before the conv.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvIn {
    pub w: u64,
    pub from: u64,
    pub to: u64,
}

/// The GDN output norm done by the `gdn_step` launch itself (device addresses): `y = w ·
/// rmsnorm(o) · silu(z)` per value head, z and y `[t][hv][128]` fp32, w `[128]` bf16.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatedOut {
    pub z: u64,
    pub w: u64,
    pub y: u64,
    pub eps: f32,
}

impl GatedOut {
    /// The addresses of z, the norm weight and y for `t` positions of `shape`, lengths checked.
    pub(crate) fn new(
        z: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        eps: f32,
        t: usize,
        shape: GdnShape,
        stream: &cudarc::driver::CudaStream,
    ) -> Result<Self> {
        let n = t * shape.hv * HEAD_DIM;
        Ok(Self {
            z: input("gate z", z, n, stream)?,
            w: input("gdn norm weight", w, HEAD_DIM, stream)?,
            y: output("gdn normed output", y, n, stream)?,
            eps,
        })
    }
}

/// The address of a conv's taps `[channels][4]` bf16 (kernel 4), its length checked.
pub(crate) fn conv_taps(
    w: &impl DevicePtr<bf16>,
    channels: usize,
    stream: &cudarc::driver::CudaStream,
) -> Result<u64> {
    input("gdn conv weight", w, 4 * channels, stream)
}

fn slot(s: usize) -> Result<u64> {
    ensure!(s < 2, "state slot {s}: the pool keeps slots 0 and 1");
    Ok(s as u64)
}

impl Gpu {
    /// Causal depthwise conv (kernel 4) plus SiLU over `t` positions: x, out `[t][C]` fp32,
    /// w `[C][4]` bf16 (tap 3 on the newest input); `state` is the layer's pool (bytes, layout
    /// `[conv s0][conv s1][rec s0][rec s1]`), read from slot `read` and written to `write`.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn gdn_conv(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        read: usize,
        write: usize,
        out: &mut impl DevicePtrMut<f32>,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        shape.check()?;
        let c = shape.conv_channels();
        let x = input("gdn conv input", x, t * c, &self.stream)?;
        let w = conv_taps(w, c, &self.stream)?;
        let pool = output(
            "gdn layer state",
            state,
            shape.layer_state_bytes(),
            &self.stream,
        )?;
        let out = output("gdn conv output", out, t * c, &self.stream)?;
        let bytes = shape.conv_slot_bytes() as u64;
        let (from, to) = (pool + slot(read)? * bytes, pool + slot(write)? * bytes);
        self.gdn_conv_at(x, w, from, to, out, t, c)
    }

    /// [`Gpu::gdn_conv`] with the conv state slots given as device addresses (any pool
    /// layout): `from` and `to` each hold `[3][c]` bf16.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub(crate) fn gdn_conv_at(
        &self,
        x: u64,
        w: u64,
        from: u64,
        to: u64,
        out: u64,
        t: usize,
        c: usize,
    ) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: (c.div_ceil(256) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "gdn_conv",
            cfg,
            &x,
            &w,
            &from,
            &to,
            &out,
            &dim("t", t)?,
            &dim("channels", c)?
        );
        Ok(())
    }

    /// The gated delta rule over `t` positions for all value heads: qkv `[t][C]` (conv output),
    /// b, a `[t][hv]` fp32, a_log, dt_bias `[hv]` bf16, o `[t][hv][128]` fp32; the recurrent state
    /// is read from slot `read` of the layer's pool and written to slot `write` (equal: in place).
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters
    pub fn gdn_step(
        &self,
        qkv: &impl DevicePtr<f32>,
        b: &impl DevicePtr<f32>,
        a: &impl DevicePtr<f32>,
        a_log: &impl DevicePtr<bf16>,
        dt_bias: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        read: usize,
        write: usize,
        o: &mut impl DevicePtrMut<f32>,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        self.gdn_step_slots(
            qkv,
            None,
            b,
            a,
            a_log,
            dt_bias,
            state,
            (read, write),
            o,
            None,
            t,
            shape,
        )
    }

    /// [`Gpu::gdn_conv`] then [`Gpu::gdn_step`] in one launch: `x` is the projection before
    /// the conv, w its taps; both the conv and the recurrent state are read from slot `read`
    /// and written to slot `write`. The conv output is not stored.
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters
    pub fn gdn_conv_step(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        b: &impl DevicePtr<f32>,
        a: &impl DevicePtr<f32>,
        a_log: &impl DevicePtr<bf16>,
        dt_bias: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        read: usize,
        write: usize,
        o: &mut impl DevicePtrMut<f32>,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        let w = conv_taps(w, shape.conv_channels(), &self.stream)?;
        self.gdn_step_slots(
            x,
            Some(w),
            b,
            a,
            a_log,
            dt_bias,
            state,
            (read, write),
            o,
            None,
            t,
            shape,
        )
    }

    /// [`Gpu::gdn_step`] followed, in the same launch, by the output norm of
    /// [`Gpu::rmsnorm_gated`]: `y = norm_w · rmsnorm(o) · silu(z)` per value head, z and y
    /// `[t][hv][128]` fp32, norm_w `[128]` bf16; `o` still receives the raw output.
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters
    pub fn gdn_step_gated(
        &self,
        qkv: &impl DevicePtr<f32>,
        b: &impl DevicePtr<f32>,
        a: &impl DevicePtr<f32>,
        a_log: &impl DevicePtr<bf16>,
        dt_bias: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        read: usize,
        write: usize,
        o: &mut impl DevicePtrMut<f32>,
        z: &impl DevicePtr<f32>,
        norm_w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        eps: f32,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        let gated = GatedOut::new(z, norm_w, y, eps, t, shape, &self.stream)?;
        self.gdn_step_slots(
            qkv,
            None,
            b,
            a,
            a_log,
            dt_bias,
            state,
            (read, write),
            o,
            Some(gated),
            t,
            shape,
        )
    }

    /// [`Gpu::gdn_conv_step`] followed, in the same launch, by the output norm of
    /// [`Gpu::gdn_step_gated`]: the whole GDN layer between its projections in one launch.
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters
    pub fn gdn_conv_step_gated(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        b: &impl DevicePtr<f32>,
        a: &impl DevicePtr<f32>,
        a_log: &impl DevicePtr<bf16>,
        dt_bias: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        read: usize,
        write: usize,
        o: &mut impl DevicePtrMut<f32>,
        z: &impl DevicePtr<f32>,
        norm_w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        eps: f32,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        let gated = GatedOut::new(z, norm_w, y, eps, t, shape, &self.stream)?;
        let w = conv_taps(w, shape.conv_channels(), &self.stream)?;
        self.gdn_step_slots(
            x,
            Some(w),
            b,
            a,
            a_log,
            dt_bias,
            state,
            (read, write),
            o,
            Some(gated),
            t,
            shape,
        )
    }

    /// The step on the layer's pool `state`; with `conv_w` (the taps' address), `qkv` is the
    /// projection before the conv and the conv runs in the same launch.
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters, for its four wrappers
    fn gdn_step_slots(
        &self,
        qkv: &impl DevicePtr<f32>,
        conv_w: Option<u64>,
        b: &impl DevicePtr<f32>,
        a: &impl DevicePtr<f32>,
        a_log: &impl DevicePtr<bf16>,
        dt_bias: &impl DevicePtr<bf16>,
        state: &mut impl DevicePtrMut<u8>,
        (read, write): (usize, usize),
        o: &mut impl DevicePtrMut<f32>,
        gated: Option<GatedOut>,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        shape.check()?;
        ensure!(t > 0, "gdn step over 0 positions");
        let qkv = input("gdn qkv", qkv, t * shape.conv_channels(), &self.stream)?;
        let b = input("gdn b", b, t * shape.hv, &self.stream)?;
        let a = input("gdn a", a, t * shape.hv, &self.stream)?;
        let a_log = input("gdn A_log", a_log, shape.hv, &self.stream)?;
        let dt_bias = input("gdn dt_bias", dt_bias, shape.hv, &self.stream)?;
        let pool = output(
            "gdn layer state",
            state,
            shape.layer_state_bytes(),
            &self.stream,
        )?;
        let o = output("gdn output", o, t * shape.hv * HEAD_DIM, &self.stream)?;
        let conv_bytes = shape.conv_slot_bytes() as u64;
        let conv = conv_w
            .map(|w| {
                Ok::<_, anyhow::Error>(ConvIn {
                    w,
                    from: pool + slot(read)? * conv_bytes,
                    to: pool + slot(write)? * conv_bytes,
                })
            })
            .transpose()?;
        let base = pool + 2 * conv_bytes;
        let bytes = shape.rec_slot_bytes() as u64;
        let (from, to) = (base + slot(read)? * bytes, base + slot(write)? * bytes);
        self.gdn_step_at(
            [qkv, b, a, a_log, dt_bias],
            from,
            to,
            o,
            gated,
            conv,
            t,
            shape,
        )
    }

    /// [`Gpu::gdn_step`] with device addresses: `inputs` are qkv, b, a, A_log, dt_bias;
    /// `from` and `to` each hold one recurrent state slot `[hv][128][128]` fp32; with
    /// `gated`, the output norm in the same launch; with `conv`, the conv before it. `shape`
    /// is checked by the callers ([`GdnShape::check`]).
    #[allow(clippy::too_many_arguments)] // the gdn_step kernel's parameters, in its groups
    pub(crate) fn gdn_step_at(
        &self,
        inputs: [u64; 5],
        from: u64,
        to: u64,
        o: u64,
        gated: Option<GatedOut>,
        conv: Option<ConvIn>,
        t: usize,
        shape: GdnShape,
    ) -> Result<()> {
        let [qkv, b, a, a_log, dt_bias] = inputs;
        let g = gated.unwrap_or(GatedOut {
            z: 0,
            w: 0,
            y: 0,
            eps: 0.0,
        });
        let cv = conv.unwrap_or(ConvIn {
            w: 0,
            from: 0,
            to: 0,
        });
        let cfg = LaunchConfig {
            grid_dim: (shape.hv as u32, SLICES as u32, 1),
            block_dim: (STEP_WARPS as u32 * 32, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(self, "gdn_step", cfg, cluster Some(shape.step_cluster()); &qkv, &b, &a, &a_log, &dt_bias, &from, &to, &o, &dim("t", t)?, &dim("hk", shape.hk)?, &dim("hv", shape.hv)?, &self.early_arg(), &g.z, &g.w, &g.y, &g.eps, &cv.w, &cv.from, &cv.to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;
    use super::STEP_WARPS;

    #[test]
    fn step_launch_shape_is_the_kernels() {
        assert_defines("gdn.cu", &[("STEP_WARPS", STEP_WARPS)]);
    }
}
