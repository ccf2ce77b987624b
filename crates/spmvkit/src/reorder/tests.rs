//! Every ordering is a permutation on the corpus, PAPᵀ(Px) = P(Ax) exactly, RCM brings the
//! bandwidth of shuffled meshes back down, bisection the x sectors of a shuffled rgg.

use std::collections::BTreeSet;

use super::*;
use crate::cpu::exact::small_int;
use crate::cpu::oracle_spmv;
use crate::gen::{corpus, generate_f64};
use crate::matrix::{MatrixStats, RowStats};

/// A uniformly random permutation of 0..n.
fn shuffle(n: usize, seed: u64) -> Permutation {
    Permutation::random(n, seed).unwrap()
}

/// `a`'s pattern with small integer values, so every product below is exact in f64.
fn integer_valued(a: &Csr<f64>) -> Csr<f64> {
    let vals = (0..a.nnz() as u64).map(|k| small_int(7, k, 3)).collect();
    Csr::with_pattern(a.pattern().clone(), vals).unwrap()
}

/// Whether B(Px) = P(Ax) bit for bit, for an integer-valued `a` and x.
fn papt_holds(a: &Csr<f64>, b: &Csr<f64>, p: &Permutation) -> bool {
    let n = a.nrows();
    let x: Vec<f64> = (0..n as u64).map(|j| small_int(11, j, 5)).collect();
    let zeros = vec![0.0; n];
    let ax = oracle_spmv(a, 1.0, &x, 0.0, &zeros).unwrap().y;
    let bpx = oracle_spmv(b, 1.0, &p.apply(&x).unwrap(), 0.0, &zeros)
        .unwrap()
        .y;
    bpx == p.apply(&ax).unwrap()
}

fn is_permutation(p: &Permutation, n: usize) -> bool {
    let seen: BTreeSet<Idx> = p.old_of_new().iter().copied().collect();
    p.len() == n
        && seen.len() == n
        && seen.iter().all(|&i| (i as usize) < n)
        && (0..n).all(|i| p.old_of_new()[p.new_of_old()[i] as usize] as usize == i)
}

fn bandwidth(a: &Csr<f64>) -> u64 {
    RowStats::of(a).bandwidth()
}

/// f64 x sectors per nonzero.
fn x_share(a: &Csr<f64>) -> f64 {
    MatrixStats::of(a).with_x_sectors(a).x_share(8).unwrap()
}

/// The square members of the corpus and a few generated matrices, unsymmetric ones among them.
fn square_matrices() -> Vec<(String, Csr<f64>)> {
    let mut out: Vec<_> = corpus::edge_cases()
        .into_iter()
        .filter(|(_, a)| a.nrows() == a.ncols())
        .collect();
    for spec in [
        "uniform:3000,3000,4",
        "powerlaw:3000,6",
        "kron:11,8,sym=0",
        "poisson3d:9",
        "rgg:3000,order=shuffled",
        "delaunay:3000,order=shuffled",
    ] {
        out.push((spec.into(), generate_f64(spec).unwrap()));
    }
    out
}

#[test]
fn every_ordering_is_a_permutation_and_papt_px_is_p_ax() {
    let mats = square_matrices();
    assert!(mats.len() > 20);
    for (name, a) in &mats {
        let a = integer_valued(a);
        for kind in Ordering::ALL {
            let p = order(&a, kind).unwrap_or_else(|e| panic!("{name} {kind}: {e}"));
            assert!(is_permutation(&p, a.nrows()), "{name} {kind}");
            let b = permute_symmetric(&a, &p).unwrap();
            assert_eq!(b.nnz(), a.nnz(), "{name} {kind}");
            assert!(papt_holds(&a, &b, &p), "{name} {kind}");
            let v: Vec<f64> = (0..a.nrows()).map(|i| i as f64).collect();
            assert_eq!(
                p.apply_inverse(&p.apply(&v).unwrap()).unwrap(),
                v,
                "{name} {kind}"
            );
        }
    }
}

/// The mutation check: a "PAPᵀ" that permutes the rows only (PA) fails the test above, on every
/// matrix where the ordering moves anything.
#[test]
fn a_row_only_permutation_fails_the_papt_check() {
    let rows_only = |a: &Csr<f64>, p: &Permutation| {
        let mut ptr = vec![0 as Idx];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for &i in p.old_of_new() {
            let (c, v) = a.row(i as usize);
            cols.extend_from_slice(c);
            vals.extend_from_slice(v);
            ptr.push(cols.len() as Idx);
        }
        Csr::new(a.nrows(), a.ncols(), ptr, cols, vals).unwrap()
    };
    for spec in ["poisson2d:10", "rgg:500,order=shuffled", "kron:8,8,sym=0"] {
        let a = integer_valued(&generate_f64(spec).unwrap());
        for kind in Ordering::ALL {
            let p = order(&a, kind).unwrap();
            assert_ne!(
                p,
                Permutation::identity(a.nrows()).unwrap(),
                "{spec} {kind}"
            );
            assert!(papt_holds(&a, &permute_symmetric(&a, &p).unwrap(), &p));
            assert!(!papt_holds(&a, &rows_only(&a, &p), &p), "{spec} {kind}");
        }
    }
}

#[test]
fn permutations_are_validated_and_vectors_checked() {
    let p = Permutation::from_order(vec![2, 0, 3, 1]).unwrap();
    assert_eq!(p.new_of_old(), &[1, 3, 0, 2]);
    assert_eq!(Permutation::from_new_of_old(vec![1, 3, 0, 2]).unwrap(), p);
    assert_eq!(p.inverse().inverse(), p);
    assert_eq!(
        p.apply(&['a', 'b', 'c', 'd']).unwrap(),
        ['c', 'a', 'd', 'b']
    );
    assert_eq!(
        p.inverse().apply(&[1, 2, 3, 4]).unwrap(),
        p.apply_inverse(&[1, 2, 3, 4]).unwrap()
    );
    let back = p.apply_inverse(&p.apply(&[5, 6, 7, 8]).unwrap()).unwrap();
    assert_eq!(back, [5, 6, 7, 8]);
    for bad in [vec![0, 0, 1], vec![0, 3, 1], vec![1]] {
        let e = Permutation::from_order(bad.clone()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad:?}: {e}");
    }
    let e = Permutation::from_new_of_old(vec![0, 2, 2]).unwrap_err();
    assert!(e.to_string().contains("entries 1 and 2 are both 2"), "{e}");
    for len in [3, 5] {
        match p.apply(&vec![0.0; len]) {
            Err(Error::DimensionMismatch { expected, got, .. }) => {
                assert_eq!((expected, got), (4, len))
            }
            other => panic!("{other:?}"),
        }
        assert!(p.apply_inverse(&vec![0u8; len]).is_err());
    }
    let empty = Permutation::identity(0).unwrap();
    assert!(empty.is_empty() && empty.apply::<f64>(&[]).unwrap().is_empty());
    let a = Csr::<f64>::identity(3).unwrap();
    assert!(matches!(
        permute_symmetric(&a, &p),
        Err(Error::DimensionMismatch {
            expected: 4,
            got: 3,
            ..
        })
    ));
}

#[test]
fn a_non_square_matrix_is_refused_naming_its_shape() {
    let a = generate_f64("uniform:30,50,3").unwrap();
    for kind in Ordering::ALL {
        let e = order(&a, kind).unwrap_err().to_string();
        assert!(e.contains("30x50") && e.contains("square"), "{e}");
    }
    let e = permute_symmetric(&a, &Permutation::identity(30).unwrap()).unwrap_err();
    assert!(e.to_string().contains("30x50"), "{e}");
}

#[test]
fn orderings_parse_from_their_names() {
    for kind in Ordering::ALL {
        assert_eq!(kind.name().parse::<Ordering>().unwrap(), kind);
    }
    let e = "metis".parse::<Ordering>().unwrap_err().to_string();
    assert!(e.contains("'metis'") && e.contains("rcm, bisection"), "{e}");
}

/// The graph is the pattern of A + Aᵀ, self-loops aside, symmetric input or not.
#[test]
fn the_graph_is_the_symmetrised_pattern() {
    for spec in [
        "kron:9,8,sym=0",
        "uniform:400,400,3",
        "poisson2d:7",
        "banded:300,5",
    ] {
        let a = generate_f64(spec).unwrap();
        let g = Graph::of(&a).unwrap();
        let mut want = vec![BTreeSet::new(); a.nrows()];
        for i in 0..a.nrows() {
            for &j in a.row(i).0 {
                if j as usize != i {
                    want[i].insert(j);
                    want[j as usize].insert(i as Idx);
                }
            }
        }
        for (i, w) in want.iter().enumerate() {
            let loopless: Vec<Idx> = g
                .neighbors(i)
                .iter()
                .copied()
                .filter(|&j| j as usize != i)
                .collect();
            assert_eq!(
                loopless,
                w.iter().copied().collect::<Vec<_>>(),
                "{spec} {i}"
            );
        }
    }
}

/// RCM undoes a random numbering of 2-D and 3-D meshes: the bandwidth comes back to at most
/// twice the natural one, and to no more than sprs's serial RCM gives plus 10 %.
#[test]
fn rcm_brings_the_bandwidth_of_shuffled_meshes_back_down() {
    for (spec, seed) in [
        ("poisson2d:40", 1),
        ("poisson3d:12", 2),
        ("stencil27:10", 3),
    ] {
        let a = generate_f64(spec).unwrap();
        let s = shuffle(a.nrows(), seed);
        let shuffled = permute_symmetric(&a, &s).unwrap();
        let p = order(&shuffled, Ordering::Rcm).unwrap();
        let b = permute_symmetric(&shuffled, &p).unwrap();
        let (natural, mixed, after) = (bandwidth(&a), bandwidth(&shuffled), bandwidth(&b));
        assert!(mixed > 5 * natural, "{spec}: shuffled {mixed}");
        let sp = sprs_rcm_bandwidth(&shuffled);
        // a 27-point stencil's levels from a corner are cube shells, wider than its planes
        if !spec.starts_with("stencil27") {
            assert!(
                after <= 2 * natural,
                "{spec}: {after} against natural {natural}"
            );
        }
        assert!(10 * after <= 11 * sp, "{spec}: {after} against sprs {sp}");
    }
}

/// The bandwidth of `a` in sprs's reverse Cuthill–McKee order.
fn sprs_rcm_bandwidth(a: &Csr<f64>) -> u64 {
    let m = sprs::CsMat::new(
        (a.nrows(), a.ncols()),
        a.row_ptr().iter().map(|&o| o as usize).collect(),
        a.col_idx().iter().map(|&c| c as usize).collect(),
        a.vals().to_vec(),
    );
    let o = sprs::linalg::reverse_cuthill_mckee(m.view());
    let new_of_old: Vec<Idx> = o.perm.vec().iter().map(|&v| v as Idx).collect();
    let p = Permutation::from_order(new_of_old).unwrap();
    bandwidth(&permute_symmetric(a, &p).unwrap())
}

/// A path numbered at random is a tridiagonal matrix again; components and isolated vertices
/// are numbered one after another.
#[test]
fn rcm_restores_a_path_and_handles_components() {
    let n = 1000;
    let mut coo = Vec::new();
    for i in 0..n - 1 {
        coo.push((i, i + 1));
        coo.push((i + 1, i));
    }
    let path = from_edges(n, &coo);
    let shuffled = permute_symmetric(&path, &shuffle(n, 9)).unwrap();
    let b = permute_symmetric(&shuffled, &order(&shuffled, Ordering::Rcm).unwrap()).unwrap();
    assert_eq!(bandwidth(&b), 1);
    // two paths and isolated vertices between them
    let mut edges = Vec::new();
    for i in (0..200).step_by(3).take(60) {
        edges.push((i, i + 3));
        edges.push((i + 3, i));
    }
    for i in 400..600 {
        edges.push((i, i + 1));
    }
    let a = from_edges(700, &edges);
    for kind in Ordering::ALL {
        let p = order(&a, kind).unwrap();
        assert!(is_permutation(&p, 700));
        assert!(papt_holds(&a, &permute_symmetric(&a, &p).unwrap(), &p));
    }
    let b = permute_symmetric(&a, &order(&a, Ordering::Rcm).unwrap()).unwrap();
    assert_eq!(
        bandwidth(&b),
        1,
        "the unsymmetric path is ordered by its symmetrised pattern"
    );
}

/// A matrix of ones with an entry at each (row, column) of `edges`.
fn from_edges(n: usize, edges: &[(usize, usize)]) -> Csr<f64> {
    let mut rows = vec![BTreeSet::new(); n];
    for &(i, j) in edges {
        rows[i].insert(j as Idx);
    }
    let mut ptr = vec![0 as Idx];
    let mut cols = Vec::new();
    for r in &rows {
        cols.extend(r.iter().copied());
        ptr.push(cols.len() as Idx);
    }
    let nnz = cols.len();
    Csr::new(n, n, ptr, cols, vec![1.0; nnz]).unwrap()
}

/// On a randomly numbered random geometric graph, bisection cuts the x sectors per nonzero by a
/// clear factor, to within 1.5× those of the generator's spatial (Z-order) numbering.
#[test]
fn bisection_brings_the_x_sectors_of_a_shuffled_rgg_down() {
    for kind in ["rgg", "delaunay"] {
        let shuffled = generate_f64(&format!("{kind}:20000,order=shuffled")).unwrap();
        let spatial = generate_f64(&format!("{kind}:20000")).unwrap();
        let p = order(&shuffled, Ordering::Bisection).unwrap();
        let b = permute_symmetric(&shuffled, &p).unwrap();
        let (before, after, z) = (x_share(&shuffled), x_share(&b), x_share(&spatial));
        assert!(
            after * 2.5 < before,
            "{kind}: {before} -> {after} (spatial {z})"
        );
        assert!(after < 1.5 * z, "{kind}: {after} against spatial {z}");
    }
    // on a power-law graph, where breadth-first levels are wide, it reads fewer than RCM
    let a = generate_f64("powerlaw:20000,8").unwrap();
    let a = permute_symmetric(&a, &shuffle(a.nrows(), 4)).unwrap();
    let share = |k| x_share(&permute_symmetric(&a, &order(&a, k).unwrap()).unwrap());
    let (rcm, bisection) = (share(Ordering::Rcm), share(Ordering::Bisection));
    assert!(
        bisection < 0.95 * rcm,
        "powerlaw: bisection {bisection}, rcm {rcm}"
    );
}

/// The orderings do not depend on the number of threads: on one thread RCM expands every
/// level serially, on four the wide levels of the random and power-law graphs (thousands of
/// vertices, above `rcm::PAR_LEVEL`) in parallel, in its searches and its numbering.
#[test]
fn orderings_are_the_same_on_one_and_four_threads() {
    for spec in [
        "delaunay:20000,order=shuffled",
        "uniform:20000,20000,4",
        "powerlaw:20000,8",
    ] {
        let a = generate_f64(spec).unwrap();
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| Ordering::ALL.map(|k| order(&a, k).unwrap()))
        };
        assert_eq!(on(1), on(4), "{spec}");
    }
}

/// The fingerprint test of symmetry: true for symmetric patterns (with or without a diagonal),
/// false when one entry has no mirror, or when the rows and columns have the same counts but
/// the entries differ.
#[test]
fn the_symmetry_fingerprint_tells_symmetric_patterns_apart() {
    use super::graph::symmetric_pattern;
    let check = |ptr: &[Idx], cols: &[Idx]| symmetric_pattern(ptr, cols);
    // 0-1, 1-2 both ways, with and without diagonal entries
    assert!(check(&[0, 1, 3, 4], &[1, 0, 2, 1]));
    assert!(check(&[0, 2, 5, 7], &[0, 1, 0, 1, 2, 1, 2]));
    assert!(check(&[0], &[]));
    // (0, 2) stored without (2, 0)
    assert!(!check(&[0, 2, 3, 4], &[1, 2, 0, 1]));
    // a directed 3-cycle: every row and every column holds one entry
    assert!(!check(&[0, 1, 2, 3], &[1, 2, 0]));
    for spec in ["poisson3d:6", "rgg:500,order=shuffled", "delaunay:300"] {
        let a = generate_f64(spec).unwrap();
        assert!(check(a.row_ptr(), a.col_idx()), "{spec}");
    }
    for spec in ["kron:9,8,sym=0", "uniform:400,400,3"] {
        let a = generate_f64(spec).unwrap();
        assert!(!check(a.row_ptr(), a.col_idx()), "{spec}");
    }
}
