use super::*;
use crate::cpu::{check, oracle_spmv};
use crate::matrix::Coo;
use crate::matrix::Csr;
use crate::methods::testmats::{assert_repeatable, check_layout, vectors};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: FastLoad,
    kernel: KERNEL,
    oracle: [
        ["height=1"],
        ["height=2"],
        ["height=4"],
        ["height=8"],
        ["height=16"],
        ["height=32"],
        ["height=unlimited"],
        ["warp=16", "height=3"],
        ["warp=7", "permute_x=kernel"],
    ],
    corpus: [["height=1"], ["height=4"], ["height=unlimited"]],
    rejects: [
        ["height=0"],
        ["height=x"],
        ["warp=0"],
        ["warp=33"],
        ["permute_x=no"],
        ["fuse=3"],
        ["threads=48"],
        ["blocks_per_warp=0"],
        ["blocks_per_warp=x"],
        ["hub=1"],
        ["hub=x"],
        ["hub_slots=0"],
        ["hub_slots=5000"],
        ["fuse=three"],
        ["bogus=1"],
        ["phase=half"],
        ["phase=blocks", "fuse=one"],
    ],
}

/// `fastload-atomic`'s shared tests (the room's kernel is checked above).
mod atomic {
    use super::*;

    crate::methods::testmats::room_tests! {
        method: FastLoadAtomic,
        oracle: [[]],
        corpus: [[]],
    }
}

/// jgl009 (SuiteSparse HB, 9×9, 50 entries, pattern), 1-based (row, col) as in the .mtx file.
const JGL009: [(usize, usize); 50] = [
    (1, 1),
    (2, 1),
    (4, 1),
    (5, 1),
    (6, 1),
    (7, 1),
    (8, 1),
    (9, 1),
    (2, 2),
    (3, 2),
    (8, 2),
    (9, 2),
    (2, 3),
    (3, 3),
    (4, 3),
    (5, 3),
    (6, 3),
    (7, 3),
    (8, 3),
    (9, 3),
    (4, 4),
    (5, 4),
    (6, 4),
    (7, 4),
    (8, 4),
    (9, 4),
    (4, 5),
    (5, 5),
    (6, 5),
    (7, 5),
    (8, 5),
    (9, 5),
    (4, 6),
    (5, 6),
    (6, 6),
    (7, 6),
    (8, 6),
    (9, 6),
    (1, 7),
    (2, 7),
    (3, 7),
    (8, 7),
    (9, 7),
    (8, 8),
    (9, 8),
    (1, 9),
    (2, 9),
    (3, 9),
    (8, 9),
    (9, 9),
];

fn jgl009() -> Csr<f64> {
    let mut coo = Coo::new(9, 9).unwrap();
    for &(r, c) in &JGL009 {
        coo.push(r - 1, c - 1, 1.0).unwrap();
    }
    coo.to_csr()
}

fn layout(a: &Csr<f64>, params: &[&str]) -> FastLoadLayout<f64> {
    let o = FastLoadOptions::parse(NAME, &Params::parse(params.iter().copied()).unwrap()).unwrap();
    FastLoadLayout::build(a, o).unwrap()
}

fn block(l: &FastLoadLayout<f64>, b: usize) -> (u32, u32, u32, u32) {
    (
        l.blk_ptr()[b],
        l.blk_col_idx()[b],
        l.blk_height(b),
        l.blk_length(b),
    )
}

fn check_fig6(a: &Csr<f64>) {
    for h in ["2", "4", "8", "16", "32", "unlimited"] {
        let height = format!("height={h}");
        let l = layout(a, &["warp=4", &height]);
        // Fig. 6 / §IV-B: block 0 = (0, 0, 2, 4), block 5 = (34, 2, 1, 4).
        assert_eq!(block(&l, 0), (0, 0, 2, 4), "{height}");
        assert_eq!(block(&l, 5), (34, 2, 1, 4), "{height}");
        // The whole block table (layers of thickness 2, 2, 1, 1, 2).
        assert_eq!(l.blk_ptr(), &[0, 8, 16, 18, 26, 34, 38, 41, 45, 46, 50]);
        assert_eq!(l.blk_col_idx(), &[0, 4, 8, 1, 5, 2, 6, 4, 8, 7]);
        let hs: Vec<u32> = (0..l.nblocks()).map(|b| l.blk_height(b)).collect();
        let ls: Vec<u32> = (0..l.nblocks()).map(|b| l.blk_length(b)).collect();
        assert_eq!(hs, [2, 2, 2, 2, 2, 1, 1, 1, 1, 2]);
        assert_eq!(ls, [4, 4, 1, 4, 4, 4, 3, 4, 1, 2]);
        // Stable ascending sort: heights 2,4,5,5,6,6,6,8,8 (ties in column order).
        assert_eq!(l.perm(), &[7, 1, 6, 8, 3, 4, 5, 0, 2]);
        // Zigzag: block 0 holds depth 0 of sorted columns 0..4, then depth 1.
        assert_eq!(&l.row_idx()[..8], &[7, 1, 0, 0, 8, 2, 1, 1]);
    }
    // The paper's experiments (and the public code) use height 1: blocks are cut per round.
    let l = layout(a, &["warp=4", "height=1"]);
    assert_eq!(block(&l, 0), (0, 0, 1, 4));
    assert_eq!(block(&l, 1), (4, 0, 1, 4));
    assert_eq!(block(&l, 5), (17, 8, 1, 1));
    assert_eq!(l.nblocks(), 16);
    assert_eq!(&l.row_idx()[..8], &[7, 1, 0, 0, 8, 2, 1, 1]);
}

#[test]
fn fig6_jgl009_embedded() {
    check_fig6(&jgl009());
}

#[test]
fn fig6_jgl009_from_shared_matrices() {
    let Some(path) =
        crate::testing::matrix_or_skip("fig6_jgl009_from_shared_matrices", "HB/jgl009.mtx.gz")
    else {
        return;
    };
    let a: Csr<f64> = crate::io::load(&path).unwrap();
    let e = jgl009();
    assert_eq!(
        (a.row_ptr(), a.col_idx()),
        (e.row_ptr(), e.col_idx()),
        "embedded copy differs"
    );
    check_fig6(&a);
}

#[test]
fn fig6_layout_runs_correctly() {
    let a = jgl009();
    for p in [
        &["warp=4", "height=2"][..],
        &["warp=4", "height=1"],
        &["warp=3"],
        &[],
    ] {
        check_layout(&format!("jgl009 {p:?}"), &a, &layout(&a, p));
    }
}

/// Every element appears once; blocks tile [0, nnz) in order; every block respects the limit.
#[test]
fn layout_invariants() {
    for (name, a) in crate::methods::testmats::suite() {
        for h in [1u32, 2, 5, 32, u32::MAX] {
            let hp = if h == u32::MAX {
                "unlimited".to_string()
            } else {
                h.to_string()
            };
            let l = layout(&a, &[&format!("height={hp}")]);
            assert_eq!(l.blk_ptr().len(), l.nblocks() + 1, "{name}");
            assert_eq!(*l.blk_ptr().last().unwrap() as usize, a.nnz(), "{name}");
            let mut seen = vec![0u32; a.nnz()];
            let csc = a.to_csc();
            for b in 0..l.nblocks() {
                let len = l.blk_length(b);
                assert!((1..=32).contains(&len), "{name} block {b}");
                assert!(
                    l.blk_height(b) >= 1 && l.blk_height(b) <= h,
                    "{name} block {b}"
                );
                assert_eq!(
                    (l.blk_ptr()[b + 1] - l.blk_ptr()[b]) % len,
                    0,
                    "{name} block {b}"
                );
            }
            // (row, original col) multiset equals the matrix's: count by CSC position.
            for b in 0..l.nblocks() {
                let len = l.blk_length(b) as usize;
                let (p, e) = (l.blk_ptr()[b] as usize, l.blk_ptr()[b + 1] as usize);
                for k in p..e {
                    let c = l.perm()[l.blk_col_idx()[b] as usize + (k - p) % len] as usize;
                    let (rows, _) = csc.col(c);
                    let d = rows
                        .binary_search(&real_row(&l, a.nrows(), l.row_idx()[k]))
                        .expect("row in column");
                    seen[csc.col_ptr()[c] as usize + d] += 1;
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{name} height {hp}");
            // In storage order each sorted column's entries come depth by depth: exactly the
            // column's CSC rows, ascending, with their values.
            let mut got: Vec<Vec<(Idx, f64)>> = vec![Vec::new(); a.ncols()];
            for b in 0..l.nblocks() {
                let len = l.blk_length(b) as usize;
                let (p, e) = (l.blk_ptr()[b] as usize, l.blk_ptr()[b + 1] as usize);
                for k in p..e {
                    let j = l.blk_col_idx()[b] as usize + (k - p) % len;
                    got[j].push((real_row(&l, a.nrows(), l.row_idx()[k]), l.vals()[k]));
                }
            }
            for (j, g) in got.iter().enumerate() {
                let (rows, vals) = csc.col(l.perm()[j] as usize);
                let want: Vec<(Idx, f64)> =
                    rows.iter().copied().zip(vals.iter().copied()).collect();
                assert_eq!(g, &want, "{name} height {hp} sorted column {j}");
            }
            // Heights of sorted columns ascend (stable sort by nnz).
            let h: Vec<usize> = l.perm().iter().map(|&c| csc.col_len(c as usize)).collect();
            assert!(h.windows(2).all(|w| w[0] <= w[1]), "{name}");
        }
    }
}

/// The matrix row of a layout row (hub rows' virtual rows map back to the hub).
fn real_row(l: &FastLoadLayout<f64>, nrows: usize, r: Idx) -> Idx {
    let r = r as usize;
    if r < nrows {
        r as Idx
    } else {
        l.hub_rows()[(r - nrows) / l.options().hub_slots as usize]
    }
}

/// A row of ≥ `hub` nonzeros is split: its elements carry virtual rows nrows + i·slots +
/// (block mod slots), other rows keep theirs, and the result still matches the oracle.
#[test]
fn hub_rows_are_split_over_slots() {
    // Row 3 is full (300 columns), the others have 2 entries each.
    let (n, m) = (50usize, 300usize);
    let mut coo = Coo::new(n, m).unwrap();
    for c in 0..m {
        coo.push(3, c, 1.0 + c as f64 * 0.01).unwrap();
    }
    for r in (0..n).filter(|&r| r != 3) {
        coo.push(r, (r * 7) % m, 2.0).unwrap();
        coo.push(r, (r * 13 + 5) % m, -1.5).unwrap();
    }
    let a = coo.to_csr();
    let l = layout(&a, &["hub=100", "hub_slots=8"]);
    assert_eq!(l.hub_rows(), &[3]);
    let mut slots_seen = std::collections::BTreeSet::new();
    for b in 0..l.nblocks() {
        let (p, e) = (l.blk_ptr()[b] as usize, l.blk_ptr()[b + 1] as usize);
        for &r in &l.row_idx()[p..e] {
            if r as usize >= n {
                assert_eq!(r as usize - n, b % 8, "block {b}");
                slots_seen.insert(r as usize - n);
            } else {
                assert_ne!(r, 3);
            }
        }
    }
    assert!(slots_seen.len() > 1, "{slots_seen:?}");
    let off = layout(&a, &["hub=off"]);
    assert!(off.hub_rows().is_empty());
    assert!(off.row_idx().iter().all(|&r| (r as usize) < n));
    let x: Vec<f64> = (0..m).map(|j| 0.5 + (j % 11) as f64).collect();
    let y0 = vec![1.0; n];
    let want = oracle_spmv(&a, 1.5, &x, -0.5, &y0).unwrap();
    for l in [&l, &off] {
        let mut y = y0.clone();
        l.run_cpu(1.5, &x, -0.5, &mut y).unwrap();
        assert!(check(&want, &y).ok);
    }
}

/// permute_x=auto reads x through perm when x is small or the sort keeps columns in place, and
/// gathers x_sorted otherwise; fuse=auto takes the one-launch grid mode (on a stream) on small
/// matrices.
#[test]
fn auto_options_resolve_by_size_and_order() {
    let small = layout(&jgl009(), &[]);
    assert_eq!(small.options().permute_x, PermuteX::Kernel);
    assert_eq!(small.options().fuse, Fuse::StreamGrid);
    // 800k columns of random counts: x and perm take 9.6 MB and the sort scatters them.
    let a = crate::gen::generate_f64("uniform:800000,2").unwrap();
    let big = layout(&a, &[]);
    assert_eq!(big.options().permute_x, PermuteX::Gather);
    assert_eq!(big.options().fuse, Fuse::Two);
    // A 3D Poisson matrix: most columns keep their neighbour after the stable sort.
    let p = crate::gen::generate_f64("poisson3d:100").unwrap();
    let lp = layout(&p, &[]);
    assert_eq!(lp.options().permute_x, PermuteX::Kernel);
    assert_eq!(lp.options().fuse, Fuse::Two);
    let forced = layout(&p, &["permute_x=gather", "fuse=one"]);
    assert_eq!(forced.options().permute_x, PermuteX::Gather);
    assert_eq!(forced.options().fuse, Fuse::One);
    assert_eq!(layout(&p, &["phase=blocks"]).options().fuse, Fuse::Two);
}

#[test]
fn formats_follow_the_rows() {
    // Rows 0..40 dense over 64 columns: every column has the same 40 rows, so each round of a
    // block (one depth over 32 columns) is one row → format 1.
    let mut coo = Coo::new(40, 64).unwrap();
    for r in 0..40 {
        for c in 0..64 {
            coo.push(r, c, 1.0 + (r * 64 + c) as f64 / 1000.0).unwrap();
        }
    }
    let a = coo.to_csr();
    let l = layout(&a, &[]);
    assert!((0..l.nblocks()).all(|b| l.blk_format(b) == FMT_ONE_ROW));
    check_layout("dense", &a, &l);
    // Two columns patterns alternating: runs of equal rows inside a round → format 2.
    let mut coo = Coo::new(8, 64).unwrap();
    for c in 0..64 {
        coo.push((c / 4) % 8, c, 1.0).unwrap();
    }
    let a = coo.to_csr();
    let l = layout(&a, &[]);
    assert!((0..l.nblocks()).all(|b| l.blk_format(b) == FMT_SEGMENT));
    check_layout("runs", &a, &l);
    // Identity: no two lanes share a row → atomics.
    let a = Csr::<f64>::identity(100).unwrap();
    let l = layout(&a, &[]);
    assert!((0..l.nblocks()).all(|b| l.blk_format(b) == FMT_ATOMIC));
    // fastload-atomic: all format 0.
    let l = FastLoadAtomic.prepare(&jgl009(), &Params::new()).unwrap();
    let _ = l;
    let o = FastLoadOptions::parse(NAME_ATOMIC, &Params::new()).unwrap();
    let la = FastLoadLayout::build(&a, o).unwrap();
    assert!((0..la.nblocks()).all(|b| la.blk_format(b) == FMT_ATOMIC));
}

#[test]
fn the_prologue_phase_alone_is_accepted() {
    let a = jgl009();
    assert!(FastLoad
        .prepare(&a, &Params::parse(["phase=prologue"]).unwrap())
        .is_ok());
}

#[test]
fn footprint_and_info() {
    let a = jgl009();
    let l = layout(&a, &["warp=4", "height=2", "permute_x=gather"]);
    // perm 9, blk_ptr 11, blk_col 10, blk_info 10, rows 50, vals 50, x_sorted 9, counters 16.
    assert_eq!(
        l.footprint_bytes(),
        4 * (9 + 11 + 10 + 50) + 10 + 8 * 50 + 8 * 9 + 16
    );
    let l = layout(&a, &["warp=4", "height=2", "permute_x=kernel"]);
    assert_eq!(
        l.footprint_bytes(),
        4 * (9 + 11 + 10 + 50) + 10 + 8 * 50 + 16
    );
    assert!(!FastLoad.info().deterministic && !FastLoadAtomic.info().deterministic);
    assert!(l.notes().iter().any(|(k, _)| k.contains("CSR bytes")));
    assert_eq!(l.prep_stages().len(), 5);
    assert_repeatable(&a, &l);
}

/// GPU: variants (permute_x, fuse, heights, β ∈ {0, −0.5, 1}) against the oracle, each plan
/// applied twice (the second call checks that the fused kernel reset its counters), then timings
/// next to csc and cuSPARSE on shared matrices (SPMVKIT_MATRICES) and large generated ones.
/// Skipped without a GPU, a failure under `SPMVKIT_REQUIRE_GPU=1`.
#[test]
fn gpu_fastload_variants_and_prologue_cost() {
    let _gpu = crate::methods::testmats::gpu_test_lock();
    use crate::methods::{Backend, PlanOptions};
    if crate::testing::gpu_or_skip("gpu_fastload_variants_and_prologue_cost").is_none() {
        return;
    }
    let mut mats: Vec<(String, Csr<f64>)> = crate::methods::testmats::suite()
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    mats.push(("jgl009".into(), jgl009()));
    mats.push((
        "uniform:20000,12".into(),
        crate::gen::generate_f64("uniform:20000,12").unwrap(),
    ));
    let variants: &[&[&str]] = &[
        &[],
        &["permute_x=kernel"],
        &["fuse=one"],
        &["fuse=one", "permute_x=kernel"],
        &["height=4"],
        &["height=unlimited", "blocks_per_warp=1", "threads=64"],
        &["warp=16", "height=2"],
        &["hub=8", "hub_slots=4"],
        &["hub=8", "hub_slots=40", "fuse=one"],
        &["fuse=grid", "permute_x=gather", "blocks_per_warp=3"],
        &[
            "fuse=grid",
            "permute_x=kernel",
            "height=2",
            "blocks_per_warp=1",
            "hub=8",
        ],
        &["fuse=two", "permute_x=gather", "hub=off"],
        &["fuse=two", "permute_x=kernel", "blocks_per_warp=2"],
    ];
    let mut failures = Vec::new();
    for (mi, m) in [&FastLoad as &dyn crate::methods::Method, &FastLoadAtomic]
        .into_iter()
        .enumerate()
    {
        for v in variants {
            if mi == 1 && !v.is_empty() && !v.contains(&"hub=8") {
                continue;
            }
            let opts = PlanOptions {
                params: Params::parse(v.iter().copied()).unwrap(),
                backend: Some(Backend::Gpu),
                ..Default::default()
            };
            for (name, a) in &mats {
                for prec in 0..2 {
                    let r = if prec == 0 {
                        gpu_case::<f64>(m, a, &opts)
                    } else {
                        gpu_case::<f32>(m, &a.cast(), &opts)
                    };
                    if let Err(e) = r {
                        failures.push(format!(
                            "{} {v:?} {name} {}: {e}",
                            m.info().name,
                            ["f64", "f32"][prec]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Timings (f64, stream mode, median of 3×50 calls): our variants next to csc and cuSPARSE,
    // and the prologue's cost (β = 1 with permute_x=kernel has none; the public code left both the
    // x permutation and the zeroing of y outside its timing).
    let mut mats: Vec<(String, Csr<f64>)> = Vec::new();
    if let Ok(dir) = std::env::var("SPMVKIT_MATRICES") {
        for f in [
            "GHS_psdef/copter2",
            "HB/bcsstk33",
            "NYPA/Maragal_6",
            "Bai/af23560",
            "Cylshell/s1rmq4m1",
            "Gleich/wb-cs-stanford",
        ] {
            let path = std::path::Path::new(&dir).join(format!("{f}.mtx.gz"));
            match crate::io::load::<f64>(&path) {
                Ok(a) => mats.push((f.to_string(), a)),
                Err(e) => eprintln!("timing: {}: {e}", path.display()),
            }
        }
    }
    for spec in ["uniform:4000000,16", "poisson3d:160", "kron:20,48"] {
        mats.push((spec.to_string(), crate::gen::generate_f64(spec).unwrap()));
    }
    for (name, a) in &mats {
        time_configs(name, a, a.nnz() < 10_000_000);
    }
}

fn time_configs(name: &str, a: &Csr<f64>, all: bool) {
    use crate::gpu::{TimingConfig, TimingMode};
    use crate::methods::{Backend, Plan, PlanOptions};
    let cfg = TimingConfig {
        warmup: 5,
        calls: 50,
        samples: 3,
    };
    let configs: &[(&str, &[&str])] = &[
        ("fastload", &[]),
        ("fastload", &["permute_x=kernel"]),
        ("fastload", &["fuse=one"]),
        ("fastload", &["permute_x=kernel", "fuse=one"]),
        ("fastload", &["blocks_per_warp=1", "threads=64"]),
        ("fastload", &["blocks_per_warp=16"]),
        ("fastload", &["height=2"]),
        ("fastload", &["height=8"]),
        ("fastload", &["height=unlimited"]),
        ("fastload-atomic", &[]),
        ("csc", &[]),
        ("cusparse-alg1", &[]),
    ];
    let short = ["fastload", "fastload-atomic", "csc", "cusparse-alg1"];
    eprintln!("timing {name}: {}x{} nnz {}", a.nrows(), a.ncols(), a.nnz());
    for (m, p) in configs {
        if !all
            && !(short.contains(m)
                && (p.is_empty() || p == &["permute_x=kernel"] || p == &["height=unlimited"]))
        {
            continue;
        }
        let opts = PlanOptions {
            params: Params::parse(p.iter().copied()).unwrap(),
            backend: Some(Backend::Gpu),
            ..Default::default()
        };
        let mut plan = match Plan::<f64>::new(m, a, &opts) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("  {m} {p:?}: {e}");
                continue;
            }
        };
        let prep = plan.prep_times().prepare.as_secs_f64();
        let mut line = format!("  {m:<16} {:<40}", format!("{p:?}"));
        for beta in [0.0, 1.0] {
            match plan.time(TimingMode::Stream, &cfg, 1.0, beta) {
                Ok(t) => line += &format!(" β={beta}: {:8.1} µs", t.median_us),
                Err(e) => line += &format!(" β={beta}: {e}"),
            }
        }
        if let Ok(t) = plan.time(TimingMode::Graph, &cfg, 1.0, 0.0) {
            line += &format!(" graph β=0: {:8.1} µs", t.median_us);
        }
        line += &format!(" prep {prep:.3} s");
        eprintln!("{line}");
    }
}

fn gpu_case<T: crate::methods::PrepareFor>(
    m: &'static dyn crate::methods::Method,
    a: &Csr<T>,
    opts: &crate::methods::PlanOptions,
) -> Result<()> {
    let mut plan = crate::methods::Plan::<T>::with_method(m, a, opts)?;
    let (x, y0) = vectors::<T>(a.nrows(), a.ncols(), 5);
    for beta in [0.0, -0.5, 1.0] {
        let (alpha, beta) = (T::from_f64(1.5), T::from_f64(beta));
        for rep in 0..2 {
            let mut y = if beta == T::zero() {
                vec![T::from_f64(f64::NAN); a.nrows()]
            } else {
                y0.clone()
            };
            plan.apply(alpha, &x, beta, &mut y)?;
            let r = oracle_spmv(a, alpha, &x, beta, &y0)?;
            let c = check(&r, &y);
            if !c.ok {
                return Err(Error::InvalidArgument(format!(
                    "β={beta} call {rep}: row {} rel err {:.3e}",
                    c.worst_row, c.max_rel_err
                )));
            }
        }
    }
    Ok(())
}

#[test]
fn emulation_dump_writes_every_array() {
    let dir = tempfile::tempdir().unwrap();
    let a = jgl009();
    dump::write_case(dir.path(), "jgl009", &a, NAME, &Params::new()).unwrap();
    for b in 0..3 {
        let d = dir.path().join(format!("jgl009-b{b}"));
        let meta = std::fs::read_to_string(d.join("meta")).unwrap();
        assert!(meta.starts_with("f64 1 nrows 9 ncols 9 "), "{meta}");
        let len = |f: &str| std::fs::metadata(d.join(f)).unwrap().len();
        assert_eq!((len("vals"), len("row_idx")), (8 * 50, 4 * 50));
        assert_eq!((len("x"), len("y0"), len("want")), (8 * 9, 8 * 9, 8 * 9));
    }
    let bad = Params::parse(["height=0"]).unwrap();
    assert!(dump::write_case(dir.path(), "bad", &a, NAME, &bad).is_err());
}
