//! Finding NCCL (issue #12): cudarc loads it by name (`libnccl.so`, `libnccl.so.13`, …) and
//! panics when none loads, while pip's `nvidia-nccl-cu13` ships only
//! `.../nvidia/nccl/lib/libnccl.so.2`. So [`loadable`] is checked before any NCCL call,
//! [`find_library`] searches [`ENV_NCCL_LIB`], `LD_LIBRARY_PATH`, the system library directories
//! and Python's `sys.path`, and [`link_dir`] makes the private `libnccl.so` link a launcher puts
//! first on its ranks' `LD_LIBRARY_PATH`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Path of a `libnccl.so*` file, or a directory holding one, to use instead of searching.
pub const ENV_NCCL_LIB: &str = "SPMVKIT_NCCL_LIB";

/// Whether cudarc can load NCCL in this process (by its own names, through the process's
/// library path).
pub fn loadable() -> bool {
    // SAFETY: only tries to dlopen the candidates and drops them.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

/// NCCL's version (e.g. 22703 for 2.27.3), when it is loadable.
pub fn version() -> Option<i32> {
    loadable()
        .then(|| cudarc::nccl::result::get_nccl_version().ok())
        .flatten()
}

const LIB_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

fn lib_in(dir: &Path) -> Option<PathBuf> {
    LIB_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// Directories searched for NCCL, in order (after [`ENV_NCCL_LIB`]).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(lp) = std::env::var("LD_LIBRARY_PATH") {
        dirs.extend(lp.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/local/cuda/lib64",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Ok(p) = std::env::var(var) {
            dirs.push(PathBuf::from(p).join("lib"));
        }
    }
    // pip's nvidia-nccl-cu1x wheels: <site-packages>/nvidia/nccl/lib
    for site in python_paths() {
        dirs.push(site.join("nvidia/nccl/lib"));
        dirs.push(site.join("nvidia/cu13/lib"));
    }
    dirs
}

/// Python's `sys.path` and site directories, as `python3` reports them (empty without Python).
fn python_paths() -> Vec<PathBuf> {
    let script = "import sys, site\n\
        paths = list(sys.path)\n\
        try:\n    paths += site.getsitepackages() + [site.getusersitepackages()]\n\
        except Exception:\n    pass\n\
        print('\\n'.join(p for p in paths if p))";
    let out = ["python3", "python"].iter().find_map(|py| {
        std::process::Command::new(py)
            .args(["-c", script])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
    });
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(PathBuf::from)
            .collect()
    })
    .unwrap_or_default()
}

/// Finds a NCCL library file: [`ENV_NCCL_LIB`] when set (a file, or a directory holding
/// `libnccl.so.2` / `libnccl.so`), else the first hit in [`search_dirs`]. The error lists
/// where it looked.
pub fn find_library() -> Result<PathBuf> {
    if let Ok(p) = std::env::var(ENV_NCCL_LIB) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else if let Some(f) = p.is_dir().then(|| lib_in(&p)).flatten() {
            Ok(f)
        } else {
            Err(Error::GpuUnavailable(format!(
                "{ENV_NCCL_LIB}={} is neither a libnccl file nor a directory holding {}",
                p.display(),
                LIB_NAMES.join(" or ")
            )))
        };
    }
    let dirs = search_dirs();
    dirs.iter().find_map(|d| lib_in(d)).ok_or_else(|| {
        Error::GpuUnavailable(format!(
            "libnccl not found (searched {} directories incl. Python's site-packages/nvidia/nccl/lib; \
             pip install nvidia-nccl-cu13 or set {ENV_NCCL_LIB})",
            dirs.len()
        ))
    })
}

/// A private directory (under the temp dir, named after `lib`'s path) holding a `libnccl.so`
/// symlink to `lib`, for a child process's `LD_LIBRARY_PATH`.
pub fn link_dir(lib: &Path) -> Result<PathBuf> {
    let lib = lib.canonicalize().map_err(|e| Error::io(lib, e))?;
    // one directory per library, shared by concurrent launchers
    let hash = crate::hash::fnv1a(lib.to_string_lossy().as_bytes());
    let dir = std::env::temp_dir().join(format!("spmvkit-nccl-{hash:016x}"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let link = dir.join("libnccl.so");
    if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
        // link under a unique name, then rename over: atomic for concurrent launchers
        let tmp = dir.join(format!("libnccl.so.tmp{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&lib, &tmp).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &link).map_err(|e| Error::io(&link, e))?;
    }
    Ok(dir)
}

/// How a launcher makes NCCL loadable in the ranks it spawns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NcclSetup {
    /// Already loadable by cudarc's names; nothing to do.
    Loadable,
    /// Found at `lib`; prepend `dir` (holding a `libnccl.so` link) to `LD_LIBRARY_PATH`.
    Linked { lib: PathBuf, dir: PathBuf },
    /// Not found: the reason.
    Missing(String),
}

impl NcclSetup {
    /// Looks for NCCL as [`find_library`] does, unless [`ENV_NCCL_LIB`] is unset and it is
    /// already loadable.
    pub fn detect() -> NcclSetup {
        if std::env::var_os(ENV_NCCL_LIB).is_none() && loadable() {
            return NcclSetup::Loadable;
        }
        match find_library().and_then(|lib| link_dir(&lib).map(|dir| (lib, dir))) {
            Ok((lib, dir)) => NcclSetup::Linked { lib, dir },
            Err(e) => NcclSetup::Missing(e.to_string()),
        }
    }

    /// The `LD_LIBRARY_PATH` for a child process, when it must change.
    pub fn child_library_path(&self) -> Option<String> {
        match self {
            NcclSetup::Linked { dir, .. } => {
                let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
                Some(if old.is_empty() {
                    dir.display().to_string()
                } else {
                    format!("{}:{old}", dir.display())
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_library_is_linked_for_children() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnccl.so.2");
        std::fs::write(&lib, b"not really a library").unwrap();
        assert_eq!(lib_in(dir.path()), Some(lib.clone()));
        let linked = link_dir(&lib).unwrap();
        assert_eq!(
            std::fs::read_link(linked.join("libnccl.so")).unwrap(),
            lib.canonicalize().unwrap()
        );
        // again: the link is kept
        assert_eq!(link_dir(&lib).unwrap(), linked);
        let setup = NcclSetup::Linked {
            lib,
            dir: linked.clone(),
        };
        assert!(setup
            .child_library_path()
            .unwrap()
            .starts_with(&linked.display().to_string()));
        assert_eq!(NcclSetup::Loadable.child_library_path(), None);
        assert!(!search_dirs().is_empty());
    }
}
