//! Input for a CPU emulation of `kernel.cu` (one OS thread per CUDA thread, kept outside this
//! repository): one case's layout arrays, launches, x, y0, and the oracle's y and tolerance scale,
//! written as raw native-endian arrays plus a `meta` text file, for β ∈ {0, −0.5, 1}. Driven by
//! `examples/fastload_dump.rs`; hidden from the docs.

use std::io::Write;
use std::path::Path;

use super::{gpu, FastLoadLayout, FastLoadOptions, PermuteX};
use crate::cpu::oracle_spmv;
use crate::error::{Error, Result};
use crate::matrix::Csr;
use crate::methods::Params;
use crate::scalar::Scalar;

/// The bytes of a plain-old-data slice (u8/u32/i32/f32/f64).
fn bytes<U: Copy>(v: &[U]) -> &[u8] {
    // SAFETY: the element types used here have no padding and no invalid bit patterns as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Writes the case `case` of `a` under `method` (`fastload` or `fastload-atomic`) with `params`
/// into `dir/<case>-b<k>/`, one folder per β, as for a GPU of 3 SMs with 6 grid CTAs.
pub fn write_case<T: Scalar>(
    dir: &Path,
    case: &str,
    a: &Csr<T>,
    method: &str,
    params: &Params,
) -> Result<()> {
    let o = FastLoadOptions::parse(method, params)?;
    let l = FastLoadLayout::build(a, o)?;
    let o = l.opts;
    let bpw = gpu::blocks_per_warp(o.blocks_per_warp, l.nblocks(), 3);
    let (x, y0) = crate::dist::rank::test_vectors::<T>(a.nrows(), a.ncols());
    for (bi, beta) in [0.0, -0.5, 1.0].into_iter().enumerate() {
        let d = dir.join(format!("{case}-b{bi}"));
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
        let r = oracle_spmv(a, alpha, &x, beta, &y0)?;
        let launches = gpu::plan_launches(
            &gpu::PlanInput {
                nrows: l.nrows,
                ncols: l.ncols,
                nblocks: l.nblocks(),
                threads: o.threads,
                bpw,
                gather: o.permute_x == PermuteX::Gather,
                fuse: o.fuse,
                optimised: o.optimised,
                sm_count: 3,
                grid_ctas: 6,
            },
            beta != T::one(),
        )?;
        let mut meta = format!(
            "f64 {} nrows {} ncols {} nblocks {} bpw {} threads {} alpha {} beta {} eps {:e} nlaunch {}\n",
            u8::from(T::BYTES == 8),
            l.nrows,
            l.ncols,
            l.nblocks(),
            bpw,
            o.threads,
            alpha.to_f64(),
            beta.to_f64(),
            T::EPSILON,
            launches.len()
        );
        for (i, la) in launches.iter().enumerate() {
            meta.push_str(&format!(
                "grid{i} {} npro{i} {} flags{i} {}\n",
                la.grid, la.npro, la.flags
            ));
        }
        let files: [(&str, &[u8]); 12] = [
            ("meta", meta.as_bytes()),
            ("blk_ptr", bytes(&l.blk_ptr)),
            ("blk_col", bytes(&l.blk_col_idx)),
            ("blk_info", bytes(&l.blk_info)),
            ("row_idx", bytes(&l.row_idx)),
            ("vals", bytes(&l.vals)),
            ("perm", bytes(&l.perm)),
            ("x", bytes(&x)),
            ("y0", bytes(&y0)),
            ("want", bytes(&r.y)),
            ("scale", bytes(&r.scale)),
            ("row_len", bytes(&r.row_len)),
        ];
        for (name, data) in files {
            let path = d.join(name);
            std::fs::File::create(&path)
                .and_then(|mut f| f.write_all(data))
                .map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}
