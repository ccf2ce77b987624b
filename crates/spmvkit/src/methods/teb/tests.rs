use super::select::{heuristic_k, variance, Lengths, K_HIGH, K_LOW, K_MID};
use super::*;
use crate::matrix::Csr;
use crate::methods::testmats::{assert_repeatable, check_layout, matrix_a, params, suite};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: Teb,
    kernel: KERNEL,
    oracle: [
        [],
        ["bln=1"],
        ["bln=3", "k=1"],
        ["bln=50", "threads=32"],
        ["k=1.03", "bln_range=2..100"],
        ["bln_range=2..5000", "candidates=7"],
    ],
    corpus: [[], ["bln=7"]],
    gpu: [[]],
    repeatable: [],
    rejects: [
        ["k=0"],
        ["k=0.5"],
        ["k=inf"],
        ["k=x"],
        ["bln=0"],
        ["bln_range=5..2"],
        ["bln_range=0..3"],
        ["bln_range=3"],
        ["candidates=2"],
        ["threads=33"],
        ["nope=1"],
    ],
}

#[test]
fn fig15_arrays() {
    let a = matrix_a();
    let l = build(&a, &params(&["bln=4", "k=1"])).unwrap();
    assert_eq!(
        l.values(),
        &[5., 4., 2., 1., 2., 1., 8., 6., 6., 9., 2., 3., 6., 7., 5., 8.]
    );
    assert_eq!(
        l.col_idx(),
        &[0, 5, 6, 7, 2, 6, 7, 4, 3, 7, 6, 0, 0, 1, 4, 5]
    );
    assert_eq!(l.blo_idx(), &[0, 1, 3, 6, 8]);
    assert_eq!(l.row_nnz_sum(), &[0, 4, 7, 8, 10, 11, 12, 14, 16]);
    assert_eq!(l.row_ids(), &[7, 0, 6, 2, 4, 1, 3, 5]);
    let s = l.selection().unwrap();
    assert_eq!((s.bln, s.k, s.threshold), (4, 1.0, 4.0));
    assert_eq!(s.variance, 0.0);
    check_layout("teb fig15", &a, &l);
}

#[test]
fn block_sums_pass_matches_fig13() {
    let a = matrix_a();
    let lens: Vec<u64> = (0..8).map(|r| a.row_len(r) as u64).collect();
    let l = Lengths::new(&lens);
    let mut sums = Vec::new();
    l.block_sums(4, 4.0, &mut sums);
    assert_eq!(sums, vec![4, 4, 4, 4]);
    // Alg. 2: the last block takes what is left; blocks beyond the rows are empty.
    l.block_sums(2, 4.0, &mut sums);
    assert_eq!(sums, vec![4, 12]);
    l.block_sums(10, 1.6, &mut sums);
    assert_eq!(sums, vec![4, 3, 2, 2, 2, 1, 1, 1, 0, 0]);
    assert!((variance(&[5, 6, 5], 16, 3) - 2.0 / 9.0).abs() < 1e-12);
}

#[test]
fn rle_pass_equals_two_pointer_merge() {
    // The O(bLN + D) pass gives the nnz of the blocks the layout builder forms.
    for (name, a) in suite() {
        let lens: Vec<u64> = (0..a.nrows()).map(|r| a.row_len(r) as u64).collect();
        let lengths = Lengths::new(&lens);
        for bln in [1usize, 2, 3, 7, 40, 300] {
            for k in ["1", "1.01", "1.03", "1.5"] {
                let l = build(&a, &params(&[&format!("bln={bln}"), &format!("k={k}")])).unwrap();
                let mut sums = Vec::new();
                if lengths.rows() == 0 {
                    continue;
                }
                let t = select::threshold(lengths.nnz(), bln, k.parse().unwrap());
                lengths.block_sums(bln, t, &mut sums);
                let got: Vec<u64> = l.blo_idx()[..=l.merge_blocks]
                    .windows(2)
                    .map(|w| {
                        (l.row_nnz_sum()[w[1] as usize] - l.row_nnz_sum()[w[0] as usize]) as u64
                    })
                    .collect();
                let nonempty: Vec<u64> = sums.iter().copied().take(got.len()).collect();
                assert_eq!(got, nonempty, "{name} bln={bln} k={k}");
                assert!(sums[got.len()..].iter().all(|&s| s == 0), "{name}");
            }
        }
    }
}

#[test]
fn decision_tree() {
    assert_eq!(heuristic_k(10, None), K_HIGH);
    assert_eq!(heuristic_k(9, Some(10)), K_HIGH);
    assert_eq!(heuristic_k(10, Some(10)), K_MID);
    assert_eq!(heuristic_k(19, Some(10)), K_MID);
    assert_eq!(heuristic_k(20, Some(10)), K_LOW);
}

#[test]
fn critical_is_the_first_count_where_k101_wins() {
    for (_, a) in suite() {
        let lens: Vec<u64> = (0..a.nrows()).map(|r| a.row_len(r) as u64).collect();
        let l = Lengths::new(&lens);
        if l.rows() == 0 {
            continue;
        }
        let upto = 200;
        let c = l.critical(upto);
        let first = (2..=upto).find(|&i| l.variance_at(i, 1.0) > l.variance_at(i, 1.01));
        assert_eq!(c, first);
    }
}

#[test]
fn search_respects_eq10_and_finds_the_least_variance() {
    for (name, a) in suite() {
        let l = build(&a, &params(&["bln_range=2..500", "candidates=16"])).unwrap();
        let Some(s) = l.selection() else { continue };
        let lens: Vec<u64> = (0..a.nrows()).map(|r| a.row_len(r) as u64).collect();
        let len = Lengths::new(&lens);
        let top = s.window.1;
        // Eq. 10 holds at the top of the window only (or the window ends at 500 / the rows).
        for b in s.window.0..top {
            let t = select::threshold(
                len.nnz(),
                b,
                len.k_at(select::KChoice::Heuristic, b, s.critical),
            );
            assert!(
                len.max() as f64 <= 2.0 * t,
                "{name}: Eq. 10 holds before {top}"
            );
        }
        // The coarse-to-fine result is close to the exhaustive minimum.
        let ex = build(&a, &params(&["bln_range=2..500", "candidates=100000"])).unwrap();
        let e = ex.selection().unwrap();
        assert!(s.variance >= e.variance, "{name}");
        assert_eq!(e.window, s.window, "{name}");
    }
}

#[test]
fn prep_stages_are_named() {
    for (_, a) in suite() {
        let l = Teb.prepare(&a, &Params::new()).unwrap();
        let names: Vec<&str> = l.prep_stages().iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            [
                "sort rows",
                "threshold selection",
                "bLN search",
                "merge + layout"
            ]
        );
    }
}

// ---- teb-vector ----------------------------------------------------------------------------

/// `teb-vector`'s shared tests (the room's kernel is checked above).
mod vector {
    use super::*;

    crate::methods::testmats::room_tests! {
        method: TebVector,
        oracle: [
            [],
            ["long_row=1"],
            ["long_row=1", "threads=32"],
            ["long_row=16", "threads=64", "bln=3"],
            ["long_row=100", "bln=1"],
            ["long_row=300", "threads=1024", "bln=50"],
            ["k=1.03", "bln_range=2..100", "long_row=2"],
        ],
        corpus: [["long_row=4"]],
        gpu: [[], ["long_row=1", "threads=64"], ["long_row=16", "bln=3"]],
        rejects: [
            ["long_row=0"],
            ["long_row=x"],
            ["long_row=4294967295"],
            ["threads=48"],
        ],
    }
}

/// Matrices with hub rows: one huge row among short ones, a power law, a Kronecker graph.
fn hub_matrices() -> Vec<(&'static str, Csr<f64>)> {
    ["hugerow:3000,4", "powerlaw:20000,8", "kron:12,16"]
        .into_iter()
        .map(|s| (s, crate::gen::generate_f64(s).unwrap()))
        .collect()
}

/// Rows of `l` the vector kernel sums per CTA.
fn long_rows<T>(l: &TebLayout<T>) -> usize {
    let lr = l.long_row().expect("teb-vector layout");
    l.row_nnz_sum()
        .windows(2)
        .filter(|w| w[1] - w[0] >= lr)
        .count()
}

/// y of `l` with (α, β) = (1.25, −0.5), as bits.
fn mirror_bits<T: Scalar>(a: &Csr<T>, l: &dyn Layout<T>) -> Vec<u64> {
    let (x, mut y) = crate::methods::testmats::vectors::<T>(a.nrows(), a.ncols(), 5);
    l.run_cpu(T::from_f64(1.25), &x, T::from_f64(-0.5), &mut y)
        .unwrap();
    y.iter().map(|v| v.to_bits_u64()).collect()
}

#[test]
fn vector_on_hub_rows_matches_oracle() {
    for (name, a) in hub_matrices() {
        for p in [&[][..], &["long_row=32"], &["long_row=32", "threads=96"]] {
            let l = build_vector(&a, &params(p)).unwrap();
            assert!(long_rows(&l) > 0, "{name} {p:?}: no long row");
            check_layout(&format!("teb-vector {name} {p:?}"), &a, &l);
            let a32: Csr<f32> = a.cast();
            let l = build_vector(&a32, &params(p)).unwrap();
            check_layout(&format!("teb-vector {name} {p:?} f32"), &a32, &l);
            assert_repeatable(&a32, &l);
        }
    }
}

#[test]
fn vector_layout_is_the_teb_layout() {
    for (name, a) in hub_matrices() {
        let (t, v) = (
            build(&a, &Params::new()).unwrap(),
            build_vector(&a, &Params::new()).unwrap(),
        );
        assert_eq!(t.blo_idx(), v.blo_idx(), "{name}");
        assert_eq!(t.row_ids(), v.row_ids(), "{name}");
        assert_eq!(t.row_nnz_sum(), v.row_nnz_sum(), "{name}");
        assert_eq!(t.threads(), v.threads(), "{name}");
        assert_eq!((t.long_row(), v.long_row()), (None, Some(256)), "{name}");
    }
}

#[test]
fn vector_without_long_rows_equals_teb_bitwise() {
    let mut cases = suite();
    cases.extend(hub_matrices());
    for (name, a) in cases {
        let longest = (0..a.nrows()).map(|r| a.row_len(r)).max().unwrap_or(0);
        let lr = format!("long_row={}", longest + 1);
        for p in [&["bln=7"][..], &[]] {
            let t = Teb.prepare(&a, &params(p)).unwrap();
            let mut pv = p.to_vec();
            pv.push(&lr);
            let v = TebVector.prepare(&a, &params(&pv)).unwrap();
            assert_eq!(
                mirror_bits(&a, t.as_ref()),
                mirror_bits(&a, v.as_ref()),
                "{name} {pv:?}"
            );
            let a32: Csr<f32> = a.cast();
            let t = Teb.prepare(&a32, &params(p)).unwrap();
            let v = TebVector.prepare(&a32, &params(&pv)).unwrap();
            assert_eq!(
                mirror_bits(&a32, t.as_ref()),
                mirror_bits(&a32, v.as_ref()),
                "{name} {pv:?} f32"
            );
        }
    }
    // Default long_row = 256 on a matrix whose rows are all shorter: the same y as teb.
    let a = crate::gen::generate_f64("poisson3d:12").unwrap();
    let t = Teb.prepare(&a, &Params::new()).unwrap();
    let v = TebVector.prepare(&a, &Params::new()).unwrap();
    assert_eq!(mirror_bits(&a, t.as_ref()), mirror_bits(&a, v.as_ref()));
}

#[test]
fn vector_long_rows_take_the_cta_order() {
    // A long row's sum is the CTA's: per-thread strided partials, warp butterflies, then the
    // butterfly over the warp sums. With threads = 64 and a row of 128 entries, thread t adds
    // entries t and t + 64.
    let n = 128usize;
    let vals: Vec<f64> = (0..n).map(|j| 1.0 + (j as f64) * 1e-3).collect();
    let a = Csr::new(
        1,
        n,
        vec![0, n as u32],
        (0..n as u32).collect(),
        vals.clone(),
    )
    .unwrap();
    let x: Vec<f64> = (0..n).map(|j| 1.0 / (1.0 + j as f64)).collect();
    let l = build_vector(&a, &params(&["threads=64", "long_row=128"])).unwrap();
    let mut y = vec![f64::NAN];
    l.run_cpu(1.0, &x, 0.0, &mut y).unwrap();
    let mut lanes: Vec<f64> = (0..64)
        .map(|t| vals[t + 64].mul_add(x[t + 64], vals[t].mul_add(x[t], 0.0)))
        .collect();
    let want = crate::methods::common::warp::cta_sum(&mut lanes);
    assert_eq!(y[0].to_bits(), want.to_bits());
    // One entry short of long_row: the sequential sum instead.
    let l = build_vector(&a, &params(&["threads=64", "long_row=129"])).unwrap();
    l.run_cpu(1.0, &x, 0.0, &mut y).unwrap();
    let seq = (0..n).fold(0.0f64, |s, j| vals[j].mul_add(x[j], s));
    assert_eq!(y[0].to_bits(), seq.to_bits());
}

#[test]
fn long_row_is_teb_vectors_key() {
    let a = Csr::<f64>::identity(4).unwrap();
    assert!(Teb.prepare(&a, &params(&["long_row=8"])).is_err());
    assert!(TebVector
        .prepare(&a, &params(&["long_row=8", "k=1.01"]))
        .is_ok());
}
