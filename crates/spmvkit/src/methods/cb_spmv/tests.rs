use super::*;
use crate::cpu::{check, oracle_spmv};
use crate::gen::corpus::edge_cases;
use crate::matrix::Coo;
use crate::matrix::Csr;
use crate::methods::testmats::{check_layout, check_method, params, suite, suite_case, vectors};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: CbSpmv,
    kernel: KERNEL,
    corpus: [
        [],
        ["gather=on", "balance=on"],
        ["prologue=fused", "accumulate=block"],
        ["accumulate=run", "bpw=4"],
    ],
    rejects: [
        ["coo_max=300"],
        ["dense_min=0"],
        ["dense_min=258"],
        ["coo_max=40", "dense_min=40"],
        ["gather=maybe"],
        ["balance=1"],
        ["format=no"],
        ["prologue=none"],
        ["prologue=fused"],
        ["gather_frac=2"],
        ["bogus=1"],
        ["bpw=0"],
        ["accumulate=run", "prologue=fused"],
        ["accumulate=rows"],
        ["bpw=65"],
        ["min_ctas=7"],
        ["epilogue=owner", "accumulate=block"],
        ["epilogue=owner", "aggregate=off"],
        ["epilogue=sometimes"],
    ],
}

fn layout<T: Scalar>(a: &Csr<T>, p: &[&str]) -> CbLayout<T> {
    CbLayout::build(a, config(&params(p)).unwrap()).unwrap()
}

/// Every ablation switch and the extreme thresholds.
const VARIANTS: &[&[&str]] = &[
    &[],
    &["gather=on"],
    &["gather=off", "balance=off"],
    &["balance=on"],
    &["format=off"],
    &["coo_max=0", "dense_min=257"],
    &["coo_max=1", "dense_min=2", "gather=on"],
    &["aggregate=off", "gather=on", "balance=on"],
    &["prologue=fused", "accumulate=block"],
    &[
        "prologue=fused",
        "accumulate=block",
        "aggregate=off",
        "format=off",
        "gather=on",
    ],
    &["bpw=3", "balance=on", "prologue=fused", "accumulate=block"],
    &["bpw=8", "balance=off", "gather=on"],
    &["bpw=2", "prologue=fused", "accumulate=block", "balance=off"],
    &["accumulate=block"],
    &["accumulate=block", "balance=on", "gather=on"],
    &["accumulate=run", "bpw=5", "gather=on"],
    &["accumulate=run", "bpw=8", "balance=on", "format=off"],
    &["prologue=kernel"],
    &["min_ctas=regs"],
    &["epilogue=atomic"],
    &["epilogue=atomic", "prologue=grid", "gather=on"],
    &["epilogue=owner", "bpw=1", "gather=on"],
    &["epilogue=owner", "bpw=3", "balance=on"],
    &["min_ctas=8", "gather=on"],
    &["min_ctas=8", "prologue=grid", "coo_max=20"],
    &["min_ctas=regs", "prologue=grid", "gather=on", "coo_max=64"],
    &[
        "prologue=kernel",
        "gather=on",
        "coo_max=100",
        "dense_min=101",
    ],
    &["prologue=grid", "bpw=1"],
    &[
        "prologue=grid",
        "accumulate=block",
        "balance=on",
        "gather=on",
    ],
];

fn from_triplets(m: usize, n: usize, t: &[(usize, usize, f64)]) -> Csr<f64> {
    let mut c = Coo::new(m, n).unwrap();
    for &(i, j, v) in t {
        c.push(i, j, v).unwrap();
    }
    c.to_csr()
}

/// (offset, nnz, block row, xcol) of every non-padding slot (xcol: the block's first x column,
/// bc·16, or its start in gcols when gathered).
fn slots<T: Scalar>(l: &CbLayout<T>) -> Vec<(usize, usize, u32, u32)> {
    (0..l.nslots())
        .filter_map(|s| {
            let (w0, w1) = (l.meta[2 * s], l.meta[2 * s + 1]);
            let br = (w1 >> 32) as u32;
            (br != DUMMY_ROW).then_some(((w0 >> 10) as usize, (w0 & 511) as usize, br, w1 as u32))
        })
        .collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn matches_oracle_on_suite_all_variants() {
    for v in VARIANTS {
        check_method(&CbSpmv, &params(v));
    }
}

#[test]
fn coo_block_region_exact_bytes() {
    // One 16x16 block, 3 nonzeros: indices (row<<4|col), padding to 8, then the values.
    let a = from_triplets(16, 16, &[(0, 4, 1.5), (3, 15, -2.0), (15, 0, 0.25)]);
    let l = layout(&a, &["balance=off", "gather=off"]);
    assert_eq!(slots(&l), vec![(0, 3, 0, 0)]);
    assert_eq!(&l.arena[..8], &[0x04, 0x3f, 0xf0, 0, 0, 0, 0, 0]);
    assert_eq!(f64s(&l.arena[8..]), vec![1.5, -2.0, 0.25]);
    assert_eq!(l.arena.len(), 32);
    // f32: 8 index bytes + 12 value bytes padded to 16
    let l32 = layout(&a.cast::<f32>(), &["balance=off", "gather=off"]);
    assert_eq!(l32.arena.len(), 24);
    assert_eq!(&l32.arena[8..12], &1.5f32.to_le_bytes());
    // the CTA holds the block and 7 padding slots
    assert_eq!(l.nslots(), 8);
    check_layout("coo block", &a, &l);
}

#[test]
fn csr_block_region_exact_bytes() {
    // 40 nonzeros in one block: rows 0..4 full (16 each would be 64: take 10 per row).
    let t: Vec<_> = (0..4)
        .flat_map(|r| (0..10).map(move |c| (r * 3, c + 6, (r * 10 + c) as f64 + 0.5)))
        .collect();
    let a = from_triplets(16, 20, &t);
    let l = layout(&a, &["balance=off", "gather=off"]);
    assert_eq!(slots(&l), vec![(0, 40, 0, 0)]);
    let rp: Vec<u8> = l.arena[..17].to_vec();
    assert_eq!(
        rp,
        vec![0, 10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40, 40, 40, 40, 40]
    );
    let cols: Vec<u8> = l.arena[17..57].to_vec();
    assert_eq!(cols[..10], [6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    assert_eq!(&l.arena[57..64], &[0u8; 7]); // padding 57 -> 64
    let vals = f64s(&l.arena[64..64 + 320]);
    assert_eq!(vals[0], 0.5);
    assert_eq!(vals[39], 39.5);
    assert_eq!(l.arena.len(), 64 + 320);
    check_layout("csr block", &a, &l);
}

#[test]
fn dense_block_region_and_full_precision() {
    // 250 of 256 entries: dense, 256 values row-major with zeros filled. Values that FP16
    // could not hold (1 + 2^-30, 1e-12) keep their full precision.
    let mut t = Vec::new();
    for r in 0..16 {
        for c in 0..16 {
            if (r * 16 + c) % 43 != 5 {
                t.push((r, c, 1.0 + (r * 16 + c) as f64 * 2f64.powi(-30)));
            }
        }
    }
    t[0].2 = 1e-12;
    let a = from_triplets(16, 16, &t);
    assert_eq!(a.nnz(), 250);
    let l = layout(&a, &["balance=off", "gather=off"]);
    assert_eq!(slots(&l), vec![(0, 250, 0, 0)]);
    assert_eq!(l.arena.len(), 256 * 8);
    let vals = f64s(&l.arena);
    assert_eq!(vals[0], 1e-12);
    assert_eq!(vals[5], 0.0);
    assert_eq!(vals[17], 1.0 + 17.0 * 2f64.powi(-30));
    let x: Vec<f64> = (0..16).map(|j| 1.0 + j as f64 * 1e-9).collect();
    let r = oracle_spmv(&a, 1.0, &x, 0.0, &[0.0; 16]).unwrap();
    let mut y = vec![0.0; 16];
    l.run_cpu(1.0, &x, 0.0, &mut y).unwrap();
    for (i, (&got, &want)) in y.iter().zip(&r.y).enumerate() {
        assert!((got - want).abs() <= 1e-13 * want.abs(), "row {i}");
    }
}

#[test]
fn padding_keeps_every_region_8_byte_aligned() {
    let a = suite_case("power law");
    for a in [a.clone()] {
        let l = layout(&a.cast::<f32>(), &["gather=off"]);
        for (off, nnz, _, _) in slots(&l) {
            assert_eq!(off % 8, 0);
            let f = l.cfg.format(nnz);
            let end = off + pad8(index_bytes(f, nnz)) + pad8(value_count(f, nnz) * 4);
            assert!(end <= l.arena.len());
        }
        assert_eq!(l.arena.len() % 8, 0);
    }
}

#[test]
fn formats_follow_the_thresholds() {
    assert_eq!(format_of(32, 32, 240), Format::Coo);
    assert_eq!(format_of(33, 32, 240), Format::Csr);
    assert_eq!(format_of(239, 32, 240), Format::Csr);
    assert_eq!(format_of(240, 32, 240), Format::Dense);
    // format=off: everything COO, even a full block
    let t: Vec<_> = (0..256)
        .map(|k| (k / 16, k % 16, k as f64 - 100.5))
        .collect();
    let a = from_triplets(16, 16, &t);
    let l = layout(&a, &["format=off"]);
    assert_eq!(l.format_counts, [1, 0, 0]);
    assert_eq!(l.arena.len(), 256 + 256 * 8);
    check_layout("format=off full block", &a, &l);
    // dense_min=257: a full block is CSR whose rp[16] = 256 wraps to 0 in u8
    let l = layout(&a, &["dense_min=257"]);
    assert_eq!(l.format_counts, [0, 1, 0]);
    assert_eq!(l.arena[16], 0);
    check_layout("csr 256", &a, &l);
}

#[test]
fn column_aggregation_mapping_and_dense_blocks_with_cb_above_zero() {
    // 16 rows x 32 columns spread 100 apart: full rows -> gathered, 2 compressed block columns,
    // each a dense block (the public code's gathered dense path dropped bc*16 for bc > 0).
    let mut t = Vec::new();
    for r in 0..16 {
        for j in 0..32 {
            t.push((r, j * 100 + 3, (r * 32 + j) as f64 * 0.01 - 2.0));
        }
    }
    let a = from_triplets(20, 3200, &t);
    let l = layout(&a, &["gather=on", "balance=off"]);
    assert!(l.gathered);
    assert_eq!(l.gcols, (0..32).map(|j| j * 100 + 3).collect::<Vec<u32>>());
    let s = slots(&l);
    // panel 0: blocks (bc 0, bc 1), both dense, reading gcols from 0 and 16; panel 1 (rows
    // 16..19, empty): a scaler, whose columns would start after panel 0's 32 (gptr[1])
    assert_eq!(
        s.iter().map(|b| (b.1, b.2, b.3)).collect::<Vec<_>>(),
        vec![(256, 0, 0), (256, 0, 16), (0, 1, 32)]
    );
    assert_eq!(l.format_counts, [0, 0, 2]);
    assert_eq!(l.panel_nb, vec![2, 1]);
    // x staging through the mapping: block (0, 1) reads columns 1603, 1703, ...
    let x: Vec<f64> = (0..3200).map(|j| j as f64).collect();
    let xs = cpu::stage_x(&l, 16, &x);
    assert_eq!(xs[0], 1603.0);
    assert_eq!(xs[15], 3103.0);
    check_layout("gathered dense cb>0", &a, &l);
    check_layout(
        "gathered dense cb>0 f32",
        &a.cast::<f32>(),
        &layout(&a.cast::<f32>(), &["gather=on"]),
    );
    // Not gathered: 32 COO blocks of 16 nonzeros.
    let l = layout(&a, &["gather=off"]);
    assert!(!l.gathered);
    assert_eq!(l.format_counts, [32, 0, 0]);
    check_layout("ungathered", &a, &l);
}

#[test]
fn gather_auto_follows_the_small_block_fraction() {
    // a scattered matrix: almost every block has 1 nonzero -> gather
    let a = suite_case("short rows");
    let l = layout(&a, &[]);
    assert!(l.gathered && l.small_frac > 0.15);
    // a full band: blocks are dense/CSR -> no gather
    let t: Vec<_> = (0..64)
        .flat_map(|r| (0..64).map(move |c| (r, c, 1.0 + (r + c) as f64)))
        .collect();
    let l = layout(&from_triplets(64, 64, &t), &[]);
    assert!(!l.gathered && l.small_frac == 0.0);
}

#[test]
fn lpt_balancing_assignment() {
    // 16 blocks: one of weight 100, fifteen of 1 -> 2 CTAs. CTA 0 takes the 100; CTA 1 is then
    // the lightest until its 8 slots fill; CTA 0 takes the other 7.
    let mut w = vec![1u64; 16];
    w[5] = 100;
    let (slots, loads) = lpt_assign(&w, 8);
    assert_eq!(loads, vec![107, 8]);
    assert_eq!(slots[0], Some(5));
    assert!(slots.iter().all(|s| s.is_some()));
    let mut seen: Vec<usize> = slots.iter().flatten().copied().collect();
    seen.sort();
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
    // a classic LPT case: 8 CTAs' worth of blocks; loads end within max weight of each other
    let w: Vec<u64> = (0..64).map(|i| (i * 37 % 101) as u64 + 1).collect();
    let (slots, loads) = lpt_assign(&w, 8);
    assert_eq!(slots.len(), 64);
    let (lo, hi) = (loads.iter().min().unwrap(), loads.iter().max().unwrap());
    assert!(hi - lo <= 101, "{loads:?}");
    // padding: 10 blocks -> 2 CTAs, 6 empty slots
    let (slots, _) = lpt_assign(&[3; 10], 8);
    assert_eq!(slots.iter().filter(|s| s.is_none()).count(), 6);
    // 16 slots per CTA (bpw = 2): one CTA
    let (slots, loads) = lpt_assign(&[3; 10], 16);
    assert_eq!((slots.len(), loads), (16, vec![30]));
}

#[test]
fn balancing_lowers_the_per_cta_std_dev_and_notes_report_it() {
    let a = suite_case("power law");
    assert!(a.nnz() >= 10_000);
    let l = layout(&a, &["accumulate=block"]);
    assert!(l.balanced);
    assert!(
        l.std_after < l.std_before,
        "{} {}",
        l.std_after,
        l.std_before
    );
    let notes = l.notes();
    assert!(notes
        .iter()
        .any(|(k, v)| k.contains("std-dev") && !v.contains("not balanced")));
    assert!(notes.iter().any(|(k, _)| k == "footprint relative to CSR"));
    check_layout("balanced power law", &a, &l);
    // small matrices are not balanced under auto
    let small = from_triplets(40, 40, &[(1, 1, 2.0), (39, 0, 1.0)]);
    assert!(!layout(&small, &["accumulate=block"]).balanced);
    // accumulate=run (the default) keeps a panel's blocks together: auto means no balancing
    assert!(!layout(&a, &[]).balanced);
    // the stages are all reported
    assert_eq!(l.prep_stages().len(), 4);
}

#[test]
fn footprint_counts_every_array() {
    let a = from_triplets(16, 16, &[(0, 4, 1.5), (3, 15, -2.0), (15, 0, 0.25)]);
    let l = layout(&a, &["gather=off"]);
    // arena 32 + meta 8 slots x 16 + one panel x 12 + its owner-epilogue entry (one run: owned)
    assert_eq!(l.footprint_bytes(), 32 + 128 + 12 + 4);
    assert!(!CbSpmv.info().deterministic);
}

#[test]
fn fused_prologue_first_block_scales_the_whole_panel() {
    // two blocks in panel 0 (rows 0..15), a row with no entries (row 7) must still be scaled.
    let a = from_triplets(16, 40, &[(0, 0, 1.0), (0, 30, 2.0), (15, 31, 3.0)]);
    let l = layout(
        &a,
        &[
            "gather=off",
            "balance=on",
            "prologue=fused",
            "accumulate=block",
        ],
    );
    assert_eq!(l.panel_nb, vec![2]);
    let x: Vec<f64> = (0..40).map(|j| j as f64).collect();
    let mut y: Vec<f64> = (0..16).map(|i| i as f64).collect();
    l.run_cpu(2.0, &x, -1.0, &mut y).unwrap();
    assert_eq!(y[0], 2.0 * 60.0);
    assert_eq!(y[7], -7.0);
    assert_eq!(y[15], 2.0 * 93.0 - 15.0);
}

/// Maragal_6 (21255 x 10152, rectangular; the public code gave a wrong result on it), from the
/// shared matrix collection (skipped without it, a failure under `SPMVKIT_REQUIRE_GPU=1`).
#[test]
fn maragal_6_matches_oracle() {
    let Some(path) =
        crate::testing::matrix_or_skip("maragal_6_matches_oracle", "NYPA/Maragal_6.mtx.gz")
    else {
        return;
    };
    let a: Csr<f64> = crate::io::load(&path).unwrap();
    assert_eq!((a.nrows(), a.ncols()), (21255, 10152));
    let l = CbSpmv.prepare(&a, &Params::new()).unwrap();
    check_layout("maragal_6", &a, l.as_ref());
}

// ---- GPU: the device kernel against the oracle (skips without a GPU unless
// SPMVKIT_REQUIRE_GPU=1), with repeated calls to exercise the fused prologue's self-reset.

/// The shared SuiteSparse matrices (`testing::matrices_or_skip`: SPMVKIT_MATRICES, else
/// shared/matrices beside the checkout), each with its pattern and fresh random values in
/// [-1, 1) (pattern files would otherwise be all 1.0, which hides precision loss), sorted by
/// name. Without them (no folder, or no `.mtx.gz` in it) `test` is skipped, or fails under
/// `SPMVKIT_REQUIRE_GPU=1`, and the set is empty; files that do not load (complex values) are
/// left out with a line on stderr.
fn shared_matrices(test: &str) -> Vec<(String, Csr<f64>)> {
    let Some(base) = crate::testing::matrices_or_skip(test) else {
        return Vec::new();
    };
    let files: Vec<std::path::PathBuf> = crate::bench::suites::matrix_paths(&base)
        .unwrap_or_else(|e| panic!("{test}: {e}"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".mtx.gz"))
        .collect();
    if files.is_empty() {
        let reason = format!("no .mtx.gz files under {}", base.display());
        crate::testing::require_or_skip(test, crate::testing::Need::Matrices, &reason);
    }
    let mut out = Vec::new();
    for p in files {
        let name = p
            .file_name()
            .map(|s| s.to_string_lossy().trim_end_matches(".mtx.gz").to_string())
            .unwrap_or_default();
        let a = match crate::io::load::<f64>(&p) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{test}: shared matrix left out: {e}");
                continue;
            }
        };
        let mut g = crate::methods::testmats::Lcg::new(a.nnz() as u64);
        let vals = (0..a.nnz())
            .map(|_| {
                let v = g.value();
                if v == 0.0 {
                    0.5
                } else {
                    v
                }
            })
            .collect();
        out.push((name, Csr::with_pattern(a.pattern().clone(), vals).unwrap()));
    }
    out
}

fn gpu_run<T: crate::methods::PrepareFor>(
    a64: &Csr<f64>,
    name: &str,
    p: &[&str],
    fails: &mut Vec<String>,
) {
    use crate::methods::{Backend, Plan, PlanOptions};
    let a: Csr<T> = a64.cast();
    let opts = PlanOptions {
        params: params(p),
        backend: Some(Backend::Gpu),
        ..Default::default()
    };
    let mut plan = match Plan::<T>::new(NAME, &a, &opts) {
        Ok(pl) => pl,
        Err(e) => {
            fails.push(format!("{name} {p:?}: plan: {e}"));
            return;
        }
    };
    let (x, y0) = vectors::<T>(a.nrows(), a.ncols(), 5);
    for (alpha, beta) in [(1.5, 0.0), (1.0, -0.5), (-0.75, 1.0)] {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let start: Vec<T> = if beta == T::zero() {
            vec![T::from_f64(f64::NAN); a.nrows()]
        } else {
            y0.clone()
        };
        let r = oracle_spmv(&a, alpha, &x, beta, &start).unwrap();
        // three calls in a row: the tickets and flags must reset themselves
        for call in 0..3 {
            let mut y = start.clone();
            if let Err(e) = plan.apply(alpha, &x, beta, &mut y) {
                fails.push(format!("{name} {p:?}: apply: {e}"));
                return;
            }
            let c = check(&r, &y);
            if !c.ok {
                fails.push(format!(
                    "{name} {p:?} {} α={alpha} β={beta} call {call}: row {} rel err {:.3e}",
                    T::PRECISION,
                    c.worst_row,
                    c.max_rel_err
                ));
                return;
            }
        }
    }
}

#[test]
fn gpu_cb_spmv_matches_oracle() {
    const TEST: &str = "gpu_cb_spmv_matches_oracle";
    let _gpu = crate::methods::testmats::gpu_test_lock();
    let Some(g) = crate::testing::gpu_or_skip(TEST) else {
        return;
    };
    eprintln!(
        "{TEST}: GPU {} ({}, {} SMs)",
        g.name(),
        g.arch(),
        g.sm_count()
    );
    let mut fails = Vec::new();
    let mut mats: Vec<(String, Csr<f64>)> = suite()
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    mats.extend(edge_cases());
    for s in [
        "poisson3d:40",
        "blockdiag:500,20",
        "powerlaw:50000,8",
        "banded:30000,24",
    ] {
        mats.push((s.into(), crate::gen::generate_f64(s).unwrap()));
    }
    let mut runs = 0;
    for v in VARIANTS {
        for (name, a) in &mats {
            gpu_run::<f64>(a, name, v, &mut fails);
            gpu_run::<f32>(a, name, v, &mut fails);
            runs += 2;
        }
    }
    let shared = shared_matrices(TEST);
    for (name, a) in &shared {
        for v in [
            &[][..],
            &["gather=on", "bpw=4", "prologue=fused", "accumulate=block"],
            &["accumulate=run"],
        ] {
            gpu_run::<f64>(a, name, v, &mut fails);
            gpu_run::<f32>(a, name, v, &mut fails);
            runs += 2;
        }
    }
    eprintln!(
        "gpu cb-spmv: {runs} plans ({} generated/edge, {} shared matrices), {} failures",
        mats.len(),
        shared.len(),
        fails.len()
    );
    for f in &fails {
        eprintln!("FAIL: {f}");
    }
    assert!(fails.is_empty(), "{} failures", fails.len());
}

#[test]
fn accumulate_run_uses_consecutive_slots_per_warp() {
    // banded 64x64: 4 panels of 4-5 blocks each, natural order (balance=auto is off under run);
    // with bpw = 4 warp w owns slots 4w..4w+4, i.e. the natural blocks 4w..4w+4.
    let t: Vec<_> = (0..64usize)
        .flat_map(|r| {
            (r.saturating_sub(20)..(r + 21).min(64))
                .map(move |c| (r, c, 0.5 + (r * 64 + c) as f64 * 1e-3))
        })
        .collect();
    let a = from_triplets(64, 64, &t);
    let l = layout(&a, &["accumulate=run", "bpw=4"]);
    assert!(l.cfg.run && !l.balanced && l.bpw == 4);
    let s = slots(&l);
    // natural order: block rows non-decreasing along the slot table
    assert!(s.windows(2).all(|w| w[0].2 <= w[1].2));
    check_layout("run banded", &a, &l);
    check_layout(
        "run banded f32",
        &a.cast::<f32>(),
        &layout(&a.cast::<f32>(), &["accumulate=run", "bpw=3"]),
    );
}

#[test]
fn owner_epilogue_counts_the_runs_of_split_panels() {
    // 40 rows x 48 columns, all dense: every panel has 3 blocks, 9 blocks in slots 0..8.
    let t: Vec<_> = (0..40usize)
        .flat_map(|r| (0..48usize).map(move |c| (r, c, 1.0 + (r * 48 + c) as f64 * 1e-3)))
        .collect();
    let a = from_triplets(40, 48, &t);
    // bpw = 3: warps hold slots 0..3, 3..6, 6..9, one panel each: every panel is owned.
    let l = layout(&a, &["bpw=3", "gather=off", "balance=off"]);
    assert!(l.owner() && l.cfg.run);
    assert_eq!(l.panel_nb, vec![3, 3, 3]);
    assert_eq!(l.split_of, vec![u32::MAX; 3]);
    assert!(l.nparts.is_empty());
    check_layout("owner bpw=3", &a, &l);
    // bpw = 2: warps hold (0,1) (2,3) (4,5) (6,7) (8): each panel falls into two runs.
    let l = layout(&a, &["bpw=2", "gather=off", "balance=off"]);
    assert_eq!(l.split_of, vec![0, 1, 2]);
    assert_eq!(l.nparts, vec![2, 2, 2]);
    check_layout("owner bpw=2", &a, &l);
    // one warp per block: every panel of several blocks is split into one run per block
    let l = layout(&a, &["bpw=1", "gather=off", "balance=off"]);
    assert_eq!(l.split_of, vec![0, 1, 2]);
    assert_eq!(l.nparts, vec![3, 3, 3]);
    check_layout("owner bpw=1", &a, &l);
    // the atomic epilogue keeps no workspace, nor does auto above 150k nonzeros
    let l = layout(&a, &["epilogue=atomic"]);
    assert!(!l.owner() && l.nparts.is_empty());
    let big = crate::gen::generate_f64("poisson2d:400").unwrap();
    assert!(!layout(&big, &[]).owner());
    assert!(layout(&big, &["epilogue=owner"]).owner());
}
