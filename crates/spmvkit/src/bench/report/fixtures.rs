//! Synthetic benchmark results for tests (hidden from the docs): the run records, matrix
//! statistics and machine that the report's unit tests and the crate's integration tests build
//! their runs from, with the values the tests do not vary fixed here once.

use crate::bench::{byte_model, MachineInfo, MethodResult, RunRecord, Status, Timing};
use crate::matrix::{LengthStats, MatrixStats};
use crate::methods::Backend;
use crate::scalar::Precision;

/// A verified GPU record of `method` on an n×n matrix (`n = nrows`) with `nnz` nonzeros: stream
/// timing from `stream_us` (its samples), a one-sample CUDA-graph timing of `graph_us`, and
/// `prep_ms` to prepare; no stages, notes or later checks.
pub fn record(
    method: &str,
    precision: Precision,
    nrows: usize,
    nnz: usize,
    stream_us: Vec<f64>,
    graph_us: f64,
    prep_ms: f64,
) -> RunRecord {
    let mut rec = RunRecord {
        method: method.into(),
        precision,
        backend: Backend::Gpu,
        device: "Test GPU".into(),
        nrows,
        ncols: nrows,
        nnz,
        deterministic: true,
        prep_ms,
        upload_ms: 0.5,
        prep_stages_ms: Vec::new(),
        time: Timing::default(),
        graph_time: Some(Timing::from_samples(vec![graph_us])),
        gflops: 0.0,
        gbs: 0.0,
        bytes_model: byte_model(nrows, nrows, nnz, precision.bytes()),
        max_rel_err: 1e-15,
        verified: true,
        footprint_bytes: 12 * nnz,
        notes: Vec::new(),
        fallback_note: None,
        later_checks: Vec::new(),
        y_digest: None,
    };
    rec.set_stream_timing(Timing::from_samples(stream_us));
    rec
}

/// The `Ok` result holding `record`.
pub fn ok(record: RunRecord) -> MethodResult {
    MethodResult {
        method: record.method.clone(),
        precision: record.precision,
        status: Status::Ok,
        error: None,
        record: Some(record),
    }
}

/// A result of `status` without a record, for the reason `why`.
pub fn not_ok(method: &str, precision: Precision, status: Status, why: &str) -> MethodResult {
    MethodResult {
        method: method.into(),
        precision,
        status,
        error: Some(why.into()),
        record: None,
    }
}

/// The statistics of an n×n matrix (`n = nrows`) with `nnz` nonzeros, row lengths `row_len`,
/// row-length variation `variation` and bandwidths (lower, upper); no empty rows or columns.
pub fn stats(
    nrows: usize,
    nnz: usize,
    row_len: LengthStats,
    variation: f64,
    (lower, upper): (u64, u64),
) -> MatrixStats {
    MatrixStats {
        nrows,
        ncols: nrows,
        nnz,
        density: nnz as f64 / (nrows as f64 * nrows as f64),
        empty_rows: 0,
        empty_cols: 0,
        row_len,
        col_len: LengthStats::default(),
        row_variation: variation,
        lower_bandwidth: lower,
        upper_bandwidth: upper,
        bandwidth: lower.max(upper),
        csr_bytes: 12 * nnz,
        x_sectors_f32: None,
        x_sectors_f64: None,
    }
}

/// A machine with an "NVIDIA Test GPU" (132 SMs, 80 GiB, 50 MiB L2, 3000 GB/s copy bandwidth)
/// and no probe, for a run started at `started`.
pub fn machine(started: &str) -> MachineInfo {
    MachineInfo {
        gpu: "NVIDIA Test GPU".into(),
        sm_count: Some(132),
        gpu_memory_bytes: Some(80 << 30),
        l2_bytes: Some(50 << 20),
        driver_version: Some("580.1".into()),
        cuda_version: Some("13.0".into()),
        cpu_threads: 16,
        copy_bandwidth_gbs: Some(3000.0),
        probe: None,
        probe_error: None,
        commit: "v0.1.0-3-gabc".into(),
        command: "spmv bench --suite test".into(),
        started: started.into(),
    }
}
