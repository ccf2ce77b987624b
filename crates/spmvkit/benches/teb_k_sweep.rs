//! TEB's heuristic k against an exhaustive k sweep (issue #7): for every shared matrix
//! (`*.mtx.gz` under `SPMVKIT_MATRICES`, default `../../../shared/matrices`), the block-nnz
//! variance (Eq. 5) for k = 1.000, 1.005, …, 1.050 at the bLN that `teb` chooses by default, and
//! at the paper's bLN = 100, 200, 300 (Figs. 7–9); a hit is when the heuristic's k (Fig. 11) has
//! the least variance of the sweep (ties count). Prints a Markdown report.
//!
//! Run: `cargo bench -p spmvkit --bench teb_k_sweep`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use spmvkit::methods::teb::default_window;
use spmvkit::methods::teb::select::{BlnChoice, KChoice, Lengths};
use spmvkit::methods::{Layout, Params};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.to_string_lossy().ends_with(".mtx.gz") {
            out.push(p);
        }
    }
}

/// The sweep at `bln`: (heuristic k, its variance, least variance, optimal ks).
fn sweep(l: &Lengths, bln: usize, critical: Option<usize>) -> (f64, f64, f64, Vec<f64>) {
    let kh = l.k_at(KChoice::Heuristic, bln, critical);
    let ks: Vec<f64> = (0..=10).map(|i| 1.0 + 0.005 * i as f64).collect();
    let vars: Vec<f64> = ks.iter().map(|&k| l.variance_at(bln, k)).collect();
    let min = vars.iter().copied().fold(f64::INFINITY, f64::min);
    let tie = |v: f64| v <= min + 1e-9 * min.abs().max(1.0);
    let opt: Vec<f64> = ks
        .iter()
        .zip(&vars)
        .filter(|(_, &v)| tie(v))
        .map(|(&k, _)| k)
        .collect();
    (kh, l.variance_at(bln, kh), min, opt)
}

fn fmt_ks(v: &[f64]) -> String {
    if v.len() > 4 {
        format!("{:.3}…{:.3} ({})", v[0], v[v.len() - 1], v.len())
    } else {
        v.iter()
            .map(|k| format!("{k:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn main() {
    let dir = std::env::var("SPMVKIT_MATRICES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/matrices"));
    let mut files = Vec::new();
    walk(&dir, &mut files);
    files.sort();
    println!("| matrix | rows | nnz | bLN (window) | critical | k heur. | optimal k | S²(heur.) | S² min | hit | 100 | 200 | 300 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut n, mut hits) = (0usize, 0usize);
    let mut fixed = [(0usize, 0usize); 3];
    let mut only_k1 = 0usize;
    let mut flat = 0usize;
    let mut sel_ms = 0.0f64;
    for f in &files {
        let a = match spmvkit::io::load::<f64>(f) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("skip {}: {e}", f.display());
                continue;
            }
        };
        let lens: Vec<u64> = (0..a.nrows()).map(|r| a.row_len(r) as u64).collect();
        let l = Lengths::new(&lens);
        if l.rows() < 2 {
            continue;
        }
        let t = Instant::now();
        let (lo, hi) = default_window(l.rows() as usize);
        let crit = l.critical(hi.max(300));
        let sel = l.select(
            KChoice::Heuristic,
            BlnChoice::Search {
                lo,
                hi,
                candidates: 256,
            },
            crit,
        );
        sel_ms += t.elapsed().as_secs_f64() * 1e3;
        let (kh, vh, vmin, opt) = sweep(&l, sel.bln, crit);
        let hit = vh <= vmin + 1e-9 * vmin.abs().max(1.0);
        n += 1;
        hits += hit as usize;
        if opt == [1.0] {
            only_k1 += 1;
        }
        if opt.len() == 11 {
            flat += 1;
        }
        let mut cols = Vec::new();
        for (i, b) in [100usize, 200, 300].into_iter().enumerate() {
            if (b as u64) > l.rows() {
                cols.push("–".to_string());
                continue;
            }
            let (_, v, m, _) = sweep(&l, b, crit);
            let h = v <= m + 1e-9 * m.abs().max(1.0);
            fixed[i].0 += 1;
            fixed[i].1 += h as usize;
            cols.push(if h { "yes".into() } else { "no".into() });
        }
        let name = f
            .file_name()
            .map(|s| s.to_string_lossy().trim_end_matches(".mtx.gz").to_string())
            .unwrap_or_default();
        println!(
            "| {name} | {} | {} | {} ({}..{}) | {} | {kh:.3} | {} | {vh:.4} | {vmin:.4} | {} | {} |",
            a.nrows(),
            a.nnz(),
            sel.bln,
            sel.window.0,
            sel.window.1,
            crit.map_or("none".into(), |c| c.to_string()),
            fmt_ks(&opt),
            if hit { "yes" } else { "no" },
            cols.join(" | ")
        );
    }
    println!();
    println!(
        "Heuristic k variance-optimal at the chosen bLN: {hits}/{n} matrices ({:.1} %); \
         k = 1.000 alone optimal on {only_k1}; all 11 k tie on {flat} (hits without them: \
         {}/{}).",
        100.0 * hits as f64 / n.max(1) as f64,
        hits - flat,
        n - flat
    );
    for (i, b) in [100, 200, 300].iter().enumerate() {
        println!(
            "At bLN = {b}: {}/{} ({:.1} %).",
            fixed[i].1,
            fixed[i].0,
            100.0 * fixed[i].1 as f64 / fixed[i].0.max(1) as f64
        );
    }
    println!("Selection time (critical scan + bLN search), all matrices: {sel_ms:.1} ms.");
    if std::env::var("SPMVKIT_TEB_LARGE").is_ok_and(|v| v == "0") {
        return;
    }
    println!();
    println!("| generated matrix | rows | nnz | bLN | k | stages (ms) |");
    println!("|---|---|---|---|---|---|");
    for spec in ["powerlaw:2000000,8", "poisson3d:100", "uniform:1000000,16"] {
        let a = spmvkit::gen::generate_f64(spec).expect("generator");
        let t = Instant::now();
        let l = spmvkit::methods::teb::build(&a, &Params::new()).expect("teb");
        let total = t.elapsed().as_secs_f64() * 1e3;
        let st: Vec<String> = Layout::<f64>::prep_stages(&l)
            .iter()
            .map(|(n, d)| format!("{n} {:.1}", d.as_secs_f64() * 1e3))
            .collect();
        let sel = l.selection().expect("rows");
        println!(
            "| {spec} | {} | {} | {} | {} | {}; total {total:.1} |",
            a.nrows(),
            a.nnz(),
            sel.bln,
            sel.k,
            st.join(", ")
        );
    }
}
