use super::*;
use crate::matrix::Coo;
use crate::methods::testmats::{check_layout, check_method, params, suite, suite_case};
use crate::methods::GenericMethod;

crate::methods::testmats::room_tests! {
    method: Hbp,
    kernel: KERNEL,
    oracle: [
        [],
        ["combine=dense"],
        ["hash=fixed"],
        ["hash=none"],
        ["hash=sort", "combine=dense"],
        ["hash=fixed", "combine=dense"],
        ["hash=dp"],
        ["hash=dp", "combine=dense", "block_rows=50"],
        ["block_rows=17", "block_cols=33"],
        ["block_rows=5", "block_cols=64", "combine=dense"],
        ["block_rows=1", "block_cols=1"],
        ["block_rows=100", "block_cols=1000", "fixed=0", "grab=1"],
        ["fixed=1", "warps_per_cta=1"],
        ["compete=warp", "fixed=0.5"],
    ],
    corpus: [[]],
    // competitive part per warp and per CTA, all-competitive and all-fixed, small blocks (many
    // column segments per CTA), an x segment above 48 KiB in f64 (shared-memory opt-in)
    gpu: [
        [],
        ["compete=warp", "fixed=0.3", "grab=1"],
        ["fixed=0", "grab=3"],
        ["fixed=1", "warps_per_cta=1"],
        ["block_rows=17", "block_cols=33", "combine=dense", "compete=cta"],
        ["block_rows=64", "block_cols=8192", "hash=sort"],
        ["hash=none", "combine=dense", "warps_per_cta=32"],
    ],
    repeatable: [],
    rejects: [
        ["block_rows=0"],
        ["block_cols=70000"],
        ["block_cols=30000"], // 240 KB of f64 > 227 KiB
        ["hash=regu"],
        ["combine=x"],
        ["fixed=1.5"],
        ["warps_per_cta=33"],
        ["grab=0"],
        ["compete=block"],
        ["phase=both"],
        ["nope=1"],
    ],
}

/// `hbp-paper`'s shared tests (the room's kernel is checked above).
mod paper {
    use super::*;

    crate::methods::testmats::room_tests! {
        method: HbpPaper,
        oracle: [[]],
        corpus: [[]],
        gpu: [[]],
    }
}

fn cfg(
    block_rows: usize,
    block_cols: usize,
    warp: usize,
    hash: HashKind,
    combine: Combine,
) -> Config {
    Config {
        block_rows,
        block_cols,
        warp,
        hash,
        combine,
        fixed: 0.8,
        warps_per_cta: 8,
        grab: 10,
        compete_cta: true,
        phase: Phase::All,
    }
}

/// 6 × 9, two column blocks of 5 (the second has 4 columns); value of (r, c) = 10r + c + 1.
fn two_blocks() -> Csr<f64> {
    let rows: [&[usize]; 6] = [
        &[0, 1, 2, 6],
        &[],
        &[3, 5, 7, 8],
        &[4],
        &[0, 2, 4, 5, 6, 7, 8],
        &[1, 8],
    ];
    let mut coo = Coo::new(6, 9).unwrap();
    for (r, cs) in rows.iter().enumerate() {
        for &c in *cs {
            coo.push(r, c, (10 * r + c + 1) as f64).unwrap();
        }
    }
    coo.to_csr()
}

fn vals_of(rows: &[usize], cols: &[u32]) -> Vec<f64> {
    rows.iter()
        .zip(cols)
        .map(|(&r, &c)| (10 * r + c as usize + 1) as f64)
        .collect()
}

#[test]
fn worked_example_dense_tables_warp_4() {
    let a = two_blocks();
    let l = HbpLayout::build(&a, cfg(8, 5, 4, HashKind::Sort, Combine::Dense)).unwrap();
    assert_eq!((l.nbr, l.nbc), (1, 2));
    assert_eq!(l.blk_slot, [0, 6, 12]);
    assert_eq!(l.blk_group, [0, 2, 4]);
    // block 0 lengths [3,0,1,1,3,1] sorted: rows 1,2,3,5,0,4; block 1 [1,0,3,0,4,1]: 1,3,0,5,2,4
    assert_eq!(l.output_hash, [1, 2, 3, 5, 0, 4, 1, 3, 0, 5, 2, 4]);
    assert_eq!(l.zero_row, [-1, 1, 1, 1, 0, 0, -1, -1, 2, 2, 0, 0]);
    assert_eq!(l.begin_nnz, [0, 3, 9, 11, 18]);
    let col = [3, 4, 1, 0, 0, 1, 2, 2, 4, 6, 8, 5, 5, 7, 6, 8, 7, 8];
    assert_eq!(l.col, col);
    assert_eq!(
        l.add_sign,
        [-1, -1, -1, 2, 2, 2, 2, -1, -1, -1, -1, 2, 2, 2, 2, -1, 1, -1]
    );
    let rows = [2, 3, 5, 0, 4, 0, 4, 0, 4, 0, 5, 2, 4, 2, 4, 2, 4, 4];
    assert_eq!(l.data, vals_of(&rows, &col));
    assert!(l.out_pos.is_empty() && l.cptr.is_empty());
    assert_eq!(l.mid_len(), 12);
    // device words: local column << 16 | add_sign
    let p = l.packed();
    assert_eq!(p[3], 2);
    assert_eq!(p[9], (1 << 16) | 0xffff);
    check_layout("hbp worked example dense", &a, &l);
    check_layout(
        "hbp worked example dense f32",
        &a.cast::<f32>(),
        &HbpLayout::build(&a.cast::<f32>(), l.cfg).unwrap(),
    );
}

#[test]
fn worked_example_sparse_tables_warp_4() {
    let a = two_blocks();
    let l = HbpLayout::build(&a, cfg(8, 5, 4, HashKind::Sort, Combine::Sparse)).unwrap();
    assert_eq!(l.blk_slot, [0, 5, 9]);
    assert_eq!(l.blk_group, [0, 2, 3]);
    // non-empty rows: block 0 r0(3) r2(1) r3(1) r4(3) r5(1); block 1 r0(1) r2(3) r4(4) r5(1)
    assert_eq!(l.output_hash, [2, 3, 5, 0, 4, 0, 5, 2, 4]);
    // partial rows (row-major): r0:b0 0, r0:b1 1, r2:b0 2, r2:b1 3, r3:b0 4, r4:b0 5,
    // r4:b1 6, r5:b0 7, r5:b1 8
    assert_eq!(l.cptr, [0, 2, 2, 4, 5, 7, 9]);
    assert_eq!(l.out_pos, [2, 4, 7, 0, 5, 1, 8, 3, 6]);
    assert!(l.zero_row.is_empty());
    assert_eq!(l.begin_nnz, [0, 6, 9, 18]);
    let col = [3, 4, 1, 0, 1, 2, 0, 2, 4, 6, 8, 5, 5, 7, 6, 8, 7, 8];
    assert_eq!(l.col, col);
    assert_eq!(
        l.add_sign,
        [-1, -1, -1, 1, 1, -1, 1, 1, -1, -1, -1, 2, 2, 2, 2, -1, 1, -1]
    );
    let rows = [2, 3, 5, 0, 0, 0, 4, 4, 4, 0, 5, 2, 4, 2, 4, 2, 4, 4];
    assert_eq!(l.data, vals_of(&rows, &col));
    assert_eq!(l.mid_len(), 9);
    check_layout("hbp worked example sparse", &a, &l);
}

#[test]
fn worked_example_hashes() {
    // fixed hash: every count < 16 targets slot 0, so probing keeps the original order
    let a = two_blocks();
    let l = HbpLayout::build(&a, cfg(8, 5, 4, HashKind::Fixed, Combine::Dense)).unwrap();
    assert_eq!(l.output_hash, [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]);
    // sampled: counts 3,1,1,3,1,3,4,1,1 → 90 % quantile 3 → a = 0; d = 6 < 9 → b = 1, c = 0;
    // block 0 [3,0,1,1,3,1] targets ⌊k·6/9⌋ = 2,0,0,0,2,0 → slots 2,0,1,3,4,5 (probe +1, −1)
    let l = HbpLayout::build(&a, cfg(8, 5, 4, HashKind::Sampled, Combine::Dense)).unwrap();
    assert_eq!(l.agg_shift, 0);
    assert_eq!(&l.output_hash[..6], [1, 2, 0, 3, 4, 5]);
    check_layout("hbp worked example sampled", &a, &l);
}

/// Every slot's add_sign chain stays inside its group and the chains cover every nonzero once.
fn check_chains<T: Scalar>(what: &str, l: &HbpLayout<T>) {
    let w = l.cfg.warp;
    let mut seen = vec![false; l.col.len()];
    for b in 0..l.nblocks() {
        let (s0, s1) = (l.blk_slot[b] as usize, l.blk_slot[b + 1] as usize);
        for (g, gs) in (s0..s1).step_by(w).enumerate() {
            let gi = l.blk_group[b] as usize + g;
            let (e0, e1) = (l.begin_nnz[gi] as usize, l.begin_nnz[gi + 1] as usize);
            for s in gs..(gs + w).min(s1) {
                let lane = s - gs;
                let mut j = match l.cfg.combine {
                    Combine::Dense if l.zero_row[s] < 0 => continue,
                    Combine::Dense => e0 + lane - l.zero_row[s] as usize,
                    Combine::Sparse => e0 + lane,
                };
                let bn = b % l.nbc;
                let mut last = None;
                loop {
                    assert!(j >= e0 && j < e1, "{what}: chain leaves group {gi}");
                    assert!(!seen[j], "{what}: nonzero {j} twice");
                    seen[j] = true;
                    let c = l.col[j] as usize;
                    assert_eq!(c / l.cfg.block_cols, bn, "{what}: column outside block");
                    if let Some(p) = last {
                        assert!(p < c, "{what}: columns out of order");
                    }
                    last = Some(c);
                    if l.add_sign[j] < 0 {
                        break;
                    }
                    assert!(l.add_sign[j] as usize <= w, "{what}: add_sign > warp");
                    j += l.add_sign[j] as usize;
                }
            }
        }
    }
    assert!(seen.iter().all(|&s| s), "{what}: nonzeros not reached");
}

#[test]
fn chains_cover_every_nonzero() {
    for (name, a) in suite() {
        for hash in [
            HashKind::Sampled,
            HashKind::Fixed,
            HashKind::None,
            HashKind::Sort,
            HashKind::Dp,
        ] {
            for combine in [Combine::Dense, Combine::Sparse] {
                for (br, bc, w) in [(512, 4096, 32), (7, 13, 4), (64, 100, 32), (3, 1, 1)] {
                    if combine == Combine::Dense && a.nrows() * a.ncols().div_ceil(bc) > 300_000 {
                        continue;
                    }
                    let l = HbpLayout::build(&a, cfg(br, bc, w, hash, combine)).unwrap();
                    let what = format!("{name} {hash:?} {combine:?} {br}x{bc} w{w}");
                    check_chains(&what, &l);
                    if w != 32 {
                        check_layout(&what, &a, &l);
                    }
                }
            }
        }
    }
}

#[test]
fn plain_2d_matches_oracle() {
    check_method(&Plain2d, &Params::new());
}

#[test]
fn columns_not_a_multiple_of_the_block() {
    // 4097 and 8191 columns with the default 4096-column blocks, and 70 with 32-column blocks
    for (ncols, bc) in [(4097usize, "4096"), (8191, "4096"), (70, "32")] {
        let a = crate::methods::testmats::random_rows(300, ncols, 11, |g, _| g.below(40) as usize);
        for combine in ["dense", "sparse"] {
            let p = params(&[&format!("block_cols={bc}"), &format!("combine={combine}")]);
            let l = Hbp.prepare(&a, &p).unwrap();
            check_layout(&format!("hbp {ncols} cols {combine}"), &a, l.as_ref());
            let a32 = a.cast::<f32>();
            let l = Hbp.prepare(&a32, &p).unwrap();
            check_layout(&format!("hbp {ncols} cols {combine} f32"), &a32, l.as_ref());
        }
    }
}

#[test]
fn hashing_reduces_the_per_warp_spread() {
    // power-law rows: the hash (and sort) must cut the per-warp std-dev of Fig. 6
    let a = suite_case("power law");
    let spread = |hash| {
        HbpLayout::build(&a, cfg(512, 4096, 32, hash, Combine::Dense))
            .unwrap()
            .spread
    };
    let none = spread(HashKind::None);
    let sampled = spread(HashKind::Sampled);
    let quantile = spread(HashKind::Quantile);
    let sorted = spread(HashKind::Sort);
    assert!(
        quantile.std_after < 0.7 * quantile.std_before,
        "{quantile:?}"
    );
    assert!((none.std_before - none.std_after).abs() < 1e-9);
    assert!(sampled.std_after < 0.7 * sampled.std_before, "{sampled:?}");
    assert!(
        sorted.std_after <= sampled.std_after + 1e-9,
        "{sorted:?} {sampled:?}"
    );
    assert!(sampled.lanes_after < sampled.lanes_before);
}

#[test]
fn split_gives_every_warp_the_same_count() {
    let a = crate::methods::testmats::random_rows(5000, 9000, 3, |g, _| g.below(20) as usize);
    let l = HbpLayout::build(&a, cfg(64, 512, 32, HashKind::Sampled, Combine::Sparse)).unwrap();
    let nb = l.nblocks();
    assert_eq!(nb, 79 * 18);
    for ctas in [1, 7, 100, 2000] {
        let (per_cta, nfixed) = l.split(ctas);
        assert_eq!(per_cta % 8, 0);
        assert_eq!(nfixed, per_cta * ctas);
        assert!(nfixed as f64 <= 0.8 * nb as f64);
        assert!(nfixed + ctas * 8 > (0.8 * nb as f64) as usize || per_cta == 0);
    }
}

#[test]
fn notes_and_stages() {
    let a = suite_case("power law");
    let l = Hbp.prepare(&a, &Params::new()).unwrap();
    let notes = l.notes();
    assert!(notes.iter().any(|(k, _)| k.contains("Fig. 6")));
    assert!(notes[1].1.starts_with("quantile: a = "), "{notes:?}");
    let l = HbpPaper.prepare(&a, &Params::new()).unwrap();
    assert!(l.notes()[1].1.starts_with("sampled: a = "));
    let stages: Vec<_> = l.prep_stages().into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        stages,
        [
            "row segments (Alg. 2)",
            "sample a, c",
            "tables",
            "reorder",
            "layout",
            "Fig. 6 stats"
        ]
    );
}

#[test]
fn f32_fits_a_wider_x_segment() {
    let a = Csr::<f64>::identity(4).unwrap();
    assert!(Hbp
        .prepare(&a.cast::<f32>(), &params(&["block_cols=30000"]))
        .is_ok());
}

#[test]
fn plain_2d_is_hbp_without_reordering() {
    let a = suite_case("power law");
    let plain = build_layout("2d", &a, &Params::new()).unwrap();
    let none = build_layout("hbp", &a, &params(&["hash=none"])).unwrap();
    assert_eq!(plain.output_hash, none.output_hash);
    assert_eq!(plain.col, none.col);
    // in original order: every block's table lists its rows ascending
    for b in 0..plain.nblocks() {
        let t = &plain.output_hash[plain.blk_slot[b] as usize..plain.blk_slot[b + 1] as usize];
        assert!(t.windows(2).all(|w| w[0] < w[1]));
    }
    let s = plain.warp_stats();
    assert!((s.std_before - s.std_after).abs() < 1e-12);
    assert!(build_layout("csr", &a, &Params::new()).is_err());
    assert!(crate::methods::find("2d").is_ok());
}

#[test]
fn dp_orders_like_sort() {
    // DP2D cuts the sorted rows into the same warp groups as sort2D except for the short group,
    // so its per-warp spread is close to sort's (its padding is checked in hash.rs).
    let a = suite_case("power law");
    for (br, w) in [(512, 32), (50, 32), (37, 4)] {
        for combine in [Combine::Dense, Combine::Sparse] {
            let sort = HbpLayout::build(&a, cfg(br, 4096, w, HashKind::Sort, combine)).unwrap();
            let dp = HbpLayout::build(&a, cfg(br, 4096, w, HashKind::Dp, combine)).unwrap();
            let none = HbpLayout::build(&a, cfg(br, 4096, w, HashKind::None, combine)).unwrap();
            let (s, d, n) = (sort.warp_stats(), dp.warp_stats(), none.warp_stats());
            assert!(d.std_after < n.std_after, "{d:?} {n:?}");
            assert!(
                (d.std_after - s.std_after).abs() < 0.25 * s.std_after.max(0.1),
                "{br} {w} {combine:?}: {d:?} {s:?}"
            );
        }
    }
}
