//! Reads every matrix of the shared SuiteSparse folder listed in its INDEX.md and checks rows,
//! columns, stored entries and nnz against the table. INDEX's `nnz` is SuiteSparse's count: the
//! full (mirrored) matrix without explicit zeros, i.e. `MatrixMarketInfo::nnz_nonzero`; the CSR
//! nnz (`MatrixMarketInfo::nnz`, explicit zeros kept) equals it exactly for the matrices without
//! explicit zeros. Folder: `$SPMVKIT_MATRICES`, default `../../../shared/matrices` (tests run in
//! the crate directory); the test is skipped when the folder is absent, and fails then under
//! `SPMVKIT_REQUIRE_GPU=1` (`spmvkit::testing`).

use std::path::PathBuf;

use spmvkit::io::{self, MmField};

struct Row {
    name: String,
    rows: u64,
    cols: u64,
    nnz: u64,
    stored: u64,
}

fn index(path: &std::path::Path) -> Option<Vec<Row>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = Vec::new();
    for line in text.lines() {
        let c: Vec<&str> = line.split('|').map(str::trim).collect();
        if c.len() < 8 || c[1].parse::<u32>().is_err() {
            continue;
        }
        let num = |k: usize| c[k].parse::<u64>().expect("INDEX number");
        out.push(Row {
            name: c[2].to_string(),
            rows: num(3),
            cols: num(4),
            nnz: num(5),
            stored: num(6),
        });
    }
    Some(out)
}

#[test]
fn every_indexed_matrix_matches_index() {
    const TEST: &str = "every_indexed_matrix_matches_index";
    let Some(index_md) = spmvkit::testing::matrix_or_skip(TEST, "INDEX.md") else {
        return;
    };
    let dir = index_md.parent().map(PathBuf::from).unwrap_or_default();
    let rows =
        index(&index_md).unwrap_or_else(|| panic!("{TEST}: cannot read {}", index_md.display()));
    assert!(!rows.is_empty(), "INDEX.md lists no matrices");
    let mut with_zeros = Vec::new();
    let mut failures = Vec::new();
    for r in &rows {
        let path = dir.join(format!("{}.mtx.gz", r.name));
        let info = match io::read_matrix_market_info(&path) {
            Ok(i) => i,
            Err(e) => {
                failures.push(format!("{}: {e}", r.name));
                continue;
            }
        };
        let got = (
            info.header.nrows,
            info.header.ncols,
            info.stored,
            info.nnz_nonzero,
        );
        if got != (r.rows, r.cols, r.stored, r.nnz) {
            failures.push(format!(
                "{}: (rows, cols, stored, nnz_nonzero) = {got:?}, INDEX says {:?}",
                r.name,
                (r.rows, r.cols, r.stored, r.nnz)
            ));
        }
        if (info.nnz == r.nnz) != (info.explicit_zeros == 0) {
            failures.push(format!(
                "{}: nnz {} vs INDEX {} with {} explicit zeros",
                r.name, info.nnz, r.nnz, info.explicit_zeros
            ));
        }
        if info.explicit_zeros > 0 {
            with_zeros.push(format!(
                "{} ({} zeros, nnz {} -> {})",
                r.name, info.explicit_zeros, info.nnz, info.nnz_nonzero
            ));
        }
        if info.header.field == MmField::Complex {
            match io::read_matrix_market::<f64>(&path) {
                Err(spmvkit::Error::Unsupported { msg, .. }) => assert!(msg.contains("complex")),
                other => failures.push(format!(
                    "{}: complex file gave {:?}",
                    r.name,
                    other.map(|a| a.nnz())
                )),
            }
        } else {
            match io::read_matrix_market::<f64>(&path) {
                Ok(a)
                    if a.nrows() as u64 == r.rows
                        && a.ncols() as u64 == r.cols
                        && a.nnz() as u64 == info.nnz => {}
                Ok(a) => failures.push(format!(
                    "{}: CSR {}x{} nnz {}",
                    r.name,
                    a.nrows(),
                    a.ncols(),
                    a.nnz()
                )),
                Err(e) => failures.push(format!("{}: {e}", r.name)),
            }
        }
    }
    eprintln!(
        "{} matrices checked; with explicit zeros ({}): {}",
        rows.len(),
        with_zeros.len(),
        with_zeros.join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
