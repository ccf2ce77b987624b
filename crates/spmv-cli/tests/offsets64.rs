//! Files with 64-bit row offsets through the CLI (issue #25, docs/offsets.md): `spmv info` and
//! `spmv run` on a `.spmvkit` cache of format version 2, and `spmv run FILE.mtx --offsets 64`,
//! on the CPU backend.

mod common;

use common::spmv_ok;

/// A small matrix written as a 32-bit Matrix Market file and as a 64-bit cache.
fn files(dir: &std::path::Path) -> (spmvkit::Csr<f64>, String, String) {
    let a = spmvkit::gen::generate_f64("powerlaw:400,6,seed=4").unwrap();
    let mtx = dir.join("a.mtx");
    let wide = dir.join("w.spmvkit");
    spmvkit::io::write_matrix_market(&mtx, &a).unwrap();
    spmvkit::io::write_cache(&wide, &a.with_offsets::<u64>().unwrap(), None).unwrap();
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    (a, s(&mtx), s(&wide))
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn info_and_run_read_a_64_bit_cache() {
    let dir = std::env::temp_dir().join(format!("spmv-offsets64-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (a, mtx, wide) = files(&dir);
    let v = json(&spmv_ok(&["info", &wide, "--json"]));
    assert_eq!(v["offset_bits"], 64);
    assert_eq!(v["nnz"], a.nnz());
    let v32 = json(&spmv_ok(&["info", &mtx, "--json", "--no-cache"]));
    assert_eq!(v32["offset_bits"], 32);
    assert_eq!(v32["row_len"], v["row_len"]);
    assert!(spmv_ok(&["info", &wide]).contains("64-bit row offsets"));
    for (input, extra) in [(&wide, None), (&mtx, Some("64")), (&wide, Some("64"))] {
        let mut args = vec!["run", input, "--cpu", "--method", "csr-vector", "--json"];
        if let Some(o) = extra {
            args.extend(["--offsets", o, "--no-cache"]);
        }
        let r = json(&spmv_ok(&args));
        assert_eq!(r["nnz"], a.nnz(), "{args:?}");
        // at --offsets auto the plan takes 32 bits for a matrix this small (docs/offsets.md)
        let notes = r["notes"].to_string();
        let wide = notes.contains("row offsets") && notes.contains("64-bit");
        assert_eq!(wide, extra.is_some(), "{args:?}: {notes}");
    }
    // --offsets 32 narrows a small 64-bit cache
    let r = json(&spmv_ok(&[
        "run",
        &wide,
        "--cpu",
        "--method",
        "csr-vector",
        "--json",
        "--offsets",
        "32",
    ]));
    assert!(!r["notes"].to_string().contains("64-bit"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `spmv gen -o` (docs/offsets.md): a matrix within 2^31−1 nonzeros is written as before (a
/// version 1 cache); what cannot be generated (past 2^40, `renumber=random` past 2^31−1, more
/// than the memory allows with 64-bit offsets) is an error naming the spec and the limit, and
/// leaves no file, complete or partial, behind. The 64-bit cache round trip of a generated
/// matrix is `gen::tests::a_64_bit_generated_matrix_round_trips_through_the_files` (a test
/// threshold: 2^31 nonzeros do not fit this machine).
#[test]
fn gen_writes_within_the_limits_and_names_them_past() {
    let dir = std::env::temp_dir().join(format!("spmv-gen64-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let small = out("small.spmvkit");
    spmv_ok(&["gen", "powerlaw:400,6,seed=4", "-o", &small]);
    assert_eq!(spmvkit::io::read_cache_header(&small).unwrap().version, 1);
    assert_eq!(
        spmvkit::io::load::<f64>(&small).unwrap(),
        spmvkit::gen::generate_f64("powerlaw:400,6,seed=4").unwrap()
    );
    /// A spec that cannot be generated, the file asked for, what the error says, the
    /// environment.
    struct Refused {
        spec: &'static str,
        file: &'static str,
        says: &'static [&'static str],
        env: Option<(&'static str, &'static str)>,
    }
    for r in [
        Refused {
            spec: "uniform:2000000000,1000",
            file: "big.mtx",
            says: &["cannot generate uniform:2000000000,1000", "limit of 2^40"],
            env: None,
        },
        Refused {
            spec: "uniform:50000,50000,renumber=random",
            file: "renumbered.spmvkit",
            says: &[
                "uniform:50000,50000,renumber=random",
                "2^31−1",
                "2500000000",
            ],
            env: None,
        },
        Refused {
            spec: "uniform:30000000,100",
            file: "wide.spmvkit",
            says: &["uniform:30000000,100", "needs about"],
            env: Some((spmvkit::memory::LIMIT_VAR, "1G")),
        },
    ] {
        let mut c = std::process::Command::new(common::binary());
        c.args(["gen", r.spec, "-o", &out(r.file)]);
        if let Some((k, v)) = r.env {
            c.env(k, v);
        }
        let done = c.output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(!done.status.success(), "{} was accepted", r.spec);
        assert!(!err.contains("panicked"), "{}: {err}", r.spec);
        for s in r.says {
            assert!(err.contains(s), "{}: no '{s}' in: {err}", r.spec);
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["small.spmvkit"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
