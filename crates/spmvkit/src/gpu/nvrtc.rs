//! NVRTC compilation of method kernels (issue #3, "one kernel source per room, one shared
//! prelude"): the prelude (`prelude.cu`) is prepended to the room's `kernel.cu`, the pair is
//! compiled for one real architecture (`--gpu-architecture=sm_XY`) in one precision
//! (`-DSPMVKIT_REAL_F64` or `-DSPMVKIT_REAL_F32`, which set the prelude's `real_t`), and the
//! result (PTX, plus the CUBIN when NVRTC made one) is cached in memory by (source, precision,
//! arch), which fixes the options. A module is compiled per [`KernelMode`]: the precision
//! mode (issue #25, docs/precision.md) and the row offsets' width (`-DSPMVKIT_OFF_U64` sets the
//! prelude's `off_t` to 64 bits, docs/offsets.md).
//!
//! A source compiled for the launch layer ([`super::launch::Kernels`]) gets the layout checks of
//! its argument structs appended ([`super::launch::layout_checks`]), so a struct that disagrees
//! with its Rust twin fails here, with the assertion naming struct and field in the log.
//!
//! Loading the CUBIN rather than the PTX skips the driver's JIT and sidesteps PTX-version
//! mismatches when the NVRTC library is newer than the driver. Works without a GPU (only libnvrtc
//! is needed), which the CI check (`tests/nvrtc_compile.rs`) relies on.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::{result, sys};

use super::launch::{layout_checks, Kernels};
use super::KernelSource;
use crate::error::{Error, Result};
use crate::scalar::{OffsetWidth, Precision, PrecisionMode, ValueStorage};

/// The shared device helpers every kernel sees (`real_t`, warp reductions, cp.async wrappers).
pub const PRELUDE: &str = include_str!("prelude.cu");

/// A compiled kernel.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub ptx: String,
    pub cubin: Option<Vec<u8>>,
}

/// What a module is compiled for: the precision mode and the width of the row offsets
/// (`off_t` in the prelude; 32 bits unless a layout has 64-bit offsets, docs/offsets.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelMode {
    pub precision: PrecisionMode,
    pub offsets: OffsetWidth,
}

impl From<PrecisionMode> for KernelMode {
    fn from(precision: PrecisionMode) -> Self {
        KernelMode {
            precision,
            offsets: OffsetWidth::W32,
        }
    }
}

impl From<Precision> for KernelMode {
    fn from(p: Precision) -> Self {
        PrecisionMode::from(p).into()
    }
}

impl std::fmt::Display for KernelMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offsets {
            OffsetWidth::W32 => write!(f, "{}", self.precision),
            OffsetWidth::W64 => write!(f, "{}, 64-bit offsets", self.precision),
        }
    }
}

/// Compiled code by (kernel text, kernel mode, arch, appended layout checks).
type CompileCache = HashMap<(&'static str, KernelMode, String, String), Arc<Compiled>>;

fn cache() -> &'static Mutex<CompileCache> {
    static CACHE: OnceLock<Mutex<CompileCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Whether libnvrtc can be loaded (checked once; cudarc panics on a missing library).
pub fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the library.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// The NVRTC version (major, minor), when libnvrtc is present.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-pointers to live integers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .ok()
        .map(|_| (major, minor))
}

/// The NVRTC options used for `precision` on `arch`.
pub fn options(precision: Precision, arch: &str) -> Vec<String> {
    options_mode(PrecisionMode::same(precision), arch)
}

/// The NVRTC options used for the precision mode `mode` on `arch`: [`options`] and, for values
/// stored narrower than the vectors, the define that sets the prelude's `val_t`
/// (`-DSPMVKIT_VAL_F16`, `-DSPMVKIT_VAL_BF16`, `-DSPMVKIT_VAL_F32`; issue #25).
pub fn options_mode(mode: PrecisionMode, arch: &str) -> Vec<String> {
    let precision = mode.vectors;
    let values = match mode.values {
        ValueStorage::Same => None,
        ValueStorage::F16 => Some("-DSPMVKIT_VAL_F16"),
        ValueStorage::Bf16 => Some("-DSPMVKIT_VAL_BF16"),
        ValueStorage::F32 => Some("-DSPMVKIT_VAL_F32"),
    };
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        match precision {
            Precision::F64 => "-DSPMVKIT_REAL_F64".to_string(),
            Precision::F32 => "-DSPMVKIT_REAL_F32".to_string(),
        },
        "--std=c++17".to_string(),
        "--device-as-default-execution-space".to_string(),
    ];
    opts.extend(values.map(str::to_string));
    opts
}

/// The NVRTC options of a [`KernelMode`]: [`options_mode`] and, for 64-bit row offsets,
/// `-DSPMVKIT_OFF_U64` (the prelude's `off_t`).
pub fn options_kernel(mode: KernelMode, arch: &str) -> Vec<String> {
    let mut opts = options_mode(mode.precision, arch);
    if mode.offsets == OffsetWidth::W64 {
        opts.push("-DSPMVKIT_OFF_U64".to_string());
    }
    opts
}

/// The full translation unit NVRTC sees: prelude, then the kernel, with `#line` markers so the
/// log's line numbers point into `prelude.cu` or the room's `kernel.cu`.
pub fn full_source(k: &KernelSource) -> String {
    format!(
        "#line 1 \"spmvkit/prelude.cu\"\n{PRELUDE}\n#line 1 \"{}/kernel.cu\"\n{}\n",
        k.name, k.source
    )
}

/// [`full_source`] followed by `checks` (the layout checks of the launch layer), marked
/// `<room>/args-check` in the log.
fn full_source_with(k: &KernelSource, checks: &str) -> String {
    let mut s = full_source(k);
    if !checks.is_empty() {
        s.push_str(&format!("#line 1 \"{}/args-check\"\n{checks}", k.name));
    }
    s
}

/// Compiles a kernel for an arch without any GPU (CI check): returns PTX or
/// [`Error::Nvrtc`] with the log. Fails with [`Error::GpuUnavailable`] when libnvrtc is missing.
pub fn compile_ptx(k: &KernelSource, precision: Precision, arch: &str) -> Result<String> {
    Ok(compile(k, "", precision, arch)?.ptx.clone())
}

/// As [`compile_ptx`], with the layout checks of `k`'s argument structs appended (what the
/// launch layer loads): a struct that disagrees with its Rust twin is an [`Error::Nvrtc`].
pub fn compile_checked_ptx(k: &Kernels, precision: Precision, arch: &str) -> Result<String> {
    Ok(
        compile(&k.source, &layout_checks(k, precision), precision, arch)?
            .ptx
            .clone(),
    )
}

/// As [`compile_checked_ptx`], in the precision mode `mode` (values stored narrower than the
/// vectors, issue #25), or a [`KernelMode`] (64-bit row offsets too).
pub fn compile_checked_ptx_mode(
    k: &Kernels,
    mode: impl Into<KernelMode>,
    arch: &str,
) -> Result<String> {
    let mode = mode.into();
    let checks = layout_checks(k, mode.precision.vectors);
    Ok(compile(&k.source, &checks, mode, arch)?.ptx.clone())
}

/// Compiles (or finds in the cache) `k` with `checks` appended for `arch` in `mode` (a
/// [`Precision`] is the mode of values as the vectors).
pub(crate) fn compile(
    k: &KernelSource,
    checks: &str,
    mode: impl Into<KernelMode>,
    arch: &str,
) -> Result<Arc<Compiled>> {
    if !nvrtc_present() {
        return Err(Error::GpuUnavailable("libnvrtc not found".into()));
    }
    let precision = mode.into();
    let key = (k.source, precision, arch.to_string(), checks.to_string());
    if let Some(c) = lock(cache()).get(&key) {
        return Ok(c.clone());
    }
    let compiled = Arc::new(compile_uncached(k, checks, precision, arch)?);
    lock(cache()).insert(key, compiled.clone());
    Ok(compiled)
}

fn lock(m: &Mutex<CompileCache>) -> std::sync::MutexGuard<'_, CompileCache> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Owns an `nvrtcProgram` and destroys it on every path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn compile_uncached(
    k: &KernelSource,
    checks: &str,
    precision: KernelMode,
    arch: &str,
) -> Result<Compiled> {
    let fail = |log: String| Error::Nvrtc {
        kernel: format!("{} ({precision})", k.name),
        arch: arch.to_string(),
        log,
    };
    let src = CString::new(full_source_with(k, checks))
        .map_err(|_| fail("the kernel source contains a NUL byte".into()))?;
    let name = CString::new(format!("{}.cu", k.name))
        .map_err(|_| fail("the kernel name contains a NUL byte".into()))?;
    let prog = Program(
        result::create_program(&src, Some(&name))
            .map_err(|e| fail(format!("nvrtcCreateProgram: {e}")))?,
    );
    let opts = options_kernel(precision, arch);
    // SAFETY: prog is a live program; src and name outlive it.
    let compiled = unsafe { result::compile_program(prog.0, &opts) };
    if let Err(e) = compiled {
        let log = program_log(prog.0).unwrap_or_default();
        return Err(fail(format!(
            "{e} (options: {})\n{}",
            opts.join(" "),
            log.trim_end()
        )));
    }
    // SAFETY: prog compiled successfully.
    let ptx = unsafe { result::get_ptx(prog.0) }.map_err(|e| fail(format!("nvrtcGetPTX: {e}")))?;
    let ptx = c_chars_to_string(&ptx);
    let cubin = cubin(prog.0);
    Ok(Compiled { ptx, cubin })
}

fn program_log(prog: sys::nvrtcProgram) -> Option<String> {
    // SAFETY: prog is a live program.
    let log = unsafe { result::get_program_log(prog) }.ok()?;
    Some(c_chars_to_string(&log))
}

/// The CUBIN, when NVRTC produced one (it does for a real `sm_XY` architecture).
fn cubin(prog: sys::nvrtcProgram) -> Option<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: prog is a live, compiled program; the buffer has the size NVRTC asked for.
    unsafe {
        sys::nvrtcGetCUBINSize(prog, &mut size).result().ok()?;
        if size == 0 {
            return None;
        }
        let mut buf = vec![0u8; size];
        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char)
            .result()
            .ok()?;
        Some(buf)
    }
}

fn c_chars_to_string(v: &[c_char]) -> String {
    let bytes: Vec<u8> = v.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}
