//! Methods: one SpMV algorithm with its layout each, behind one interface, and the registry that
//! lets the CLI and the harness find them by name.
//!
//! A method's `prepare(csr, params)` builds its layout on the host (the preprocessing, timed).
//! The layout runs on the CPU by a mirror that walks it the way the kernel does, and `upload`
//! gives a device layout whose `run` is one complete SpMV on the GPU (zeroing, permutations and
//! combine passes included). Tuning parameters are plain data ([`ParamSpec`]) with the papers'
//! defaults, overridable as `key=value`; each room declares its own once, as a typed struct from
//! which the list, the parsing and the check of each value are derived (`params.rs`).

mod common;
pub mod from_device;
mod params;
mod plan;
mod reordered;
pub mod spmm;
#[cfg(test)]
pub(crate) mod testmats;
pub mod windows;

use std::time::Duration;

use cudarc::driver::CudaSlice;

pub use from_device::{DeviceCsrRef, DEVICE_METHODS};
pub use params::{ParamSpec, Params, REORDER_PARAM, VALUES_PARAM, WINDOWS_PARAM};
pub use plan::{Backend, Plan, PlanOptions, PrepTimes, ValueUpdate};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::matrix::Csr;
use crate::scalar::Scalar;

/// What a method is, for listings and reports.
#[derive(Clone, Copy, Debug)]
pub struct MethodInfo {
    /// Registry name, e.g. `csr`, `fastload`.
    pub name: &'static str,
    /// One line: what it does.
    pub summary: &'static str,
    /// Where it comes from (paper and section), or "spmvkit".
    pub source: &'static str,
    /// Whether two calls on the same input give bitwise identical y.
    pub deterministic: bool,
    /// Whether a GPU executor exists.
    pub gpu: bool,
    /// Whether the CPU mirror exists (every paper method has one; a pure library wrapper such as
    /// cuSPARSE does not).
    pub cpu: bool,
    /// Tunable parameters with defaults.
    pub params: &'static [ParamSpec],
    /// The narrower value storages the method supports besides values in the vectors'
    /// precision (issue #25, docs/precision.md); a plan asking another one is refused
    /// ([`Error::MethodUnsupported`]).
    pub values: &'static [crate::scalar::ValueStorage],
    /// Whether the method takes a matrix with 64-bit row offsets (`u64`, nnz up to 2^40; issue
    /// #25, docs/offsets.md) through [`GenericMethod::prepare_wide`]; a plan with 64-bit
    /// offsets refuses any other ([`offsets_refused`]), and `auto` skips it.
    pub offsets64: bool,
}

/// The refusal of a method that takes only 32-bit row offsets, asked for 64-bit ones: an
/// [`Error::MethodUnsupported`] whose reason starts with "unsupported: 64-bit row offsets" (the
/// harness records it as `unsupported`, as it does the precision refusals).
pub fn offsets_refused(method: &str) -> Error {
    Error::MethodUnsupported {
        method: method.into(),
        reason: "unsupported: 64-bit row offsets (its kernels index with 32 bits; \
                 docs/offsets.md lists the methods that take them)"
            .into(),
    }
}

impl MethodInfo {
    /// Whether the method takes row offsets of width `w` (32 bits always).
    pub fn takes_offsets(&self, w: crate::scalar::OffsetWidth) -> bool {
        w == crate::scalar::OffsetWidth::W32 || self.offsets64
    }

    /// Whether the method runs with its values stored as `storage` (`Same` always).
    pub fn supports(&self, storage: crate::scalar::ValueStorage) -> bool {
        storage == crate::scalar::ValueStorage::Same || self.values.contains(&storage)
    }
}

/// A prepared layout on the host.
pub trait Layout<T: Scalar>: Send + Sync {
    /// Bytes the layout occupies (host arrays; the device copy holds the same).
    fn footprint_bytes(&self) -> usize;

    /// y = αAx + βy on the CPU, walking the layout as the kernel does. Lengths are checked by
    /// the caller ([`Plan`]).
    fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()>;

    /// Copies the layout to the GPU and returns its executor.
    fn upload(&self, gpu: &std::sync::Arc<Gpu>) -> Result<Box<dyn DeviceLayout<T>>> {
        let _ = gpu;
        Err(Error::MethodUnsupported {
            method: "this method".into(),
            reason: "it has no GPU executor".into(),
        })
    }

    /// Preprocessing time by stage, for methods that report it (TEB Figs. 18/19).
    fn prep_stages(&self) -> Vec<(&'static str, Duration)> {
        Vec::new()
    }

    /// Facts about the layout worth reporting (block counts, chosen thresholds, …), for people;
    /// code reads typed values ([`Layout::chosen`]), not these strings.
    fn notes(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The registered method whose layout this is when the method that prepared it chose
    /// another one (`auto`: the method it chose, which its `auto chose` note names for people);
    /// `None` (the default) for a layout that is its own method's. [`Plan::chosen`] and
    /// [`Plan::deterministic`] read it.
    fn chosen(&self) -> Option<&'static dyn Method> {
        None
    }

    /// The layout's value slots, when it keeps the matrix values unchanged in one flat array
    /// (CSR order or any permutation of it, padding allowed). [`Plan::update_values`] uses it to
    /// replace values under a fixed pattern without re-analysis; `None` (the default) means the
    /// layout transforms or splits its values, and an update re-prepares.
    fn values_mut(&mut self) -> Option<&mut [T]> {
        None
    }

    /// Re-encodes new values (CSR order of `pattern`, the pattern the layout was built from) in
    /// place, for layouts that transform their values but can redo that without re-analysis
    /// (`csr-packed`'s dictionary). `None` (the default): no such path; `Some(Err(why))`: the
    /// new values do not fit the layout (too many distinct values for its codes), and
    /// [`Plan::update_values`] prepares again and says why.
    fn reencode_values(
        &mut self,
        pattern: &crate::matrix::Pattern,
        vals: &[T],
    ) -> Option<std::result::Result<(), String>> {
        let _ = (pattern, vals);
        None
    }

    /// The layout's multi-vector kernel (SpMM, `methods/spmm/`, issue #24), when it has one:
    /// which kernel and the CSR matrix it runs on. `None` (the default): [`Plan::apply_multi`]
    /// runs k single-vector calls of the layout.
    fn multi(&self) -> Option<spmm::MultiSource<'_, T>> {
        None
    }

    /// The layout's multi-vector kernel on its own arrays ([`spmm::MultiLayout`]: `csr-packed`),
    /// when it has one. [`Plan::apply_multi`] takes it when [`Layout::multi`] offers nothing,
    /// and `auto`'s trial times it beside the CSR kernels. `None` (the default): none.
    fn multi_layout(&self) -> Option<&dyn spmm::MultiLayout<T>> {
        None
    }

    /// One more multi-vector kernel on a layout of its own that `auto`'s per-shape trial may
    /// time beside [`Layout::multi`]'s CSR kernels and [`Layout::multi_layout`]: `csr-packed`'s
    /// when `auto` chose another method and the matrix packs well. Made on the first call
    /// (the trial's), which can take a host preparation ([`Layout::late_prep`]). `None` (the
    /// default): none.
    fn multi_extra(&self) -> Option<&dyn spmm::MultiLayout<T>> {
        None
    }

    /// Host preparation done after the layout was built, on a first call that needed it
    /// ([`Layout::multi_extra`]); [`Plan::prep_times`] counts it as preparation. Zero (the
    /// default): none.
    fn late_prep(&self) -> Duration {
        Duration::ZERO
    }
}

/// A layout resident on the GPU.
///
/// Callers run it through [`run`](#method.run) on `dyn DeviceLayout<T>`: that entry checks the
/// device vectors against [`DeviceLayout::dims`] with [`crate::matrix::check_vectors`] (x at
/// least `ncols`, y at least `nrows` elements, [`Error::DimensionMismatch`] otherwise) and only
/// then calls the method's [`DeviceLayout::run_unchecked`]. `run` is an inherent method of the
/// trait object, so no method can override it and skip the check, and `run_unchecked` is
/// `unsafe`: safe code has no way to a launch on vectors that are too short.
pub trait DeviceLayout<T: Scalar>: Send + Sync {
    /// The matrix shape `(nrows, ncols)`: `run` needs x of at least `ncols` and y of at least
    /// `nrows` elements.
    fn dims(&self) -> (usize, usize);

    /// The vector lengths `(y, x)` the layout works on without staging copies, each at least
    /// the matching entry of [`DeviceLayout::dims`] (the default, no padding). A layout that
    /// wants longer vectors (`cusparse-bsr`: whole blocks) says so here; [`Plan`] then allocates
    /// its own device x and y this long, the padding of x zero, and moves only the logical
    /// part between host and device. Vectors that long are used as they are: x's entries past
    /// `ncols` meet zero matrix entries (keep them finite) and y's entries past `nrows` are
    /// overwritten. Shorter vectors (at least `dims`) still work, through copies.
    fn padded_dims(&self) -> (usize, usize) {
        self.dims()
    }

    /// One complete y = αAx + βy on `gpu.stream()`, asynchronously: everything the call needs
    /// (zeroing y before atomics, permuting x, combine passes) happens inside. Callers use
    /// [`run`](#method.run), which checks the lengths first.
    ///
    /// # Safety
    ///
    /// `x` holds at least `ncols` and `y` at least `nrows` elements of [`DeviceLayout::dims`],
    /// both on `gpu`, the GPU the layout was uploaded to. The kernels index x and y up to those
    /// lengths without further checks.
    unsafe fn run_unchecked(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()>;

    /// Device bytes held by this layout (not counting x and y).
    fn footprint_bytes(&self) -> usize;
}

impl<T: Scalar> dyn DeviceLayout<T> + '_ {
    /// One complete y = αAx + βy on `gpu.stream()`, asynchronously, after checking that x has
    /// at least `ncols` and y at least `nrows` elements ([`Error::DimensionMismatch`] naming the
    /// short vector otherwise; nothing is launched then).
    pub fn run(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &CudaSlice<T>,
        beta: T,
        y: &mut CudaSlice<T>,
    ) -> Result<()> {
        crate::matrix::check_vectors(
            "SpMV: ",
            self.dims(),
            x.len(),
            y.len(),
            crate::matrix::VectorFit::AtLeast,
        )?;
        // SAFETY: x and y were just checked against dims(); the one process-wide Gpu is the
        // one every layout is uploaded to.
        unsafe { self.run_unchecked(gpu, alpha, x, beta, y) }
    }
}

/// A method written once for both precisions.
pub trait GenericMethod: Send + Sync + 'static {
    /// What the method is (the same for both precisions).
    const INFO: MethodInfo;

    /// [`GenericMethod::INFO`], for callers holding the method.
    fn info(&self) -> MethodInfo {
        Self::INFO
    }

    fn prepare<T: Scalar>(&self, csr: &Csr<T>, params: &Params) -> Result<Box<dyn Layout<T>>>;

    /// `prepare` on a matrix with 64-bit row offsets (docs/offsets.md), for a method whose
    /// [`MethodInfo::offsets64`] is set; the default refuses ([`offsets_refused`]).
    fn prepare_wide<T: Scalar>(
        &self,
        csr: &Csr<T, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<T>>> {
        let _ = (csr, params);
        Err(offsets_refused(Self::INFO.name))
    }
}

/// The object-safe face of a method, implemented for every [`GenericMethod`].
pub trait Method: Send + Sync + 'static {
    fn info(&self) -> MethodInfo;
    fn prepare_f32(&self, csr: &Csr<f32>, params: &Params) -> Result<Box<dyn Layout<f32>>>;
    fn prepare_f64(&self, csr: &Csr<f64>, params: &Params) -> Result<Box<dyn Layout<f64>>>;
    /// [`GenericMethod::prepare_wide`] in f32; the default refuses.
    fn prepare_wide_f32(
        &self,
        csr: &Csr<f32, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f32>>> {
        let _ = (csr, params);
        Err(offsets_refused(self.info().name))
    }
    /// [`GenericMethod::prepare_wide`] in f64; the default refuses.
    fn prepare_wide_f64(
        &self,
        csr: &Csr<f64, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f64>>> {
        let _ = (csr, params);
        Err(offsets_refused(self.info().name))
    }
}

impl<M: GenericMethod> Method for M {
    fn info(&self) -> MethodInfo {
        M::INFO
    }
    fn prepare_f32(&self, csr: &Csr<f32>, params: &Params) -> Result<Box<dyn Layout<f32>>> {
        GenericMethod::prepare(self, csr, params)
    }
    fn prepare_f64(&self, csr: &Csr<f64>, params: &Params) -> Result<Box<dyn Layout<f64>>> {
        GenericMethod::prepare(self, csr, params)
    }
    fn prepare_wide_f32(
        &self,
        csr: &Csr<f32, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f32>>> {
        GenericMethod::prepare_wide(self, csr, params)
    }
    fn prepare_wide_f64(
        &self,
        csr: &Csr<f64, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<f64>>> {
        GenericMethod::prepare_wide(self, csr, params)
    }
}

/// Dispatches `prepare` to the method's entry for precision `T` (and row offsets of 32 or 64
/// bits).
pub trait PrepareFor: Scalar {
    fn prepare_with(
        m: &dyn Method,
        csr: &Csr<Self>,
        params: &Params,
    ) -> Result<Box<dyn Layout<Self>>>;
    fn prepare_wide_with(
        m: &dyn Method,
        csr: &Csr<Self, u64>,
        params: &Params,
    ) -> Result<Box<dyn Layout<Self>>>;
}

/// `PrepareFor` for each precision, by the [`Method`] entries that take it.
macro_rules! prepare_for {
    ($($t:ty => $entry:ident, $wide:ident),*) => {$(
        impl PrepareFor for $t {
            fn prepare_with(
                m: &dyn Method,
                csr: &Csr<$t>,
                params: &Params,
            ) -> Result<Box<dyn Layout<$t>>> {
                m.$entry(csr, params)
            }
            fn prepare_wide_with(
                m: &dyn Method,
                csr: &Csr<$t, u64>,
                params: &Params,
            ) -> Result<Box<dyn Layout<$t>>> {
                m.$wide(csr, params)
            }
        }
    )*};
}
prepare_for!(f32 => prepare_f32, prepare_wide_f32, f64 => prepare_f64, prepare_wide_f64);

/// The rooms, one line each: `room: Method, ...;` for a room without a kernel of its own,
/// `room + KERNEL: Method, ...;` for one whose `KERNEL` ([`crate::gpu::Kernels`]) CI compiles.
/// The line declares the room's module, lists its `KERNEL` in [`kernel_sources`] and its
/// methods in the [`registry`]; the lines' order is the listing order (`spmv methods`,
/// `--methods all`).
macro_rules! rooms {
    ($($room:ident $(+ $kernel:ident)?: $($method:ident),+;)*) => {
        $(pub mod $room;)*

        /// Every method's kernel source with its entries' argument structs, and the SpMM
        /// kernels' (`spmm`), for the NVRTC compile check in CI (which compiles them with the
        /// launch layer's layout checks).
        pub fn kernel_sources() -> Vec<crate::gpu::Kernels> {
            vec![$($($room::$kernel,)?)* spmm::KERNEL]
        }

        /// Every registered method, in listing order.
        pub fn registry() -> &'static [&'static dyn Method] {
            static REGISTRY: &[&dyn Method] = &[$($(&$room::$method,)+)*];
            REGISTRY
        }
    };
}

rooms! {
    // CPU production path
    csr: CsrRayon;
    // baselines (issue #3)
    csr_scalar + KERNEL: CsrScalar;
    csr_vector + KERNEL: CsrVector;
    csr_light + KERNEL: CsrLight;
    merge + KERNEL: Merge;
    csc + KERNEL: CscAtomic;
    cusparse: CusparseAlg1, CusparseAlg2, CusparseAuto, CusparseE2e;
    // peer baselines the papers compare against (issue #10)
    csr5 + KERNEL: Csr5;
    dasp + KERNEL: Dasp;
    tilespmv + KERNEL: TileSpmv;
    cusparse_bsr: CusparseBsr;
    // the papers' methods
    csr_overlap + KERNEL: CsrOverlap, CsrFullOverlap;
    teb + KERNEL: Teb, TebVector;
    pbc + KERNEL: Pbc;
    amf_csr + KERNEL: AmfCsr;
    cb_spmv + KERNEL: CbSpmv;
    hbp + KERNEL: Hbp, HbpPaper, Plain2d;
    fastload + KERNEL: FastLoad, FastLoadAtomic;
    // beyond the papers
    csr_packed + KERNEL: CsrPacked;
    auto: Auto;
}

/// Names of all registered methods.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|m| m.info().name).collect()
}

/// A method with parameter overrides, written `name[key=value;key=value]` (a *variant*), as the
/// benchmark harness takes it: `fastload[height=2]` runs FastLoad with height limit 2 and is
/// reported under that full label, next to plain `fastload`. Items are separated by `;` or `,`;
/// a piece without `=` continues the previous value (`switch_points=17,34,64`). A plain name is a
/// variant without overrides. Errors name the problem: an unknown method
/// ([`Error::UnknownMethod`]), an unknown key ([`Error::Param`]), brackets that do not pair up or
/// an item that is not `key=value` ([`Error::InvalidArgument`] quoting the spec). Values are
/// checked by the method's `prepare`.
pub fn find_variant(spec: &str) -> Result<(&'static dyn Method, Params)> {
    let spec = spec.trim();
    let bad = |msg: &str| Error::InvalidArgument(format!("method variant '{spec}': {msg}"));
    let (name, inner) = match spec.find('[') {
        None if spec.contains(']') => return Err(bad("unbalanced brackets: ']' without '['")),
        None => (spec, None),
        Some(open) => {
            let inner = spec[open + 1..].strip_suffix(']').ok_or_else(|| {
                bad("unbalanced brackets: expected name[key=value;...] ending in ']'")
            })?;
            if inner.contains(['[', ']']) {
                return Err(bad(
                    "unbalanced brackets: one '[' ... ']' pair after the name, nothing nested",
                ));
            }
            let name = spec[..open].trim();
            if name.is_empty() {
                return Err(bad("no method name before '['"));
            }
            (name, Some(inner))
        }
    };
    let m = find(name)?;
    let Some(inner) = inner else {
        return Ok((m, Params::new()));
    };
    // A piece without '=' continues the previous value (`switch_points=17,34,...` arrives here
    // as `switch_points=17;34;...` from a comma-separated list).
    let mut items: Vec<String> = Vec::new();
    for piece in inner
        .split([';', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match items.last_mut() {
            Some(last) if !piece.contains('=') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => items.push(piece.to_string()),
        }
    }
    let params =
        Params::parse(items.iter().map(String::as_str)).map_err(|e| bad(&e.to_string()))?;
    params.check_known(m.info().name, m.info().params)?;
    Ok((m, params))
}

/// The one way a method spec becomes a method and its parameters: what [`Plan::new`] does, and
/// so `spmv run`, `spmv solve` and `spmv bench` alike. `spec` is a name or a variant
/// `name[key=value;...]` ([`find_variant`]); `params` are overrides given apart from it
/// ([`PlanOptions::params`], `--param`).
///
/// **Where both set a key, the variant's value wins**: the variant is the more specific
/// spelling, and a label such as `fastload[height=2]` in a run record must mean height 2
/// whatever else was passed (the rule `bench::measure` has always applied). Keys from either
/// side must be declared by the method.
///
/// ```
/// use spmvkit::methods::{resolve, Params};
/// let given = Params::parse(["height=4", "threads=128"]).unwrap();
/// let (m, p) = resolve("fastload[height=2]", &given).unwrap();
/// assert_eq!(m.info().name, "fastload");
/// assert_eq!(p.iter().collect::<Vec<_>>(), [("height", "2"), ("threads", "128")]);
/// ```
pub fn resolve(spec: &str, params: &Params) -> Result<(&'static dyn Method, Params)> {
    let (m, variant) = find_variant(spec)?;
    let mut merged = params.clone();
    for (k, v) in variant.iter() {
        merged.set(k, v);
    }
    merged.check_known(m.info().name, m.info().params)?;
    Ok((m, merged))
}

/// Splits a comma-separated list of method names and variants, keeping commas inside `[...]`
/// (`csr-vector,cb-spmv[format=off,balance=off]` is two entries).
pub fn split_method_list(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            ',' => {
                cur.push(';');
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out.retain(|s| !s.is_empty());
    out
}

/// Looks a method up by name.
pub fn find(name: &str) -> Result<&'static dyn Method> {
    registry()
        .iter()
        .copied()
        .find(|m| m.info().name == name)
        .ok_or_else(|| Error::UnknownMethod {
            name: name.into(),
            available: names().join(", "),
        })
}

#[cfg(test)]
mod variant_tests {
    use super::*;

    #[test]
    fn variants_parse_and_lists_keep_bracketed_commas() {
        assert_eq!(
            split_method_list("csr-vector, cb-spmv[format=off,balance=off],merge"),
            vec!["csr-vector", "cb-spmv[format=off;balance=off]", "merge"]
        );
        let (m, p) = find_variant("fastload[height=2; threads=128]").unwrap();
        assert_eq!(m.info().name, "fastload");
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![("height", "2"), ("threads", "128")]
        );
        assert!(find_variant("merge").unwrap().1.is_empty());
        let list = split_method_list("csr-overlap[switch_points=17,34,64,122,216,long_chunk=0]");
        let (_, p) = find_variant(&list[0]).unwrap();
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![("long_chunk", "0"), ("switch_points", "17,34,64,122,216")]
        );
        assert!(find_variant("fastload[2]").is_err());
        assert!(find_variant("fastload[height=2").is_err());
        assert!(find_variant("fastload[no_such_key=1]").is_err());
        assert!(find_variant("nosuch[height=2]").is_err());
    }
}
