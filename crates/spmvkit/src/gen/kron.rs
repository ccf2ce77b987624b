//! The Graph500 Kronecker (R-MAT) generator of issue #2: 2^SCALE vertices, EF·2^SCALE edges,
//! initiator a = 0.57, b = c = 0.19, d = 0.05, vertex labels scrambled by a seeded bijection of
//! [0, 2^SCALE) as Graph500 does. Edges are generated in parallel in fixed-size chunks (one
//! random stream each), bucketed by row with atomic counters, sorted per row (which makes the
//! result independent of scheduling) and merged: duplicate edges are summed.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::build::{build_rows, chunk_rows, lengths_to_ptr};
use super::rng::{mix64, value_from_bits, Purpose, Rng};
use crate::error::Result;
use crate::matrix::Csr;
use crate::scalar::{Idx, Scalar};

/// Edges per random stream.
const EDGE_CHUNK: u64 = 1 << 16;
/// Initiator probabilities as 32-bit thresholds: a, a + b, a + b + c.
const T_A: u64 = (0.57 * 4294967296.0) as u64;
const T_AB: u64 = ((0.57 + 0.19) * 4294967296.0) as u64;
const T_ABC: u64 = ((0.57 + 0.19 + 0.19) * 4294967296.0) as u64;

/// What a generated Kronecker matrix holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KronOptions {
    pub scale: u32,
    pub edge_factor: u64,
    /// Store every edge both ways (the undirected graph's adjacency matrix).
    pub symmetric: bool,
    /// Keep self-loops (u, u).
    pub loops: bool,
    /// Random values (symmetric when `symmetric`) instead of edge multiplicities.
    pub random_values: bool,
    pub seed: u64,
}

/// A seeded bijection of [0, 2^bits): odd multiplications, additions and xor-shifts modulo 2^bits.
#[derive(Clone, Copy)]
struct Scramble {
    mask: u64,
    shift: u32,
    mul: [u64; 3],
    add: [u64; 3],
}

impl Scramble {
    fn new(bits: u32, seed: u64) -> Self {
        let mut rng = Rng::stream(seed, Purpose::Permute, 0);
        let mut mul = [0; 3];
        let mut add = [0; 3];
        for r in 0..3 {
            mul[r] = rng.next_u64() | 1;
            add[r] = rng.next_u64();
        }
        Scramble {
            mask: if bits >= 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            },
            shift: (bits / 2).max(1),
            mul,
            add,
        }
    }

    #[inline]
    fn apply(&self, mut x: u64) -> u64 {
        for r in 0..3 {
            x = x.wrapping_mul(self.mul[r]).wrapping_add(self.add[r]) & self.mask;
            x ^= x >> self.shift;
        }
        x
    }
}

/// Calls `f(u, v)` for every edge of chunk `c`, labels scrambled.
#[inline]
fn chunk_edges(o: &KronOptions, perm: &Scramble, c: u64, mut f: impl FnMut(u32, u32)) {
    let m = o.edge_factor << o.scale;
    let count = (m - c * EDGE_CHUNK).min(EDGE_CHUNK);
    let mut rng = Rng::stream(o.seed, Purpose::Edges, c);
    for _ in 0..count {
        let (mut u, mut v) = (0u64, 0u64);
        let mut bits = 0u64;
        for level in 0..o.scale {
            if level % 2 == 0 {
                bits = rng.next_u64();
            }
            let r = bits & 0xFFFF_FFFF;
            bits >>= 32;
            let (i, j) = if r < T_A {
                (0, 0)
            } else if r < T_AB {
                (0, 1)
            } else if r < T_ABC {
                (1, 0)
            } else {
                (1, 1)
            };
            u = (u << 1) | i;
            v = (v << 1) | j;
        }
        let (u, v) = (perm.apply(u) as u32, perm.apply(v) as u32);
        if o.loops || u != v {
            f(u, v);
        }
    }
}

/// Generates the Kronecker matrix; the caller has checked 2^scale and EF·2^scale (doubled when
/// symmetric) against the index limit.
pub(crate) fn kron<T: Scalar>(o: KronOptions) -> Result<Csr<T>> {
    let n = 1usize << o.scale;
    let m = o.edge_factor << o.scale;
    let nchunks = m.div_ceil(EDGE_CHUNK);
    let perm = Scramble::new(o.scale, o.seed);
    let both = |u: u32, v: u32| o.symmetric && u != v;

    // Pass 1: degrees.
    let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    (0..nchunks).into_par_iter().for_each(|c| {
        chunk_edges(&o, &perm, c, |u, v| {
            counts[u as usize].fetch_add(1, Ordering::Relaxed);
            if both(u, v) {
                counts[v as usize].fetch_add(1, Ordering::Relaxed);
            }
        })
    });
    let mut raw_ptr: Vec<Idx> = Vec::with_capacity(n + 1);
    raw_ptr.push(0);
    raw_ptr.extend(counts.into_iter().map(AtomicU32::into_inner));
    let row_chunk = chunk_rows(o.edge_factor as f64 * 2.0);
    let total = lengths_to_ptr(&mut raw_ptr, row_chunk)? as usize;

    // Pass 2: scatter the same edges into their rows (order inside a row is arbitrary).
    let cursor: Vec<AtomicU32> = raw_ptr[..n].iter().map(|&p| AtomicU32::new(p)).collect();
    let raw: Vec<AtomicU32> = (0..total).map(|_| AtomicU32::new(0)).collect();
    (0..nchunks).into_par_iter().for_each(|c| {
        chunk_edges(&o, &perm, c, |u, v| {
            let p = cursor[u as usize].fetch_add(1, Ordering::Relaxed);
            raw[p as usize].store(v, Ordering::Relaxed);
            if both(u, v) {
                let p = cursor[v as usize].fetch_add(1, Ordering::Relaxed);
                raw[p as usize].store(u, Ordering::Relaxed);
            }
        })
    });
    drop(cursor);
    let mut raw: Vec<u32> = raw.into_iter().map(AtomicU32::into_inner).collect();

    // Sort each row (now deterministic) and count its distinct columns.
    let mut unique: Vec<Idx> = vec![0; n];
    {
        let mut parts = Vec::with_capacity(n.div_ceil(row_chunk));
        let mut rest: &mut [u32] = &mut raw;
        for (ci, lens) in unique.chunks_mut(row_chunk).enumerate() {
            let start = ci * row_chunk;
            let end = start + lens.len();
            let len = (raw_ptr[end] - raw_ptr[start]) as usize;
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            parts.push((start, head, lens));
        }
        parts.into_par_iter().for_each(|(start, seg, lens)| {
            let base = raw_ptr[start] as usize;
            for (k, l) in lens.iter_mut().enumerate() {
                let i = start + k;
                let row = &mut seg[raw_ptr[i] as usize - base..raw_ptr[i + 1] as usize - base];
                row.sort_unstable();
                *l = (1 + row.windows(2).filter(|w| w[0] != w[1]).count()).min(row.len()) as Idx;
            }
        });
    }

    let value_key = mix64(o.seed ^ 0x6B72_6F6E);
    let raw = &raw;
    let raw_ptr = &raw_ptr;
    let unique = &unique;
    build_rows::<T, _, _>(
        n,
        n,
        row_chunk,
        move |_, rows, out| out.copy_from_slice(&unique[rows]),
        move |c| {
            let base = c.row_ptr[c.rows.start] as usize;
            for i in c.rows.clone() {
                let row = &raw[raw_ptr[i] as usize..raw_ptr[i + 1] as usize];
                let mut k = c.row_ptr[i] as usize - base;
                let mut j = 0;
                while j < row.len() {
                    let col = row[j];
                    let mut run = 1;
                    while j + run < row.len() && row[j + run] == col {
                        run += 1;
                    }
                    c.cols[k] = col;
                    c.vals[k] = T::from_f64(if o.random_values {
                        let (a, b) = if o.symmetric {
                            ((i as u32).min(col), (i as u32).max(col))
                        } else {
                            (i as u32, col)
                        };
                        value_from_bits(mix64(value_key ^ mix64(((a as u64) << 32) | b as u64)))
                    } else {
                        run as f64
                    });
                    k += 1;
                    j += run;
                }
            }
        },
    )
}
