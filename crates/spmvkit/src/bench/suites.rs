//! Named benchmark suites. Every suite exists anywhere: `quick`, `gpu-large`, `large-train`,
//! `large-test` and `stream-large` are generated (GEN-SPECs), `shared` is the folder of real
//! SuiteSparse matrices beside the checkout.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::matrix::{AnyCsr, Csr};
use crate::scalar::Scalar;

/// One input of a run: a file or a GEN-SPEC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatrixSource {
    File(PathBuf),
    Spec(String),
}

impl MatrixSource {
    /// A MATRIX argument of any command: an existing file (Matrix Market or `.spmvkit` cache),
    /// else a GEN-SPEC, checked by the generators' parser so that a malformed one gets its
    /// explanation.
    ///
    /// ```
    /// use spmvkit::bench::MatrixSource;
    /// assert_eq!(
    ///     MatrixSource::from_arg("poisson3d:8").unwrap(),
    ///     MatrixSource::Spec("poisson3d:8".into())
    /// );
    /// assert!(MatrixSource::from_arg("no-such-file.mtx").is_err());
    /// assert!(MatrixSource::from_arg("poisson3d:x").is_err());
    /// ```
    pub fn from_arg(arg: &str) -> Result<MatrixSource> {
        let path = Path::new(arg);
        if path.exists() {
            return Ok(MatrixSource::File(path.to_path_buf()));
        }
        if crate::gen::looks_like_spec(arg) || arg.contains(':') {
            crate::gen::parse_spec(arg)?;
            return Ok(MatrixSource::Spec(arg.to_string()));
        }
        Err(Error::InvalidArgument(format!(
            "'{arg}' is neither an existing file nor a GEN-SPEC (like poisson3d:64); \
             `spmv gen --help` lists the generators"
        )))
    }

    /// The matrix in precision `T`, the one loader of `spmv run`, `spmv bench` and the other
    /// commands: a file through the binary cache when `use_cache` (else read directly), a
    /// GEN-SPEC generated.
    pub fn load<T: Scalar>(&self, use_cache: bool) -> Result<Csr<T>> {
        match self {
            MatrixSource::File(p) if use_cache => crate::io::load_cached::<T>(p, None),
            MatrixSource::File(p) => crate::io::load::<T>(p),
            MatrixSource::Spec(s) => crate::gen::generate::<T>(s),
        }
    }

    /// [`MatrixSource::load`] with row offsets of type `O` (docs/offsets.md): a spec is generated
    /// in that width (past 2^31−1 nonzeros with `u64`), a file is read in the width it needs
    /// ([`MatrixSource::load_any`]) and converted when that differs from `O` (a copy; narrowing
    /// refuses more than 2^31−1 nonzeros with [`crate::Error::TooLarge`]).
    pub fn load_as<T: Scalar, O: crate::Offset>(&self, use_cache: bool) -> Result<Csr<T, O>> {
        match self {
            MatrixSource::File(_) => self.load_any::<T>(use_cache)?.into_offsets(),
            MatrixSource::Spec(s) => crate::gen::generate_as::<T, O>(s),
        }
    }

    /// The matrix in the width it needs (docs/offsets.md): a file as
    /// [`crate::io::load_cached_any`] (or [`crate::io::load_any`] without the cache) reads it,
    /// a spec generated with 32-bit offsets, or with 64-bit ones when it has more than 2^31−1
    /// nonzeros ([`crate::gen::generate_any`]: the rows are counted once, before anything large
    /// is allocated).
    pub fn load_any<T: Scalar>(&self, use_cache: bool) -> Result<AnyCsr<T>> {
        match self {
            MatrixSource::File(p) if use_cache => crate::io::load_cached_any::<T>(p, None),
            MatrixSource::File(p) => crate::io::load_any::<T>(p),
            MatrixSource::Spec(s) => crate::gen::generate_any::<T>(s),
        }
    }

    /// The file path or spec, as written in reports.
    pub fn label(&self) -> String {
        match self {
            MatrixSource::File(p) => p.display().to_string(),
            MatrixSource::Spec(s) => s.clone(),
        }
    }

    /// A short name: the file name without `.mtx`/`.mtx.gz`/`.spmvkit`, or the spec.
    pub fn short_name(&self) -> String {
        match self {
            MatrixSource::File(p) => {
                let f = p
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for ext in [".mtx.gz", ".mtx", ".spmvkit"] {
                    if let Some(stem) = f.strip_suffix(ext) {
                        return stem.to_string();
                    }
                }
                f
            }
            MatrixSource::Spec(s) => s.clone(),
        }
    }
}

/// A named suite.
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    pub name: &'static str,
    pub help: &'static str,
}

/// The suites `--suite` accepts.
pub const SUITES: &[Suite] = &[
    Suite { name: "quick", help: "small generated matrices of every family, seconds on a CPU (CI)" },
    Suite {
        name: "gpu-large",
        help: "generated 10M-200M nnz matrices (Poisson 160^3, kron:21, uniform, power-law, banded, dense blocks, one huge row, short rows)",
    },
    Suite {
        name: "large-train",
        help: "generated 13M-56M nnz matrices for auto's training table, other sizes than gpu-large and large-test (Poisson 2D and 3D, 27-point, uniform, power-law, kron, tall)",
    },
    Suite {
        name: "large-test",
        help: "generated 7M-64M nnz matrices held out from auto's training table (other sizes and generators than gpu-large: 2D Poisson, tall, wide, ...)",
    },
    Suite {
        name: "stream-large",
        help: "issue #19's stream-bound large matrices, 8M-265M nnz: Poisson 2D/3D, 27-point stencils with constant and variable coefficients, DIMACS10-style rgg and delaunay graphs of 2^22 points with spatial and shuffled ids and of 2^24 points with spatial ids (30 s to generate on 16 cores, half of it the 2^24 Delaunay triangulation)",
    },
    Suite { name: "shared", help: "the real SuiteSparse matrices in $SPMVKIT_MATRICES or ../shared/matrices" },
];

/// GEN-SPECs of the `quick` suite.
pub const QUICK: &[&str] = &[
    "poisson2d:100",
    "poisson3d:20",
    "stencil27:12",
    "banded:20000,8",
    "uniform:20000,12",
    "powerlaw:20000,8",
    "kron:12",
    "blockdiag:100,24",
    "hugerow:20000,4",
    "tall:40000,400,4",
    "wide:400,40000,80",
    "diag:20000",
];

/// GEN-SPECs of the `gpu-large` suite (10M-200M nnz; generate them on the GPU machine).
pub const GPU_LARGE: &[&str] = &[
    "poisson3d:160",
    "stencil27:100",
    "kron:21",
    "uniform:4000000,16",
    "powerlaw:4000000,8",
    "banded:4000000,16",
    "blockdiag:40000,64",
    "hugerow:8000000,4",
    "uniform:30000000,2",
];

/// GEN-SPECs of the `large-train` suite: bandwidth-bound matrices added to `auto`'s training
/// table beside gpu-large, of other sizes than gpu-large's and large-test's matrices of the same
/// generators.
pub const LARGE_TRAIN: &[&str] = &[
    "poisson2d:2200",
    "poisson3d:200",
    "stencil27:80",
    "uniform:6000000,8",
    "powerlaw:3000000,12",
    "kron:19,48",
    "tall:10000000,800000,4",
];

/// GEN-SPECs of the `large-test` suite: bandwidth-bound matrices (working set above the H200's
/// 60 MiB L2) that `auto`'s training table does not hold, to judge its choices on large matrices
/// it has not seen (`spmv auto eval`). Each is another size or shape than the gpu-large matrix of
/// its generator, or a generator gpu-large lacks (poisson2d, tall, wide); each generates in
/// seconds on 16 cores and needs at most about 1 GB per layout.
pub const LARGE_TEST: &[&str] = &[
    "poisson2d:1250",
    "poisson2d:3000",
    "poisson3d:120",
    "stencil27:64",
    "banded:8000000,4",
    "uniform:2000000,32",
    "uniform:10000000,4",
    "powerlaw:2000000,16",
    "powerlaw:8000000,4,alpha=2.5",
    "kron:20",
    "hugerow:4000000,8,100000",
    "blockdiag:200000,16",
    "tall:20000000,1000000,3",
    "wide:100000,20000000,200",
];

/// GEN-SPECs of the `stream-large` suite (issue #19): large matrices whose SpMV should run at the
/// memory's streaming rate, from the model problems (Poisson 2D and 3D, the 27-point stencil with
/// constant and with variable coefficients, whose values a dictionary cannot compress) and from
/// the DIMACS10 families `rgg_n_2_k` and `delaunay_nK`. The geometric graphs come at 2^22 points
/// in the spatial (Z-order) numbering, where x is read almost in order, and shuffled, where every
/// x read is a gather, and at 2^24 points spatially ordered (rgg: ≈ 265M nnz, the largest here).
/// Each matrix holds at most ~300M nnz; the suite generates in 30 s on 16 cores
/// (measured: rgg:16777216 3.5 s, delaunay:16777216 16 s, most of it the single-threaded
/// triangulation, every other matrix under 5 s) with a peak of 4.9 GB of host memory. poisson3d:160 and
/// stencil27:100 are gpu-large's, poisson2d:1250 large-test's: the same matrices, measured again
/// beside the new ones.
pub const STREAM_LARGE: &[&str] = &[
    "poisson3d:160",
    "poisson2d:1250",
    "stencil27:100",
    "varcoef27:100",
    "rgg:4194304",
    "rgg:4194304,order=shuffled",
    "delaunay:4194304",
    "delaunay:4194304,order=shuffled",
    "rgg:16777216",
    "delaunay:16777216",
];

/// GEN-SPECs as inputs.
fn specs(list: &[&str]) -> Vec<MatrixSource> {
    list.iter()
        .map(|s| MatrixSource::Spec(s.to_string()))
        .collect()
}

/// The inputs of a named suite.
pub fn suite(name: &str) -> Result<Vec<MatrixSource>> {
    match name {
        "quick" => Ok(specs(QUICK)),
        "gpu-large" => Ok(specs(GPU_LARGE)),
        "large-train" => Ok(specs(LARGE_TRAIN)),
        "large-test" => Ok(specs(LARGE_TEST)),
        "stream-large" => Ok(specs(STREAM_LARGE)),
        "shared" => {
            let dir = shared_matrices_dir().ok_or_else(|| {
                Error::InvalidArgument(
                    "suite 'shared': no matrices folder found; set SPMVKIT_MATRICES or run from a checkout with ../shared/matrices beside it"
                        .into(),
                )
            })?;
            matrix_files(&dir)
        }
        other => Err(Error::InvalidArgument(format!(
            "unknown suite '{other}'; suites: {}",
            SUITES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `$SPMVKIT_MATRICES`, else the first `shared/matrices` found beside the working directory or
/// one of its ancestors.
pub fn shared_matrices_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SPMVKIT_MATRICES") {
        return Some(PathBuf::from(d));
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .map(|a| a.join("shared/matrices"))
        .find(|p| p.is_dir())
        .or_else(|| {
            cwd.ancestors()
                .map(|a| a.join("../shared/matrices"))
                .find(|p| p.is_dir())
        })
}

/// Every `.mtx`, `.mtx.gz` and `.spmvkit` file under `dir`, sorted by path.
pub fn matrix_files(dir: &Path) -> Result<Vec<MatrixSource>> {
    Ok(matrix_paths(dir)?
        .into_iter()
        .map(MatrixSource::File)
        .collect())
}

/// The matrix files (`.mtx`, `.mtx.gz`, `.spmvkit`) under `dir`, recursively, sorted.
pub fn matrix_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))?;
        for e in entries {
            let p = e.map_err(|e| Error::io(&d, e))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if is_matrix_file(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn is_matrix_file(p: &Path) -> bool {
    let s = p.to_string_lossy();
    s.ends_with(".mtx") || s.ends_with(".mtx.gz") || s.ends_with(".spmvkit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_suite_spec_parses() {
        for spec in QUICK
            .iter()
            .chain(GPU_LARGE)
            .chain(LARGE_TRAIN)
            .chain(LARGE_TEST)
            .chain(STREAM_LARGE)
        {
            crate::gen::parse_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        }
    }

    #[test]
    fn large_test_shares_no_matrix_with_gpu_large() {
        for spec in LARGE_TEST {
            let g = crate::gen::parse_spec(spec).unwrap();
            for other in GPU_LARGE {
                assert_ne!(g, crate::gen::parse_spec(other).unwrap(), "{spec}");
            }
        }
        assert_eq!(suite("large-test").unwrap().len(), LARGE_TEST.len());
    }

    #[test]
    fn stream_large_has_each_geometric_graph_in_both_orders() {
        let parsed: Vec<_> = STREAM_LARGE
            .iter()
            .map(|s| crate::gen::parse_spec(s).unwrap())
            .collect();
        for (i, g) in parsed.iter().enumerate() {
            assert!(!parsed[..i].contains(g), "{g} listed twice");
        }
        for kind in ["rgg", "delaunay"] {
            let with = |order: Option<&str>, n: u64| {
                parsed.iter().any(|g| {
                    g.kind == kind
                        && g.args == [n]
                        && g.options
                            .iter()
                            .find(|(k, _)| k == "order")
                            .map(|(_, v)| v.as_str())
                            == order
                })
            };
            assert!(
                with(None, 1 << 22) && with(Some("shuffled"), 1 << 22),
                "{kind}"
            );
            assert!(with(None, 1 << 24), "{kind}");
        }
        assert_eq!(suite("stream-large").unwrap().len(), STREAM_LARGE.len());
    }

    #[test]
    fn short_names() {
        assert_eq!(
            MatrixSource::File("a/b/jgl009.mtx.gz".into()).short_name(),
            "jgl009"
        );
        assert_eq!(MatrixSource::Spec("kron:12".into()).short_name(), "kron:12");
    }

    #[test]
    fn unknown_suite_is_an_error() {
        assert!(suite("nope").unwrap_err().to_string().contains("quick"));
    }
}
