//! Host memory: how much a process may still use, a check of a size estimate against it, and
//! fallible allocation for arrays whose size comes from the user (a GEN-SPEC, a file's size
//! line, a cache header).
//!
//! The memory available is the smallest of `MemAvailable` in `/proc/meminfo`, the room left under
//! the cgroup (v2) limit (`memory.max` − `memory.current` in `/sys/fs/cgroup`), and the
//! `SPMVKIT_MEMORY_LIMIT` environment variable (bytes, or a number with a `K`, `M`, `G` or `T`
//! suffix, powers of 1024). Where none of them can be read there is no check.

use std::fmt;

use crate::error::{Error, Result};

/// The environment variable that caps the memory spmvkit plans to use.
pub const LIMIT_VAR: &str = "SPMVKIT_MEMORY_LIMIT";

/// How much memory is available and where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    pub bytes: u64,
    /// `MemAvailable in /proc/meminfo`, `the cgroup memory limit` or `SPMVKIT_MEMORY_LIMIT`.
    pub source: &'static str,
}

/// Parses a size: digits with an optional `K`, `M`, `G` or `T` suffix (powers of 1024, an
/// optional trailing `B` or `iB`).
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return None,
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift)
}

/// The field `key` (`MemAvailable:`, `VmHWM:`) of a `/proc` file of `key  N kB` lines, in bytes.
fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line
        .trim_start_matches(key)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

fn meminfo_available() -> Option<u64> {
    proc_kb("/proc/meminfo", "MemAvailable:")
}

fn cgroup_room() -> Option<u64> {
    let max = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    let max: u64 = max.trim().parse().ok()?; // "max": no limit
    let current = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// The peak resident memory of this process so far (`VmHWM` in `/proc/self/status`), for the
/// figures of a large run (docs/offsets.md); `None` where the file says nothing.
pub fn peak_resident() -> Option<u64> {
    proc_kb("/proc/self/status", "VmHWM:")
}

/// The memory this process may still allocate, or `None` when nothing says.
pub fn available() -> Option<Available> {
    let candidates = [
        (
            std::env::var(LIMIT_VAR).ok().and_then(|v| parse_size(&v)),
            LIMIT_VAR,
        ),
        (cgroup_room(), "the cgroup memory limit"),
        (meminfo_available(), "MemAvailable in /proc/meminfo"),
    ];
    candidates
        .into_iter()
        .filter_map(|(b, source)| b.map(|bytes| Available { bytes, source }))
        .min_by_key(|a| a.bytes)
}

/// A byte count for people: `12.8 GB (12800000000 bytes)` style, decimal units.
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
        let mut v = self.0 as f64;
        let mut u = 0;
        while v >= 1000.0 && u + 1 < UNITS.len() {
            v /= 1000.0;
            u += 1;
        }
        if u == 0 {
            write!(f, "{} bytes", self.0)
        } else {
            write!(f, "{v:.1} {} ({} bytes)", UNITS[u], self.0)
        }
    }
}

/// Refuses `needed` bytes for `what` when more than the memory available (no check when the
/// figure cannot be read).
pub fn check_fits(what: impl FnOnce() -> String, needed: u128) -> Result<()> {
    let Some(avail) = available() else {
        return Ok(());
    };
    if needed > avail.bytes as u128 {
        return Err(Error::MemoryLimit {
            what: what(),
            needed: u64::try_from(needed).unwrap_or(u64::MAX),
            available: avail.bytes,
            origin: avail.source,
        });
    }
    Ok(())
}

/// An empty vector with room for `cap` elements, or [`Error::AllocFailed`] naming `what`.
pub fn try_with_capacity<T>(what: &str, cap: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(cap).map_err(|_| Error::AllocFailed {
        what: what.to_string(),
        bytes: (cap as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}

/// `vec![value; len]`, or [`Error::AllocFailed`] naming `what`.
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(what, len)?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("8GiB"), Some(8 << 30));
        assert_eq!(parse_size("512 MB"), Some(512 << 20));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("9Q"), None);
    }

    #[test]
    fn bytes_read_well() {
        assert_eq!(Bytes(12).to_string(), "12 bytes");
        assert_eq!(
            Bytes(12_800_000_000).to_string(),
            "12.8 GB (12800000000 bytes)"
        );
    }

    #[test]
    fn an_impossible_allocation_is_an_error() {
        let e = try_vec::<u64>("a test array", usize::MAX / 4, 0).unwrap_err();
        assert!(matches!(e, Error::AllocFailed { .. }), "{e}");
        assert!(e.to_string().contains("a test array"), "{e}");
        assert_eq!(try_vec("small", 3, 7u8).unwrap(), vec![7, 7, 7]);
    }
}
