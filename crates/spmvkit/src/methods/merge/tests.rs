use super::*;
use crate::methods::testmats::{assert_repeatable, check_layout, check_method, suite};

fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap()
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
fn matches_oracle_default() {
    check_method(&Merge, &Params::new());
}

#[test]
fn matches_oracle_many_tile_shapes() {
    for (t, i) in [
        (32, 1),
        (32, 3),
        (64, 6),
        (96, 5),
        (128, 7),
        (256, 2),
        (1024, 1),
    ] {
        check_method(
            &Merge,
            &params(&[&format!("threads={t}"), &format!("items={i}")]),
        );
    }
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
    let (_, a) = suite().into_iter().find(|(n, _)| *n == "huge row").unwrap();
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
fn repeatable() {
    for (_, a) in suite() {
        let l = Merge.prepare(&a, &Params::new()).unwrap();
        assert_repeatable(&a, l.as_ref());
    }
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

#[test]
fn rejects_bad_params() {
    let a = Csr::<f64>::identity(4).unwrap();
    for bad in [
        &["items=0"][..],
        &["items=65"],
        &["threads=48"],
        &["threads=x"],
        &["threads=1024", "items=8"],
    ] {
        assert!(Merge.prepare(&a, &params(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn kernel_args_match_the_kernel() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
}

#[test]
fn matches_oracle_on_corpus() {
    crate::methods::testmats::check_method_on_corpus(&Merge, &Params::new());
}

#[test]
fn gpu_matches_the_mirror() {
    crate::methods::testmats::check_gpu_against_mirror(&Merge, &Params::new());
}

#[test]
fn gpu_matches_the_mirror_small_tiles() {
    // 32 x 2: many tiles, long carry runs through the huge row (the fix-up's warp path)
    crate::methods::testmats::check_gpu_against_mirror(&Merge, &params(&["threads=32", "items=2"]));
}
