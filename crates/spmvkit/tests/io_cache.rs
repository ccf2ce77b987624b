//! The `*.spmvkit` cache through `load_cached`: built on first use, hit while the source is
//! unchanged, rebuilt when stale or damaged; a damaged cache loaded directly is `Error::Cache`.

use std::path::Path;

use spmvkit::io::{self, CacheOutcome};
use spmvkit::{Csr, Error};

const TEXT: &str =
    "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 4\n2 1 -1\n3 2 -2\n3 3 5\n";

fn write_source(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
}

#[test]
fn cache_is_built_hit_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.mtx");
    let cdir = dir.path().join("cache");
    write_source(&src, TEXT);
    let want: Csr<f64> = io::read_matrix_market(&src).unwrap();

    let (a, o) = io::load_cached_with_outcome::<f64>(&src, Some(&cdir)).unwrap();
    assert_eq!(a, want);
    let CacheOutcome::Built(cpath) = o else {
        panic!("{o:?}")
    };
    assert!(cpath.starts_with(&cdir));
    let h = io::read_cache_header(&cpath).unwrap();
    assert_eq!((h.nrows, h.ncols, h.nnz), (3, 3, 6));
    assert_eq!(h.source_size, TEXT.len() as u64);

    let (b, o) = io::load_cached_with_outcome::<f64>(&src, Some(&cdir)).unwrap();
    assert_eq!(b, want);
    assert_eq!(o, CacheOutcome::Hit(cpath.clone()));
    // The other precision has its own cache file.
    let (_, o) = io::load_cached_with_outcome::<f32>(&src, Some(&cdir)).unwrap();
    assert!(matches!(o, CacheOutcome::Built(_)), "{o:?}");

    // Damage the cache: loading it directly is an error, load_cached rebuilds it.
    let mut bytes = std::fs::read(&cpath).unwrap();
    let k = bytes.len() - 3;
    bytes[k] ^= 0x55;
    std::fs::write(&cpath, &bytes).unwrap();
    assert!(matches!(io::load::<f64>(&cpath), Err(Error::Cache { .. })));
    let (c, o) = io::load_cached_with_outcome::<f64>(&src, Some(&cdir)).unwrap();
    assert_eq!(c, want);
    assert!(matches!(o, CacheOutcome::Rebuilt { .. }), "{o:?}");
    assert_eq!(io::load::<f64>(&cpath).unwrap(), want);

    // Truncated cache.
    std::fs::write(&cpath, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(
        io::read_cache::<f64>(&cpath),
        Err(Error::Cache { .. })
    ));
    assert!(matches!(
        io::read_cache::<f64>(dir.path().join("s.mtx")),
        Err(Error::Cache { .. })
    ));

    // A changed source (different size) makes the cache stale.
    write_source(&src, &TEXT.replace("3 3 5", "3 3 6"));
    std::fs::write(&src, TEXT.replace("3 3 5\n", "3 3 6.5\n")).unwrap();
    let (d, o) = io::load_cached_with_outcome::<f64>(&src, Some(&cdir)).unwrap();
    assert!(matches!(o, CacheOutcome::Rebuilt { .. }), "{o:?}");
    assert_eq!(d.vals().last(), Some(&6.5));
}

#[test]
fn unwritable_cache_dir_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.mtx");
    write_source(&src, TEXT);
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let (a, o) = io::load_cached_with_outcome::<f64>(&src, Some(&blocker.join("sub"))).unwrap();
    assert_eq!(a.nnz(), 6);
    assert!(matches!(o, CacheOutcome::NotWritten { .. }), "{o:?}");
}
