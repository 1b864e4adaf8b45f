use super::gpu;
use engine::cuda::nvrtc::{Compiler, KERNEL_FILES};

/// The spill check of `cuda_compile` reads NVRTC's ptxas; the device runs what its driver
/// assembles from the PTX. Both must give every kernel the same registers and local memory.
#[test]
#[ignore = "needs a CUDA device"]
fn loaded_kernels_use_the_registers_nvrtc_reports() {
    let gpu = gpu();
    let compiler =
        Compiler::new(None).expect("NVRTC compiled the loaded kernels, so it is present");
    let mut differ = Vec::new();
    let mut checked = 0;
    for file in KERNEL_FILES {
        for e in compiler
            .resources(file)
            .unwrap_or_else(|err| panic!("{err:#}"))
        {
            let (registers, local) = gpu
                .kernel_registers(&e.name)
                .unwrap_or_else(|err| panic!("{err:#}"));
            if (registers, local) != (e.registers, e.stack_bytes) {
                differ.push(format!("{}: {registers} registers and {local} B local on the device, {} and {} B from NVRTC", e.name, e.registers, e.stack_bytes));
            }
            checked += 1;
        }
    }
    println!("{checked} kernels: {} differ", differ.len());
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
