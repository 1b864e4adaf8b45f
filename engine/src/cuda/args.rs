//! Raw device pointers and length checks shared by the launch wrappers.

use anyhow::{ensure, Result};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

/// Device address of a buffer the kernel reads, after checking it holds `need` elements.
/// Event tracking is off (see [`super::Gpu::new`]), so the guard cudarc returns does nothing.
pub(crate) fn input<T>(
    what: &str,
    buf: &impl DevicePtr<T>,
    need: usize,
    stream: &CudaStream,
) -> Result<u64> {
    ensure!(
        buf.len() >= need,
        "{what}: buffer holds {} elements, the launch needs {need}",
        buf.len()
    );
    Ok(buf.device_ptr(stream).0)
}

/// Device address of a buffer the kernel writes, after checking it holds `need` elements.
pub(crate) fn output<T>(
    what: &str,
    buf: &mut impl DevicePtrMut<T>,
    need: usize,
    stream: &CudaStream,
) -> Result<u64> {
    ensure!(
        buf.len() >= need,
        "{what}: buffer holds {} elements, the launch needs {need}",
        buf.len()
    );
    Ok(buf.device_ptr_mut(stream).0)
}

/// A dimension as the kernels' `int`.
pub(crate) fn dim(what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| anyhow::anyhow!("{what} = {v} does not fit a 32-bit int"))
}

/// Positions per launch of the small-T kernels (speculative verify: K drafts + 1).
pub const MAX_T: usize = 8;

pub(crate) fn positions(t: usize) -> Result<()> {
    ensure!(
        (1..=MAX_T).contains(&t),
        "positions T = {t}: the decode kernels take 1..={MAX_T}"
    );
    Ok(())
}
