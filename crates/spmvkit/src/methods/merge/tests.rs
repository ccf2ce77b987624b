use super::*;
use crate::matrix::Csr;
use crate::methods::testmats::{check_layout, params, suite, suite_case};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: Merge,
    kernel: KERNEL,
    oracle: [
        [],
        ["threads=32", "items=1"],
        ["threads=32", "items=3"],
        ["threads=64", "items=6"],
        ["threads=96", "items=5"],
        ["threads=128", "items=7"],
        ["threads=256", "items=2"],
        ["threads=1024", "items=1"],
    ],
    corpus: [[]],
    // 32 x 2: many tiles, long carry runs through the huge row (the fix-up's warp path)
    gpu: [[], ["threads=32", "items=2"]],
    repeatable: [],
    rejects: [
        ["items=0"],
        ["items=65"],
        ["threads=48"],
        ["threads=x"],
        ["threads=1024", "items=8"],
    ],
}

fn layout<T: Scalar>(a: &Csr<T>, p: &Params) -> MergeLayout<T> {
    let threads = p
        .iter()
        .find(|(k, _)| *k == "threads")
        .map_or(64, |(_, v)| v.parse().unwrap());
    let items = p
        .iter()
        .find(|(k, _)| *k == "items")
        .map_or(6, |(_, v)| v.parse().unwrap());
    MergeLayout::build(a, threads, items)
}

#[test]
fn path_coordinates_of_a_small_matrix() {
    // rows of length 2, 0, 3: path R0: n0 n1 e0 e1 n2 n3 n4 e2 (row ends first on ties)
    let rp = [0, 2, 2, 5];
    let want = [
        (0, 0),
        (0, 1),
        (0, 2),
        (1, 2),
        (2, 2),
        (2, 3),
        (2, 4),
        (2, 5),
        (3, 5),
    ];
    for (d, &w) in want.iter().enumerate() {
        assert_eq!(path_coordinate(&rp, d as u64), w, "diagonal {d}");
    }
}

#[test]
fn tiles_cover_the_path_and_runs_are_consistent() {
    for (name, a) in suite() {
        for (t, i) in [(32, 1), (64, 6)] {
            let l = layout(
                &a,
                &params(&[&format!("threads={t}"), &format!("items={i}")]),
            );
            let total = a.nrows() + a.nnz();
            assert_eq!(l.ntiles(), total.div_ceil(t * i), "{name}");
            assert_eq!(l.tile_row[l.ntiles()] as usize, a.nrows(), "{name}");
            assert_eq!(l.tile_nz[l.ntiles()] as usize, a.nnz(), "{name}");
            for w in 0..l.ntiles() {
                let len = (l.tile_row[w + 1] - l.tile_row[w]) + (l.tile_nz[w + 1] - l.tile_nz[w]);
                assert!(len as usize <= t * i && len > 0, "{name}: tile {w}");
            }
            for r in 0..l.nruns() {
                let (row, f, e) = (l.run_row[r], l.run_first[r], l.run_end[r]);
                assert!(f < e && (row as usize) < a.nrows(), "{name}: run {r}");
                // every tile of the run is left open in `row`, and `row` closes in tile e
                for tile in f..e {
                    assert_eq!(l.tile_row[tile as usize + 1], row, "{name}: run {r}");
                }
                assert!(l.tile_row[e as usize + 1] > row, "{name}: run {r}");
                assert_eq!(
                    (e - f) as usize <= SHORT_RUN,
                    r < l.nshort,
                    "{name}: run {r}"
                );
            }
        }
    }
}

#[test]
fn a_huge_row_makes_a_long_run() {
    let a = suite_case("huge row");
    assert!(a.row_len(17) > 1 << 16);
    let l = layout(&a, &params(&["threads=32", "items=2"]));
    assert!(l.nruns() > l.nshort, "expected a long carry run");
    check_layout("merge 32x2 huge row", &a, &l);
    check_layout(
        "merge 32x2 huge row f32",
        &a.cast::<f32>(),
        &layout(&a.cast::<f32>(), &params(&["threads=32", "items=2"])),
    );
}

#[test]
fn defaults_follow_the_cub_policy() {
    let a = Csr::<f64>::identity(10).unwrap();
    let notes = Merge.prepare(&a, &Params::new()).unwrap().notes();
    assert_eq!(notes[0].1, "64 x 6");
    let notes = Merge
        .prepare(&a.cast::<f32>(), &Params::new())
        .unwrap()
        .notes();
    assert_eq!(notes[0].1, "128 x 7");
}
