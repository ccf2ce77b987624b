//! CPU mirror of `tilespmv_spmv` (kernel.cu): y scaled by β; per work unit, the two half-warps'
//! per-row sums over alternate tiles (each format walked as the kernel walks it), added half 0 +
//! half 1 and added to y as α·sum; then the deferred COO entries, α·v·x each. The kernel adds
//! with atomics in whatever order the hardware gives, so it matches the mirror to rounding only.

use super::{TileLayout, TILE};
use crate::scalar::Scalar;

fn nibble(ix: &[u8], i: usize) -> usize {
    let b = ix[i >> 1];
    (if i & 1 == 1 { b & 0x0f } else { b >> 4 }) as usize
}

/// Local row `r` of tile `t` (ts_tile_row).
fn tile_row<T: Scalar>(l: &TileLayout<T>, t: usize, r: usize, x: &[T]) -> T {
    let info = l.tile_info[t];
    let (fmt, aux, nnz) = (
        info & 0xff,
        ((info >> 8) & 0xff) as usize,
        (info >> 16) as usize,
    );
    let col0 = l.tile_col[t] as usize * TILE;
    let v = &l.vals[l.tile_val[t] as usize..];
    let ix = &l.idx[l.tile_idx[t] as usize..];
    let xv = |c: usize| {
        if col0 + c < l.ncols {
            x[col0 + c]
        } else {
            T::zero()
        }
    };
    let mut s = T::zero();
    match fmt {
        0 => {
            for c in 0..TILE {
                s = v[r * TILE + c].mul_add(xv(c), s);
            }
        }
        1 => {
            for i in 0..nnz {
                let b = ix[i] as usize;
                if b >> 4 == r {
                    s = v[i].mul_add(xv(b & 0x0f), s);
                }
            }
        }
        2 => {
            let e = if r + 1 < TILE {
                ix[r + 1] as usize
            } else {
                nnz
            };
            for (i, vi) in v.iter().enumerate().take(e).skip(ix[r] as usize) {
                s = vi.mul_add(xv(nibble(&ix[TILE..], i)), s);
            }
        }
        3 => {
            for k in 0..aux {
                let i = k * TILE + r;
                s = v[i].mul_add(xv(nibble(ix, i)), s);
            }
        }
        4 => {
            for j in 0..aux {
                if ix[j] as usize == r {
                    for c in 0..TILE {
                        s = v[j * TILE + c].mul_add(xv(c), s);
                    }
                }
            }
        }
        _ => {
            for j in 0..aux {
                s = v[j * TILE + r].mul_add(xv(ix[j] as usize), s);
            }
        }
    }
    s
}

/// y = αAx + βy as the tilespmv kernels compute it (up to the order of the atomics).
pub(super) fn run<T: Scalar>(l: &TileLayout<T>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for yi in y.iter_mut() {
        *yi = if beta == T::zero() {
            T::zero()
        } else {
            beta * *yi
        };
    }
    for u in 0..l.unit_row.len() {
        let (t0, n) = (l.unit_first[u] as usize, l.unit_count[u] as usize);
        for r in 0..TILE {
            let mut acc = [T::zero(); 2];
            for (half, a) in acc.iter_mut().enumerate() {
                let mut i = half;
                while i < n {
                    *a += tile_row(l, t0 + i, r, x);
                    i += 2;
                }
            }
            let row = l.unit_row[u] as usize * TILE + r;
            if row < l.nrows {
                y[row] += alpha * (acc[0] + acc[1]);
            }
        }
    }
    for i in 0..l.def_row.len() {
        y[l.def_row[i] as usize] += alpha * l.def_val[i] * x[l.def_col[i] as usize];
    }
}
