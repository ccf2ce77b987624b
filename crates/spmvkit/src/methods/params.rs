//! Method parameters as plain data (after CUB's tuning policies): each method declares its keys
//! with the papers' defaults; users override them as `key=value`.
//!
//! A room declares its parameters once, as a typed struct written with [`params!`]: every field
//! is one parameter, with its type, its default (as a user would type it), an optional range
//! and a doc comment that is also the parameter's help line. From that one declaration the macro
//! derives the [`ParamSpec`] list (`spmv methods`, `--help`), the parsing of the overrides and
//! the check of every value against its type and range, with errors that name the method, the
//! key, the bad value and what is allowed. What involves several parameters at once (one
//! needing another's value, a limit that depends on the precision) stays with the room, which
//! turns the parsed struct into its build configuration.
//!
//! Values are numbers, keywords ([`keywords!`]; the shared ones, [`Switch`], [`OnOff`], [`Auto`]
//! and [`Flag`], are here), a keyword or a number ([`Or`], e.g. [`AutoOr`]), or a type of the
//! room's own that implements [`ParamValue`]. Ranges are `lo..=hi`, `lo..`, [`multiple_of`] and
//! [`one_of`].

use std::collections::BTreeMap;
use std::fmt::Display;
use std::ops::{RangeFrom, RangeInclusive, Rem};

use crate::error::{Error, Result};

/// The parameter a method declares when it prepares a CPU fallback layout beside a GPU-only one
/// (`auto`); a [`crate::Plan`] on the GPU sets it to 0 unless the caller set it.
pub const CPU_FALLBACK_PARAM: &str = "cpu_fallback";

/// One tunable parameter of a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub key: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// The key by which a variant or `--param` sets the Plan's reordering (`csr-packed[reorder=rcm]`,
/// [`crate::PlanOptions::reorder`]): a key of the plan, so every method takes it.
pub const REORDER_PARAM: &str = "reorder";

/// The key by which a variant or `--param` sets the Plan's x windows (`csr-packed[windows=2]`,
/// [`crate::PlanOptions::windows`]): a key of the plan, like [`REORDER_PARAM`].
pub const WINDOWS_PARAM: &str = "windows";

/// The key by which a variant or `--param` sets how the Plan stores the matrix values
/// (`csr-vector[storage=bf16]`, [`crate::PlanOptions::values`], docs/precision.md): a key of
/// the plan, like [`REORDER_PARAM`]; a method that does not support the storage refuses it.
/// (`values` is `csr-packed`'s own key: dictionary or raw.)
pub const VALUES_PARAM: &str = "storage";

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

    /// The value given for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Removes `key` and returns its value.
    pub fn take(&mut self, key: &str) -> Option<String> {
        self.0.remove(key)
    }

    /// Rejects keys the method does not declare ([`REORDER_PARAM`], [`WINDOWS_PARAM`] and
    /// [`VALUES_PARAM`], the Plan's own keys, are every method's).
    pub fn check_known(&self, method: &str, specs: &[ParamSpec]) -> Result<()> {
        for k in self
            .0
            .keys()
            .filter(|k| ![REORDER_PARAM, WINDOWS_PARAM, VALUES_PARAM].contains(&k.as_str()))
        {
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

    /// The text of `key`: the user's, or the default `specs` declares.
    fn raw<'a>(&'a self, method: &str, specs: &'a [ParamSpec], key: &str) -> Result<&'a str> {
        let spec = specs
            .iter()
            .find(|s| s.key == key)
            .ok_or_else(|| Error::Param {
                method: method.into(),
                key: key.into(),
                msg: "not declared by the method (a bug in spmvkit)".into(),
            })?;
        Ok(self.0.get(key).map(String::as_str).unwrap_or(spec.default))
    }

    /// The value of `key` (the user's, or the default `specs` declares) as a `V` within `range`;
    /// an error naming the method, the key, the value and what is allowed otherwise. The
    /// parsing behind `params!`.
    pub(crate) fn value<V: ParamValue, R: ParamRange<V::Num>>(
        &self,
        method: &str,
        specs: &[ParamSpec],
        key: &str,
        range: &R,
    ) -> Result<V> {
        let raw = self.raw(method, specs, key)?;
        match V::parse_param(raw) {
            Some(v) if v.number().is_none_or(|n| range.admits(n)) => Ok(v),
            _ => Err(Error::Param {
                method: method.into(),
                key: key.into(),
                msg: format!("'{raw}' is not {}", V::allowed(range)),
            }),
        }
    }
}

/// A type a parameter's value can have: parsed from the text after `key=`, with a number (if
/// it holds one) that a declared range bounds.
pub trait ParamValue: Sized {
    /// The number a range bounds ([`std::convert::Infallible`] for keywords, which take no range).
    type Num: Copy + PartialOrd + Display;

    /// The value `s` stands for; `None` when it is none of this type's values.
    fn parse_param(s: &str) -> Option<Self>;

    /// The number to check against the declared range (`None`: a keyword, never out of range).
    fn number(&self) -> Option<Self::Num>;

    /// What is allowed within `range`, completing "'x' is not …": `auto, on or off`, `an integer
    /// in 1..=32`.
    fn allowed<R: ParamRange<Self::Num>>(range: &R) -> String;
}

macro_rules! whole_numbers {
    ($($t:ty),*) => {$(
        impl ParamValue for $t {
            type Num = $t;
            fn parse_param(s: &str) -> Option<Self> {
                s.parse().ok()
            }
            fn number(&self) -> Option<$t> {
                Some(*self)
            }
            fn allowed<R: ParamRange<$t>>(range: &R) -> String {
                if range.is_any() {
                    "a non-negative integer".into()
                } else {
                    range.phrase("an integer")
                }
            }
        }
    )*};
}

whole_numbers!(u8, u32, u64, usize);

impl ParamValue for f64 {
    type Num = f64;
    fn parse_param(s: &str) -> Option<Self> {
        s.parse().ok()
    }
    fn number(&self) -> Option<f64> {
        Some(*self)
    }
    fn allowed<R: ParamRange<f64>>(range: &R) -> String {
        range.phrase("a number")
    }
}

/// The numbers a parameter admits.
pub trait ParamRange<N> {
    /// Whether `n` is admitted.
    fn admits(&self, n: N) -> bool;

    /// `noun` (`an integer`, `a number`) narrowed to this range: `an integer in 1..=32`.
    fn phrase(&self, noun: &str) -> String;

    /// Whether every number is admitted (no range declared).
    fn is_any(&self) -> bool {
        false
    }
}

/// No range: every value of the type.
#[derive(Clone, Copy, Debug)]
pub struct Any;

impl<N> ParamRange<N> for Any {
    fn admits(&self, _: N) -> bool {
        true
    }
    fn phrase(&self, noun: &str) -> String {
        noun.into()
    }
    fn is_any(&self) -> bool {
        true
    }
}

impl<N: Copy + PartialOrd + Display> ParamRange<N> for RangeInclusive<N> {
    fn admits(&self, n: N) -> bool {
        self.contains(&n)
    }
    fn phrase(&self, noun: &str) -> String {
        format!("{noun} in {}..={}", self.start(), self.end())
    }
}

impl<N: Copy + PartialOrd + Display> ParamRange<N> for RangeFrom<N> {
    fn admits(&self, n: N) -> bool {
        self.contains(&n)
    }
    fn phrase(&self, noun: &str) -> String {
        format!("{noun} of at least {}", self.start)
    }
}

/// The multiples of `step` in `range` ([`multiple_of`]).
#[derive(Clone, Debug)]
pub struct MultipleOf<N> {
    step: N,
    range: RangeInclusive<N>,
}

/// The multiples of `step` in `range`: `multiple_of(32, 32..=1024)`.
pub const fn multiple_of<N>(step: N, range: RangeInclusive<N>) -> MultipleOf<N> {
    MultipleOf { step, range }
}

impl<N: Copy + PartialOrd + Display + Rem<Output = N> + From<u8>> ParamRange<N> for MultipleOf<N> {
    fn admits(&self, n: N) -> bool {
        self.range.contains(&n) && n % self.step == N::from(0)
    }
    fn phrase(&self, _: &str) -> String {
        format!(
            "a multiple of {} in {}..={}",
            self.step,
            self.range.start(),
            self.range.end()
        )
    }
}

/// A list of admitted numbers ([`one_of`]).
#[derive(Clone, Copy, Debug)]
pub struct OneOf<N, const K: usize>([N; K]);

/// Exactly the numbers of `values`: `one_of([1, 2, 4, 8, 16, 32])`.
pub const fn one_of<N, const K: usize>(values: [N; K]) -> OneOf<N, K> {
    OneOf(values)
}

impl<N: Copy + PartialOrd + Display, const K: usize> ParamRange<N> for OneOf<N, K> {
    fn admits(&self, n: N) -> bool {
        self.0.contains(&n)
    }
    fn phrase(&self, _: &str) -> String {
        or_list(&self.0.map(|v| v.to_string()))
    }
}

/// `a`, `a or b`, `a, b or c`.
pub fn or_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().into(),
        [head @ .., last] => {
            let head: Vec<&str> = head.iter().map(AsRef::as_ref).collect();
            format!("{} or {}", head.join(", "), last.as_ref())
        }
    }
}

/// An enum whose values are written as words ([`keywords!`]).
pub trait Keyword: Copy + 'static {
    /// The name of each value, in declaration order (aliases left out).
    const NAMES: &'static [&'static str];

    /// The value named `s` (a name or an alias).
    fn from_name(s: &str) -> Option<Self>;

    /// The value's name.
    fn name(self) -> &'static str;
}

/// Declares an enum whose values are keywords, written `Variant = "name"` (more names for the
/// same value after `|`, accepted but not listed), with [`Keyword`] and [`ParamValue`]
/// implemented; it derives `Clone, Copy, Debug, PartialEq, Eq`.
///
/// ```ignore
/// keywords! {
///     /// Whether hub rows are split.
///     pub enum Hub { Off = "off" | "0" }
/// }
/// ```
macro_rules! keywords {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $text:literal $(| $alias:literal)*
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::methods::params::Keyword for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];

            fn from_name(s: &str) -> Option<Self> {
                match s {
                    $($text $(| $alias)* => Some(Self::$variant),)+
                    _ => None,
                }
            }

            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl $crate::methods::params::ParamValue for $name {
            type Num = ::std::convert::Infallible;

            fn parse_param(s: &str) -> Option<Self> {
                <Self as $crate::methods::params::Keyword>::from_name(s)
            }

            fn number(&self) -> Option<::std::convert::Infallible> {
                None
            }

            fn allowed<R: $crate::methods::params::ParamRange<::std::convert::Infallible>>(
                _: &R,
            ) -> String {
                $crate::methods::params::or_list(
                    <Self as $crate::methods::params::Keyword>::NAMES,
                )
            }
        }
    };
}
pub(crate) use keywords;

keywords! {
    /// A feature that is on, off, or chosen by the method from the matrix.
    pub enum Switch {
        Auto = "auto",
        On = "on",
        Off = "off",
    }
}

impl Switch {
    /// Whether the feature is on, `auto` standing for `auto_choice`.
    pub fn is_on(self, auto_choice: bool) -> bool {
        match self {
            Switch::Auto => auto_choice,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

keywords! {
    /// A feature that is on or off.
    pub enum OnOff {
        On = "on",
        Off = "off",
    }
}

impl OnOff {
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

keywords! {
    /// A yes/no setting written 0 or 1 (`off`/`on` and `false`/`true` also accepted).
    pub enum Flag {
        No = "0" | "off" | "false",
        Yes = "1" | "on" | "true",
    }
}

impl Flag {
    pub fn is_set(self) -> bool {
        self == Flag::Yes
    }
}

keywords! {
    /// `auto`: the method chooses ([`AutoOr`]).
    pub enum Auto {
        Auto = "auto",
    }
}

/// A keyword of `K` or a value of `T` (its range the declared one): `auto` or a block count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Or<K, T> {
    Word(K),
    Value(T),
}

/// `auto` or a value of `T`.
pub type AutoOr<T> = Or<Auto, T>;

impl<K, T> Or<K, T> {
    /// The value, or `None` for the keyword.
    pub fn value(self) -> Option<T> {
        match self {
            Or::Word(_) => None,
            Or::Value(v) => Some(v),
        }
    }
}

impl<K: Keyword, T: ParamValue> ParamValue for Or<K, T> {
    type Num = T::Num;

    fn parse_param(s: &str) -> Option<Self> {
        K::from_name(s)
            .map(Or::Word)
            .or_else(|| T::parse_param(s).map(Or::Value))
    }

    fn number(&self) -> Option<T::Num> {
        match self {
            Or::Word(_) => None,
            Or::Value(v) => v.number(),
        }
    }

    fn allowed<R: ParamRange<T::Num>>(range: &R) -> String {
        let mut items: Vec<String> = K::NAMES.iter().map(|s| s.to_string()).collect();
        items.push(T::allowed(range));
        or_list(&items)
    }
}

/// Declares a method's parameters once, as a struct: each field is one parameter, written
///
/// ```ignore
/// /// The help line (a doc comment; several lines are joined with spaces).
/// pub key: Type = default, in range;
/// ```
///
/// `Type` implements [`ParamValue`]; `default` is the text a user would type, as an identifier
/// or a literal (`auto`, `256`, `0.15`, `"32,64,128"`); `, in range` is optional (`1..=32`,
/// `2..`, [`multiple_of`], [`one_of`]) and bounds the number the value holds. The macro makes
/// the struct (deriving `Clone, Copy, Debug, PartialEq`) and
///
/// - `SPEC_ARRAY` / `SPECS`: the [`ParamSpec`] of each field, in declaration order, the key
///   being the field's name and the help its doc;
/// - `from_params(method, params)`: the struct from user overrides, unknown keys and values that
///   are not of the type or out of range rejected ([`Error::Param`] naming `method`);
/// - `from_params_in(method, specs, params)`: the same against a longer or re-defaulted list
///   `specs` that holds these keys ([`with_defaults`], [`concat_specs`]);
/// - `Default`: the declared defaults.
macro_rules! params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $fvis:vis $field:ident : $ty:ty = $default:tt $(, in $range:expr)? ;
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $doc])+
                $fvis $field: $ty,
            )+
        }

        #[allow(dead_code)]
        impl $name {
            /// The parameter list, one entry per field.
            pub const SPEC_ARRAY: [$crate::methods::params::ParamSpec;
                [$(stringify!($field)),+].len()] = [$(
                $crate::methods::params::ParamSpec {
                    key: stringify!($field),
                    default: $crate::methods::params::default_text!($default),
                    help: concat!($($doc),+).trim_ascii(),
                }
            ),+];

            /// The parameter list, one entry per field.
            pub const SPECS: &'static [$crate::methods::params::ParamSpec] = &Self::SPEC_ARRAY;

            /// The parameters of `method` from the user's overrides.
            pub fn from_params(
                method: &str,
                params: &$crate::methods::params::Params,
            ) -> $crate::error::Result<Self> {
                Self::from_params_in(method, Self::SPECS, params)
            }

            /// The parameters of `method` from the user's overrides, checked against its whole
            /// list `specs`, which holds this struct's keys and their defaults.
            pub fn from_params_in(
                method: &str,
                specs: &[$crate::methods::params::ParamSpec],
                params: &$crate::methods::params::Params,
            ) -> $crate::error::Result<Self> {
                params.check_known(method, specs)?;
                Ok(Self {
                    $($field: params.value(
                        method,
                        specs,
                        stringify!($field),
                        &$crate::methods::params::param_range!($($range)?),
                    )?,)+
                })
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::from_params(stringify!($name), &$crate::methods::params::Params::new())
                    .unwrap_or_else(|e| panic!("a declared default does not parse: {e}"))
            }
        }
    };
}
pub(crate) use params;

/// The text of a default in [`params!`]: an identifier as written, a literal as its text.
macro_rules! default_text {
    ($text:literal) => {
        concat!($text)
    };
    ($word:ident) => {
        stringify!($word)
    };
}
pub(crate) use default_text;

/// The range of a field in [`params!`]: the declared one, or [`Any`].
macro_rules! param_range {
    () => {
        $crate::methods::params::Any
    };
    ($range:expr) => {
        $range
    };
}
pub(crate) use param_range;

const fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `specs` declares `key`, for checks at build time
/// (`const _: () = assert!(declares(PARAMS, CPU_FALLBACK_PARAM));`).
pub const fn declares(specs: &[ParamSpec], key: &str) -> bool {
    let mut i = 0;
    while i < specs.len() {
        if same_text(specs[i].key, key) {
            return true;
        }
        i += 1;
    }
    false
}

/// `specs` with the defaults of the given keys replaced, for a method that shares a parameter
/// struct with another but not all its defaults (`hbp-paper`). A key not in `specs` stops the
/// build.
pub const fn with_defaults<const N: usize>(
    mut specs: [ParamSpec; N],
    defaults: &[(&str, &'static str)],
) -> [ParamSpec; N] {
    let mut d = 0;
    while d < defaults.len() {
        let mut i = 0;
        while i < N && !same_text(specs[i].key, defaults[d].0) {
            i += 1;
        }
        assert!(i < N, "with_defaults: a key that the list does not declare");
        specs[i].default = defaults[d].1;
        d += 1;
    }
    specs
}

/// `a` followed by `b`: the list of a method that takes another's parameters and more
/// (`csr-full-overlap`). `K` must be `N + M`, else the build stops.
pub const fn concat_specs<const N: usize, const M: usize, const K: usize>(
    a: [ParamSpec; N],
    b: [ParamSpec; M],
) -> [ParamSpec; K] {
    assert!(N + M == K, "concat_specs: K is not N + M");
    let blank = ParamSpec {
        key: "",
        default: "",
        help: "",
    };
    let mut out = [blank; K];
    let mut i = 0;
    while i < N {
        out[i] = a[i];
        i += 1;
    }
    while i < K {
        out[i] = b[i - N];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    keywords! {
        /// A test keyword with an alias.
        enum Shape {
            Round = "round" | "circle",
            Square = "square",
        }
    }

    params! {
        /// A test declaration.
        struct Demo {
            /// a count
            /// (two doc lines)
            count: u32 = 4, in 1..=8;
            /// a switch
            mode: Switch = auto;
            /// a block size
            chunk: AutoOr<u32> = auto, in multiple_of(32, 32..=1024);
            /// a share
            share: f64 = 0.5, in 0.0..=1.0;
            /// a shape
            shape: Shape = round;
            /// lanes
            lanes: u32 = 8, in one_of([2, 4, 8]);
            /// a list
            list: u64 = "7";
            /// a limit
            limit: Or<Auto, usize> = 3, in 2..;
        }
    }

    fn demo(items: &[&str]) -> Result<Demo> {
        Demo::from_params("demo", &Params::parse(items.iter().copied()).unwrap())
    }

    /// The message of a parameter error, after checking the method and key it names.
    fn param_msg(items: &[&str], want_key: &str) -> String {
        match demo(items) {
            Err(Error::Param { method, key, msg }) => {
                assert_eq!((method.as_str(), key.as_str()), ("demo", want_key));
                msg
            }
            other => panic!("{items:?}: expected a parameter error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_declared_ones() {
        let d = Demo::default();
        assert_eq!(
            d,
            Demo {
                count: 4,
                mode: Switch::Auto,
                chunk: Or::Word(Auto::Auto),
                share: 0.5,
                shape: Shape::Round,
                lanes: 8,
                list: 7,
                limit: Or::Value(3),
            }
        );
        assert_eq!(demo(&[]).unwrap(), d);
    }

    #[test]
    fn good_values_parse() {
        let d = demo(&[
            "count=8",
            "mode=off",
            "chunk=64",
            "share=1",
            "shape=circle",
            "lanes=2",
            "limit=auto",
        ])
        .unwrap();
        assert_eq!(d.count, 8);
        assert_eq!(d.mode, Switch::Off);
        assert_eq!(d.chunk.value(), Some(64));
        assert_eq!(d.share, 1.0);
        assert_eq!(d.shape, Shape::Round);
        assert_eq!(d.lanes, 2);
        assert_eq!(d.limit.value(), None);
    }

    #[test]
    fn out_of_range_values_name_the_range() {
        assert_eq!(
            param_msg(&["count=9"], "count"),
            "'9' is not an integer in 1..=8"
        );
        assert_eq!(
            param_msg(&["count=-1"], "count"),
            "'-1' is not an integer in 1..=8"
        );
        assert_eq!(
            param_msg(&["chunk=48"], "chunk"),
            "'48' is not auto or a multiple of 32 in 32..=1024"
        );
        assert_eq!(
            param_msg(&["share=1.5"], "share"),
            "'1.5' is not a number in 0..=1"
        );
        assert_eq!(
            param_msg(&["share=NaN"], "share"),
            "'NaN' is not a number in 0..=1"
        );
        assert_eq!(param_msg(&["lanes=16"], "lanes"), "'16' is not 2, 4 or 8");
        assert_eq!(
            param_msg(&["limit=1"], "limit"),
            "'1' is not auto or an integer of at least 2"
        );
        assert_eq!(
            param_msg(&["list=x"], "list"),
            "'x' is not a non-negative integer"
        );
    }

    #[test]
    fn unknown_keywords_and_keys_are_rejected() {
        assert_eq!(
            param_msg(&["mode=maybe"], "mode"),
            "'maybe' is not auto, on or off"
        );
        assert_eq!(
            param_msg(&["shape=oval"], "shape"),
            "'oval' is not round or square"
        );
        assert_eq!(
            param_msg(&["chunk=many"], "chunk"),
            "'many' is not auto or a multiple of 32 in 32..=1024"
        );
        let msg = param_msg(&["colour=red"], "colour");
        assert!(
            msg.starts_with("unknown; known parameters: count, mode"),
            "{msg}"
        );
    }

    #[test]
    fn the_spec_list_is_the_declaration() {
        let row = |key, default, help| ParamSpec { key, default, help };
        assert_eq!(
            Demo::SPECS,
            &[
                row("count", "4", "a count (two doc lines)"),
                row("mode", "auto", "a switch"),
                row("chunk", "auto", "a block size"),
                row("share", "0.5", "a share"),
                row("shape", "round", "a shape"),
                row("lanes", "8", "lanes"),
                row("list", "7", "a list"),
                row("limit", "3", "a limit"),
            ]
        );
    }

    #[test]
    fn lists_take_other_defaults_and_more_keys() {
        const OTHER: [ParamSpec; 8] =
            with_defaults(Demo::SPEC_ARRAY, &[("mode", "on"), ("lanes", "2")]);
        assert_eq!(OTHER[1].default, "on");
        assert_eq!(OTHER[5].default, "2");
        let d = Demo::from_params_in("demo", &OTHER, &Params::new()).unwrap();
        assert_eq!((d.mode, d.lanes), (Switch::On, 2));

        const LONGER: [ParamSpec; 9] = concat_specs(
            Demo::SPEC_ARRAY,
            [ParamSpec {
                key: "extra",
                default: "1",
                help: "more",
            }],
        );
        assert_eq!(LONGER[8].key, "extra");
        assert!(declares(&LONGER, "extra") && !declares(Demo::SPECS, "extra"));
        let p = Params::parse(["extra=2", "count=5"]).unwrap();
        assert_eq!(Demo::from_params_in("demo", &LONGER, &p).unwrap().count, 5);
        assert!(Demo::from_params("demo", &p).is_err());
    }

    #[test]
    fn keywords_list_names_and_accept_aliases() {
        assert_eq!(Flag::NAMES, &["0", "1"]);
        assert_eq!(Flag::from_name("true"), Some(Flag::Yes));
        assert_eq!(Flag::from_name("off"), Some(Flag::No));
        assert_eq!(Flag::Yes.name(), "1");
        assert_eq!(Switch::Off.name(), "off");
        assert!(Switch::Auto.is_on(true) && !Switch::Off.is_on(true));
        assert_eq!(or_list(&["a"]), "a");
        assert_eq!(or_list(&["a", "b", "c"]), "a, b or c");
    }
}
