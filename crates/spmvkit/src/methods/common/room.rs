//! What every room's `mod.rs` would otherwise write alike, written once: the declaration of the
//! room's kernel ([`room_kernel!`]) and the [`Layout`](crate::methods::Layout) methods that only
//! forward to the room's CPU mirror and upload ([`forward!`]).

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
/// `gpu::upload(layout, gpu)`.
///
/// ```ignore
/// impl<T: Scalar> Layout<T> for PbcLayout<T> {
///     fn footprint_bytes(&self) -> usize { ... }
///     forward! { run_cpu, upload }
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
