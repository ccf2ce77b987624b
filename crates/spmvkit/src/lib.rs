//! spmvkit: sparse matrix–vector multiplication, y = αAx + βy, on NVIDIA GPUs.
//!
//! The methods of five recent papers (FastLoad, TEB, CB-SpMV, CSR-Overlap, HBP) and the baselines
//! they compare against, behind one interface ([`methods`]), one analysed-once [`Plan`], and one
//! benchmark harness. Everything runs on the CPU too: each method has a CPU mirror of its kernel,
//! and the serial f64 oracle ([`cpu::oracle_spmv`]) checks every result.
//!
//! ```
//! use spmvkit::{gen, Plan, PlanOptions};
//! let a = gen::generate_f64("poisson2d:16").unwrap();
//! let x = vec![1.0; a.ncols()];
//! let mut y = vec![0.0; a.nrows()];
//! let mut plan = Plan::new("csr", &a, &PlanOptions::default()).unwrap();
//! plan.apply(1.0, &x, 0.0, &mut y).unwrap();
//! let reference = spmvkit::cpu::oracle_spmv(&a, 1.0, &x, 0.0, &vec![0.0; a.nrows()]).unwrap();
//! assert!(spmvkit::cpu::check(&reference, &y).ok);
//! ```

pub mod bench;
pub mod cpu;
pub mod dist;
pub mod error;
pub mod gen;
pub mod gpu;
pub mod hash;
pub mod io;
pub mod matrix;
pub mod memory;
pub mod methods;
pub mod reorder;
pub mod scalar;
pub mod solve;
pub mod stats;
#[doc(hidden)]
pub mod testing;

pub use error::{Error, Result};
pub use matrix::{AnyCsr, Coo, Csc, Csr, MatrixStats, Pattern};
pub use methods::{Backend, Plan, PlanOptions, PrepareFor, ValueUpdate};
pub use scalar::{
    Idx, Offset, OffsetWidth, Offsets, Precision, PrecisionMode, Scalar, ValueStorage, MAX_INDEX,
    MAX_WIDE_NNZ,
};
