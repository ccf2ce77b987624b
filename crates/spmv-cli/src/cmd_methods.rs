//! `spmv methods`: the registered SpMV methods.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use crate::text;

/// List the SpMV methods: executors (GPU kernel, CPU mirror), determinism, summary, source and
/// parameters, wrapped to the terminal's width (80 columns when not a terminal).
#[derive(Args)]
pub struct MethodsArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also explain every parameter (`--param KEY=VALUE` of `spmv run` and `spmv bench`).
    #[arg(short, long)]
    verbose: bool,
}

pub fn run(args: MethodsArgs) -> Result<()> {
    let infos: Vec<_> = spmvkit::methods::registry()
        .iter()
        .map(|m| m.info())
        .collect();
    if args.json {
        let v: Vec<_> = infos
            .iter()
            .map(|i| {
                json!({
                    "name": i.name, "summary": i.summary, "source": i.source,
                    "deterministic": i.deterministic, "gpu": i.gpu, "cpu": i.cpu,
                    "params": i.params.iter().map(|p| json!({"key": p.key, "default": p.default, "help": p.help})).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let width = text::terminal_width(80);
    let gpu_note = match spmvkit::gpu::Gpu::get() {
        Ok(g) => format!("GPU: {} ({}).", g.name(), g.arch()),
        Err(e) => format!("No GPU ({e}): methods with a GPU kernel run their CPU mirrors."),
    };
    println!("{}\n", text::wrap(&gpu_note, width, "", ""));
    for i in &infos {
        let executors = match (i.gpu, i.cpu) {
            (true, true) => "GPU kernel + CPU mirror",
            (true, false) => "GPU only",
            (false, true) => "CPU only",
            (false, false) => "no executor",
        };
        let det = if i.deterministic {
            "bitwise deterministic"
        } else {
            "not bitwise deterministic"
        };
        println!(
            "{}",
            text::wrap(
                &format!("{} ({executors}; {det})", i.name),
                width,
                "",
                "    "
            )
        );
        println!("{}", text::wrap(i.summary, width, "    ", "    "));
        println!(
            "{}",
            text::wrap(&format!("source: {}", i.source), width, "    ", "        ")
        );
        if i.params.is_empty() {
            println!();
            continue;
        }
        if args.verbose {
            println!("    parameters (--param KEY=VALUE):");
            for p in i.params {
                println!("      {}={}", p.key, p.default);
                println!("{}", text::wrap(p.help, width, "          ", "          "));
            }
        } else {
            let list: Vec<String> = i
                .params
                .iter()
                .map(|p| format!("{}={}", p.key, p.default))
                .collect();
            println!(
                "{}",
                text::wrap(
                    &format!("parameters: {}", list.join(", ")),
                    width,
                    "    ",
                    "        "
                )
            );
        }
        println!();
    }
    if !args.verbose {
        println!("`spmv methods --verbose` explains every parameter.");
    }
    Ok(())
}
