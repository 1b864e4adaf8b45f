// The two temporary tests (engine/tests/cuda_kernels/diag.rs) of the diagnosis runs: NVRTC's
// ptxas report on the first two kernel files, taken before and after the device is opened.
use super::gpu;
use engine::cuda::nvrtc::{Compiler, KERNEL_FILES};

fn report(when: &str) {
    let compiler = Compiler::new(None).unwrap();
    for f in KERNEL_FILES.iter().take(2) {
        println!("{when}: {} -> {:?}", f.name, compiler.resources(f).map(|e| e.len()).map_err(|e| format!("{e:#}").lines().next().unwrap_or("").to_string()));
    }
}

#[test]
fn diag_nvrtc_first() {
    report("before gpu");
    let _ = gpu();
    report("after gpu");
}

#[test]
fn diag_gpu_first() {
    let _ = gpu();
    report("after gpu");
    report("again");
}
