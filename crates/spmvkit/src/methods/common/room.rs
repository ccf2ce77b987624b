//! What every room would otherwise write alike, written once: in `mod.rs` the declaration of the
//! room's kernel ([`room_kernel!`]), its registered methods with their
//! [`MethodInfo`](crate::methods::MethodInfo) and `prepare` ([`method!`]), and the
//! [`Layout`](crate::methods::Layout) methods that only forward to the room's CPU mirror and
//! upload ([`forward!`]); in `gpu.rs` the device struct with its `upload` ([`device_room!`]).

/// Declares a room's `pub const KERNEL: Kernels`: the room's `kernel.cu` (beside the `mod.rs`
/// that invokes this) under the source name `$name`, with its entries and their argument
/// structs, as `tests/nvrtc_compile.rs` and `gpu.kernel(&KERNEL, entry)` take it. A doc comment
/// before the name replaces the default one.
///
/// ```ignore
/// room_kernel!("pbc", [gpu::PbcArgs::entry("pbc_spmv")]);
/// ```
///
/// Entries that all take one struct name it once, with `params` for `params_entry`:
///
/// ```ignore
/// room_kernel!("amf-csr", gpu::AmfArgs: ["amf_csr_t1", "amf_csr_t2", "amf_csr_t4"]);
/// room_kernel!("cb-spmv", gpu::CbArgs params: ["cb_spmv", "cb_spmv_grid"]);
/// ```
macro_rules! room_kernel {
    ($name:literal, $m:ident :: $args:ident : [$($entry:literal),+ $(,)?]) => {
        $crate::methods::common::room::room_kernel!($name, [$($m::$args::entry($entry)),+]);
    };
    ($name:literal, $m:ident :: $args:ident params : [$($entry:literal),+ $(,)?]) => {
        $crate::methods::common::room::room_kernel!(
            $name,
            [$($m::$args::params_entry($entry)),+]
        );
    };
    ($name:literal, [$($entry:expr),+ $(,)?]) => {
        $crate::methods::common::room::room_kernel!(
            #[doc = concat!(
                "The kernel of `", $name, "`: its source and each entry with its argument struct."
            )]
            $name, [$($entry),+]
        );
    };
    ($(#[$doc:meta])+ $name:literal, [$($entry:expr),+ $(,)?]) => {
        $(#[$doc])+
        pub const KERNEL: $crate::gpu::Kernels = $crate::gpu::Kernels {
            source: $crate::gpu::KernelSource {
                name: $name,
                source: include_str!("kernel.cu"),
            },
            entries: &[$($entry),+],
        };
    };
}
pub(crate) use room_kernel;

/// In a room's `impl<T: Scalar> Layout<T>`, the methods that only forward to the room's own
/// functions: `run_cpu` to the mirror `cpu::run(layout, alpha, x, beta, y)`, on the layout
/// itself (`run_cpu`) or on one of its fields (`run_cpu of a`: `&self.a`), and `upload` to
/// `gpu::upload(layout, gpu)`; and those a layout that keeps the matrix (a `Csr` or `Csc`
/// field) takes from it: `values_mut of a` (its values, in place) and `footprint_bytes of a`
/// (its bytes).
///
/// ```ignore
/// impl<T: Scalar> Layout<T> for PbcLayout<T> {
///     fn footprint_bytes(&self) -> usize { ... }
///     forward! { run_cpu, upload }
/// }
/// impl<T: Scalar> Layout<T> for CsrVectorLayout<T> {
///     forward! { values_mut of a, footprint_bytes of a, run_cpu of a, upload }
/// }
/// ```
macro_rules! forward {
    ($($what:ident $(of $field:ident)?),+ $(,)?) => {
        $($crate::methods::common::room::forward!(@ $what $($field)?);)+
    };
    (@ run_cpu) => {
        fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> $crate::error::Result<()> {
            cpu::run(self, alpha, x, beta, y);
            Ok(())
        }
    };
    (@ run_cpu $field:ident) => {
        fn run_cpu(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> $crate::error::Result<()> {
            cpu::run(&self.$field, alpha, x, beta, y);
            Ok(())
        }
    };
    (@ values_mut $field:ident) => {
        fn values_mut(&mut self) -> Option<&mut [T]> {
            Some(self.$field.vals_mut())
        }
    };
    (@ footprint_bytes $field:ident) => {
        fn footprint_bytes(&self) -> usize {
            self.$field.bytes()
        }
    };
    (@ upload) => {
        fn upload(
            &self,
            gpu: &std::sync::Arc<$crate::gpu::Gpu>,
        ) -> $crate::error::Result<Box<dyn $crate::methods::DeviceLayout<T>>> {
            gpu::upload(self, gpu)
        }
    };
}
pub(crate) use forward;

/// Declares a registered method: its unit struct and its
/// [`GenericMethod`](crate::methods::GenericMethod) impl, the `const INFO` from the fields given
/// (`gpu` and `cpu` are `true` and `params` is empty unless given) and `prepare` from the body,
/// which sees the matrix and the parameters under the two names given and the precision as `T`.
///
/// ```ignore
/// method! {
///     /// The registry entry of `pbc`.
///     pub struct Pbc {
///         name: NAME,
///         summary: "GPU: PBC, row-major nnz blocks of equal size ...",
///         source: "Cui et al., PBC, J. Supercomput. 2022",
///         deterministic: true,
///         params: PbcParams::SPECS,
///     }
///     fn prepare(csr, params) {
///         Ok(Box::new(build(csr, params)?))
///     }
/// }
/// ```
///
/// A method that takes 64-bit row offsets (`offsets64: true`, docs/offsets.md) gets its
/// `prepare_wide` from the same body, which then sees a `Csr<T, u64>`: its layout is generic
/// over the offsets' type.
///
/// A method that supports narrower value storages (`values: &ValueStorage::NARROW`, issue #25)
/// names a third argument, `fn prepare(csr, p: XParams, values)`, which is the
/// [`ValueStorage`](crate::ValueStorage) the plan asks (`Same` without `storage=`).
///
/// A method whose parameters are one `params!` struct names it instead of `params`: its `SPECS`
/// are the method's, and the body gets the parameters parsed and checked under the method's name
/// (`from_params(name, ..)`, before anything else).
///
/// ```ignore
/// method! {
///     /// The registry entry of `csc`.
///     pub struct CscAtomic {
///         name: NAME,
///         summary: "GPU: CSC, one warp per column, atomicAdd into y",
///         source: "Hu et al., FastLoad, TPDS 2024, §III-B",
///         deterministic: false,
///     }
///     fn prepare(csr, p: CscParams) {
///         Ok(Box::new(CscLayout::new(csr, p.threads)))
///     }
/// }
/// ```
macro_rules! method {
    (
        $(#[$meta:meta])*
        $vis:vis struct $method:ident { name: $name:expr, $($info:tt)* }
        fn prepare($csr:ident, $p:ident: $ptype:ty, $values:ident) $body:block
    ) => {
        $crate::methods::common::room::method! {
            $(#[$meta])*
            $vis struct $method { name: $name, $($info)* params: <$ptype>::SPECS, }
            fn prepare($csr, params) {
                let $p = <$ptype>::from_params($name, params)?;
                let $values = $crate::methods::common::stored::storage_of(params)?;
                $body
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $method:ident { name: $name:expr, $($info:tt)* }
        fn prepare($csr:ident, $p:ident: $ptype:ty) $body:block
    ) => {
        $crate::methods::common::room::method! {
            $(#[$meta])*
            $vis struct $method { name: $name, $($info)* params: <$ptype>::SPECS, }
            fn prepare($csr, params) {
                let $p = <$ptype>::from_params($name, params)?;
                $body
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $method:ident {
            name: $name:expr,
            summary: $summary:expr,
            source: $source:expr,
            deterministic: $det:expr,
            $(gpu: $gpu:expr,)?
            $(cpu: $cpu:expr,)?
            $(values: $values:expr,)?
            $(offsets64: $off:tt,)?
            $(params: $params_spec:expr,)?
        }
        fn prepare($csr:ident, $params:ident) $body:block
    ) => {
        $(#[$meta])*
        $vis struct $method;

        impl $crate::methods::GenericMethod for $method {
            const INFO: $crate::methods::MethodInfo = $crate::methods::MethodInfo {
                name: $name,
                summary: $summary,
                source: $source,
                deterministic: $det,
                gpu: $crate::methods::common::room::method!(@or [true] $($gpu)?),
                cpu: $crate::methods::common::room::method!(@or [true] $($cpu)?),
                params: $crate::methods::common::room::method!(@or [&[]] $($params_spec)?),
                values: $crate::methods::common::room::method!(@or [&[]] $($values)?),
                offsets64: $crate::methods::common::room::method!(@or [false] $($off)?),
            };

            fn prepare<T: $crate::Scalar>(
                &self,
                $csr: &$crate::matrix::Csr<T>,
                $params: &$crate::methods::Params,
            ) -> $crate::error::Result<Box<dyn $crate::methods::Layout<T>>> $body

            $crate::methods::common::room::method!(@wide [$($off)?] $csr $params $body);
        }
    };
    (@or [$default:expr]) => { $default };
    (@or [$default:expr] $given:expr) => { $given };
    (@wide [] $csr:ident $params:ident $body:block) => {};
    (@wide [true] $csr:ident $params:ident $body:block) => {
        fn prepare_wide<T: $crate::Scalar>(
            &self,
            $csr: &$crate::matrix::Csr<T, u64>,
            $params: &$crate::methods::Params,
        ) -> $crate::error::Result<Box<dyn $crate::methods::Layout<T>>> $body
    };
}
pub(crate) use method;

/// In a room's `gpu.rs`, its device struct and the `upload` that makes it, from one list of
/// fields: each field once, with its type and its value at upload (`expr` may use `?`, the
/// layout and the GPU under the names the `upload` line gives). `upload(l, gpu)` runs its body
/// (statements, when it has one), computes the shape and footprint it returns with, then the
/// fields' values in list order, and returns the struct as the room's
/// [`DeviceLayout`](crate::methods::DeviceLayout), a
/// [`Resident`](crate::methods::common::gpu::Resident) of that shape and footprint.
///
/// ```ignore
/// device_room! {
///     /// The device copy of a PBC layout.
///     pub(super) struct DevicePbc<T> {
///         k: Kernel<PbcArgs<'static, T>> = gpu.kernel::<T, _>(&KERNEL, "pbc_spmv")?,
///         nblocks: usize = l.nblocks(),
///         threads: u32 = l.threads,
///         arrays: PbcArrays<T> = PbcArrays::upload(gpu, l)?,
///     }
///     fn upload(l: &PbcLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes());
/// }
/// ```
///
/// A layout generic over its row offsets (docs/offsets.md) names the type parameter after
/// `upload`: `fn upload<O: Offset>(l: &CsrVectorLayout<T, O>, gpu) -> Resident(..)`.
///
/// With statements before the fields' values (checks, values several fields use):
///
/// ```ignore
///     fn upload(l: &TebLayout<T>, gpu) -> Resident((l.nrows, l.ncols), l.footprint_bytes()) {
///         crate::gpu::check_int_loops("teb", l.nrows, l.values.len())?;
///     }
/// ```
macro_rules! device_room {
    (
        $(#[$meta:meta])*
        $vis:vis struct $dev:ident<$t:ident> {
            $($(#[$fmeta:meta])* $f:ident: $fty:ty = $init:expr,)+
        }
        fn upload $(<$og:ident: $ob:path>)? ($l:ident: &$layout:ty, $gpu:ident)
            -> Resident($dims:expr, $bytes:expr)
            $({ $($setup:tt)* })? $(;)?
    ) => {
        $(#[$meta])*
        $vis struct $dev<$t: $crate::Scalar> {
            $($(#[$fmeta])* $f: $fty,)+
        }

        #[doc = concat!("Uploads the layout as a `", stringify!($dev), "`, its fields in order.")]
        $vis fn upload<$t: $crate::Scalar $(, $og: $ob)?>(
            $l: &$layout,
            $gpu: &std::sync::Arc<$crate::gpu::Gpu>,
        ) -> $crate::error::Result<Box<dyn $crate::methods::DeviceLayout<$t>>> {
            $($($setup)*)?
            let (dims, bytes) = ($dims, $bytes);
            let room = $dev {
                $($f: $init,)+
            };
            Ok($crate::methods::common::gpu::Resident::boxed(dims, bytes, room))
        }
    };
}
pub(crate) use device_room;
