use super::*;
use crate::methods::testmats::{check_layout, suite, suite_case};

crate::methods::testmats::room_tests! {
    method: Csr5,
    kernel: KERNEL,
    oracle: [
        [],
        ["sigma=1"],
        ["sigma=2"],
        ["sigma=3"],
        ["sigma=4"],
        ["sigma=7"],
        ["sigma=16"],
        ["sigma=31"],
        ["sigma=32"],
    ],
    // bitwise (deterministic room); sigma 1 and 32 cover one and two descriptor words
    gpu: [[], ["sigma=1"], ["sigma=32", "verify=1"], ["prep=host"]],
    repeatable: [],
    rejects: [
        ["sigma=0"],
        ["sigma=33"],
        ["sigma=x"],
        ["omega=3"],
        ["prep=cpu"],
        ["verify=2"],
    ],
}

#[test]
fn matches_oracle_on_the_edge_corpus() {
    for (name, a) in crate::gen::corpus::edge_cases() {
        for s in ["auto", "1", "4", "32"] {
            let l = Csr5Layout::build(
                &a,
                if s == "auto" {
                    auto_sigma(a.nnz(), a.nrows())
                } else {
                    s.parse().unwrap()
                },
            );
            check_layout(&format!("csr5 sigma={s} on {name}"), &a, &l);
            let a32 = a.cast::<f32>();
            let l = Csr5Layout::build(&a32, l.sigma);
            check_layout(&format!("csr5 sigma={s} on {name}"), &a32, &l);
        }
    }
}

#[test]
fn prep_host_matches_the_lazy_build() {
    for (_, a) in suite() {
        for s in [1, 4, 32] {
            let g = Csr5Layout::build_with(&a, s, Prep::Gpu, false);
            let h = Csr5Layout::build_with(&a, s, Prep::Host, true);
            assert_eq!(g.tiles().tile_desc, h.tiles().tile_desc);
            assert_eq!(
                g.tiles().empty_offset.len(),
                *g.empty_ptr.last().unwrap() as usize
            );
        }
    }
}

/// The bookkeeping's segment counts agree with the flags of the tiles.
#[test]
fn empty_ptr_counts_the_segments_of_flagged_tiles() {
    for (name, a) in suite().into_iter().chain(
        crate::gen::corpus::edge_cases()
            .into_iter()
            .map(|(n, a)| (Box::leak(n.into_boxed_str()) as &str, a)),
    ) {
        for s in [1, 2, 4, 7, 32] {
            let l = Csr5Layout::build(&a, s);
            for t in 0..l.ntiles {
                let segs: u32 = (0..OMEGA).map(|i| l.desc(t, i).2.count_ones()).sum();
                let flagged = l.tile_ptr[t] & EMPTY_FLAG != 0;
                let want = if flagged { segs } else { 0 };
                assert_eq!(
                    l.empty_ptr[t + 1] - l.empty_ptr[t],
                    want,
                    "{name} sigma {s} tile {t}"
                );
            }
        }
    }
}

#[test]
fn sigma_rule() {
    assert_eq!(auto_sigma(0, 0), 4);
    assert_eq!(auto_sigma(400, 100), 4);
    assert_eq!(auto_sigma(1700, 100), 17);
    assert_eq!(auto_sigma(3200, 100), 32);
    assert_eq!(auto_sigma(10000, 100), 32);
    assert_eq!(auto_sigma(300_000, 1000), 6);
}

/// A worked example in the spirit of the paper's Fig. 4, scaled to ω = 32 lanes of σ = 2: rows
/// of lengths 3, 0, 50 (tile 0, spanning the empty row 1, so flagged), 90 (begins in tile 0 at
/// entry 53, runs through tile 1 and into the tail: two carries), 1, 2.
#[test]
fn worked_example_layout() {
    let lens = [3usize, 0, 50, 90, 1, 2];
    let mut rp = vec![0u32];
    for l in lens {
        rp.push(rp.last().unwrap() + l as u32);
    }
    let nnz = *rp.last().unwrap() as usize; // 146 = 2 tiles of 64 + a tail of 18
    let cols: Vec<u32> = (0..6).flat_map(|r| 0..lens[r] as u32).collect();
    let vals: Vec<f64> = (0..nnz).map(|k| 1.0 + k as f64).collect();
    let a = Csr::new(6, 100, rp, cols, vals).unwrap();
    let l = Csr5Layout::build(&a, 2);
    assert_eq!(l.ntiles, 2);
    // tile 0 spans rows 0..=3 with row 1 empty: flagged; tile 1 starts inside row 3; tail row 3
    assert_eq!(l.tile_ptr, vec![EMPTY_FLAG, 3, 3]);
    assert_eq!(l.empty_ptr, vec![0, 3, 3]);
    assert_eq!(l.tiles().empty_offset, vec![0, 2, 3]);
    // transposed: entry j of lane i at j·32 + i
    assert_eq!(l.tiles().vals[0], 1.0);
    assert_eq!(l.tiles().vals[32], 2.0);
    assert_eq!(l.tiles().vals[1], 3.0);
    // lane 0: entries 0,1 (row 0 starts at 0): flags 0b01, y_offset 0, seg 0
    assert_eq!(l.desc(0, 0), (0, 0, 0b01));
    // lane 1: entries 2 (row 0), 3 (row 2 starts): flags 0b10, y_offset 1
    assert_eq!(l.desc(0, 1), (1, 0, 0b10));
    // lane 2: entries 4,5 (row 2): no flag; the next flag is in lane 26 (entry 53, row 3)
    assert_eq!(l.desc(0, 2), (2, 24, 0));
    assert_eq!(l.desc(0, 26), (2, 0, 0b10));
    assert_eq!(l.desc(0, 31), (3, 0, 0));
    // tile 1: its forced first flag opens a segment continuing row 3 (a carry)
    assert_eq!(l.desc(1, 0), (0, 0, 0b01));
    assert_eq!(l.ntail_rows(), 3);
    // carries: tile 1 and the tail continue row 3
    assert_eq!(
        (l.run_row.clone(), l.run_first.clone(), l.run_end.clone()),
        (vec![3], vec![1], vec![3])
    );
    assert_eq!(l.empty_rows, vec![1]);
    check_layout("csr5 worked example", &a, &l);
}

#[test]
fn huge_row_makes_a_long_carry_run() {
    let a = suite_case("huge row");
    let l = Csr5Layout::build(&a, 4);
    assert!(l.run_end.iter().zip(&l.run_first).any(|(e, f)| e - f > 100));
    check_layout("csr5 huge row", &a, &l);
}
