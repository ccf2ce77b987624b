//! Generators (placeholder until the generator module lands).
use crate::error::{Error, Result};
use crate::matrix::Csr;
/// Generates the matrix named by a GEN-SPEC in f64.
pub fn generate_f64(spec: &str) -> Result<Csr<f64>> {
    Err(Error::GenSpec {
        spec: spec.into(),
        msg: "generators not built yet".into(),
    })
}
