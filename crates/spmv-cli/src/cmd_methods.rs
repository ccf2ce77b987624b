//! `spmv methods`: the registered SpMV methods.

use anyhow::Result;
use clap::Args;
use serde_json::json;

/// List the SpMV methods, their sources, executors and parameters.
#[derive(Args)]
pub struct MethodsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
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
    let gpu_note = match spmvkit::gpu::Gpu::get() {
        Ok(g) => format!("GPU: {} ({})", g.name(), g.arch()),
        Err(e) => format!("no GPU ({e}): GPU methods fall back to their CPU mirrors"),
    };
    println!("{gpu_note}\n");
    println!(
        "{:<18} {:<4} {:<4} {:<6} summary",
        "method", "gpu", "cpu", "determ"
    );
    for i in &infos {
        let yn = |b: bool| if b { "yes" } else { "-" };
        println!(
            "{:<18} {:<4} {:<4} {:<6} {}",
            i.name,
            yn(i.gpu),
            yn(i.cpu),
            yn(i.deterministic),
            i.summary
        );
        println!("{:<36} source: {}", "", i.source);
        for p in i.params {
            println!("{:<36} --param {}={} : {}", "", p.key, p.default, p.help);
        }
    }
    Ok(())
}
