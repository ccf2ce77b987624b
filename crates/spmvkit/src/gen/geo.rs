//! Geometric graphs of random points in the unit square, after two families of the 10th DIMACS
//! Implementation Challenge (graph partitioning and clustering, 2012; the SuiteSparse group
//! `DIMACS10`), for issue #19's large matrices of real families:
//!
//! - `rgg` (DIMACS10 `rgg_n_2_k_s0`): N points uniform in the unit square, an edge between two
//!   points closer than r = 0.55·√(ln N / N), the radius of the DIMACS10 generator (Holtgrewe,
//!   Sanders and Schulz, "Engineering a scalable high quality graph partitioner", IPDPS 2010).
//!   The expected degree is about π r² N ≈ 0.95·ln N (less near the border).
//! - `delaunay` (DIMACS10 `delaunay_nk`): the edges of the Delaunay triangulation of N points
//!   uniform in the unit square, about 6 per vertex. The triangulation is the `delaunator` crate's
//!   (a port of Mapbox's Delaunator, robust predicates), single-threaded; everything around it is
//!   parallel.
//!
//! The sizes match the collection's (M. Holtgrewe, P. Sanders, C. Schulz, 2011): `rgg:2^21` has
//! 28 980 496 entries against rgg_n_2_21_s0's 28 975 990, `delaunay:2^21` 12 582 836 against
//! delaunay_n21's 12 582 816, `delaunay:2^22` 25 165 748 against delaunay_n22's 25 165 738.
//!
//! Both are symmetric patterns (every stored value 1.0) without self-loops. The points are drawn
//! in fixed-size chunks, one random stream each, so a graph depends on its seed only. Vertex ids:
//! `order=spatial` (the default) numbers the points along the Z-order (Morton) curve of their
//! coordinates, quantised to 32 bits per axis, ties by draw index; `order=shuffled` numbers them in
//! the order they were drawn, which, the points being independent and identically distributed, is
//! a uniformly random numbering of the same graph: shuffled id = [`spatial_order`]`[spatial id]`.
//!
//! Z-order rather than row-major cells: in a row-major numbering every vertex's neighbours in the
//! cell rows above and below lie about N/g ids away (g cells per side), so each row block of the
//! matrix reads x in three far-apart windows; the Z-order keeps whole square neighbourhoods in
//! short id ranges, at the price of a few long jumps at the curve's quadrant boundaries.
//! Measured on `rgg` at 2^20 and 2^22: 96% of the entries lie within 1024 ids of the diagonal in
//! Z-order, 58% with row-major cells (`delaunay`: 97% and 65%), for about as many distinct
//! 128-byte segments of x per block of 128 rows (3.5 to 3.7 per 16 rows); shuffled, under 0.2%,
//! with 27 (`delaunay`) to 60 (`rgg`) times as many segments.
//!
//! Measured on 16 cores: `rgg:2^20` 0.15 s, `rgg:2^24` (265M nnz) 3.5 s in either order;
//! `delaunay:2^20` 0.95 s, `delaunay:2^24` (101M nnz) 16 s, most of it the triangulation.
//!
//! `rgg` finds neighbours in a grid of cells of side at least r (the points sorted by cell; a
//! point's neighbours lie in its own and the 8 surrounding cells, three runs of 3 consecutive
//! cells). Distances are computed alike from both ends (|p−q|² = |q−p|² bit for bit),
//! so the pattern is exactly symmetric.

use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use super::build::{build_rows, chunk_rows};
use super::rng::{Purpose, Rng};
use crate::error::Result;
use crate::matrix::Csr;
use crate::memory::{try_vec, try_with_capacity};
use crate::scalar::{Idx, Scalar};

/// Points per random stream.
const POINT_CHUNK: usize = 1 << 16;
/// The DIMACS10 radius factor: r = RADIUS_FACTOR·√(ln N / N).
const RADIUS_FACTOR: f64 = 0.55;

/// How a geometric graph numbers its vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Along the Z-order curve of the points.
    Spatial,
    /// In the order the points were drawn (a uniformly random numbering).
    Shuffled,
}

impl Order {
    /// Parses `spatial` or `shuffled`.
    pub(crate) fn parse(s: &str) -> Option<Order> {
        match s.to_ascii_lowercase().as_str() {
            "spatial" => Some(Order::Spatial),
            "shuffled" => Some(Order::Shuffled),
            _ => None,
        }
    }
}

/// The connection radius of `rgg:N`: 0.55·√(ln N / N), the DIMACS10 rule (0 for N ≤ 1).
pub fn rgg_radius(n: usize) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    RADIUS_FACTOR * (n.ln() / n).sqrt()
}

/// The expected number of stored entries of `rgg:N` ignoring the border: N·(N−1)·π r², an upper
/// bound of the mean (a disc that crosses the border holds fewer points).
pub(crate) fn rgg_expected_nnz(n: usize) -> u128 {
    let r = rgg_radius(n);
    let per_row = (n.saturating_sub(1)) as f64 * std::f64::consts::PI * r * r;
    (per_row * n as f64).ceil() as u128
}

/// Cells per side of the neighbour grid for radius `r`: the most whose side 1/g is still at least
/// r (with a relative margin of 10^-9 against rounding), between 1 and 2^16 − 1.
pub(crate) fn grid_side(r: f64) -> usize {
    if r <= 0.0 {
        return 1;
    }
    ((1.0 - 1e-9) / r).floor().clamp(1.0, 65535.0) as usize
}

/// `n` points uniform in [0, 1)², drawn in chunks of [`POINT_CHUNK`], one stream per chunk.
pub(crate) fn points(n: usize, seed: u64) -> Result<Vec<[f64; 2]>> {
    let mut pts = try_vec("the points", n, [0.0f64; 2])?;
    pts.par_chunks_mut(POINT_CHUNK)
        .enumerate()
        .for_each(|(c, out)| {
            let mut rng = Rng::stream(seed, Purpose::Points, c as u64);
            for p in out {
                let x = rng.unit();
                *p = [x, rng.unit()];
            }
        });
    Ok(pts)
}

/// Spreads the 32 bits of `v` to the even bits of a 64-bit word.
#[inline]
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The Z-order (Morton) key of a point of [0, 1)²: its coordinates quantised to 32 bits each,
/// interleaved (x on the even bits).
#[inline]
fn morton(p: [f64; 2]) -> u64 {
    let q = |v: f64| (v * 4_294_967_296.0).clamp(0.0, 4_294_967_295.0) as u32;
    spread(q(p[0])) | (spread(q(p[1])) << 1)
}

/// The spatial numbering of `pts`: entry s is the index of the point that gets spatial id s (the
/// points sorted by Z-order key, ties by index).
pub(crate) fn spatial_order(pts: &[[f64; 2]]) -> Result<Vec<Idx>> {
    let mut keys: Vec<(u64, Idx)> = try_with_capacity("the spatial sort keys", pts.len())?;
    pts.par_iter()
        .enumerate()
        .map(|(i, &p)| (morton(p), i as Idx))
        .collect_into_vec(&mut keys);
    keys.par_sort_unstable();
    let mut order: Vec<Idx> = try_with_capacity("the spatial order", pts.len())?;
    keys.par_iter().map(|k| k.1).collect_into_vec(&mut order);
    Ok(order)
}

/// `pts` renumbered: entry s is `pts[order[s]]`.
fn gather(pts: &[[f64; 2]], order: &[Idx]) -> Result<Vec<[f64; 2]>> {
    let mut out: Vec<[f64; 2]> = try_with_capacity("the ordered points", order.len())?;
    order
        .par_iter()
        .map(|&i| pts[i as usize])
        .collect_into_vec(&mut out);
    Ok(out)
}

/// The points of a geometric graph numbered as `order` asks.
fn numbered_points(n: usize, order: Order, seed: u64) -> Result<Vec<[f64; 2]>> {
    let drawn = points(n, seed)?;
    match order {
        Order::Shuffled => Ok(drawn),
        Order::Spatial => {
            let perm = spatial_order(&drawn)?;
            gather(&drawn, &perm)
        }
    }
}

/// The neighbour grid of `rgg`: `g`×`g` cells of side 1/g ≥ r, numbered row-major; the points
/// of cell c are `xy[start[c]..start[c + 1]]` with their vertex ids in `id`.
struct Grid {
    g: usize,
    start: Vec<Idx>,
    xy: Vec<[f64; 2]>,
    id: Vec<Idx>,
}

impl Grid {
    fn new(pts: &[[f64; 2]], r: f64) -> Result<Grid> {
        let g = grid_side(r);
        let cells = g * g;
        let mut keys: Vec<u64> = try_with_capacity("the grid sort keys", pts.len())?;
        pts.par_iter()
            .enumerate()
            .map(|(i, &p)| ((Self::cell_of(g, p) as u64) << 32) | i as u64)
            .collect_into_vec(&mut keys);
        keys.par_sort_unstable();
        let mut start: Vec<Idx> = try_with_capacity("the grid cell starts", cells + 1)?;
        (0..cells + 1)
            .into_par_iter()
            .map(|c| keys.partition_point(|&k| (k >> 32) < c as u64) as Idx)
            .collect_into_vec(&mut start);
        let mut xy: Vec<[f64; 2]> = try_with_capacity("the grid points", pts.len())?;
        keys.par_iter()
            .map(|&k| pts[(k & 0xFFFF_FFFF) as usize])
            .collect_into_vec(&mut xy);
        let mut id: Vec<Idx> = try_with_capacity("the grid ids", pts.len())?;
        keys.par_iter().map(|&k| k as Idx).collect_into_vec(&mut id);
        Ok(Grid { g, start, xy, id })
    }

    /// The cell column and row of `p`.
    #[inline]
    fn cell_xy(g: usize, p: [f64; 2]) -> (usize, usize) {
        let gf = g as f64;
        (
            ((p[0] * gf) as usize).min(g - 1),
            ((p[1] * gf) as usize).min(g - 1),
        )
    }

    #[inline]
    fn cell_of(g: usize, p: [f64; 2]) -> usize {
        let (cx, cy) = Self::cell_xy(g, p);
        cy * g + cx
    }

    /// Appends to `out` the id of every point q with |p − q|² < r2 (p itself included when it is
    /// one of the points), in grid order. Branch-free: each candidate is written, and kept by
    /// advancing past it when it is near.
    #[inline]
    fn near(&self, p: [f64; 2], r2: f64, out: &mut Vec<Idx>) {
        let g = self.g;
        let (cx, cy) = Self::cell_xy(g, p);
        let (x0, x1) = (cx.saturating_sub(1), (cx + 1).min(g - 1));
        for yy in cy.saturating_sub(1)..=(cy + 1).min(g - 1) {
            let a = self.start[yy * g + x0] as usize;
            let b = self.start[yy * g + x1 + 1] as usize;
            let base = out.len();
            out.resize(base + (b - a), 0);
            let dst = &mut out[base..];
            let mut k = 0;
            for (q, &id) in self.xy[a..b].iter().zip(&self.id[a..b]) {
                let (dx, dy) = (p[0] - q[0], p[1] - q[1]);
                dst[k] = id;
                k += usize::from(dx * dx + dy * dy < r2);
            }
            out.truncate(base + k);
        }
    }
}

/// `rgg:N`: the random geometric graph of the DIMACS10 family (see the module doc).
///
/// The neighbour search runs once: the first pass of [`build_rows`] finds each chunk's rows
/// (sorted, without the vertex itself), keeps them and writes their lengths; the second copies
/// them into place.
pub(crate) fn rgg<T: Scalar>(n: usize, order: Order, seed: u64) -> Result<Csr<T>> {
    let r = rgg_radius(n);
    let r2 = r * r;
    let pts = numbered_points(n, order, seed)?;
    let grid = Grid::new(&pts, r)?;
    let mean = (n.saturating_sub(1)) as f64 * std::f64::consts::PI * r2;
    let chunk = chunk_rows(mean);
    let found: Vec<Mutex<Vec<Idx>>> = (0..n.div_ceil(chunk))
        .map(|_| Mutex::new(Vec::new()))
        .collect();
    let (pts, grid, found) = (&pts, &grid, &found);
    build_rows::<T, crate::scalar::Idx, _, _>(
        n,
        n,
        chunk,
        move |c, rows, out| {
            let mut cols = Vec::with_capacity(out.len() * (mean as usize + 8));
            let mut buf = Vec::new();
            for (i, o) in rows.zip(out.iter_mut()) {
                buf.clear();
                grid.near(pts[i], r2, &mut buf);
                buf.retain(|&j| j as usize != i);
                buf.sort_unstable();
                cols.extend_from_slice(&buf);
                *o = buf.len() as Idx;
            }
            cols.shrink_to_fit();
            *found[c].lock().unwrap_or_else(PoisonError::into_inner) = cols;
        },
        move |c| {
            let cols = std::mem::take(
                &mut *found[c.index]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            c.cols.copy_from_slice(&cols);
            c.vals.fill(T::one());
        },
    )
}

/// The directed entries (row << 32 | column) of the Delaunay graph of `pts`, both directions of
/// every edge, vertex v renamed `label(v)`, sorted.
fn delaunay_entries(pts: Vec<[f64; 2]>, label: impl Fn(usize) -> u64 + Sync) -> Result<Vec<u64>> {
    let dp: Vec<delaunator::Point> = {
        let mut v = try_with_capacity("the triangulation points", pts.len())?;
        pts.par_iter()
            .map(|p| delaunator::Point { x: p[0], y: p[1] })
            .collect_into_vec(&mut v);
        v
    };
    drop(pts);
    let t = delaunator::triangulate(&dp);
    drop(dp);
    let key = |a: usize, b: usize| (label(a) << 32) | label(b);
    let mut keys: Vec<u64>;
    if t.triangles.is_empty() {
        // Fewer than three points, or all on one line: the hull lists them in order along it,
        // and the triangulation's edges are the path through them.
        keys = try_with_capacity("the Delaunay entries", 2 * t.hull.len())?;
        for w in t.hull.windows(2) {
            keys.push(key(w[0], w[1]));
            keys.push(key(w[1], w[0]));
        }
    } else {
        // Every half-edge a→b of a triangle once, plus b→a for the hull's half-edges (no twin).
        let tri = &t.triangles;
        let outer: Vec<usize> = t
            .halfedges
            .par_iter()
            .enumerate()
            .filter(|(_, &h)| h == delaunator::EMPTY)
            .map(|(e, _)| e)
            .collect();
        keys = try_with_capacity("the Delaunay entries", tri.len() + outer.len())?;
        (0..tri.len())
            .into_par_iter()
            .map(|e| key(tri[e], tri[delaunator::next_halfedge(e)]))
            .collect_into_vec(&mut keys);
        keys.extend(
            outer
                .iter()
                .map(|&e| key(tri[delaunator::next_halfedge(e)], tri[e])),
        );
    }
    drop(t);
    keys.par_sort_unstable();
    Ok(keys)
}

/// `delaunay:N`: the Delaunay graph of the DIMACS10 family (see the module doc). The points are
/// triangulated in spatial order (the triangulation runs about twice as fast on spatially
/// ordered input), then numbered as `order` asks.
pub(crate) fn delaunay<T: Scalar>(n: usize, order: Order, seed: u64) -> Result<Csr<T>> {
    let drawn = points(n, seed)?;
    let perm = spatial_order(&drawn)?;
    let spatial = gather(&drawn, &perm)?;
    drop(drawn);
    let keys = match order {
        Order::Spatial => delaunay_entries(spatial, |v| v as u64)?,
        Order::Shuffled => delaunay_entries(spatial, |v| perm[v] as u64)?,
    };
    drop(perm);
    csr_from_sorted_entries::<T>(n, &keys)
}

/// The pattern matrix (values 1.0) of sorted `row << 32 | column` entries; a repeated entry is
/// stored once.
fn csr_from_sorted_entries<T: Scalar>(n: usize, keys: &[u64]) -> Result<Csr<T>> {
    // The entries of rows `rows`, each with whether it repeats its predecessor.
    let entries = move |rows: std::ops::Range<usize>| {
        let lo = keys.partition_point(|&k| (k >> 32) < rows.start as u64);
        keys[lo..]
            .iter()
            .enumerate()
            .take_while(move |(_, &k)| ((k >> 32) as usize) < rows.end)
            .map(move |(j, &k)| (k, j + lo > 0 && keys[j + lo - 1] == k))
    };
    let mean = keys.len() as f64 / n.max(1) as f64;
    build_rows::<T, crate::scalar::Idx, _, _>(
        n,
        n,
        chunk_rows(mean),
        move |_, rows, out| {
            let first = rows.start;
            out.fill(0);
            for (k, dup) in entries(rows) {
                out[(k >> 32) as usize - first] += Idx::from(!dup);
            }
        },
        move |c| {
            let mut k = 0;
            for (e, dup) in entries(c.rows.clone()) {
                if !dup {
                    c.cols[k] = e as Idx;
                    k += 1;
                }
            }
            c.vals.fill(T::one());
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_interleaves_x_on_even_bits() {
        assert_eq!(spread(0b1011), 0b1_00_01_01);
        assert_eq!(morton([0.0, 0.0]), 0);
        assert_eq!(morton([0.5, 0.0]), 1 << 62);
        assert_eq!(morton([0.0, 0.5]), 1 << 63);
        assert_eq!(morton([0.999_999_999_999, 0.999_999_999_999]), u64::MAX);
    }

    #[test]
    fn radius_follows_the_dimacs10_rule() {
        assert_eq!(rgg_radius(1), 0.0);
        let n = 1usize << 20;
        let r = rgg_radius(n);
        assert!((r - 0.55 * ((n as f64).ln() / n as f64).sqrt()).abs() < 1e-15);
        let g = grid_side(r);
        assert!(1.0 / g as f64 >= r && 1.0 / ((g + 1) as f64) < r);
        assert_eq!(grid_side(0.0), 1);
        assert_eq!(grid_side(0.7), 1);
    }

    #[test]
    fn spatial_order_is_a_permutation() {
        let pts = points(5000, 3).unwrap();
        let mut p = spatial_order(&pts).unwrap();
        let keys: Vec<u64> = p.iter().map(|&i| morton(pts[i as usize])).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        p.sort_unstable();
        assert!(p.iter().enumerate().all(|(i, &v)| v as usize == i));
    }

    #[test]
    fn points_are_in_the_unit_square_and_chunked_by_spec() {
        let a = points(POINT_CHUNK + 10, 9).unwrap();
        let b = points(POINT_CHUNK + 100, 9).unwrap();
        assert_eq!(
            a[..],
            b[..a.len()],
            "a point depends on its index and the seed only"
        );
        assert!(a.iter().flatten().all(|&v| (0.0..1.0).contains(&v)));
    }

    #[test]
    fn graphs_of_few_points() {
        let a = rgg::<f64>(1, Order::Spatial, 1).unwrap();
        assert_eq!((a.nrows(), a.nnz()), (1, 0));
        for seed in 1..20 {
            // Two points: an edge exactly when they are closer than r = 0.55·√(ln 2 / 2).
            let p = points(2, seed).unwrap();
            let d2 = (p[0][0] - p[1][0]).powi(2) + (p[0][1] - p[1][1]).powi(2);
            let a = rgg::<f64>(2, Order::Shuffled, seed).unwrap();
            let r = rgg_radius(2);
            assert_eq!(a.nnz(), if d2 < r * r { 2 } else { 0 }, "seed {seed}");
        }
        let a = delaunay::<f64>(1, Order::Spatial, 1).unwrap();
        assert_eq!((a.nrows(), a.nnz()), (1, 0));
        let a = delaunay::<f64>(2, Order::Spatial, 1).unwrap();
        assert_eq!(a.col_idx(), &[1, 0]);
        // Three points in general position: a triangle.
        let a = delaunay::<f64>(3, Order::Shuffled, 1).unwrap();
        assert_eq!(a.col_idx(), &[1, 2, 0, 2, 0, 1]);
        // Collinear points: the path along the line.
        let keys =
            delaunay_entries(vec![[0.0, 0.0], [2.0, 2.0], [1.0, 1.0]], |v| v as u64).unwrap();
        let a = csr_from_sorted_entries::<f64>(3, &keys).unwrap();
        assert_eq!(a.col_idx(), &[2, 2, 0, 1]);
    }

    /// The drawn points of `points(n, seed)` and their spatial order.
    fn drawn_and_spatial(n: usize, seed: u64) -> (Vec<[f64; 2]>, Vec<Idx>) {
        let drawn = points(n, seed).unwrap();
        let perm = spatial_order(&drawn).unwrap();
        (drawn, perm)
    }

    #[test]
    fn rgg_is_exactly_the_pairs_closer_than_r() {
        let n = 700;
        let r = rgg_radius(n);
        for order in [Order::Spatial, Order::Shuffled] {
            let a = rgg::<f64>(n, order, 5).unwrap();
            let (drawn, perm) = drawn_and_spatial(n, 5);
            let pts = match order {
                Order::Spatial => gather(&drawn, &perm).unwrap(),
                Order::Shuffled => drawn,
            };
            for i in 0..n {
                let want: Vec<Idx> = (0..n)
                    .filter(|&j| {
                        let (dx, dy) = (pts[i][0] - pts[j][0], pts[i][1] - pts[j][1]);
                        j != i && dx * dx + dy * dy < r * r
                    })
                    .map(|j| j as Idx)
                    .collect();
                assert_eq!(a.row(i).0, &want[..], "{order:?} row {i}");
            }
        }
    }

    #[test]
    fn shuffled_is_the_spatial_graph_renumbered() {
        for kind in ["rgg", "delaunay"] {
            let n = 3000;
            let build = |order| match kind {
                "rgg" => rgg::<f64>(n, order, 2).unwrap(),
                _ => delaunay::<f64>(n, order, 2).unwrap(),
            };
            let (sp, sh) = (build(Order::Spatial), build(Order::Shuffled));
            assert_eq!(sp.nnz(), sh.nnz(), "{kind}");
            let (_, perm) = drawn_and_spatial(n, 2);
            for i in 0..n {
                let mut mapped: Vec<Idx> = sp.row(i).0.iter().map(|&j| perm[j as usize]).collect();
                mapped.sort_unstable();
                assert_eq!(sh.row(perm[i] as usize).0, &mapped[..], "{kind} row {i}");
            }
        }
    }

    #[test]
    fn delaunay_holds_every_nearest_neighbour_pair() {
        // The nearest-neighbour graph is a subgraph of the Delaunay graph.
        let n = 800;
        let a = delaunay::<f64>(n, Order::Spatial, 4).unwrap();
        let (drawn, perm) = drawn_and_spatial(n, 4);
        let pts = gather(&drawn, &perm).unwrap();
        let d2 = |i: usize, j: usize| {
            let (dx, dy) = (pts[i][0] - pts[j][0], pts[i][1] - pts[j][1]);
            dx * dx + dy * dy
        };
        for i in 0..n {
            let nearest = (0..n)
                .filter(|&j| j != i)
                .min_by(|&j, &k| d2(i, j).total_cmp(&d2(i, k)))
                .unwrap();
            assert!(a.row(i).0.contains(&(nearest as Idx)), "vertex {i}");
        }
        // Euler: 3N − 3 − h edges with h ≥ 3 hull vertices, each stored twice.
        assert!(
            a.nnz() <= 6 * n - 12 && a.nnz() > 6 * n - 6 - 2 * 100,
            "{}",
            a.nnz()
        );
    }

    #[test]
    fn repeated_entries_are_stored_once() {
        let keys = [1u64, 1, 2, (1 << 32), (2 << 32) | 1, (2 << 32) | 1];
        let a = csr_from_sorted_entries::<f32>(3, &keys).unwrap();
        assert_eq!(a.row_ptr(), &[0, 2, 3, 4]);
        assert_eq!(a.col_idx(), &[1, 2, 0, 1]);
    }
}
