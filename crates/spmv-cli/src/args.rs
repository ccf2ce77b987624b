//! Value parsers shared by the subcommands: numbers that must be finite, in a range, or at least
//! one, refused while the arguments are parsed (a usage error, exit status 2) instead of
//! surfacing later as a wrong result.

/// A finite number: NaN and infinities are refused (`--alpha nan` would make every method's
/// result look wrong).
pub fn finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("'{s}' is not a finite number"))
    }
}

/// A finite number ≥ 0.
pub fn non_negative(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{v} is negative"))
    }
}

/// A damping factor in [0, 1).
pub fn damping(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not in [0, 1)"))
    }
}

/// A count of at least one (`--reps 0` would time nothing).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

/// A reordering option: `none`, `rcm`, `bisection` or `auto` (the error lists them).
pub fn reorder(s: &str) -> Result<spmvkit::reorder::Reorder, String> {
    s.trim().parse().map_err(|e: spmvkit::Error| e.to_string())
}

/// An ordering: `rcm` or `bisection` (the error lists them).
pub fn ordering(s: &str) -> Result<spmvkit::reorder::Ordering, String> {
    s.trim().parse().map_err(|e: spmvkit::Error| e.to_string())
}

/// Row offsets: `auto`, `32` or `64` (docs/offsets.md).
pub fn offsets(s: &str) -> Result<spmvkit::Offsets, String> {
    s.trim().parse().map_err(|e: spmvkit::Error| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_refuse_what_the_commands_cannot_use() {
        assert_eq!(finite("-0.75"), Ok(-0.75));
        assert!(finite("nan").is_err());
        assert!(finite("inf").is_err());
        assert!(finite("x").is_err());
        assert!(non_negative("-1").is_err());
        assert_eq!(damping("0.85"), Ok(0.85));
        assert!(damping("1").is_err());
        assert_eq!(at_least_one("3"), Ok(3));
        assert!(at_least_one("0").is_err());
        assert!(at_least_one("-1").is_err());
        assert!(offsets("64").is_ok() && offsets("auto").is_ok());
        assert!(offsets("48").is_err());
    }
}
