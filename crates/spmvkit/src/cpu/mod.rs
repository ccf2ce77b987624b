//! The CPU path: the serial f64-accumulating oracle every method is checked against, the
//! tolerance rule, and the rayon CSR SpMV that is spmvkit's CPU production path.

pub(crate) mod oracle;
mod parallel;

pub use oracle::{check, oracle_spmv, oracle_spmv_par, oracle_spmv_rows, Check, Reference};
pub use parallel::{balanced_row_splits, par_csr_spmv};
