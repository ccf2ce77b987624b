//! Method parameters as plain data (after CUB's tuning policies): each method declares its keys
//! with the papers' defaults; users override them as `key=value`.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The parameter a method declares when it prepares a CPU fallback layout beside a GPU-only one
/// (`auto`); a [`crate::Plan`] on the GPU sets it to 0 unless the caller set it.
pub const CPU_FALLBACK_PARAM: &str = "cpu_fallback";

/// One tunable parameter of a method.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub key: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// User-given parameter overrides, `key=value`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `key=value` items.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut p = Params::new();
        for item in items {
            let (k, v) = item.split_once('=').ok_or_else(|| {
                Error::InvalidArgument(format!("parameter '{item}' is not of the form key=value"))
            })?;
            p.set(k.trim(), v.trim());
        }
        Ok(p)
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.0.insert(key.to_string(), value.to_string());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Rejects keys the method does not declare.
    pub fn check_known(&self, method: &str, specs: &[ParamSpec]) -> Result<()> {
        for k in self.0.keys() {
            if !specs.iter().any(|s| s.key == k) {
                let known: Vec<&str> = specs.iter().map(|s| s.key).collect();
                return Err(Error::Param {
                    method: method.into(),
                    key: k.clone(),
                    msg: if known.is_empty() {
                        "this method takes no parameters".into()
                    } else {
                        format!("unknown; known parameters: {}", known.join(", "))
                    },
                });
            }
        }
        Ok(())
    }

    /// The value of `key` parsed as `V`, or the declared default.
    pub fn get<V: FromStr>(&self, method: &str, specs: &[ParamSpec], key: &str) -> Result<V>
    where
        V::Err: std::fmt::Display,
    {
        let spec = specs
            .iter()
            .find(|s| s.key == key)
            .ok_or_else(|| Error::Param {
                method: method.into(),
                key: key.into(),
                msg: "not declared by the method (a bug in spmvkit)".into(),
            })?;
        let raw = self.0.get(key).map(String::as_str).unwrap_or(spec.default);
        raw.parse::<V>().map_err(|e| Error::Param {
            method: method.into(),
            key: key.into(),
            msg: format!("bad value '{raw}': {e}"),
        })
    }
}
