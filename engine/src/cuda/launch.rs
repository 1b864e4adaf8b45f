//! Kernel launches with programmatic dependent launch (PDL): each kernel may start while the
//! previous one of the stream still runs, fetch its weights and wait for that kernel inside
//! (`pdl_begin` in kernels/common.cuh). A decode round is a chain of a few hundred short
//! kernels, so hiding each launch and each kernel's ramp behind the one before is worth more
//! than any one kernel's speed. `ENGINE_PDL=off` ([`super::GpuOptions`]) launches them
//! plainly, one after another.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
use cudarc::driver::{CudaFunction, DeviceRepr, DriverError, LaunchConfig};

use super::Gpu;

/// A kernel argument as the driver takes it: the address of the value.
pub(crate) fn param<T: DeviceRepr>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

/// The bits of the kernels' `early` argument, as kernels/common.cuh defines them.
const EARLY_L2: i32 = 1;
const EARLY_REGS: i32 = 2;

impl Gpu {
    /// The `early` argument of the kernels that fetch their weights before waiting for the
    /// kernel before them.
    pub(crate) fn early_arg(&self) -> i32 {
        let bit = |on: bool, b: i32| if on { b } else { 0 };
        bit(self.options.weight_prefetch, EARLY_L2) | bit(self.options.weight_preload, EARLY_REGS)
    }

    /// Launches `f` (kernel `name`) on the stream with `params` (one address per kernel
    /// argument), its blocks grouped in clusters of `cluster` blocks (x, y, z) when given.
    ///
    /// # Safety
    /// `params` must match the kernel's signature in number, order and types, and every
    /// buffer it points into must hold what the launch reads and writes.
    pub(crate) unsafe fn launch_raw(
        &self,
        name: &str,
        f: &CudaFunction,
        cfg: LaunchConfig,
        cluster: Option<[u32; 3]>,
        params: &mut [*mut c_void],
    ) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        let mut attrs = LaunchAttrs::new(self.options.pdl, cluster);
        let config = self.launch_config(cfg, &mut attrs);
        sys::cuLaunchKernelEx(
            &config,
            f.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()?;
        if let Some(timeline) = &self.timeline {
            timeline.launched(name, &cfg);
        }
        Ok(())
    }

    /// How many clusters of `cluster` blocks of kernel `name`, launched as `cfg`, the device
    /// runs at once.
    pub(crate) fn max_active_clusters(
        &self,
        name: &str,
        cfg: LaunchConfig,
        cluster: [u32; 3],
    ) -> anyhow::Result<usize> {
        let f = self.function(name)?;
        self.ctx.bind_to_thread()?;
        let mut attrs = LaunchAttrs::new(false, Some(cluster));
        let config = self.launch_config(cfg, &mut attrs);
        let mut clusters = 0;
        // SAFETY: `config` and the attributes it points to live through the call.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, f.cu_function(), &config) }
            .result()
            .map_err(|e| anyhow::anyhow!("{name}: clusters of {cluster:?} blocks: {e:?}"))?;
        Ok(clusters.max(0) as usize)
    }

    /// The driver's launch configuration for `cfg` on the stream, with `attrs`.
    fn launch_config(&self, cfg: LaunchConfig, attrs: &mut LaunchAttrs) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: attrs.list.as_mut_ptr(),
            numAttrs: attrs.count,
        }
    }
}

/// A launch's attributes: dependent launch and the cluster shape. At most two, kept on the
/// stack: no allocation per launch.
struct LaunchAttrs {
    list: [CUlaunchAttribute; 2],
    count: u32,
}

impl LaunchAttrs {
    fn new(pdl: bool, cluster: Option<[u32; 3]>) -> Self {
        // SAFETY: the attributes are plain C data, for which all zeros is a valid value.
        let mut attrs = Self {
            list: unsafe { std::mem::zeroed() },
            count: 0,
        };
        if pdl {
            let a = attrs
                .push(CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
            a.value.programmaticStreamSerializationAllowed = 1;
        }
        if let Some([x, y, z]) = cluster {
            let a = attrs.push(CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
            a.value.clusterDim.x = x;
            a.value.clusterDim.y = y;
            a.value.clusterDim.z = z;
        }
        attrs
    }

    fn push(&mut self, id: CUlaunchAttributeID) -> &mut CUlaunchAttribute {
        let a = &mut self.list[self.count as usize];
        a.id = id;
        self.count += 1;
        a
    }
}

#[cfg(test)]
mod tests {
    use super::{EARLY_L2, EARLY_REGS};

    #[test]
    fn early_bits_are_the_kernels() {
        for (name, bit) in [("EARLY_L2", EARLY_L2), ("EARLY_REGS", EARLY_REGS)] {
            let define = format!("#define {name} {bit} ");
            assert!(
                super::super::nvrtc::COMMON.contains(&define),
                "kernels/common.cuh lacks `{define}`"
            );
        }
    }
}
