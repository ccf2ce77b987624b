//! `--auto=model|trial` and `--deterministic`, shared by `spmv run` and `spmv bench`: they set the
//! `mode` and `deterministic` parameters of the `auto` method (issue #11), and `--deterministic`
//! checks the other methods named.

use anyhow::Result;
use clap::Args;
use spmvkit::methods::{find_variant, Params};

use crate::usage;

/// The flags.
#[derive(Args, Clone, Debug, Default)]
pub struct AutoArgs {
    /// How the `auto` method chooses: `trial` (the default) prepares the model's best few
    /// candidates and times them briefly on the GPU, keeping the fastest (the trial counts as
    /// preprocessing, and runs only when `calls` is large enough to repay it; otherwise it is
    /// `model`); `model` predicts from matrix features alone (the nearest training matrices in
    /// the committed H200 results) and never times. Same as `--param mode=...` for `auto`.
    #[arg(long, value_name = "MODE", value_parser = ["model", "trial"])]
    pub auto: Option<String>,
    /// Bitwise-reproducible results only: `auto` chooses among deterministic methods (no
    /// atomics, a fixed reduction order); another method must be deterministic itself (`spmv
    /// methods` marks them).
    #[arg(long)]
    pub deterministic: bool,
}

impl AutoArgs {
    /// The parameters these flags set on `auto`.
    fn auto_params(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(mode) = &self.auto {
            out.push(("mode", mode.clone()));
        }
        if self.deterministic {
            out.push(("deterministic", "1".to_string()));
        }
        out
    }

    /// Adds the flags' parameters to `params` for a method called `method`, refusing a clash with
    /// a value given otherwise.
    fn merge(&self, method: &str, params: &mut Params) -> Result<()> {
        for (key, value) in self.auto_params() {
            let given = params
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string());
            match given {
                Some(given) if given != value => {
                    return Err(usage(format!(
                        "{method}: --{} sets {key}={value}, but {key}={given} is given as well",
                        if key == "mode" {
                            "auto"
                        } else {
                            "deterministic"
                        }
                    )))
                }
                _ => params.set(key, &value),
            }
        }
        Ok(())
    }

    /// For `spmv run`: the method's parameters with the flags applied. `--auto` needs `auto`;
    /// `--deterministic` with another method is an error unless that method is deterministic.
    pub fn apply_run(&self, method: &str, params: &mut Params) -> Result<()> {
        let (m, variant) = find_variant(method)?;
        let info = m.info();
        if info.name == "auto" {
            // a clash with the variant's own values (`auto[mode=model]`) is an error too
            self.merge(method, &mut variant.clone())?;
            return self.merge(method, params);
        }
        if self.auto.is_some() {
            return Err(usage(format!(
                "--auto chooses how the `auto` method chooses; add --method auto (now: {method})"
            )));
        }
        if self.deterministic && !info.deterministic {
            return Err(usage(format!(
                "--deterministic: {} is not bitwise deterministic (its results may differ from \
                 call to call); choose a deterministic method (`spmv methods` marks them) or \
                 --method auto --deterministic",
                info.name
            )));
        }
        Ok(())
    }

    /// For `spmv bench`: the method list with the flags written into every `auto` entry
    /// (`auto` becomes `auto[mode=trial]`), and a note naming the listed methods that are not
    /// deterministic when `--deterministic` is given (they still run, for comparison).
    pub fn apply_bench(&self, methods: &[String]) -> Result<(Vec<String>, Option<String>)> {
        let mut out = Vec::with_capacity(methods.len());
        let mut not_det = Vec::new();
        for spec in methods {
            let (m, mut params) = find_variant(spec)?;
            let info = m.info();
            if info.name != "auto" {
                if !info.deterministic {
                    not_det.push(spec.clone());
                }
                out.push(spec.clone());
                continue;
            }
            self.merge(spec, &mut params)?;
            let items: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(if items.is_empty() {
                "auto".to_string()
            } else {
                format!("auto[{}]", items.join(";"))
            });
        }
        if self.auto.is_some() && !out.iter().any(|s| s.starts_with("auto")) {
            return Err(usage(
                "--auto chooses how the `auto` method chooses, but --methods does not list auto",
            ));
        }
        let note = (self.deterministic && !not_det.is_empty()).then(|| {
            format!(
                "--deterministic restricts auto; these listed methods are not bitwise \
                 deterministic and run for comparison: {}",
                not_det.join(", ")
            )
        });
        Ok((out, note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(auto: Option<&str>, deterministic: bool) -> AutoArgs {
        AutoArgs {
            auto: auto.map(str::to_string),
            deterministic,
        }
    }

    #[test]
    fn run_flags_set_auto_params_and_check_other_methods() {
        let mut p = Params::new();
        flags(Some("trial"), true)
            .apply_run("auto", &mut p)
            .unwrap();
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![("deterministic", "1"), ("mode", "trial")]
        );
        // the same value given twice is fine, a different one is an error
        let mut p = Params::parse(["mode=trial"]).unwrap();
        flags(Some("trial"), false)
            .apply_run("auto", &mut p)
            .unwrap();
        let mut p = Params::parse(["mode=model"]).unwrap();
        let e = flags(Some("trial"), false).apply_run("auto", &mut p);
        assert!(e.unwrap_err().to_string().contains("mode=model"));
        let mut p = Params::new();
        assert!(flags(Some("model"), false)
            .apply_run("auto[mode=trial]", &mut p)
            .is_err());
        // another method: --auto is an error, --deterministic checks the method
        let mut p = Params::new();
        assert!(flags(Some("trial"), false)
            .apply_run("csr-vector", &mut p)
            .is_err());
        flags(None, true).apply_run("csr-vector", &mut p).unwrap();
        let e = flags(None, true).apply_run("csc", &mut p).unwrap_err();
        assert!(e.to_string().contains("not bitwise deterministic"), "{e}");
        assert!(p.is_empty());
    }

    #[test]
    fn bench_flags_rewrite_auto_entries_and_note_the_others() {
        let list: Vec<String> = ["cusparse", "auto", "auto[calls=1]", "csr-vector"]
            .map(String::from)
            .to_vec();
        let (out, note) = flags(Some("trial"), true).apply_bench(&list).unwrap();
        assert_eq!(
            out,
            vec![
                "cusparse",
                "auto[deterministic=1;mode=trial]",
                "auto[calls=1;deterministic=1;mode=trial]",
                "csr-vector"
            ]
        );
        assert!(note.unwrap().contains("cusparse"));
        let (out, note) = AutoArgs::default().apply_bench(&list).unwrap();
        assert_eq!(out, list);
        assert!(note.is_none());
        let plain: Vec<String> = vec!["csr-vector".into()];
        assert!(flags(Some("model"), false).apply_bench(&plain).is_err());
        let clash: Vec<String> = vec!["auto[mode=model]".into()];
        assert!(flags(Some("trial"), false).apply_bench(&clash).is_err());
    }
}
