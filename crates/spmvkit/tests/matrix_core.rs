//! Sparse core: validation, conversions, duplicate summing, limits and statistics.

use proptest::prelude::*;
use spmvkit::{Coo, Csc, Csr, Error, MatrixStats};

#[test]
fn validation_rejects_broken_structures() {
    // pointer count
    assert!(matches!(
        Csr::<f64>::new(2, 2, vec![0, 1], vec![0], vec![1.0]),
        Err(Error::InvalidStructure { .. })
    ));
    // first pointer
    assert!(Csr::<f64>::new(1, 2, vec![1, 1], vec![0], vec![1.0]).is_err());
    // decreasing pointers
    let e = Csr::<f64>::new(2, 2, vec![0, 2, 1], vec![0], vec![1.0]).unwrap_err();
    assert!(e.to_string().contains("decrease"), "{e}");
    // out of range column
    let e = Csr::<f64>::new(1, 2, vec![0, 1], vec![2], vec![1.0]).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    // unsorted / duplicate columns
    assert!(Csr::<f64>::new(1, 3, vec![0, 2], vec![1, 0], vec![1.0, 2.0]).is_err());
    assert!(Csr::<f64>::new(1, 3, vec![0, 2], vec![1, 1], vec![1.0, 2.0]).is_err());
    // value count
    assert!(Csr::<f64>::new(1, 3, vec![0, 1], vec![1], vec![]).is_err());
    // CSC
    assert!(Csc::<f64>::new(3, 1, vec![0, 2], vec![2, 1], vec![1.0, 1.0]).is_err());
    // COO out of range
    assert!(Coo::<f64>::from_triplets(2, 2, vec![2], vec![0], vec![1.0]).is_err());
}

#[test]
fn sizes_beyond_32_bits_are_typed_errors() {
    let e = Coo::<f32>::new(1usize << 31, 1).unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "rows", .. }), "{e}");
    let e = Coo::<f32>::new(1, (1usize << 31) + 5).unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooLarge {
                what: "columns",
                ..
            }
        ),
        "{e}"
    );
    assert!(Coo::<f32>::new(i32::MAX as usize, i32::MAX as usize).is_ok());
    assert!(spmvkit::matrix::check_dims(1, 1, 1usize << 31).is_err());
}

#[test]
fn coo_to_csr_sums_duplicates_and_sorts() {
    let coo = Coo::from_triplets(
        3,
        3,
        vec![2, 0, 2, 0, 2],
        vec![1, 2, 1, 0, 0],
        vec![1.0, 2.0, 3.0, 4.0, 5.0],
    )
    .unwrap();
    let a = coo.to_csr();
    assert_eq!(a.row_ptr(), &[0, 2, 2, 4]);
    assert_eq!(a.col_idx(), &[0, 2, 0, 1]);
    assert_eq!(a.vals(), &[4.0, 2.0, 5.0, 4.0]);
}

#[test]
fn stats_of_a_small_matrix() {
    // [1 0 2 0]
    // [0 0 0 0]
    // [3 4 0 0]
    let a = Csr::<f64>::new(
        3,
        4,
        vec![0, 2, 2, 4],
        vec![0, 2, 0, 1],
        vec![1.0, 2.0, 3.0, 4.0],
    )
    .unwrap();
    let s = MatrixStats::of(&a);
    assert_eq!(
        (s.nrows, s.ncols, s.nnz, s.empty_rows, s.empty_cols),
        (3, 4, 4, 1, 1)
    );
    assert_eq!((s.row_len.min, s.row_len.max), (0, 2));
    assert!((s.row_len.mean - 4.0 / 3.0).abs() < 1e-12);
    assert_eq!(
        (s.lower_bandwidth, s.upper_bandwidth, s.bandwidth),
        (2, 2, 2)
    );
    let sd = ((2.0f64 * (2.0 - 4.0 / 3.0f64).powi(2) + (4.0f64 / 3.0).powi(2)) / 3.0).sqrt();
    assert!((s.row_variation - sd / (4.0 / 3.0)).abs() < 1e-12);
}

fn arb_coo() -> impl Strategy<Value = Coo<f64>> {
    (1usize..30, 1usize..30).prop_flat_map(|(m, n)| {
        proptest::collection::vec((0..m as u32, 0..n as u32, -10i32..10), 0..120).prop_map(
            move |t| {
                let (r, c, v): (Vec<u32>, Vec<u32>, Vec<f64>) =
                    t.into_iter()
                        .fold((vec![], vec![], vec![]), |mut acc, (r, c, v)| {
                            acc.0.push(r);
                            acc.1.push(c);
                            acc.2.push(v as f64);
                            acc
                        });
                Coo::from_triplets(m, n, r, c, v).unwrap()
            },
        )
    })
}

fn dense_of_coo(c: &Coo<f64>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; c.ncols()]; c.nrows()];
    for k in 0..c.nnz() {
        d[c.rows()[k] as usize][c.cols()[k] as usize] += c.vals()[k];
    }
    d
}

fn dense_of_csr(a: &Csr<f64>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        for (&c, &v) in cols.iter().zip(vals) {
            d[i][c as usize] += v;
        }
    }
    d
}

proptest! {
    #[test]
    fn conversions_round_trip(coo in arb_coo()) {
        let a = coo.to_csr();
        prop_assert_eq!(dense_of_csr(&a), dense_of_coo(&coo));
        // validated structure
        prop_assert!(Csr::new(a.nrows(), a.ncols(), a.row_ptr().to_vec(), a.col_idx().to_vec(), a.vals().to_vec()).is_ok());
        let csc = a.to_csc();
        prop_assert!(Csc::new(csc.nrows(), csc.ncols(), csc.col_ptr().to_vec(), csc.row_idx().to_vec(), csc.vals().to_vec()).is_ok());
        prop_assert_eq!(&csc.to_csr(), &a);
        prop_assert_eq!(&a.transpose().transpose(), &a);
        prop_assert_eq!(&a.to_coo().to_csr(), &a);
    }
}
