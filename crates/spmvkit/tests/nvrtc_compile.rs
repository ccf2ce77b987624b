//! CI NVRTC check (issue #3): every method room's kernel (`spmvkit::methods::kernel_sources()`),
//! the runtime's (`spmvkit::gpu::internal_kernels()`) and the solvers'
//! (`spmvkit::solve::kernel_sources()`), with the shared prelude and the launch layer's layout
//! checks of its argument structs, compiles for sm_80 and sm_90 in f32 and f64. Needs only
//! libnvrtc, no GPU: `.ci/nvrtc-check` installs the pinned NVRTC wheel and runs this with
//! `SPMVKIT_REQUIRE_NVRTC=1`. Without libnvrtc the tests are skipped, and fail under that variable
//! or `SPMVKIT_REQUIRE_GPU=1` (`spmvkit::testing`).

use spmvkit::gpu::{
    compile_checked_ptx, compile_checked_ptx_mode, compile_ptx, nvrtc_version, KernelSource,
};
use spmvkit::testing::nvrtc_or_skip;
use spmvkit::{Error, Precision, PrecisionMode};

const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

#[test]
fn every_kernel_compiles_for_sm80_and_sm90_in_both_precisions() {
    if !nvrtc_or_skip("every_kernel_compiles_for_sm80_and_sm90_in_both_precisions") {
        return;
    }
    eprintln!("NVRTC version {:?}", nvrtc_version());
    let mut sources = spmvkit::methods::kernel_sources();
    sources.extend(spmvkit::gpu::internal_kernels());
    sources.extend(spmvkit::solve::kernel_sources());
    let mut failures = Vec::new();
    let mut compiled = 0;
    for k in &sources {
        let name = k.source.name;
        for arch in ARCHS {
            for p in Precision::ALL {
                match compile_checked_ptx(k, p, arch) {
                    Ok(ptx) => {
                        assert!(ptx.contains(".entry"), "{name} {arch} {p}: no entry");
                        for e in k.entries {
                            let head = format!(".entry {}(", e.name);
                            assert!(ptx.contains(&head), "{name} {arch} {p}: no {}", e.name);
                        }
                        compiled += 1;
                    }
                    Err(e) => failures.push(format!("{name} {arch} {p}: {e}")),
                }
            }
        }
    }
    eprintln!(
        "compiled {compiled} kernel builds ({} sources)",
        sources.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The kernels that read values stored narrower than x and y (issue #25, docs/precision.md)
/// compile, with their layout checks, in every narrower mode (`-DSPMVKIT_VAL_*`), and read the
/// values through the conversion (a 16-bit load, or an f32 load widened to f64).
#[test]
fn stored_value_kernels_compile_in_every_narrow_mode() {
    if !nvrtc_or_skip("stored_value_kernels_compile_in_every_narrow_mode") {
        return;
    }
    use spmvkit::methods::{csr_light, csr_packed, csr_scalar, csr_vector, merge};
    let rooms = [
        (csr_vector::KERNEL, true),
        (csr_scalar::KERNEL, true),
        (merge::KERNEL, true),
        (csr_light::KERNEL, true),
        // csr-packed: f16 and bf16 only (16-bit codes widened, docs/precision.md)
        (csr_packed::KERNEL, false),
    ];
    let mut failures = Vec::new();
    for (k, csr) in &rooms {
        for mode in PrecisionMode::ALL {
            let name = k.source.name;
            if !csr && mode.to_string() == "f32-f64" {
                continue;
            }
            match compile_checked_ptx_mode(k, mode, "sm_90") {
                Ok(ptx) => {
                    let load = match mode.to_string().as_str() {
                        "f16-f32" => "cvt.f32.f16",
                        "bf16-f32" if *csr => ".u16",
                        "f32-f64" => "cvt.f64.f32",
                        _ => ".entry",
                    };
                    if !ptx.contains(load) {
                        failures.push(format!("{name} {mode}: no {load} in the PTX"));
                    }
                }
                Err(e) => failures.push(format!("{name} {mode}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The kernels that take 64-bit row offsets compile with them in every precision mode, loading
/// the row pointers 64 bits wide (docs/offsets.md); in 32 bits they load no 64-bit word.
#[test]
fn kernels_compile_with_64_bit_offsets() {
    if !nvrtc_or_skip("kernels_compile_with_64_bit_offsets") {
        return;
    }
    use spmvkit::gpu::KernelMode;
    use spmvkit::methods::{csr_scalar, csr_vector};
    let mut failures = Vec::new();
    for k in [csr_vector::KERNEL, csr_scalar::KERNEL] {
        for precision in PrecisionMode::ALL {
            for offsets in [spmvkit::OffsetWidth::W32, spmvkit::OffsetWidth::W64] {
                let mode = KernelMode { precision, offsets };
                let name = k.source.name;
                match compile_checked_ptx_mode(&k, mode, "sm_90") {
                    Ok(ptx) => {
                        let wide = ptx.contains("ld.global.nc.u64");
                        if wide != (offsets == spmvkit::OffsetWidth::W64) {
                            failures.push(format!("{name} {mode}: 64-bit loads {wide}"));
                        }
                    }
                    Err(e) => failures.push(format!("{name} {mode}: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every prelude helper instantiated in both precisions, so a prelude error shows even before
/// any room uses the helper.
const PRELUDE_USER: KernelSource = KernelSource {
    name: "prelude-check",
    source: r#"
extern "C" __global__ void prelude_check(const real_t* __restrict__ x, real_t* y, int n) {
    __shared__ __align__(16) real_t s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 32) {
        cp_async_4(&s[threadIdx.x * 4], x);
        cp_async_8(&s[threadIdx.x * 2], x);
        cp_async_16(&s[threadIdx.x * 2], x);
        cp_async_commit();
        cp_async_wait_group<0>();
        cp_async_wait_all();
    }
    __syncthreads();
    real_t v = i < n ? ldg(x + i) + ldcs(x + i) + s[threadIdx.x & 127] : (real_t)0;
    real_t r = warp_reduce_sum(v) + warp_inclusive_scan(v) + warp_reduce_sum_width(v, 8);
    if (i < n) {
        atomic_add_real(y, r);
        store_axpby(y, i, (real_t)1, r, (real_t)0);
    }
    static_assert(sizeof(real_t) == SPMVKIT_REAL_BYTES, "real_t size");
    (void)FULL_MASK;
}
"#,
};

#[test]
fn prelude_helpers_compile() {
    if !nvrtc_or_skip("prelude_helpers_compile") {
        return;
    }
    for arch in ARCHS {
        for p in Precision::ALL {
            let ptx = compile_ptx(&PRELUDE_USER, p, arch).unwrap_or_else(|e| panic!("{e}"));
            assert!(ptx.contains("prelude_check"));
            let want = if p == Precision::F64 { "f64" } else { "f32" };
            assert!(ptx.contains(want), "{arch} {p}: no {want} in PTX");
        }
    }
}

#[test]
fn broken_kernel_reports_the_log() {
    if !nvrtc_or_skip("broken_kernel_reports_the_log") {
        return;
    }
    let broken = KernelSource {
        name: "broken",
        source: "extern \"C\" __global__ void k(real_t* y) { y[0] = undefined_name; }",
    };
    match compile_ptx(&broken, Precision::F32, "sm_80") {
        Err(Error::Nvrtc { kernel, arch, log }) => {
            assert!(kernel.contains("broken"));
            assert_eq!(arch, "sm_80");
            assert!(log.contains("undefined_name"), "log: {log}");
            assert!(log.contains("broken/kernel.cu"), "log: {log}");
        }
        other => panic!("expected Error::Nvrtc, got {other:?}"),
    }
    match compile_ptx(&PRELUDE_USER, Precision::F64, "sm_1") {
        Err(Error::Nvrtc { .. }) => {}
        other => panic!("expected Error::Nvrtc for a bad arch, got {other:?}"),
    }
}
