//! The launch layer's argument structs against the kernel sources, without NVRTC or a GPU: for
//! every declared entry of every room (`spmvkit::methods::kernel_sources()`), of the runtime
//! (`spmvkit::gpu::internal_kernels()`) and of the solvers (`spmvkit::solve::kernel_sources()`),
//! the kernel's `struct` of the same name (an entry taking
//! its struct by value) or the entry's parameter list (`Abi::Params`) has the Rust struct's
//! fields, in order, with the same names and C types (a nested struct, such as the prelude's
//! `CsrArgs`, field by field too). The NVRTC checks (`gpu::launch`) verify
//! types, offsets and sizes when a source is compiled; this one also catches a renamed or
//! reordered field of the same type, and runs in the plain `cargo test`.

use spmvkit::gpu::launch::{Abi, ArgsLayout, Elem, FieldKind};
use spmvkit::gpu::{Kernels, PRELUDE};
use spmvkit::Precision;

/// The source without comments and line continuations.
fn clean(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = &r[r.find('\n').unwrap_or(r.len())..];
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = &r[r.find("*/").map_or(r.len(), |i| i + 2)..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.replace("\\\n", " ")
}

/// The text between the parenthesis at `open` and its match.
fn parenthesised(s: &str, open: usize) -> &str {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &s[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses at {open}")
}

/// One declaration (`const int* __restrict__ row_ptr`) as (name, kind).
fn declaration(decl: &str) -> (String, FieldKind) {
    let spaced = decl.replace('*', " * ");
    let words: Vec<&str> = spaced
        .split_whitespace()
        .filter(|w| *w != "__restrict__")
        .collect();
    let (name, ty) = words
        .split_last()
        .unwrap_or_else(|| panic!("empty declaration"));
    let star = ty.iter().position(|w| *w == "*");
    let is_const = star.is_some_and(|s| ty[..s].contains(&"const"));
    let base: Vec<&str> = ty
        .iter()
        .copied()
        .filter(|w| *w != "const" && *w != "*")
        .collect();
    let base = base.join(" ");
    let kind = match (star, base.as_str()) {
        (None, "int") => FieldKind::Int,
        (None, "unsigned" | "unsigned int") => FieldKind::Unsigned,
        (None, "unsigned long long") => FieldKind::U64,
        (None, "real_t") => FieldKind::Real,
        (None, "double") => FieldKind::Double,
        (None, s) if s.ends_with("Args") => FieldKind::Struct(Box::leak(s.into())),
        (Some(_), b) => FieldKind::Ptr {
            elem: match b {
                "unsigned char" => Elem::Byte,
                "int" | "unsigned" | "unsigned int" => Elem::Word,
                "unsigned long long" => Elem::U64,
                "real_t" => Elem::Real,
                "double" => Elem::Double,
                "val_t" => Elem::Stored,
                "off_t" => Elem::Offsets,
                other => panic!("pointer to {other} in `{decl}`"),
            },
            writable: !is_const,
        },
        (None, other) => panic!("type {other} in `{decl}`"),
    };
    (name.to_string(), kind)
}

/// The fields of `struct name { ... };`.
fn struct_fields(src: &str, name: &str) -> Vec<(String, FieldKind)> {
    let head = format!("struct {name} {{");
    let at = src.find(&head).unwrap_or_else(|| panic!("no `{head}`")) + head.len();
    let body = &src[at..at + src[at..].find("};").expect("struct end")];
    body.split(';')
        .filter(|d| !d.trim().is_empty())
        .map(declaration)
        .collect()
}

/// `call` (`NAME(args)`) with the function-like macro NAME expanded, when the source defines one.
fn expand(src: &str, call: &str) -> String {
    let call = call.trim();
    let Some(open) = call.find('(') else {
        return call.to_string();
    };
    let name = &call[..open];
    let def = format!("#define {name}(");
    let Some(at) = src.find(&def) else {
        return call.to_string();
    };
    let formals = parenthesised(src, at + def.len() - 1);
    let end = at + def.len() + formals.len() + 1;
    let body = &src[end..end + src[end..].find('\n').unwrap_or(src.len() - end)];
    let actuals: Vec<&str> = parenthesised(call, open).split(',').collect();
    let subst: Vec<(&str, &str)> = formals
        .split(',')
        .map(str::trim)
        .zip(
            actuals
                .iter()
                .map(|a| a.trim())
                .chain(std::iter::repeat("")),
        )
        .filter(|(f, _)| !f.is_empty())
        .collect();
    // the formals replaced as whole identifiers (`PACKED_PARAMS(R)` passes R on)
    let mut out = String::from(" ");
    let mut word = String::new();
    for c in body.chars().chain([' ']) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        let w = std::mem::take(&mut word);
        out.push_str(subst.iter().find(|(f, _)| *f == w).map_or(&w, |(_, a)| a));
        out.push(c);
    }
    out
}

/// The parameters of entry `name`, written out or generated by a macro (`base##SUFFIX(`, the
/// longest base that starts `name`).
fn entry_params(src: &str, name: &str) -> Vec<(String, FieldKind)> {
    let exact = format!(" {name}(");
    let open = match src.find(&exact) {
        Some(at) => at + exact.len() - 1,
        None => {
            let (at, base) = src
                .match_indices("##")
                .filter_map(|(i, _)| {
                    let start = src[..i].rfind(|c: char| !(c.is_alphanumeric() || c == '_'))? + 1;
                    let base = &src[start..i];
                    (!base.is_empty() && name.starts_with(base)).then_some((start, base))
                })
                .max_by_key(|(_, b)| b.len())
                .unwrap_or_else(|| panic!("no definition of entry {name}"));
            at + base.len() + src[at + base.len()..].find('(').expect("parameters")
        }
    };
    declarations(src, parenthesised(src, open))
        .iter()
        .map(|d| declaration(d))
        .collect()
}

/// The declarations of a parameter list, each piece that calls a one-argument function-like
/// macro of the source (`PACKED_PARAMS(__restrict__)`) expanded in place, recursively.
fn declarations(src: &str, list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .flat_map(|d| {
            let e = expand(src, d);
            if e.trim() == d {
                vec![d.to_string()]
            } else {
                declarations(src, &e)
            }
        })
        .collect()
}

/// The fields of a Rust layout as (name, kind).
fn rust_fields(l: &ArgsLayout) -> Vec<(String, FieldKind)> {
    l.fields
        .iter()
        .map(|f| (f.name.to_string(), f.kind))
        .collect()
}

/// Checks the structs nested in `l` against their C declarations.
fn check_nested(src: &str, where_: &str, l: &ArgsLayout) {
    for n in l.fields.iter().filter_map(|f| f.nested.as_deref()) {
        assert_eq!(
            struct_fields(src, n.name),
            rust_fields(n),
            "{where_}: the nested {}",
            n.name
        );
        check_nested(src, where_, n);
    }
}

fn check(k: &Kernels) -> usize {
    let src = clean(&format!("{PRELUDE}\n{}", k.source.source));
    for e in k.entries {
        let l = (e.args.layout)(Precision::F64);
        let got = match e.abi {
            Abi::Struct => struct_fields(&src, e.args.name),
            Abi::Params => entry_params(&src, e.name),
        };
        let where_ = format!("{}: entry {} ({:?})", k.source.name, e.name, e.abi);
        assert_eq!(
            got,
            rust_fields(&l),
            "{where_} against the Rust {}",
            e.args.name
        );
        check_nested(&src, &where_, &l);
    }
    k.entries.len()
}

#[test]
fn every_argument_struct_matches_its_kernel_source() {
    let mut sources = spmvkit::methods::kernel_sources();
    sources.extend(spmvkit::gpu::internal_kernels());
    sources.extend(spmvkit::solve::kernel_sources());
    let checked: usize = sources.iter().map(check).sum();
    // every source but the limits probe (launched the older way) declares its entries
    let declared = sources.iter().filter(|k| !k.entries.is_empty()).count();
    assert!(
        declared + 1 >= sources.len(),
        "{declared} of {}",
        sources.len()
    );
    assert!(checked >= 52, "{checked} entries checked");
}

#[test]
fn the_parser_reads_declarations_and_macros() {
    assert_eq!(
        declaration(" const int* __restrict__ row_ptr"),
        (
            "row_ptr".into(),
            FieldKind::Ptr {
                elem: Elem::Word,
                writable: false
            }
        )
    );
    assert_eq!(
        declaration("unsigned long long nctas"),
        ("nctas".into(), FieldKind::U64)
    );
    assert_eq!(
        declaration("double damping"),
        ("damping".into(), FieldKind::Double)
    );
    assert_eq!(
        declaration("const double* __restrict__ part"),
        (
            "part".into(),
            FieldKind::Ptr {
                elem: Elem::Double,
                writable: false
            }
        )
    );
    let src = clean(
        "// c\n#define P(R) int n, real_t* R y\nextern \"C\" __global__ void k_a(P(__restrict__)) {}\n\
         #define E(V) extern \"C\" __global__ void k_b##V(int m, /* x */ unsigned c) {}\nE(1)\n",
    );
    assert_eq!(
        entry_params(&src, "k_a"),
        vec![
            ("n".to_string(), FieldKind::Int),
            (
                "y".to_string(),
                FieldKind::Ptr {
                    elem: Elem::Real,
                    writable: true
                }
            )
        ]
    );
    assert_eq!(
        entry_params(&src, "k_b1"),
        vec![
            ("m".to_string(), FieldKind::Int),
            ("c".to_string(), FieldKind::Unsigned)
        ]
    );
}
