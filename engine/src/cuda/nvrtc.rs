//! Run-time compilation of `kernels/*.cu` with NVRTC for sm_90, with a disk cache of the PTX.
//!
//! Compiling needs no GPU: only `libnvrtc.so.13` (on `LD_LIBRARY_PATH`) and the toolkit's
//! headers (`cuda_bf16.h`). `.ci/nvrtc.sh` installs both from PyPI for machines without CUDA.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use cudarc::nvrtc::{self, CompileError, CompileOptions};

/// The architecture every kernel is compiled for (the H200 is compute capability 9.0).
pub const ARCH: &str = "sm_90";

/// One kernel file of `kernels/`.
#[derive(Debug, Clone, Copy)]
pub struct KernelFile {
    /// File name inside `kernels/`.
    pub name: &'static str,
    pub source: &'static str,
    /// `--use_fast_math`: off where results must be exact (synthetic weights) or where
    /// approximate transcendental functions lose accuracy (the recurrence gates).
    pub fast_math: bool,
}

/// Helpers prepended to every kernel file.
pub(crate) const COMMON: &str = include_str!("../../../kernels/common.cuh");

macro_rules! kernel_file {
    ($name:literal, $fast:expr) => {
        KernelFile {
            name: $name,
            source: include_str!(concat!("../../../kernels/", $name)),
            fast_math: $fast,
        }
    };
}

/// Every kernel file, compiled at start-up.
pub const KERNEL_FILES: &[KernelFile] = &[
    kernel_file!("synthetic.cu", false),
    kernel_file!("ceiling.cu", true),
    kernel_file!("embed.cu", true),
    kernel_file!("rmsnorm.cu", true),
    kernel_file!("gemv.cu", true),
    kernel_file!("gemm.cu", true),
    kernel_file!("argmax.cu", true),
    kernel_file!("moe.cu", true),
    kernel_file!("gdn.cu", false),
    kernel_file!("attention.cu", true),
    kernel_file!("rows.cu", false),
    kernel_file!("pad.cu", false),
];

impl KernelFile {
    /// The text NVRTC compiles: the shared helpers, then the file with its own line numbers.
    pub fn full_source(&self) -> String {
        format!("{COMMON}\n#line 1 \"{}\"\n{}", self.name, self.source)
    }

    fn options(&self, include_dir: &Path, defines: &[String]) -> Vec<String> {
        let mut options = vec![
            format!("--include-path={}", include_dir.display()),
            "--std=c++17".to_string(),
        ];
        if self.fast_math {
            options.push("--use_fast_math".to_string());
        }
        options.extend(defines.iter().map(|d| format!("-D{d}")));
        options
    }
}

/// Whether `libnvrtc` can be loaded; the cudarc loader panics when it cannot.
pub fn nvrtc_present() -> bool {
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// NVRTC's version, e.g. (13, 0).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .context("nvrtcVersion failed")?;
    Ok((major, minor))
}

fn ensure_nvrtc() -> Result<()> {
    if !nvrtc_present() {
        bail!(
            "libnvrtc not found: put CUDA's lib64 (e.g. /usr/local/cuda/lib64) on LD_LIBRARY_PATH, \
             or run `source .ci/nvrtc.sh` to install NVRTC 13.0 from PyPI"
        );
    }
    Ok(())
}

/// The toolkit include directory holding `cuda_bf16.h`: `$ABAB_CUDA_INCLUDE`, then
/// `$CUDA_HOME/include`, `$CUDA_PATH/include`, `/usr/local/cuda/include`.
pub fn cuda_include_dir() -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("ABAB_CUDA_INCLUDE") {
        candidates.push(PathBuf::from(dir));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(dir) = std::env::var_os(var) {
            candidates.push(PathBuf::from(dir).join("include"));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    candidates
        .iter()
        .find(|dir| dir.join("cuda_bf16.h").is_file())
        .cloned()
        .with_context(|| {
            format!(
                "cuda_bf16.h not found in {}: set ABAB_CUDA_INCLUDE or CUDA_HOME to the CUDA \
                 toolkit (or run `source .ci/nvrtc.sh`)",
                candidates
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// `$XDG_CACHE_HOME/abab/kernels`, else `~/.cache/abab/kernels`; `None` when neither is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("abab").join("kernels"))
}

/// Compiles kernel files to PTX.
pub struct Compiler {
    include_dir: PathBuf,
    version: (i32, i32),
    cache_dir: Option<PathBuf>,
    /// Macros defined for every file (`-D`).
    defines: Vec<String>,
}

impl Compiler {
    /// Finds NVRTC and the headers; `cache_dir` None compiles every time.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self> {
        Ok(Self {
            include_dir: cuda_include_dir()?,
            version: nvrtc_version()?,
            cache_dir,
            defines: Vec::new(),
        })
    }

    /// Compiles the kernels with the decode timeline (`ENGINE_TIMELINE`, kernels/common.cuh):
    /// each launch's first block notes when its wait returned ([`super::timeline`]).
    pub fn with_timeline(mut self) -> Self {
        self.defines.push("ENGINE_TIMELINE".to_string());
        self
    }

    /// The cache key: blake3 over the full source, the options and NVRTC's version.
    fn key(&self, file: &KernelFile, source: &str, options: &[String]) -> String {
        let mut h = blake3::Hasher::new();
        h.update(source.as_bytes());
        h.update(&[0]);
        h.update(ARCH.as_bytes());
        for o in options {
            h.update(&[0]);
            h.update(o.as_bytes());
        }
        h.update(format!("\0nvrtc {}.{}", self.version.0, self.version.1).as_bytes());
        format!(
            "{}-{}",
            file.name.trim_end_matches(".cu"),
            &h.finalize().to_hex()[..32]
        )
    }

    /// PTX for `file`, from the cache when present.
    pub fn ptx(&self, file: &KernelFile) -> Result<String> {
        let source = file.full_source();
        let options = file.options(&self.include_dir, &self.defines);
        let cached = self
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("{}.ptx", self.key(file, &source, &options))));
        if let Some(ptx) = cached
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
        {
            return Ok(ptx);
        }
        let ptx = compile(file, &source, options)?;
        if let Some(path) = cached {
            // A cache that cannot be written only costs the next start a compile.
            if let Err(e) = write_atomic(&path, &ptx) {
                eprintln!(
                    "warning: kernel cache {} not written: {e:#}",
                    path.display()
                );
            }
        }
        Ok(ptx)
    }
}

/// What ptxas gave one kernel entry for sm_90: registers a thread, spills and stack a thread,
/// static shared memory a block. The engine loads PTX, which the driver assembles; a GPU test
/// (`cuda_kernels`, `resources`) checks that it gives every kernel these registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub stack_bytes: u32,
    pub shared_bytes: u32,
}

impl Compiler {
    /// Assembles `file` for sm_90 with `ptxas -v` and reads every entry's resources from the
    /// log (never cached, by this compiler or NVRTC: the report is for checks, not start-up).
    pub fn resources(&self, file: &KernelFile) -> Result<Vec<KernelResources>> {
        let mut options = file.options(&self.include_dir, &self.defines);
        options.push(format!("--gpu-architecture={ARCH}"));
        options.push("--ptxas-options=-v".to_string());
        // NVRTC 12.9 and later keep compiles in CUDA's compute cache (`~/.nv/ComputeCache`);
        // a compile served from it runs no ptxas, so its log holds no report.
        if self.version >= (12, 9) {
            options.push("--no-cache".to_string());
        }
        let (log, ptx) = compile_log(file, &file.full_source(), &options)?;
        let entries = parse_ptxas_log(&log)
            .with_context(|| format!("reading ptxas's report on kernels/{}", file.name))?;
        let mut reported: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
        let mut in_ptx = entry_points(&ptx);
        reported.sort();
        in_ptx.sort();
        ensure!(reported == in_ptx, "ptxas reported the entries {reported:?} of kernels/{}, its PTX has {in_ptx:?}; NVRTC's log:\n{log}", file.name);
        Ok(entries)
    }
}

/// The `.entry` names of a PTX module (the `extern "C"` kernels).
pub(crate) fn entry_points(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim().to_string())
        .collect()
}

/// Compiles and returns NVRTC's log, which holds ptxas's report, and the PTX.
fn compile_log(file: &KernelFile, source: &str, options: &[String]) -> Result<(String, String)> {
    use cudarc::nvrtc::result;
    let text = |log: Vec<std::ffi::c_char>| {
        let bytes: Vec<u8> = log
            .into_iter()
            .take_while(|&c| c != 0)
            .map(|c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    ensure_nvrtc()?;
    let source = std::ffi::CString::new(source).context("kernel source holds a NUL byte")?;
    let name = std::ffi::CString::new(file.name).context("kernel file name holds a NUL byte")?;
    let prog = result::create_program(&source, Some(&name))
        .with_context(|| format!("NVRTC could not take kernels/{}", file.name))?;
    // SAFETY: `prog` was created above and is destroyed once, after its last use.
    let outcome = unsafe { result::compile_program(prog, options) };
    let log = unsafe { result::get_program_log(prog) }.map(text);
    let ptx = outcome
        .is_ok()
        .then(|| unsafe { result::get_ptx(prog) }.map(text));
    unsafe { result::destroy_program(prog) }.context("NVRTC could not release a program")?;
    let log = log.context("NVRTC gave no log")?;
    match outcome {
        Ok(()) => Ok((
            log,
            ptx.expect("taken when the compile succeeded")
                .context("NVRTC gave no PTX")?,
        )),
        Err(e) => bail!(
            "NVRTC rejected kernels/{} ({e}; options {}):\n{log}",
            file.name,
            options.join(" ")
        ),
    }
}

/// The entries of a `ptxas -v` log, in its order. Per entry ptxas writes
/// `Compiling entry function 'NAME'`, then `N bytes stack frame, S bytes spill stores, L bytes
/// spill loads`, then `Used R registers, ... [, M bytes smem]`.
pub fn parse_ptxas_log(log: &str) -> Result<Vec<KernelResources>> {
    log.split("Compiling entry function '")
        .skip(1)
        .map(parse_entry)
        .collect()
}

fn parse_entry(report: &str) -> Result<KernelResources> {
    let name = report.split('\'').next().unwrap_or_default().to_string();
    let line_with = |text: &str| report.lines().find(|l| l.contains(text));
    // The number just before `unit` on `line`.
    let number = |line: &str, unit: &str| -> Option<u32> {
        line[..line.find(unit)?]
            .split(|c: char| !c.is_ascii_digit())
            .rfind(|w| !w.is_empty())?
            .parse()
            .ok()
    };
    let frame =
        line_with("bytes spill stores").with_context(|| format!("no spill line for {name}"))?;
    let usage = line_with(" registers").with_context(|| format!("no register count for {name}"))?;
    let field = |line: &str, unit: &str| {
        number(line, unit).with_context(|| format!("no `{unit}` for {name} in `{}`", line.trim()))
    };
    Ok(KernelResources {
        registers: field(usage, " registers")?,
        spill_store_bytes: field(frame, " bytes spill stores")?,
        spill_load_bytes: field(frame, " bytes spill loads")?,
        stack_bytes: field(frame, " bytes stack frame")?,
        shared_bytes: number(usage, " bytes smem").unwrap_or(0),
        name,
    })
}

fn compile(file: &KernelFile, source: &str, options: Vec<String>) -> Result<String> {
    let opts = CompileOptions {
        arch: Some(ARCH),
        options,
        name: Some(file.name.to_string()),
        ..Default::default()
    };
    match nvrtc::compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, options, .. }) => bail!(
            "NVRTC rejected kernels/{} (options {}):\n{}",
            file.name,
            options.join(" "),
            log.to_string_lossy()
        ),
        Err(e) => bail!("NVRTC failed on kernels/{}: {e}", file.name),
    }
}

/// Writes through a temporary file and a rename, so that a concurrent reader never sees a
/// partial PTX file.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().context("cache path has no parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Asserts that kernels/`file` has `#define NAME value` for each pair: the constants from which
/// the host computes a kernel's launch shape mirror the kernel's own.
#[cfg(test)]
pub(crate) fn assert_defines(file: &str, defines: &[(&str, usize)]) {
    let source = if file == "common.cuh" {
        COMMON
    } else {
        KERNEL_FILES
            .iter()
            .find(|f| f.name == file)
            .unwrap_or_else(|| panic!("kernels/{file} is not a kernel file"))
            .source
    };
    for (name, value) in defines {
        let define = format!("#define {name} {value}\n");
        assert!(
            source.contains(&define),
            "kernels/{file} lacks `{}`",
            define.trim_end()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'moe_down' for 'sm_90'
ptxas info    : Function properties for moe_down
ptxas         .     8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 108 registers, used 1 barriers, 272 bytes smem
ptxas info    : Compile time = 205.593 ms
ptxas info    : Compiling entry function 'tiny' for 'sm_90'
ptxas info    : Function properties for tiny
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 0 barriers
";

    #[test]
    fn ptxas_report_gives_each_entry_its_resources() {
        let entries = parse_ptxas_log(LOG).unwrap();
        let down = KernelResources {
            name: "moe_down".into(),
            registers: 108,
            spill_store_bytes: 12,
            spill_load_bytes: 20,
            stack_bytes: 8,
            shared_bytes: 272,
        };
        let tiny = KernelResources {
            name: "tiny".into(),
            registers: 14,
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            stack_bytes: 0,
            shared_bytes: 0,
        };
        assert_eq!(entries, vec![down, tiny]);
    }

    #[test]
    fn an_entry_without_its_register_count_is_an_error() {
        let cut = &LOG[..LOG.find("ptxas info    : Used 108").unwrap()];
        let err = format!("{:#}", parse_ptxas_log(cut).unwrap_err());
        assert!(err.contains("no register count for moe_down"), "{err}");
    }
}
