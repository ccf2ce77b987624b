//! Dense blocks of k vectors (issue #24, SpMM: `methods/spmm/`, docs/spmm.md): the order of a
//! block ([`DenseOrder`]) and its shape with the one length check of every multi-vector call
//! ([`MultiShape::check`]), the multi-vector twin of [`super::check_vectors`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the k vectors of a block lie in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DenseOrder {
    /// A row's k values are contiguous: entry (j, c) at `j·k + c`.
    Row,
    /// Each vector is contiguous: entry (j, c) at `c·n + j` (n = the vector length).
    Col,
}

impl DenseOrder {
    /// Both orders, row-major first.
    pub const ALL: [DenseOrder; 2] = [DenseOrder::Row, DenseOrder::Col];

    /// `row` or `col`.
    pub fn name(self) -> &'static str {
        match self {
            DenseOrder::Row => "row",
            DenseOrder::Col => "col",
        }
    }

    /// Where entry (j, c) of a block of `n` rows and `k` vectors lies.
    #[inline]
    pub fn index(self, n: usize, k: usize, j: usize, c: usize) -> usize {
        match self {
            DenseOrder::Row => j * k + c,
            DenseOrder::Col => c * n + j,
        }
    }
}

impl std::fmt::Display for DenseOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DenseOrder {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "row" | "row-major" => Ok(DenseOrder::Row),
            "col" | "column" | "col-major" | "column-major" => Ok(DenseOrder::Col),
            other => Err(Error::InvalidArgument(format!(
                "layout '{other}': expected row (a row's k values contiguous) or col (each \
                 vector contiguous)"
            ))),
        }
    }
}

/// k vectors in one order: the shape of a block X (`ncols × k`) and Y (`nrows × k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MultiShape {
    /// The number of vectors, at least 1 (the kernels take it as a 32-bit int).
    pub k: usize,
    pub order: DenseOrder,
}

impl MultiShape {
    /// k vectors, row-major.
    pub fn row_major(k: usize) -> Self {
        MultiShape {
            k,
            order: DenseOrder::Row,
        }
    }

    /// k vectors, column-major.
    pub fn col_major(k: usize) -> Self {
        MultiShape {
            k,
            order: DenseOrder::Col,
        }
    }

    /// `n·k`, the entries of a block of `n` rows; [`Error::TooLarge`] when it overflows.
    pub fn len(&self, n: usize) -> Result<usize> {
        n.checked_mul(self.k).ok_or(Error::TooLarge {
            what: "block entries (rows × k)",
            value: u64::MAX,
        })
    }

    /// Checks k and the lengths of X and Y against a matrix of `dims` (nrows, ncols): k at
    /// least 1 and at most 2^31 − 1, X `ncols·k` and Y `nrows·k` entries, exactly (`exact`,
    /// host blocks) or at least (device blocks). Errors name the block, the shape and the order.
    pub fn check(
        &self,
        what: &str,
        (nrows, ncols): (usize, usize),
        x_len: usize,
        y_len: usize,
        exact: bool,
    ) -> Result<()> {
        if self.k == 0 {
            return Err(Error::InvalidArgument(format!(
                "{what}: k = 0; a block holds at least one vector"
            )));
        }
        if self.k > i32::MAX as usize {
            return Err(Error::TooLarge {
                what: "SpMM: k (vectors per block; the kernels take a 32-bit int)",
                value: self.k as u64,
            });
        }
        for (name, n, rows, got) in [("x", ncols, "ncols", x_len), ("y", nrows, "nrows", y_len)] {
            let expected = self.len(n)?;
            if got != expected && (exact || got < expected) {
                return Err(Error::DimensionMismatch {
                    what: format!(
                        "{what}: {name} block ({rows} × k = {n} × {}, {}-major){}",
                        self.k,
                        self.order,
                        if exact { "" } else { ", at least" }
                    ),
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }
}
