//! Generators (issues #2 and #19): determinism across seeds and thread counts, exact shapes of
//! the stencils, symmetry, the geometric graphs' degrees and orders, every kind's example, the
//! edge-case corpus, and errors for bad specs and sizes beyond the 32-bit limits.

use spmvkit::gen::{self, corpus, generate, generate_f64, kinds, looks_like_spec, parse_spec};
use spmvkit::{Csr, Error};

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
        .install(f)
}

fn is_symmetric(a: &Csr<f64>) -> bool {
    let t = a.transpose();
    t.row_ptr() == a.row_ptr() && t.col_idx() == a.col_idx() && t.vals() == a.vals()
}

#[test]
fn same_seed_same_matrix_any_thread_count() {
    for spec in [
        "uniform:3000,2000,9",
        "powerlaw:20000,6",
        "banded:5000,20,fill=0.3",
        "kron:12",
        "kron:11,8,sym=0,loops=0,vals=rand",
        "hugerow:3000,3",
        "blockdiag:100,7",
        "diag:50000",
        "poisson3d:12",
        "varcoef27:9",
        "rgg:70000",
        "rgg:70000,order=shuffled,seed=4",
        "delaunay:70000",
        "delaunay:70000,order=shuffled",
    ] {
        let one = in_pool(1, || generate_f64(spec).unwrap());
        let two = in_pool(2, || generate_f64(spec).unwrap());
        let three = in_pool(3, || generate_f64(spec).unwrap());
        assert_eq!(one, two, "{spec}: 1 vs 2 threads");
        assert_eq!(one, three, "{spec}: 1 vs 3 threads");
    }
}

#[test]
fn seed_changes_random_kinds_only() {
    let a = generate_f64("uniform:500,300,4").unwrap();
    let b = generate_f64("uniform:500,300,4,seed=1").unwrap();
    let c = generate_f64("uniform:500,300,4,seed=7").unwrap();
    assert_eq!(a, b, "default seed is 1");
    assert_ne!(a, c);
    assert_eq!(gen::DEFAULT_SEED, 1);
    let p = generate_f64("poisson2d:9").unwrap();
    assert_eq!(p, generate_f64("poisson2d:9,seed=99").unwrap());
    for kind in ["rgg", "delaunay"] {
        let a = generate_f64(&format!("{kind}:2000")).unwrap();
        assert_ne!(a, generate_f64(&format!("{kind}:2000,seed=2")).unwrap());
    }
    let v = generate_f64("varcoef27:5").unwrap();
    let w = generate_f64("varcoef27:5,seed=2").unwrap();
    assert_eq!(v.col_idx(), w.col_idx(), "the seed changes values only");
    assert_ne!(v.vals(), w.vals());
}

#[test]
fn stencil_shapes_are_exact() {
    for n in [1usize, 2, 3, 10, 17] {
        let a = generate_f64(&format!("poisson2d:{n}")).unwrap();
        assert_eq!((a.nrows(), a.ncols()), (n * n, n * n));
        assert_eq!(a.nnz(), 5 * n * n - 4 * n, "poisson2d:{n}");
        let a = generate_f64(&format!("poisson3d:{n}")).unwrap();
        assert_eq!(a.nrows(), n * n * n);
        assert_eq!(a.nnz(), 7 * n * n * n - 6 * n * n, "poisson3d:{n}");
        let a = generate_f64(&format!("stencil27:{n}")).unwrap();
        assert_eq!(a.nrows(), n * n * n);
        assert_eq!(a.nnz(), (3 * n - 2).pow(3), "stencil27:{n}");
        let v = generate_f64(&format!("varcoef27:{n}")).unwrap();
        assert_eq!(v.row_ptr(), a.row_ptr(), "varcoef27:{n}");
        assert_eq!(v.col_idx(), a.col_idx(), "varcoef27:{n}");
    }
}

#[test]
fn stencils_are_symmetric_and_diagonally_dominant() {
    for spec in [
        "poisson2d:13",
        "poisson3d:7",
        "stencil27:6",
        "varcoef27:6",
        "varcoef27:6,seed=9",
    ] {
        let a = generate_f64(spec).unwrap();
        assert!(is_symmetric(&a), "{spec}");
        for i in 0..a.nrows() {
            let (c, v) = a.row(i);
            let d: f64 = c
                .iter()
                .zip(v)
                .filter(|(&c, _)| c as usize == i)
                .map(|(_, &v)| v)
                .sum();
            let off: f64 = c
                .iter()
                .zip(v)
                .filter(|(&c, _)| c as usize != i)
                .map(|(_, v)| v.abs())
                .sum();
            assert!(d > 0.0 && d >= off, "{spec} row {i}");
        }
    }
    let a = generate_f64("poisson2d:3").unwrap();
    assert_eq!(a.row(4).0, &[1, 3, 4, 5, 7]);
    assert_eq!(a.row(4).1, &[-1.0, -1.0, 4.0, -1.0, -1.0]);
}

/// Off-diagonal sum and diagonal of every row.
fn row_dominance(a: &Csr<f64>) -> Vec<(f64, f64)> {
    (0..a.nrows())
        .map(|i| {
            let (c, v) = a.row(i);
            let mut d = (0.0, 0.0);
            for (&c, &v) in c.iter().zip(v) {
                if c as usize == i {
                    d.1 += v;
                } else {
                    d.0 += v.abs();
                }
            }
            d
        })
        .collect()
}

#[test]
fn varcoef27_is_spd_by_dominance_with_many_distinct_values() {
    let a = generate_f64("varcoef27:12").unwrap();
    assert!(is_symmetric(&a));
    for (i, (off, d)) in row_dominance(&a).into_iter().enumerate() {
        assert_eq!(d, off + 1.0, "row {i}: diagonal = Σ|off-diagonal| + 1");
    }
    for i in 0..a.nrows() {
        let (c, v) = a.row(i);
        for (&c, &v) in c.iter().zip(v) {
            if c as usize != i {
                assert!((-1.0..=-1.0 / 16.0).contains(&v), "row {i}: {v}");
            }
        }
    }
    let mut vals: Vec<u64> = a.vals().iter().map(|v| v.to_bits()).collect();
    vals.sort_unstable();
    vals.dedup();
    // 39 304 entries: 18 788 off-diagonal pairs, nearly all distinct among the 245 761 possible
    // coefficients, and 1728 diagonals (19 785 distinct values in all with the default seed).
    assert!(vals.len() > 15_000, "{} distinct values", vals.len());
    let s = generate::<f32>("varcoef27:12").unwrap();
    assert_eq!(s.cast::<f64>(), a, "f32 and f64 hold the same numbers");
}

/// Checks a symmetric pattern without self-loops: every value 1.0, no diagonal entry.
fn assert_symmetric_loop_free_pattern(spec: &str, a: &Csr<f64>) {
    assert_eq!(a.nrows(), a.ncols(), "{spec}");
    assert!(is_symmetric(a), "{spec}");
    assert!(a.vals().iter().all(|&v| v == 1.0), "{spec}");
    assert!(
        (0..a.nrows()).all(|i| !a.row(i).0.contains(&(i as u32))),
        "{spec}: self-loop"
    );
    // Sorted unique columns: the checked constructor accepts the arrays.
    assert_revalidates(spec, a);
}

/// The checked constructor accepts `a`'s arrays (sorted unique columns, pointers in bounds).
fn assert_revalidates(what: &str, a: &Csr<f64>) {
    Csr::new(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        a.vals().to_vec(),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn rgg_mean_degree_matches_the_dimacs10_radius() {
    for n in [5_000usize, 40_000] {
        for order in ["spatial", "shuffled"] {
            let spec = format!("rgg:{n},order={order}");
            let a = generate_f64(&spec).unwrap();
            assert_eq!(a.nrows(), n);
            assert_symmetric_loop_free_pattern(&spec, &a);
            // E[degree] = (N−1)·E|disc ∩ square| = (N−1)(πr² − 8r³/3 + r⁴/2) for r ≤ 1/2.
            let r = gen::rgg_radius(n);
            assert!((r - 0.55 * ((n as f64).ln() / n as f64).sqrt()).abs() < 1e-15);
            let want = (n - 1) as f64
                * (std::f64::consts::PI * r * r - 8.0 * r.powi(3) / 3.0 + r.powi(4) / 2.0);
            let mean = a.nnz() as f64 / n as f64;
            assert!(
                (mean / want - 1.0).abs() < 0.02,
                "{spec}: mean degree {mean}, expected {want}"
            );
        }
    }
}

#[test]
fn delaunay_is_a_connected_planar_triangulation_graph() {
    for spec in ["delaunay:20000", "delaunay:20000,order=shuffled,seed=3"] {
        let a = generate_f64(spec).unwrap();
        let n = a.nrows();
        assert_symmetric_loop_free_pattern(spec, &a);
        // Euler: 3N − 3 − h edges for h hull vertices (about (8/3)·ln N ≈ 26), each stored
        // twice.
        assert!(
            a.nnz() <= 6 * n - 12 && a.nnz() >= 6 * n - 6 - 2 * 200,
            "{spec}: {}",
            a.nnz()
        );
        assert!((0..n).all(|i| a.row_len(i) >= 2), "{spec}: degree below 2");
        let mut seen = vec![false; n];
        let mut stack = vec![0usize];
        seen[0] = true;
        while let Some(i) = stack.pop() {
            for &j in a.row(i).0 {
                if !std::mem::replace(&mut seen[j as usize], true) {
                    stack.push(j as usize);
                }
            }
        }
        assert!(seen.iter().all(|&s| s), "{spec}: not connected");
    }
}

#[test]
fn spatial_order_keeps_neighbours_close() {
    // In Z-order most entries lie near the diagonal; shuffled ids scatter them.
    let near = |a: &Csr<f64>| {
        let close = (0..a.nrows())
            .flat_map(|i| a.row(i).0.iter().map(move |&j| (j as i64 - i as i64).abs()))
            .filter(|&d| d < 1024)
            .count();
        close as f64 / a.nnz() as f64
    };
    for kind in ["rgg", "delaunay"] {
        let sp = generate_f64(&format!("{kind}:100000")).unwrap();
        let sh = generate_f64(&format!("{kind}:100000,order=shuffled")).unwrap();
        assert_eq!(sp.nnz(), sh.nnz(), "{kind}: the same graph");
        assert!(near(&sp) > 0.9, "{kind} spatial: {}", near(&sp));
        assert!(near(&sh) < 0.05, "{kind} shuffled: {}", near(&sh));
    }
}

#[test]
fn kron_symmetric_by_default_and_sums_duplicates() {
    let a = generate_f64("kron:10").unwrap();
    assert_eq!((a.nrows(), a.ncols()), (1024, 1024));
    assert!(is_symmetric(&a));
    let total: f64 = a.vals().iter().sum();
    let diag: f64 = (0..a.nrows())
        .map(|i| {
            let (c, v) = a.row(i);
            c.iter()
                .zip(v)
                .filter(|(&c, _)| c as usize == i)
                .map(|(_, v)| v)
                .sum::<f64>()
        })
        .sum();
    // Each of the 16·1024 edges is stored twice, a self-loop once.
    assert_eq!(total, 2.0 * 16384.0 - diag);
    assert!(a.nnz() < 2 * 16384, "duplicates merged");

    let d = generate_f64("kron:10,sym=0,loops=0").unwrap();
    assert!(!is_symmetric(&d));
    assert!((0..d.nrows()).all(|i| !d.row(i).0.contains(&(i as u32))));
    let r = generate_f64("kron:9,vals=rand").unwrap();
    assert!(is_symmetric(&r));
    assert!(r.vals().iter().all(|v| (0.0625..=1.0).contains(&v.abs())));
    // R-MAT skew: the heaviest row is far above the mean.
    let max = (0..a.nrows()).map(|i| a.row_len(i)).max().unwrap();
    assert!(max > 10 * a.nnz() / a.nrows());
}

#[test]
fn random_kinds_have_their_shapes() {
    let a = generate_f64("uniform:400,300,7").unwrap();
    assert_eq!((a.nrows(), a.ncols(), a.nnz()), (400, 300, 2800));
    assert!((0..400).all(|i| a.row_len(i) == 7));
    let a = generate_f64("uniform:20,20,20").unwrap();
    assert_eq!(a.nnz(), 400);
    let a = generate_f64("tall:1000,7,3").unwrap();
    assert_eq!((a.nrows(), a.ncols(), a.nnz()), (1000, 7, 3000));
    let a = generate_f64("wide:7,1000,300").unwrap();
    assert_eq!((a.nrows(), a.ncols(), a.nnz()), (7, 1000, 2100));

    let a = generate_f64("banded:1000,10").unwrap();
    for i in 0..1000 {
        let (c, _) = a.row(i);
        assert!(c.contains(&(i as u32)), "diagonal in row {i}");
        assert!(c.iter().all(|&j| (j as i64 - i as i64).abs() <= 10));
    }
    assert_eq!(a.row_len(500), 11); // round(0.5 · 21)
    let full = generate_f64("banded:100,2,fill=1").unwrap();
    assert_eq!(full.nnz(), 5 * 100 - 6);

    let a = generate_f64("powerlaw:20000,8").unwrap();
    let mean = a.nnz() as f64 / 20000.0;
    assert!((mean - 8.0).abs() < 0.5, "mean {mean}");
    let max = (0..a.nrows()).map(|i| a.row_len(i)).max().unwrap();
    assert!(max > 50 * 8, "heavy tail: max row {max}");

    let a = generate_f64("hugerow:1000,2").unwrap();
    assert_eq!(a.row_len(500), 1000);
    assert_eq!(a.nnz(), 999 * 2 + 1000);
    let a = generate_f64("hugerow:10,1,7,row=0,ncols=50").unwrap();
    assert_eq!((a.ncols(), a.row_len(0), a.nnz()), (50, 7, 16));

    let a = generate_f64("blockdiag:4,3").unwrap();
    assert_eq!((a.nrows(), a.nnz()), (12, 36));
    assert_eq!(a.row(5).0, &[3, 4, 5]);
    let a = generate_f64("dense:3,5").unwrap();
    assert_eq!(a.nnz(), 15);
    let a = generate_f64("identity:5").unwrap();
    assert_eq!(a, Csr::identity(5).unwrap());
    let a = generate_f64("diag:5").unwrap();
    assert_eq!(a.col_idx(), &[0, 1, 2, 3, 4]);
    let a = generate_f64("empty:4,9").unwrap();
    assert_eq!((a.nrows(), a.ncols(), a.nnz()), (4, 9, 0));
}

#[test]
fn values_are_bounded_and_f32_exact() {
    for spec in [
        "uniform:300,300,5",
        "powerlaw:2000,5",
        "dense:20,20",
        "banded:300,4",
    ] {
        let a = generate_f64(spec).unwrap();
        assert!(
            a.vals().iter().all(|v| (0.0625..=1.0).contains(&v.abs())),
            "{spec}"
        );
        let s = generate::<f32>(spec).unwrap();
        assert_eq!(
            s.cast::<f64>(),
            a,
            "{spec}: f32 and f64 hold the same numbers"
        );
    }
}

#[test]
fn every_kind_parses_and_builds_a_small_instance() {
    let small = [
        ("poisson2d", "poisson2d:20"),
        ("poisson3d", "poisson3d:8"),
        ("stencil27", "stencil27:6"),
        ("varcoef27", "varcoef27:6"),
        ("rgg", "rgg:2000"),
        ("delaunay", "delaunay:2000"),
        ("banded", "banded:1000,8"),
        ("uniform", "uniform:1000,10"),
        ("tall", "tall:1000,50,5"),
        ("wide", "wide:20,1000,50"),
        ("powerlaw", "powerlaw:2000,4"),
        ("kron", "kron:8"),
        ("blockdiag", "blockdiag:20,8"),
        ("hugerow", "hugerow:1000,3"),
        ("diag", "diag:100"),
        ("identity", "identity:100"),
        ("dense", "dense:10,20"),
        ("empty", "empty:10,20"),
    ];
    assert_eq!(kinds().len(), small.len());
    for k in kinds() {
        let g = parse_spec(k.example).unwrap_or_else(|e| panic!("{}: {e}", k.example));
        assert_eq!(g.kind, k.name);
        assert!(looks_like_spec(k.example));
        let (_, s) = small
            .iter()
            .find(|(n, _)| *n == k.name)
            .expect("small spec");
        let a = generate_f64(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(a.nrows() > 0, "{s}");
    }
}

#[test]
fn looks_like_spec_needs_a_known_kind() {
    assert!(looks_like_spec("poisson3d:64"));
    assert!(looks_like_spec("kron:18,48,seed=3"));
    assert!(!looks_like_spec("poisson3d"));
    assert!(!looks_like_spec("matrix.mtx"));
    assert!(!looks_like_spec("nosuchkind:4"));
    assert!(!looks_like_spec("C:\\data\\a.mtx"));
}

fn gen_spec_error(spec: &str) -> String {
    match generate_f64(spec) {
        Err(Error::GenSpec { spec: s, msg }) => {
            assert_eq!(s.trim(), spec.trim());
            msg
        }
        Err(e) => panic!("{spec}: expected a GenSpec error, got {e}"),
        Ok(_) => panic!("{spec}: expected a GenSpec error, got a matrix"),
    }
}

#[test]
fn bad_specs_are_genspec_errors() {
    let m = gen_spec_error("poisson3d");
    assert!(
        m.contains("poisson3d takes N (grid points per side), e.g. poisson3d:64"),
        "{m}"
    );
    let m = gen_spec_error("poisson3d:x");
    assert!(m.contains("'x' is not a non-negative integer"), "{m}");
    let m = gen_spec_error("nosuch:3");
    assert!(
        m.contains("unknown generator kind") && m.contains("poisson3d"),
        "{m}"
    );
    let m = gen_spec_error("uniform:10,2,3,4");
    assert!(m.contains("4 numbers given"), "{m}");
    let m = gen_spec_error("kron:10,seed=3,color=red");
    assert!(m.contains("no option 'color'"), "{m}");
    for spec in [
        "poisson2d:",
        "poisson2d:-3",
        "uniform:10,11",
        "tall:5,10,2",
        "wide:10,5,2",
        "powerlaw:10,20",
        "powerlaw:100,2,alpha=-1",
        "banded:100,3,fill=2",
        "kron:0",
        "kron:40",
        "kron:10,0",
        "kron:10,sym=maybe",
        "hugerow:10,3,20",
        "hugerow:10,3,row=10",
        "diag:3,seed=x",
        "diag:3,seed=1,seed=2",
        "poisson2d:4,,",
        "",
        "rgg:0",
        "rgg:",
        "rgg:100,200",
        "rgg:100,order=",
        "delaunay:0",
        "delaunay:10,order=spatial,order=shuffled",
        "varcoef27:0",
        "varcoef27:4,5",
    ] {
        gen_spec_error(spec);
    }
    for (spec, want) in [
        (
            "rgg:1000,order=zigzag",
            "order=zigzag: order must be spatial or shuffled",
        ),
        (
            "delaunay:1000,order=random",
            "order=random: order must be spatial or shuffled",
        ),
        (
            "rgg:0",
            "N must be at least 1; rgg takes N (number of points",
        ),
        ("delaunay:0", "N must be at least 1; delaunay takes N"),
        (
            "rgg:10,ord=spatial",
            "rgg has no option 'ord' (options: order, seed, renumber)",
        ),
        (
            "varcoef27:4,order=spatial",
            "varcoef27 has no option 'order' (options: seed, renumber)",
        ),
        ("delaunay:5,6", "2 numbers given; delaunay takes N"),
        (
            "varcoef27",
            "varcoef27 takes N (grid points per side), e.g. varcoef27:64",
        ),
    ] {
        let m = gen_spec_error(spec);
        assert!(m.contains(want), "{spec}: {m}");
    }
}

fn too_large(spec: &str) {
    match generate_f64(spec) {
        Err(Error::TooLarge { .. }) => {}
        Err(e) => panic!("{spec}: expected TooLarge, got {e}"),
        Ok(_) => panic!("{spec}: expected TooLarge, got a matrix"),
    }
}

/// kron's SCALE is refused above the largest the index limit allows, with that maximum.
#[test]
fn kron_scale_beyond_the_index_limit_names_the_maximum() {
    for (spec, max) in [
        ("kron:26", "1..=25"),
        ("kron:27", "1..=25"),
        ("kron:31", "1..=25"),
        ("kron:27,16,sym=0", "1..=26"),
        ("kron:26,16", "1..=25"),
        ("kron:0", "1..=25"),
    ] {
        match generate_f64(spec) {
            Err(e @ Error::GenSpec { .. }) => assert!(e.to_string().contains(max), "{spec}: {e}"),
            Err(e) => panic!("{spec}: expected a GEN-SPEC error, got {e}"),
            Ok(_) => panic!("{spec}: expected an error, got a matrix"),
        }
    }
    let e = generate_f64("kron:30,18446744073709551615").unwrap_err();
    assert!(
        e.to_string().contains("exceeds the 32-bit index limit"),
        "{e}"
    );
    assert_eq!(spmvkit::gen::kron_max_scale(16, true), 25);
    assert_eq!(spmvkit::gen::kron_max_scale(16, false), 26);
    assert_eq!(spmvkit::gen::kron_max_scale(1, false), 30);
}

#[test]
fn sizes_beyond_the_index_limit_are_too_large() {
    for spec in [
        "poisson2d:50000",
        "poisson3d:2000",
        "poisson3d:10000000000",
        "poisson3d:18446744073709551615",
        "poisson2d:18446744073709551615",
        "blockdiag:18446744073709551615,18446744073709551615",
        "hugerow:100,18446744073709551615,ncols=18446744073709551615",
        "stencil27:1000",
        "uniform:1000000000,100",
        "uniform:3000000000,10,1",
        "uniform:10,3000000000,1",
        "powerlaw:1000000000,10",
        "blockdiag:1000000,1000",
        "dense:100000,100000",
        "diag:3000000000",
        "empty:3000000000,1",
        "hugerow:3000000000,1",
        "banded:2000000000,10",
        "varcoef27:1000",
        "rgg:2^27",
        "rgg:3000000000",
        "delaunay:400000000",
        "delaunay:3000000000",
    ] {
        too_large(spec);
    }
}

#[test]
fn corpus_is_deterministic_small_and_valid() {
    let t = std::time::Instant::now();
    let c = corpus::edge_cases();
    let secs = t.elapsed().as_secs_f64();
    assert!(c.len() >= 20);
    let mut names = std::collections::HashSet::new();
    for (name, a) in &c {
        assert!(names.insert(name.clone()), "duplicate name {name}");
        assert!(a.nnz() <= 200_000, "{name}: {} nnz", a.nnz());
        assert_revalidates(name, a);
    }
    let has = |f: &dyn Fn(&Csr<f64>) -> bool| c.iter().any(|(_, a)| f(a));
    assert!(has(&|a| a.nrows() == 0));
    assert!(has(&|a| a.nrows() == 1 && a.nnz() == 0));
    assert!(has(&|a| a.nnz() == 0 && a.nrows() == 5));
    assert!(has(&|a| (0..a.nrows()).any(|i| a.row_len(i) > 65536)));
    assert!(has(&|a| (0..a.nrows()).any(|i| a.row_len(i) == 33)));
    assert!(has(&|a| a.vals().contains(&0.0)));
    assert!(has(&|a| {
        let t = a.transpose();
        (0..t.nrows()).any(|j| t.row_len(j) * 2 > a.nnz() && a.nrows() > 1000)
    }));
    assert_eq!(c, corpus::edge_cases(), "deterministic");
    eprintln!("corpus: {} matrices in {secs:.2} s", c.len());
}
