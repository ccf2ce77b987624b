//! The CPU path: the serial f64-accumulating oracle every method is checked against, the
//! tolerance rule, and the rayon CSR SpMV that is spmvkit's CPU production path.

pub mod exact;
pub(crate) mod oracle;
mod parallel;

pub use exact::{check_exact, failing_rows_exact, ExactProblem};
pub use oracle::{
    check, check_sampled, failing_rows, oracle_spmv, oracle_spmv_par, oracle_spmv_rows,
    sample_rows, tolerance_factor, Check, Reference, SQRT_FACTOR,
};
pub use parallel::{balanced_row_splits, par_csr_spmv};
