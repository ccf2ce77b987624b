//! Plans built from CSR arrays on the device (issue #23, "nothing on the device is copied to the
//! host when the input already lives there"): `Plan::from_device_csr`.
//!
//! - every device-native method (`spmvkit::methods::DEVICE_METHODS`) on the edge corpus, in f32
//!   and f64, built from device arrays on a caller's stream: host and device calls match the
//!   oracle, and value updates (host and device) give the product of the new values;
//! - malformed device structures (row_ptr not starting at 0, decreasing, ending elsewhere than
//!   nnz; a column out of range; unsorted or duplicate columns) are `InvalidStructure` errors
//!   naming the row, never a panic or an out-of-bounds read;
//! - other methods, a reordering and the CPU backend are refused with errors that say why.
//!
//! Without a GPU every test prints a `skipped:` line and passes; with `SPMVKIT_REQUIRE_GPU=1` a
//! missing GPU fails.

mod common;

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use spmvkit::cpu::{check, oracle_spmv};
use spmvkit::gpu::Gpu;
use spmvkit::methods::{DeviceCsrRef, PrepareFor, DEVICE_METHODS};
use spmvkit::{Backend, Csr, Error, Plan, PlanOptions, Scalar};

/// Deterministic values in [-1.5, 1.5], exact in f32.
fn values<T: Scalar>(n: usize, salt: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_f64(((i * 7 + salt * 3) % 13) as f64 / 4.0 - 1.5))
        .collect()
}

/// `a`'s arrays on the device.
struct Arrays<T> {
    row_ptr: CudaSlice<u32>,
    col_idx: CudaSlice<u32>,
    vals: CudaSlice<T>,
    shape: (usize, usize, usize),
}

impl<T: Scalar> Arrays<T> {
    fn raw(gpu: &Gpu, (nrows, ncols): (usize, usize), rp: &[u32], ci: &[u32], v: &[T]) -> Self {
        let arrays = Arrays {
            row_ptr: gpu.upload(rp).expect("row_ptr"),
            col_idx: gpu.upload(ci).expect("col_idx"),
            vals: gpu.upload(v).expect("vals"),
            shape: (nrows, ncols, ci.len()),
        };
        gpu.synchronize().expect("uploads");
        arrays
    }
    fn of(gpu: &Gpu, a: &Csr<T>) -> Self {
        Self::raw(
            gpu,
            (a.nrows(), a.ncols()),
            a.row_ptr(),
            a.col_idx(),
            a.vals(),
        )
    }
    fn csr(&self) -> DeviceCsrRef<'_, T> {
        let (nrows, ncols, nnz) = self.shape;
        DeviceCsrRef {
            nrows,
            ncols,
            nnz,
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            vals: &self.vals,
        }
    }
}

fn gpu_opts() -> PlanOptions {
    PlanOptions {
        backend: Some(Backend::Gpu),
        ..Default::default()
    }
}

/// y = 1.5·A·x − 0.5·y0 through the plan with host vectors, against the oracle of `a`.
fn host_call_ok<T: PrepareFor>(plan: &mut Plan<T>, a: &Csr<T>) -> Result<bool, Error> {
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let x = values::<T>(a.ncols(), 2);
    let mut y = values::<T>(a.nrows(), 3);
    let r = oracle_spmv(a, alpha, &x, beta, &y)?;
    plan.apply(alpha, &x, beta, &mut y)?;
    Ok(check(&r, &y).ok)
}

fn device_built<T: PrepareFor>(gpu: &Arc<Gpu>) -> Vec<String> {
    let stream = gpu.context().new_stream().expect("a caller's stream");
    let view = gpu.on_stream(stream.clone()).expect("view");
    let mut failures = Vec::new();
    let mut specs: Vec<String> = DEVICE_METHODS.iter().map(|s| s.to_string()).collect();
    specs.push("csr-vector[threads=64]".into());
    specs.push("auto[deterministic=1]".into());
    for (name, a64) in spmvkit::gen::corpus::edge_cases() {
        let a: Csr<T> = a64.cast();
        let arrays = Arrays::of(gpu, &a);
        for spec in &specs {
            let what = format!("{spec} on {name} ({})", T::PRECISION);
            let mut plan = match Plan::<T>::from_device_csr(spec, &view, arrays.csr(), &gpu_opts())
            {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("{what}: plan: {e}"));
                    continue;
                }
            };
            if !plan.built_from_device() || plan.backend() != Backend::Gpu {
                failures.push(format!("{what}: not a GPU plan from device arrays"));
            }
            let notes = plan.layout().notes();
            if !notes.iter().any(|(k, _)| k == "built from") {
                failures.push(format!("{what}: no 'built from' note: {notes:?}"));
            }
            if spec.starts_with("auto") {
                match plan.chosen() {
                    Some(m) if spec.contains("deterministic") && !m.info().deterministic => {
                        failures.push(format!("{what}: chose {}", m.info().name))
                    }
                    Some(_) => {}
                    None => failures.push(format!("{what}: no choice reported")),
                }
            }
            match host_call_ok(&mut plan, &a) {
                Ok(true) => {}
                Ok(false) => failures.push(format!("{what}: wrong y (host vectors)")),
                Err(e) => failures.push(format!("{what}: apply: {e}")),
            }
            // device vectors on the caller's stream
            let (m, n) = (a.nrows(), a.ncols());
            let x = values::<T>(n, 5);
            let r = oracle_spmv(&a, T::one(), &x, T::zero(), &vec![T::zero(); m]).expect("ref");
            let dx = gpu.upload(&x).expect("x");
            let mut dy = gpu.alloc_zeros::<T>(m).expect("y");
            gpu.synchronize().expect("x");
            match plan.apply_device_on(&view, T::one(), &dx, T::zero(), &mut dy) {
                Ok(()) => {
                    let mut y = vec![T::zero(); m];
                    view.download(&dy, &mut y).expect("y");
                    if !check(&r, &y).ok {
                        failures.push(format!("{what}: wrong y (device vectors)"));
                    }
                }
                Err(e) => failures.push(format!("{what}: apply_device_on: {e}")),
            }
            // new values: from the host, then from the device
            let tripled: Vec<T> = a.vals().iter().map(|&v| v * T::from_f64(3.0)).collect();
            let a3 = Csr::new(
                m,
                n,
                a.row_ptr().to_vec(),
                a.col_idx().to_vec(),
                tripled.clone(),
            )
            .expect("3A");
            match plan.update_values(&tripled) {
                Ok(_) => match host_call_ok(&mut plan, &a3) {
                    Ok(true) => {}
                    Ok(false) => failures.push(format!("{what}: wrong y after update_values")),
                    Err(e) => failures.push(format!("{what}: apply after update: {e}")),
                },
                Err(e) => failures.push(format!("{what}: update_values: {e}")),
            }
            let dvals = gpu.upload(a.vals()).expect("vals");
            gpu.synchronize().expect("vals");
            match plan.update_values_device(&view, &dvals) {
                Ok(_) => match host_call_ok(&mut plan, &a) {
                    Ok(true) => {}
                    Ok(false) => {
                        failures.push(format!("{what}: wrong y after update_values_device"))
                    }
                    Err(e) => failures.push(format!("{what}: apply after device update: {e}")),
                },
                Err(e) => failures.push(format!("{what}: update_values_device: {e}")),
            }
        }
    }
    failures
}

#[test]
fn gpu_plans_from_device_arrays_match_the_oracle() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_plans_from_device_arrays_match_the_oracle")
    else {
        return;
    };
    let mut failures = device_built::<f64>(&gpu);
    failures.extend(device_built::<f32>(&gpu));
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn gpu_malformed_device_csr_is_refused() {
    let Some((gpu, _lock)) = common::gpu_or_skip("gpu_malformed_device_csr_is_refused") else {
        return;
    };
    // 3 x 4, rows [0, 2) [2, 3) [3, 5): columns sorted and in range
    let good = ([0u32, 2, 3, 5], [0u32, 3, 1, 0, 2]);
    let cases: [(&str, &[u32], &[u32], &str); 8] = [
        ("row_ptr[0] != 0", &[1, 2, 3, 5], &good.1, "row_ptr[0]"),
        (
            "decreasing",
            &[0, 2, 1, 5],
            &good.1,
            "decreases after row 1",
        ),
        (
            "ends short",
            &[0, 2, 3, 4],
            &good.1,
            "row_ptr[3] is not nnz",
        ),
        ("ends past nnz", &[0, 2, 3, 6], &good.1, "row 2 ends past"),
        (
            "column out of range",
            &good.0,
            &[0, 3, 1, 0, 4],
            "row 2 has a column",
        ),
        (
            "huge column",
            &good.0,
            &[0, u32::MAX, 1, 0, 2],
            "row 0 has a column",
        ),
        (
            "unsorted",
            &good.0,
            &[3, 0, 1, 0, 2],
            "row 0: column indices",
        ),
        (
            "duplicate",
            &good.0,
            &[0, 3, 1, 2, 2],
            "row 2: column indices",
        ),
    ];
    let vals = [1.0f64; 5];
    for spec in ["csr-vector", "cusparse", "auto"] {
        let ok = Arrays::raw(&gpu, (3, 4), &good.0, &good.1, &vals);
        assert!(
            Plan::<f64>::from_device_csr(spec, &gpu, ok.csr(), &gpu_opts()).is_ok(),
            "{spec}: the well-formed matrix was refused"
        );
        for (what, rp, ci, says) in cases {
            let bad = Arrays::raw(&gpu, (3, 4), rp, ci, &vals);
            match Plan::<f64>::from_device_csr(spec, &gpu, bad.csr(), &gpu_opts()) {
                Err(Error::InvalidStructure { detail, .. }) => {
                    assert!(detail.contains(says), "{spec}, {what}: {detail}")
                }
                Err(e) => panic!("{spec}, {what}: another error: {e}"),
                Ok(_) => panic!("{spec}, {what}: accepted"),
            }
        }
        // arrays shorter than the shape says
        let short = Arrays::raw(&gpu, (3, 4), &good.0[..3], &good.1, &vals);
        assert!(matches!(
            Plan::<f64>::from_device_csr(spec, &gpu, short.csr(), &gpu_opts()),
            Err(Error::InvalidStructure { .. })
        ));
        let mut long = Arrays::raw(&gpu, (3, 4), &good.0, &good.1, &vals);
        long.shape.2 = 6;
        assert!(matches!(
            Plan::<f64>::from_device_csr(spec, &gpu, long.csr(), &gpu_opts()),
            Err(Error::InvalidStructure { .. })
        ));
    }
    // the GPU still works after the refusals
    let a: Csr<f64> = spmvkit::gen::generate("uniform:50,40,4").expect("matrix");
    let arrays = Arrays::of(&gpu, &a);
    let mut plan =
        Plan::<f64>::from_device_csr("csr-vector", &gpu, arrays.csr(), &gpu_opts()).expect("plan");
    assert!(host_call_ok(&mut plan, &a).expect("apply"));
}

#[test]
fn gpu_other_methods_and_options_are_refused_from_device_arrays() {
    let Some((gpu, _lock)) =
        common::gpu_or_skip("gpu_other_methods_and_options_are_refused_from_device_arrays")
    else {
        return;
    };
    let a: Csr<f32> = spmvkit::gen::generate("uniform:60,60,4").expect("matrix");
    let arrays = Arrays::of(&gpu, &a);
    match Plan::<f32>::from_device_csr("merge", &gpu, arrays.csr(), &gpu_opts()) {
        Err(Error::MethodUnsupported { method, reason }) => {
            assert_eq!(method, "merge");
            assert!(
                reason.contains("csr-vector") && reason.contains("cusparse"),
                "{reason}"
            );
        }
        Err(e) => panic!("merge: {e}"),
        Ok(_) => panic!("merge from device arrays was accepted"),
    }
    for spec in ["csr-vector[reorder=rcm]", "csr-vector[windows=2]"] {
        assert!(
            matches!(
                Plan::<f32>::from_device_csr(spec, &gpu, arrays.csr(), &gpu_opts()),
                Err(Error::InvalidArgument(_))
            ),
            "{spec}"
        );
    }
    let cpu = PlanOptions {
        backend: Some(Backend::Cpu),
        ..Default::default()
    };
    assert!(matches!(
        Plan::<f32>::from_device_csr("csr-vector", &gpu, arrays.csr(), &cpu),
        Err(Error::InvalidArgument(_))
    ));
    // a plan from device arrays has no CPU path: its host layout says why
    let plan =
        Plan::<f32>::from_device_csr("cusparse", &gpu, arrays.csr(), &gpu_opts()).expect("plan");
    let x = vec![1.0f32; a.ncols()];
    let mut y = vec![0.0f32; a.nrows()];
    assert!(plan.layout().run_cpu(1.0, &x, 0.0, &mut y).is_err());
}
