//! CUDA backend layer: the kernels of `kernels/` compiled at run time with NVRTC for sm_90,
//! and one typed, checked launch wrapper per kernel on [`Gpu`].
//!
//! Conventions: weights are bf16, activations fp32 (`[T][n]` row-major for T positions), the
//! GDN recurrent state fp32 and its conv state bf16. Every wrapper checks buffer lengths
//! against the shapes it is given, enqueues on [`Gpu::stream`] and never synchronizes, so a
//! decode round built from them can be captured as a CUDA graph ([`Gpu::capture`]). Values
//! the round changes (token ids, positions) are read from device buffers.

/// Launches kernel `$name` on the stream with the given arguments (each a reference to a
/// plain value: a device address, a dimension, a scalar), naming it in the error.
/// With `cluster [x, y, z];` before the arguments, the blocks run in thread block clusters.
macro_rules! launch {
    ($gpu:expr, $name:expr, $cfg:expr, cluster $cluster:expr; $($arg:expr),+ $(,)?) => {{
        let name: &str = &$name;
        let f = $gpu.function(name)?;
        let mut params = Vec::new();
        // Each argument is bound first so that temporaries live until the launch.
        $( let arg = $arg; params.push($crate::cuda::launch::param(arg)); )+
        // Safety: each wrapper passes the argument types and order of the kernel's signature
        // and checks buffer lengths against the launch's shapes first.
        unsafe { $gpu.launch_raw(name, f, $cfg, $cluster, &mut params) }.map_err(|e| anyhow::anyhow!("launching kernel {name}: {e:?}"))?;
    }};
    ($gpu:expr, $name:expr, $cfg:expr, $($arg:expr),+ $(,)?) => {
        launch!($gpu, $name, $cfg, cluster None; $($arg),+)
    };
}

mod args;
pub mod attention;
pub mod backend;
pub mod ceiling;
pub mod device;
pub mod embed;
pub mod gdn;
pub mod gemv;
pub mod graph;
pub mod l2;
pub mod launch;
pub mod moe;
pub mod nvrtc;
pub mod pad;
pub mod rmsnorm;
pub mod synthetic;
pub mod timeline;

pub use crate::options::{FoldNorms, GpuOptions};
pub use attention::{AttnPlan, AttnScratch, AttnShape};
pub use backend::{CudaBackend, CudaBuf, CudaMat, ProfileRow};
pub use ceiling::StageSync;
pub use device::{driver_present, DeviceInfo, Gpu};
pub use gdn::GdnShape;
pub use gemv::GemvInput;
pub use moe::{MoePrefillScratch, MoeScratch, MoeShape, MoeStage, MoeWeights, RouterThroughOut};
pub use synthetic::synthetic_key;
