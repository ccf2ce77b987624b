//! `spmv probe`: the GPU's limits probe (copy and read bandwidth, random-gather rate by table
//! size, random-row-gather rate by row and table size), the figures the benchmark report sets
//! every result against.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use spmvkit::gpu::{run_probe, Gpu, Probe, ProbeOptions};

/// Measure what this GPU can do at best for the two things an SpMV does, stream its arrays and
/// gather entries of x, and for the gathers of an SpMM with a row-major block, whole rows of X.
/// Takes about a second and up to 3 GiB of device memory (less when memory is short).
///
/// `spmv bench` runs the same probe once per run on a GPU and saves it in the run record; the
/// report sets every GPU result against the limit it gives (docs/limits.md).
#[derive(Args)]
#[command(after_help = "The figures:
  copy bandwidth  a device-to-device copy of 1 GiB, counting the bytes read and the bytes
                  written, in GB/s (10^9 bytes/s); the reference of the report's \"% copy BW\".
  read bandwidth  a kernel that only reads: it streams a 1 GiB buffer once with 16-byte loads
                  and keeps an XOR of what it read. The rate at which a layout's arrays can be
                  streamed, in GB/s.
  gathers         random loads of single elements (4-byte f32, 8-byte f64) from a table of
                  1 MiB to 1 GiB, each from a random 32-byte sector; the index is a hash of the
                  gather number computed in the kernel, so only the table is read. In 10^9
                  elements/s. Small tables are served by L1 and L2, large ones by DRAM.
  row gathers     random loads of whole rows of 16, 32, 64, 128, 256, 512 and 1024 bytes (an
                  X row of k values in a row-major block: 256 bytes = 32 f64 values), each
                  aligned to its size, from the same tables: a group of min(row/16, 32) lanes
                  loads one row with 16-byte loads, four loads in flight per lane. In 10^9
                  rows/s, and in GB/s (rows/s x row bytes). 512 MiB of rows per timed call;
                  about 0.1-0.2 s of the probe.

How the report uses them (summary.md, limits.csv; docs/limits.md):
  t_limit = max(bytes / read bandwidth, x gathers / gather rate at x's size)
  bytes: the layout's device arrays + x once + y written; x gathers: distinct 32-byte sectors
  of x per chunk of 32 rows (an upper bound on L2->SM traffic when no reuse across warps).
  A result near 100 % of its limit runs at these rates for the bytes it must move and the
  sectors it gathers; a kernel that reuses sectors across warps can pass the gather term.
  SpMM (spmm.md, spmm-limits.csv): row-major X rows of 16 bytes and more count one random
  row access each, at the row-gather rate for that row size and X's size.

Examples:
  spmv probe
  spmv probe --json probe.json
  spmv probe --json -          the JSON on standard output, no table

Without a usable GPU it fails (exit status 1) and says why.")]
pub struct ProbeArgs {
    /// Also write the probe as JSON to FILE (`-`: standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

pub fn run(args: ProbeArgs) -> Result<()> {
    let gpu = Gpu::get().map_err(|e| {
        anyhow!("spmv probe measures the GPU and needs one; none is usable here ({e})")
    })?;
    let probe = run_probe(&gpu, &ProbeOptions::default())?;
    let json = serde_json::to_string_pretty(&probe)?;
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            println!("{json}");
            return Ok(());
        }
        Some(p) => {
            std::fs::write(p, format!("{json}\n"))
                .with_context(|| format!("writing {}", p.display()))?;
        }
        None => {}
    }
    print!("{}", render(&probe));
    if let Some(p) = &args.json {
        println!("JSON: {}", p.display());
    }
    Ok(())
}

/// The probe as a table.
fn render(p: &Probe) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: limits probe, {:.2} s\n",
        p.device,
        p.elapsed_ms / 1e3
    );
    let _ = writeln!(
        s,
        "  copy bandwidth  {:>8.1} GB/s  device-to-device copy, bytes read + written",
        p.copy_gbs
    );
    let _ = writeln!(
        s,
        "  read bandwidth  {:>8.1} GB/s  streaming read of {}, 16-byte loads\n",
        p.read_gbs,
        fmt_size(p.read_bytes)
    );
    let _ = writeln!(
        s,
        "  random gathers, 10^9 elements/s ({} per table size, one element per random 32-byte \
         sector):",
        fmt_gathers(p.gathers_per_call)
    );
    let mut sizes: Vec<u64> = p.gather.iter().map(|g| g.table_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let _ = writeln!(s, "  {:>10}  {:>8}  {:>8}", "table", "4-byte", "8-byte");
    for t in sizes {
        let rate = |e: u32| {
            p.gather
                .iter()
                .find(|g| g.table_bytes == t && g.elem_bytes == e)
                .map_or_else(|| "–".to_string(), |g| format!("{:.1}", g.rate_gps))
        };
        let _ = writeln!(s, "  {:>10}  {:>8}  {:>8}", fmt_size(t), rate(4), rate(8));
    }
    render_rows(&mut s, p);
    s
}

/// The row gathers as two tables, 10⁹ rows/s and GB/s, by table size (rows) and row size
/// (columns); nothing for a probe without them.
fn render_rows(s: &mut String, p: &Probe) {
    let mut widths: Vec<u32> = p.rows.iter().map(|r| r.row_bytes).collect();
    widths.sort_unstable();
    widths.dedup();
    let mut sizes: Vec<u64> = p.rows.iter().map(|r| r.table_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if widths.is_empty() {
        return;
    }
    let ms = p
        .rows_ms
        .map_or_else(String::new, |ms| format!(", {:.2} s", ms / 1e3));
    for (title, bytes) in [("10^9 rows/s", false), ("GB/s (rows/s x row bytes)", true)] {
        let _ = writeln!(
            s,
            "\n  random row gathers, {title} (aligned rows, 16-byte loads{ms}):"
        );
        let mut head = format!("  {:>10}", "table");
        for w in &widths {
            let _ = write!(head, "  {:>7}", format!("{w} B"));
        }
        let _ = writeln!(s, "{head}");
        for &t in &sizes {
            let mut line = format!("  {:>10}", fmt_size(t));
            for &w in &widths {
                let cell = p
                    .rows
                    .iter()
                    .find(|r| r.table_bytes == t && r.row_bytes == w)
                    .map_or_else(
                        || "–".to_string(),
                        |r| {
                            if bytes {
                                format!("{:.0}", r.gbs())
                            } else {
                                format!("{:.2}", r.rate_grs)
                            }
                        },
                    );
                let _ = write!(line, "  {cell:>7}");
            }
            let _ = writeln!(s, "{line}");
        }
    }
}

/// `1 MiB`, `1 GiB`, `768 MiB`.
fn fmt_size(b: u64) -> String {
    if b >= 1 << 30 && b % (1 << 30) == 0 {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{b} B")
    }
}

/// `2^27 gathers` for a power of two, else the count.
fn fmt_gathers(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{} gathers", n.trailing_zeros())
    } else {
        format!("{:.3e} gathers", n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spmvkit::gpu::{GatherPoint, RowPoint};

    #[test]
    fn the_table_lists_every_size_in_both_element_widths() {
        let p = Probe {
            device: "NVIDIA Test GPU".into(),
            copy_gbs: 3912.34,
            read_gbs: 4301.0,
            read_bytes: 1 << 30,
            gathers_per_call: 134_086_656,
            gather: vec![
                GatherPoint {
                    table_bytes: 1 << 20,
                    elem_bytes: 4,
                    rate_gps: 210.04,
                },
                GatherPoint {
                    table_bytes: 1 << 30,
                    elem_bytes: 4,
                    rate_gps: 31.0,
                },
                GatherPoint {
                    table_bytes: 1 << 20,
                    elem_bytes: 8,
                    rate_gps: 190.0,
                },
            ],
            rows: Vec::new(),
            rows_ms: None,
            elapsed_ms: 812.0,
        };
        let t = render(&p);
        assert!(
            t.starts_with("NVIDIA Test GPU: limits probe, 0.81 s\n"),
            "{t}"
        );
        assert!(t.contains("copy bandwidth    3912.3 GB/s"), "{t}");
        assert!(
            t.contains("read bandwidth    4301.0 GB/s  streaming read of 1 GiB"),
            "{t}"
        );
        assert!(t.contains("(1.341e8 gathers per table size"), "{t}");
        assert!(t.contains("       1 MiB     210.0     190.0\n"), "{t}");
        assert!(t.contains("       1 GiB      31.0         –\n"), "{t}");
        assert!(!t.contains("row gathers"), "{t}");
        assert_eq!(fmt_size(512 << 20), "512 MiB");
        assert_eq!(fmt_gathers(1 << 27), "2^27 gathers");
    }

    #[test]
    fn the_row_gathers_are_listed_in_rows_and_bytes_per_second() {
        let mut p: Probe = serde_json::from_str(
            r#"{"device":"NVIDIA Test GPU","copy_gbs":4000.0,"read_gbs":4400.0,
            "read_bytes":1073741824,"gathers_per_call":1,"gather":[],"elapsed_ms":900.0}"#,
        )
        .unwrap();
        for (table_bytes, row_bytes, rate_grs) in [
            (1 << 20, 16, 250.0),
            (1 << 30, 16, 44.0),
            (1 << 30, 256, 15.25),
        ] {
            p.rows.push(RowPoint {
                table_bytes,
                row_bytes,
                rows_per_call: 1 << 21,
                rate_grs,
            });
        }
        p.rows_ms = Some(150.0);
        let t = render(&p);
        assert!(
            t.contains("random row gathers, 10^9 rows/s (aligned rows, 16-byte loads, 0.15 s):"),
            "{t}"
        );
        assert!(t.contains("       table     16 B    256 B\n"), "{t}");
        assert!(t.contains("       1 MiB   250.00        –\n"), "{t}");
        assert!(t.contains("       1 GiB    44.00    15.25\n"), "{t}");
        // GB/s: 44·16 and 15.25·256
        assert!(t.contains("       1 GiB      704     3904\n"), "{t}");
    }
}
