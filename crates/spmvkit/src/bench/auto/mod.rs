//! `auto`'s offline side (issue #11): [`table`] builds its training table from committed benchmark
//! runs (`spmv auto table`), and [`eval`] judges its choices against the best measured method
//! (`spmv auto eval`, the held-out evaluations, the tuning split). The method itself, and the
//! model that reads the table, live in [`crate::methods::auto`]; they import nothing from here.

pub mod eval;
pub mod table;
