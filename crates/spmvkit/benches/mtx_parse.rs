//! Matrix Market reader throughput (issue #2): MB/s of text for a generated ~300 MB coordinate
//! real file and for the largest shared SuiteSparse matrices (gzip inflate and parse timed apart),
//! plus the cost of a cached reload through the `*.spmvkit` binary cache.
//!
//! Run: `cargo bench -p spmvkit --bench mtx_parse`. Environment: `SPMVKIT_BENCH_MB` (size of the
//! generated file, default 300), `SPMVKIT_MATRICES` (shared folder, default
//! `../../../shared/matrices`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spmvkit::{io, Coo, Csr};

fn best_of<R>(runs: usize, mut f: impl FnMut() -> R) -> (Duration, R) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("at least one run"))
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// A random sparse matrix with about `target_mb` MB of Matrix Market text.
fn generate(target_mb: usize) -> Csr<f64> {
    let per_row = 9usize;
    // ~35 bytes a line: "iiiiii jjjjjj -0.xxxxxxxxxxxxxxxxx\n".
    let nnz = target_mb * 1_000_000 / 35;
    let n = nnz / per_row;
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut coo = Coo::new(n, n).expect("size");
    for i in 0..n {
        for _ in 0..per_row {
            let j = (next() % n as u64) as usize;
            let v = (next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            coo.push(i, j, v).expect("in range");
        }
    }
    coo.to_csr()
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let target_mb: usize = std::env::var("SPMVKIT_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    println!(
        "mtx_parse: {} rayon threads, generated file ~{target_mb} MB",
        rayon::current_num_threads()
    );
    let tmp = tempfile::tempdir().expect("temp dir");

    // 1. The generated coordinate real general file.
    let a = generate(target_mb);
    let mtx = tmp.path().join("generated.mtx");
    let t = Instant::now();
    io::write_matrix_market(&mtx, &a).expect("write");
    let wt = t.elapsed();
    let bytes = file_len(&mtx);
    println!(
        "generated: {}x{} nnz {}, {:.1} MB text (written in {:.2} s, {:.0} MB/s)",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        mb(bytes),
        wt.as_secs_f64(),
        mb(bytes) / wt.as_secs_f64()
    );
    let (t64, b) = best_of(3, || io::read_matrix_market::<f64>(&mtx).expect("read"));
    assert_eq!(b, a, "read back differs");
    drop(b);
    println!(
        "read_matrix_market<f64> generated: {:.3} s  ->  {:.0} MB/s of text",
        t64.as_secs_f64(),
        mb(bytes) / t64.as_secs_f64()
    );
    let (t32, b32) = best_of(3, || io::read_matrix_market::<f32>(&mtx).expect("read"));
    println!(
        "read_matrix_market<f32> generated: {:.3} s  ->  {:.0} MB/s of text",
        t32.as_secs_f64(),
        mb(bytes) / t32.as_secs_f64()
    );
    drop(b32);
    let (t64b, _) = best_of(3, || io::read_matrix_market::<f64>(&mtx).expect("read"));
    println!(
        "read_matrix_market<f64> generated, again: {:.3} s  ->  {:.0} MB/s of text",
        t64b.as_secs_f64(),
        mb(bytes) / t64b.as_secs_f64()
    );

    // 2. Cached reload of the generated matrix.
    let cdir = tmp.path().join("cache");
    let (first, _) = best_of(1, || {
        io::load_cached::<f64>(&mtx, Some(&cdir)).expect("cache")
    });
    let cpath = io::cache_path_for::<f64>(&mtx, &cdir);
    let (hit, c) = best_of(5, || {
        io::load_cached::<f64>(&mtx, Some(&cdir)).expect("hit")
    });
    assert_eq!(c, a, "cache differs");
    drop(c);
    println!(
        "load_cached<f64> generated: first (parse + write {:.1} MB cache) {:.3} s, cached reload {:.1} ms ({:.0} MB/s of cache)",
        mb(file_len(&cpath)),
        first.as_secs_f64(),
        hit.as_secs_f64() * 1e3,
        mb(file_len(&cpath)) / hit.as_secs_f64()
    );
    std::fs::remove_file(&mtx).ok();
    drop(a);

    // 3. The largest shared matrices.
    let dir = std::env::var_os("SPMVKIT_MATRICES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../../../shared/matrices"));
    for name in ["NYPA/Maragal_6", "Bai/af23560"] {
        let p = dir.join(format!("{name}.mtx.gz"));
        let Ok(gz) = std::fs::read(&p) else {
            println!("{name}: not found under {}, skipped", dir.display());
            continue;
        };
        let (tz, text) = best_of(3, || {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&gz[..])
                .read_to_end(&mut out)
                .expect("gunzip");
            out
        });
        let (tp, m) = best_of(5, || {
            io::parse_matrix_market_bytes::<f64>(&text).expect("parse")
        });
        let (tt, _) = best_of(3, || io::read_matrix_market::<f64>(&p).expect("read"));
        let (tc, _) = {
            let cdir = tmp.path().join("cache-shared");
            io::load_cached::<f64>(&p, Some(&cdir)).expect("cache");
            best_of(5, || io::load_cached::<f64>(&p, Some(&cdir)).expect("hit"))
        };
        println!(
            "{name}: {}x{} nnz {}; {:.1} MB gz, {:.1} MB text; .gz total {:.1} ms (inflate {:.1} ms = {:.0} MB/s); \
             text parse {:.1} ms = {:.0} MB/s; cached reload {:.2} ms",
            m.nrows(),
            m.ncols(),
            m.nnz(),
            mb(gz.len() as u64),
            mb(text.len() as u64),
            tt.as_secs_f64() * 1e3,
            tz.as_secs_f64() * 1e3,
            mb(text.len() as u64) / tz.as_secs_f64(),
            tp.as_secs_f64() * 1e3,
            mb(text.len() as u64) / tp.as_secs_f64(),
            tc.as_secs_f64() * 1e3,
        );
    }
}
