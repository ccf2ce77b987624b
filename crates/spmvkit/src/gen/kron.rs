//! The Graph500 Kronecker (R-MAT) generator of issue #2: 2^SCALE vertices, EF·2^SCALE edges,
//! initiator a = 0.57, b = c = 0.19, d = 0.05, vertex labels scrambled by a seeded bijection of
//! [0, 2^SCALE) as Graph500 does. Edges are generated in parallel in fixed-size chunks (one
//! random stream each), bucketed by row with atomic counters, sorted per row (which makes the
//! result independent of scheduling) and merged: duplicate edges are summed.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::build::{build_rows, chunk_rows};
use super::rng::{mix64, value_from_bits, Purpose, Rng};
use crate::error::Result;
use crate::matrix::Csr;
use crate::memory::{try_vec, try_with_capacity};
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

/// Marks an edge dropped (a self-loop when loops are off).
const NO_EDGE: u64 = u64::MAX;
/// log2 of the most row buckets of the partition pass.
const BUCKET_BITS: u32 = 10;

/// Writes the edges of chunk `c` into `out` as `(u << 32) | v`, labels scrambled, and returns
/// how many stored entries fall into each row bucket (`row >> shift`).
fn chunk_edges(o: &KronOptions, perm: &Scramble, c: u64, out: &mut [u64], shift: u32) -> Vec<u32> {
    let mut hist = vec![0u32; 1 << (o.scale - shift)];
    let mut rng = Rng::stream(o.seed, Purpose::Edges, c);
    for e in out.iter_mut() {
        let (mut u, mut v) = (0u64, 0u64);
        let mut bits = 0u64;
        for level in 0..o.scale {
            if level % 2 == 0 {
                bits = rng.next_u64();
            }
            let r = bits & 0xFFFF_FFFF;
            bits >>= 32;
            // Quadrant (0,0) below a, (0,1) below a+b, (1,0) below a+b+c, else (1,1).
            let i = (r >= T_AB) as u64;
            let j = ((T_A..T_AB).contains(&r) | (r >= T_ABC)) as u64;
            u = (u << 1) | i;
            v = (v << 1) | j;
        }
        let (u, v) = (perm.apply(u), perm.apply(v));
        if o.loops || u != v {
            *e = (u << 32) | v;
            hist[(u >> shift) as usize] += 1;
            if o.symmetric && u != v {
                hist[(v >> shift) as usize] += 1;
            }
        } else {
            *e = NO_EDGE;
        }
    }
    hist
}

/// Generates the Kronecker matrix; the caller has checked 2^scale and EF·2^scale (doubled when
/// symmetric) against the index limit.
///
/// Edges are generated per chunk with a histogram over 2^10 row buckets; a scatter pass writes
/// each chunk's entries to its own reserved range of each bucket (plain stores, no atomic
/// read-modify-write); each bucket, small enough for the cache, is then counting-sorted by row
/// into the final row order, and each row sorted by column and its duplicates counted.
pub(crate) fn kron<T: Scalar>(o: KronOptions) -> Result<Csr<T>> {
    let n = 1usize << o.scale;
    let m = (o.edge_factor as usize) << o.scale;
    let perm = Scramble::new(o.scale, o.seed);
    let bbits = o.scale.min(BUCKET_BITS);
    let shift = o.scale - bbits;
    let (nbuckets, bucket_rows) = (1usize << bbits, 1usize << shift);

    // Edges, and per chunk the number of entries in each bucket.
    let mut edges: Vec<u64> = try_vec("the Kronecker edges", m, 0)?;
    let hist: Vec<Vec<u32>> = edges
        .par_chunks_mut(EDGE_CHUNK as usize)
        .enumerate()
        .map(|(c, out)| chunk_edges(&o, &perm, c as u64, out, shift))
        .collect();

    // Where each chunk's entries of each bucket go: bucket-major, chunks in order.
    let mut offsets: Vec<Vec<u32>> = vec![vec![0; nbuckets]; hist.len()];
    let mut bucket_start = Vec::with_capacity(nbuckets + 1);
    let mut acc = 0u64;
    for b in 0..nbuckets {
        bucket_start.push(acc as usize);
        for (c, h) in hist.iter().enumerate() {
            offsets[c][b] = acc as u32;
            acc += h[b] as u64;
        }
    }
    bucket_start.push(acc as usize);
    drop(hist);
    let total = usize::try_from(acc).unwrap_or(usize::MAX);
    crate::error::check_index_range("nnz", acc)?;

    // Scatter every entry (row, col) into its bucket.
    let mut ent: Vec<AtomicU64> = try_with_capacity("the Kronecker entries", total)?;
    ent.extend((0..total).map(|_| AtomicU64::new(0)));
    edges
        .par_chunks(EDGE_CHUNK as usize)
        .zip(offsets.into_par_iter())
        .for_each(|(chunk, mut next)| {
            let mut put = |row: u64, col: u64| {
                let b = (row >> shift) as usize;
                ent[next[b] as usize].store((row << 32) | col, Ordering::Relaxed);
                next[b] += 1;
            };
            for &e in chunk {
                if e != NO_EDGE {
                    let (u, v) = (e >> 32, e & 0xFFFF_FFFF);
                    put(u, v);
                    if o.symmetric && u != v {
                        put(v, u);
                    }
                }
            }
        });
    drop(edges);
    let ent: Vec<u64> = ent.into_iter().map(AtomicU64::into_inner).collect();

    // Per bucket: counting sort by row into `raw`, row pointers, then sort each row and count
    // its distinct columns.
    let mut raw: Vec<Idx> = try_vec("the Kronecker rows", total, 0)?;
    let mut raw_ptr: Vec<Idx> = try_vec("the Kronecker row pointers", n + 1, 0)?;
    let mut unique: Vec<Idx> = try_vec("the Kronecker row lengths", n, 0)?;
    {
        let mut parts = Vec::with_capacity(nbuckets);
        let mut rest: &mut [Idx] = &mut raw;
        for b in 0..nbuckets {
            let (head, tail) =
                std::mem::take(&mut rest).split_at_mut(bucket_start[b + 1] - bucket_start[b]);
            rest = tail;
            parts.push(head);
        }
        parts
            .into_par_iter()
            .zip(raw_ptr[1..].par_chunks_mut(bucket_rows))
            .zip(unique.par_chunks_mut(bucket_rows))
            .enumerate()
            .for_each(|(b, ((out, ptr), uniq))| {
                let first_row = b << shift;
                let src = &ent[bucket_start[b]..bucket_start[b + 1]];
                let mut pos = vec![0u32; bucket_rows + 1];
                for &e in src {
                    pos[(e >> 32) as usize - first_row + 1] += 1;
                }
                for r in 0..bucket_rows {
                    pos[r + 1] += pos[r];
                }
                for (p, &q) in ptr.iter_mut().zip(&pos[1..]) {
                    *p = (bucket_start[b] + q as usize) as Idx;
                }
                let starts = pos.clone();
                for &e in src {
                    let r = (e >> 32) as usize - first_row;
                    out[pos[r] as usize] = e as u32;
                    pos[r] += 1;
                }
                for (r, l) in uniq.iter_mut().enumerate() {
                    let row = &mut out[starts[r] as usize..starts[r + 1] as usize];
                    row.sort_unstable();
                    *l =
                        (1 + row.windows(2).filter(|w| w[0] != w[1]).count()).min(row.len()) as Idx;
                }
            });
    }
    drop(ent);
    let row_chunk = chunk_rows(o.edge_factor as f64 * 2.0);

    let value_key = mix64(o.seed ^ 0x6B72_6F6E);
    let raw = &raw;
    let raw_ptr = &raw_ptr;
    let unique = &unique;
    build_rows::<T, crate::scalar::Idx, _, _>(
        n,
        n,
        row_chunk,
        move |_, rows, out| out.copy_from_slice(&unique[rows]),
        move |c| {
            for i in c.rows.clone() {
                let row = &raw[raw_ptr[i] as usize..raw_ptr[i + 1] as usize];
                let mut k = c.span(i).start;
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
