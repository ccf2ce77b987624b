//! The launch layer: how a room hands its kernels their arguments and launches them.
//!
//! - **One argument struct per entry.** Each entry point's arguments are one `#[repr(C)]` Rust
//!   struct, declared with [`kernel_args!`](crate::kernel_args): device pointers are [`DevRef`]
//!   (the kernel reads) and [`DevMut`] (the kernel writes), borrowed from the `CudaSlice`s for
//!   the struct's lifetime; scalars are `i32`, `u32`, `u64` and the precision's `T` (`real_t`),
//!   and [`Double`], a C `double` in either precision (the solvers' device scalars: `Double`
//!   fields, `DevRef<'a, Double>` and `DevMut<'a, Double>` over a `CudaSlice<f64>`). A struct
//!   whose fields do not depend on the precision is declared without `T`.
//!   The kernel receives it in one of two ways ([`Abi`]):
//!   - [`Abi::Struct`], the rule: the kernel source declares the same `struct` and the entry
//!     takes it by value (`extern "C" __global__ void k(const KArgs a)`) and reads `a.field`,
//!     as CUB passes `SpmvParams`. Read-only loads are explicit `ldg`: a struct member carries
//!     no `__restrict__` from which the compiler would derive them.
//!   - [`Abi::Params`], for entries whose compiled code depends on `__restrict__`
//!     *parameters*: the compiler turns a plain load through a `const T* __restrict__` kernel
//!     parameter into a non-coherent cached load (`LDG.CONSTANT`) and schedules loads and stores
//!     on the parameters' no-alias promise, which it does not do through a struct member (nor a
//!     `__restrict__` local), so such kernels would change code and speed behind a struct. Their
//!     parameter list stays, and is the struct's fields in order, so the same Rust struct is
//!     passed field by field. Which ABI an entry takes is decided by comparing its SASS
//!     (`scripts/sass.py`).
//! - **Checked once, at compile time.** A room's [`Kernels`] names each entry, its struct and its
//!   ABI. When NVRTC compiles the source for the launch layer ([`Gpu::kernel`](super::Gpu::kernel)),
//!   `static_assert`s generated from the Rust structs ([`layout_checks`]) are appended: for a
//!   struct, its size and alignment and each field's offset, C type and constness, and that the
//!   entry takes exactly that struct; for a parameter list, its length and each parameter's C
//!   type and constness. An order or type slip fails the first load with an NVRTC log naming the
//!   struct and field; CI compiles every room this way without a GPU (`.ci/nvrtc-check`), and a
//!   host test (`tests/kernel_args.rs`) compares the field names with the kernel sources.
//! - **Declared with the arrays.** A room declares its struct and the device arrays behind it
//!   from one field list with [`device_args!`](crate::device_args): each field says once what the
//!   kernel sees and where the value comes from (uploaded from the layout, a zeroed working
//!   buffer, a scalar fixed at upload, a value given at the launch).
//! - **One launch call.** [`Gpu::launch`](super::Gpu::launch)`(&kernel, shape, &args)` with a
//!   named [`Shape`]: thread per item, warp per item, a grid-stride grid capped by the caller, an
//!   explicit number of CTAs, a cooperative grid; dynamic shared memory with [`Shape::shared`].
//!   A shape of no CTAs launches nothing.
//! - **Stream or graph.** A room whose best launch plan differs between stream launches and
//!   graph replay keeps that choice as data ([`ByMode`]) and asks
//!   [`Gpu::launch_mode_if`](super::Gpu::launch_mode_if) for the mode (the driver is asked only
//!   when a choice depends on it).
//!
//! What the layer guarantees, so that a room's `unsafe` launch states only its data contract:
//! the struct matches the kernel (checked at compile time), every pointer in it addresses a live
//! `CudaSlice` for as long as the struct exists (borrowed), and the launch goes on one stream, so
//! a slice freed right after it is freed after the kernel (stream order, see `gpu/mod.rs`).
//! cudarc's per-slice event tracking, which its `.arg(&slice)` would feed, is off for spmvkit's
//! context (`Gpu::get`); the layer takes raw addresses instead and refuses to launch if tracking
//! were ever on. What it cannot know is the data: that indices stored in the arrays stay inside
//! them and that x and y are long enough, which each room's `DeviceLayout::run_unchecked`
//! contract and the layout builders guarantee.

use std::marker::PhantomData;

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchArgs, LaunchConfig};

use crate::error::{Error, Result};
use crate::scalar::{Precision, Scalar};

use super::KernelSource;

/// What [`kernel_args!`](crate::kernel_args) expands to, reachable from any crate.
#[doc(hidden)]
pub mod __macro {
    pub use cudarc::driver::{CudaSlice, DeviceRepr, LaunchArgs, PushKernelArg};
}

/// A device address the kernel reads through (`const E*` in the kernel's struct), borrowed from a
/// `CudaSlice` for `'a`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct DevRef<'a, E> {
    addr: u64,
    _slice: PhantomData<&'a CudaSlice<E>>,
}

impl<'a, E> DevRef<'a, E> {
    /// The device address.
    pub(crate) fn address(&self) -> u64 {
        self.addr
    }

    /// The address of `s`'s first element.
    pub fn new(s: &'a CudaSlice<E>) -> Self {
        DevRef {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

/// A device address the kernel writes through (`E*` in the kernel's struct), borrowed from a
/// `CudaSlice` for `'a`.
#[repr(transparent)]
#[derive(Debug)]
pub struct DevMut<'a, E> {
    addr: u64,
    _slice: PhantomData<&'a mut CudaSlice<E>>,
}

impl<'a, E> DevMut<'a, E> {
    /// The address of `s`'s first element, borrowed exclusively (y: nothing else in the struct
    /// can address it).
    pub fn new(s: &'a mut CudaSlice<E>) -> Self {
        DevMut {
            addr: address(s),
            _slice: PhantomData,
        }
    }

    /// A device layout's own working buffer (counters, partial sums, carries) that its kernels
    /// write while the layout is shared (`run_unchecked(&self, ..)`): only kernels on one stream
    /// touch it, one after the other. That nothing else in the struct addresses it is part of the
    /// launch's contract ([`Gpu::launch`](super::Gpu::launch)).
    pub fn scratch(s: &'a CudaSlice<E>) -> Self {
        DevMut {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

/// A C `double` in every precision: a scalar field that is `double` in the kernel whatever
/// `real_t` is (a plain `f64` field is the precision's `T`, `real_t`), and the element type of a
/// [`DevRef`] or [`DevMut`] over a `CudaSlice<f64>` that the kernel declares `double*`
/// ([`DevRef::doubles`], [`DevMut::doubles`], [`DevMut::doubles_scratch`]).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Double(pub f64);

impl<'a> DevRef<'a, Double> {
    /// The address of `s`'s first element, which the kernel reads as `const double*` in either
    /// precision.
    pub fn doubles(s: &'a CudaSlice<f64>) -> Self {
        DevRef {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

impl<'a> DevMut<'a, Double> {
    /// The address of `s`'s first element, which the kernel writes as `double*` in either
    /// precision, borrowed exclusively.
    pub fn doubles(s: &'a mut CudaSlice<f64>) -> Self {
        DevMut {
            addr: address(s),
            _slice: PhantomData,
        }
    }

    /// As [`DevMut::scratch`], for a working buffer of doubles (a solver's scalars and partial
    /// sums).
    pub fn doubles_scratch(s: &'a CudaSlice<f64>) -> Self {
        DevMut {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

// SAFETY: an f64 (repr(transparent)), passed as a `double` parameter or struct member.
unsafe impl cudarc::driver::DeviceRepr for Double {}
// SAFETY: a device address (u64, repr(transparent)), passed as a pointer parameter.
unsafe impl<E> cudarc::driver::DeviceRepr for DevRef<'_, E> {}
// SAFETY: as for DevRef.
unsafe impl<E> cudarc::driver::DeviceRepr for DevMut<'_, E> {}

/// The device address of `s`. cudarc hands it out with a guard that records events when the
/// context tracks them; spmvkit's context does not (`Gpu::get`, checked again at each launch),
/// so the guard does nothing and is dropped at once.
fn address<E>(s: &CudaSlice<E>) -> u64 {
    let (addr, _no_events) = s.device_ptr(s.stream());
    addr
}

/// What a field of an argument struct is on the C side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `int` (Rust `i32`).
    Int,
    /// `unsigned` (Rust `u32`).
    Unsigned,
    /// `unsigned long long` (Rust `u64`).
    U64,
    /// `real_t` (Rust `T`: `f32` or `f64`).
    Real,
    /// `double` in both precisions (Rust [`Double`]).
    Double,
    /// A pointer: `const E*` ([`DevRef`]) or `E*` ([`DevMut`]).
    Ptr {
        /// The element type.
        elem: Elem,
        /// Whether the kernel may write through it (`E*`, not `const E*`).
        writable: bool,
    },
    /// Another argument struct, by value (a struct several entries share as their first part).
    Struct(&'static str),
}

/// The element type behind a pointer field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// `unsigned char` (Rust `u8`).
    Byte,
    /// `int` or `unsigned` (Rust `u32` or `i32`: spmvkit's `u32` arrays hold values < 2^31, which
    /// kernels may read as `int`).
    Word,
    /// `unsigned long long` (Rust `u64`).
    U64,
    /// `real_t`.
    Real,
    /// `double` in both precisions ([`Double`]).
    Double,
    /// `val_t`, the matrix values as the layout stores them ([`Stored`]; `real_t` unless the
    /// module is compiled for a narrower storage, docs/precision.md).
    Stored,
    /// `off_t`, CSR row offsets ([`RowOffsets`]; `int` unless the module is compiled for
    /// 64-bit offsets, `unsigned long long` then; docs/offsets.md).
    Offsets,
}

/// The element type of a pointer to the matrix values as a layout stores them: C `val_t`
/// (`gpu/prelude.cu`), which is `real_t` in a module compiled for values as the vectors and
/// the storage's type in one compiled for a narrower storage
/// ([`Gpu::kernel_stored`](super::Gpu::kernel_stored), issue #25).
#[derive(Clone, Copy, Debug)]
pub struct Stored;

impl<'a> DevRef<'a, Stored> {
    /// The address of `s`'s first element, the values in their stored type (`T`, `u16` bits of
    /// an f16 or bf16, `f32`), which the kernel reads as `const val_t*`.
    pub fn stored<E>(s: &'a CudaSlice<E>) -> Self {
        DevRef {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

/// The element type of a pointer to CSR row offsets: C `off_t` (`gpu/prelude.cu`), `int` in a
/// module compiled for 32-bit offsets and `unsigned long long` in one compiled for 64-bit
/// offsets ([`Gpu::kernel_mode`](super::Gpu::kernel_mode), docs/offsets.md).
#[derive(Clone, Copy, Debug)]
pub struct RowOffsets;

impl<'a> DevRef<'a, RowOffsets> {
    /// The address of `s`'s first element, row offsets of either width (`u32` or `u64`), which
    /// the kernel reads as `const off_t*` (a module compiled for that width).
    pub fn offsets<E: crate::scalar::Offset>(s: &'a CudaSlice<E>) -> Self {
        DevRef {
            addr: address(s),
            _slice: PhantomData,
        }
    }
}

/// A type that may stand behind a [`DevRef`] or [`DevMut`].
pub trait KernelElem {
    /// Its C element type.
    const ELEM: Elem;
}

/// `impl Trait for Type { const NAME: Ty = value; }` for each `Type => value`: the C type of
/// each plain Rust type a kernel takes, as a table.
macro_rules! const_impls {
    ($trait:ident::$name:ident: $cty:ty { $($t:ty => $v:expr),+ $(,)? }) => {
        $(impl $trait for $t {
            const $name: $cty = $v;
        })+
    };
}

const_impls!(KernelElem::ELEM: Elem {
    u8 => Elem::Byte,
    u32 => Elem::Word,
    i32 => Elem::Word,
    u64 => Elem::U64,
    Double => Elem::Double,
    Stored => Elem::Stored,
    RowOffsets => Elem::Offsets,
});
impl<T: Scalar> KernelElem for T {
    const ELEM: Elem = Elem::Real;
}

/// A type that may be a field of an argument struct.
pub trait KernelField: cudarc::driver::DeviceRepr + Sized {
    /// Its C type.
    const KIND: FieldKind;
    /// Its layout when it is itself an argument struct.
    fn nested() -> Option<ArgsLayout> {
        None
    }
    /// Its layout when it is a group of fields that the C side writes out in place
    /// (`kernel_args! { flat struct .. }`): the fields stand in the outer struct or parameter
    /// list one by one, at the group's offset plus their own.
    fn flat() -> Option<ArgsLayout> {
        None
    }
    /// Pushes it as kernel parameters: itself, or a group's fields one by one.
    fn push_param<'b>(&'b self, b: &mut LaunchArgs<'b>) {
        use cudarc::driver::PushKernelArg;
        b.arg(self);
    }
}

/// Appends the field `name` of type `F` at `offset` to `fields`, or a flat group's fields.
#[doc(hidden)]
pub fn push_field<F: KernelField>(fields: &mut Vec<ArgField>, name: &'static str, offset: usize) {
    match F::flat() {
        Some(group) => fields.extend(group.fields.into_iter().map(|f| ArgField {
            offset: offset + f.offset,
            ..f
        })),
        None => fields.push(ArgField {
            name,
            offset,
            kind: F::KIND,
            nested: F::nested().map(Box::new),
        }),
    }
}

const_impls!(KernelField::KIND: FieldKind {
    i32 => FieldKind::Int,
    u32 => FieldKind::Unsigned,
    u64 => FieldKind::U64,
    Double => FieldKind::Double,
});
impl<T: Scalar> KernelField for T {
    const KIND: FieldKind = FieldKind::Real;
}
impl<E: KernelElem> KernelField for DevRef<'_, E> {
    const KIND: FieldKind = FieldKind::Ptr {
        elem: E::ELEM,
        writable: false,
    };
}
impl<E: KernelElem> KernelField for DevMut<'_, E> {
    const KIND: FieldKind = FieldKind::Ptr {
        elem: E::ELEM,
        writable: true,
    };
}

/// One field of an argument struct as Rust lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgField {
    /// The field's name, the same on both sides.
    pub name: &'static str,
    /// Its byte offset in the struct.
    pub offset: usize,
    /// Its C type.
    pub kind: FieldKind,
    /// The layout of a nested argument struct ([`FieldKind::Struct`]).
    pub nested: Option<Box<ArgsLayout>>,
}

/// An argument struct as Rust lays it out in one precision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsLayout {
    /// The struct's name, the same on both sides.
    pub name: &'static str,
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
    /// The fields in declaration order.
    pub fields: Vec<ArgField>,
}

/// An argument struct of a kernel entry: `#[repr(C)]`, passed by value (with a matching `struct`
/// of the same name in the kernel source) or field by field ([`Abi`]). Declare it with
/// [`kernel_args!`](crate::kernel_args), which implements this trait.
///
/// # Safety
///
/// The type is `#[repr(C)]`, holds only [`KernelField`] fields, and [`KernelArgs::layout`] lists
/// every field in order with its true offset.
pub unsafe trait KernelArgs: cudarc::driver::DeviceRepr {
    /// The struct's name.
    const NAME: &'static str;
    /// Its layout, from `size_of`, `align_of` and `offset_of!`.
    fn layout() -> ArgsLayout;
    /// Pushes its fields in order as separate kernel parameters ([`Abi::Params`]).
    fn push_params<'b>(&'b self, b: &mut LaunchArgs<'b>);
}

/// The layout of an argument struct in each precision: what a [`Kernels`] declaration holds.
#[derive(Clone, Copy, Debug)]
pub struct ArgsDecl {
    /// The struct's name.
    pub name: &'static str,
    /// Its layout in a precision.
    pub layout: fn(Precision) -> ArgsLayout,
}

/// `A32`'s layout in f32 and `A64`'s in f64 (one struct instantiated in both precisions).
pub fn layout_by_precision<A32: KernelArgs, A64: KernelArgs>(p: Precision) -> ArgsLayout {
    match p {
        Precision::F32 => A32::layout(),
        Precision::F64 => A64::layout(),
    }
}

/// How an entry point receives its argument struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Abi {
    /// By value: `k(const KArgs a)`, the kernel source declaring the same struct.
    Struct,
    /// As its parameter list: `k(f0, f1, ...)`, one parameter per field in order (for entries
    /// whose code depends on `__restrict__` parameters; module doc).
    Params,
}

/// One entry point, its argument struct and how it receives it.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The entry's name (`extern "C"`).
    pub name: &'static str,
    /// The struct it takes.
    pub args: ArgsDecl,
    /// By value or as its parameter list.
    pub abi: Abi,
}

/// A room's kernel source with its entry points and their argument structs: what the launch
/// layer compiles (with the layout checks) and loads from.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// The source.
    pub source: KernelSource,
    /// Its entries, each with the struct it takes (none for a source launched the older way).
    pub entries: &'static [Entry],
}

impl Kernels {
    /// The source `source` (`include_str!` of a `.cu` file) named `name`, with its entries.
    pub const fn new(
        name: &'static str,
        source: &'static str,
        entries: &'static [Entry],
    ) -> Kernels {
        Kernels {
            source: KernelSource { name, source },
            entries,
        }
    }

    /// A source without declared entries (compiled without layout checks).
    pub const fn unchecked(source: KernelSource) -> Kernels {
        Kernels {
            source,
            entries: &[],
        }
    }

    /// The declared entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&'static Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// A hash of the entry list (names, structs, ABIs): what tells modules of one source compiled
    /// with different layout checks apart, without building the checks.
    pub fn key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for e in self.entries {
            (e.name, e.args.name, e.abi).hash(&mut h);
        }
        h.finish()
    }
}

/// Declares a kernel's argument struct: `#[repr(C)]`, generic over the lifetime `'a` of the
/// slices its pointers borrow and the precision `T`, with [`KernelArgs`] implemented from
/// `offset_of!`, and `Name::entry("entry_name")` ([`Abi::Struct`]: the kernel source declares a
/// `struct` of the same name with the same fields in the same order) or
/// `Name::params_entry("entry_name")` ([`Abi::Params`]: the entry's parameters are the fields)
/// for the room's [`Kernels`] list.
///
/// A field may itself be such a struct. Declared `struct`, it is a C struct nested by value (the
/// prelude's `CsrArgs` in csr-light's arguments). Declared `flat struct`, it is a group of fields
/// that several structs share (the SpMV operands, `methods::common::gpu::Axpby`): the C side
/// writes its fields out in place, in the struct or the parameter list, and the layout checks see
/// them one by one at their true offsets (a group whose `repr(C)` padding differs from the
/// fields written out fails those checks).
///
/// A field may carry a visibility (`pub(crate) n: i32`), for a struct filled in by another
/// module than the one declaring it.
///
/// A struct none of whose fields depends on the precision is declared without `T`
/// (`struct Name<'a> { .. }`, such as a solver's kernels over its device scalars, all
/// [`Double`]): it has the same layout in both precisions, and the kernel's source is still
/// compiled and checked in each.
///
/// ```ignore
/// spmvkit::kernel_args! {
///     /// `csr_scalar`'s arguments.
///     pub(super) struct CsrScalarArgs<'a, T> {
///         nrows: i32,
///         row_ptr: DevRef<'a, u32>,
///         y: DevMut<'a, T>,
///         alpha: T,
///     }
/// }
/// ```
#[macro_export]
macro_rules! kernel_args {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$a:lifetime, $t:ident> { $($body:tt)* }
    ) => {
        $crate::kernel_args!(@decl nested;
            [$a, $t: $crate::Scalar] [$a, $t] ['static, f32] ['static, f64];
            $(#[$meta])* $vis struct $name { $($body)* });
    };
    (
        $(#[$meta:meta])*
        $vis:vis flat struct $name:ident<$a:lifetime, $t:ident> { $($body:tt)* }
    ) => {
        $crate::kernel_args!(@decl flat;
            [$a, $t: $crate::Scalar] [$a, $t] ['static, f32] ['static, f64];
            $(#[$meta])* $vis struct $name { $($body)* });
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$a:lifetime> { $($body:tt)* }
    ) => {
        $crate::kernel_args!(@decl nested;
            [$a] [$a] ['static] ['static];
            $(#[$meta])* $vis struct $name { $($body)* });
    };
    (
        $(#[$meta:meta])*
        $vis:vis flat struct $name:ident<$a:lifetime> { $($body:tt)* }
    ) => {
        $crate::kernel_args!(@decl flat;
            [$a] [$a] ['static] ['static];
            $(#[$meta])* $vis struct $name { $($body)* });
    };
    (@as nested) => {
        fn nested() -> Option<$crate::gpu::launch::ArgsLayout> {
            Some(<Self as $crate::gpu::launch::KernelArgs>::layout())
        }
    };
    (@as flat) => {
        fn flat() -> Option<$crate::gpu::launch::ArgsLayout> {
            Some(<Self as $crate::gpu::launch::KernelArgs>::layout())
        }
        fn push_param<'b>(&'b self, b: &mut $crate::gpu::launch::__macro::LaunchArgs<'b>) {
            $crate::gpu::launch::KernelArgs::push_params(self, b);
        }
    };
    (
        @decl $how:ident;
        [$($gp:tt)*] [$($ga:tt)*] [$($g32:tt)*] [$($g64:tt)*];
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[allow(dead_code)]
        $vis struct $name<$($gp)*> {
            $( $(#[$fmeta])* $fvis $field: $ty ),*
        }

        // SAFETY: repr(C); every field is a KernelField (checked by the bound below), listed in
        // order with its offset_of!.
        unsafe impl<$($gp)*> $crate::gpu::launch::KernelArgs for $name<$($ga)*> {
            const NAME: &'static str = stringify!($name);
            fn layout() -> $crate::gpu::launch::ArgsLayout {
                $crate::gpu::launch::ArgsLayout {
                    name: stringify!($name),
                    size: ::std::mem::size_of::<Self>(),
                    align: ::std::mem::align_of::<Self>(),
                    fields: {
                        let mut fields = Vec::new();
                        $(
                            $crate::gpu::launch::push_field::<$ty>(
                                &mut fields,
                                stringify!($field),
                                ::std::mem::offset_of!(Self, $field),
                            );
                        )*
                        fields
                    },
                }
            }
            fn push_params<'b>(&'b self, b: &mut $crate::gpu::launch::__macro::LaunchArgs<'b>) {
                $( $crate::gpu::launch::KernelField::push_param(&self.$field, b); )*
            }
        }

        impl<$($gp)*> $crate::gpu::launch::KernelField for $name<$($ga)*> {
            const KIND: $crate::gpu::launch::FieldKind =
                $crate::gpu::launch::FieldKind::Struct(stringify!($name));
            $crate::kernel_args!(@as $how);
        }

        // SAFETY: a repr(C) struct of device addresses and plain scalars, read by the driver
        // as the kernel's one by-value parameter (its size checked against the kernel's struct).
        unsafe impl<$($gp)*> $crate::gpu::launch::__macro::DeviceRepr for $name<$($ga)*> {}

        impl $name<$($g64)*> {
            /// The entry `name` taking this struct by value, for the room's `Kernels` list.
            #[allow(dead_code)]
            pub const fn entry(name: &'static str) -> $crate::gpu::launch::Entry {
                Self::entry_as(name, $crate::gpu::launch::Abi::Struct)
            }

            /// The entry `name` whose parameters are this struct's fields, for the room's
            /// `Kernels` list.
            #[allow(dead_code)]
            pub const fn params_entry(name: &'static str) -> $crate::gpu::launch::Entry {
                Self::entry_as(name, $crate::gpu::launch::Abi::Params)
            }

            const fn entry_as(
                name: &'static str,
                abi: $crate::gpu::launch::Abi,
            ) -> $crate::gpu::launch::Entry {
                $crate::gpu::launch::Entry {
                    name,
                    args: $crate::gpu::launch::ArgsDecl {
                        name: stringify!($name),
                        layout: $crate::gpu::launch::layout_by_precision::<
                            $name<$($g32)*>,
                            $name<$($g64)*>,
                        >,
                    },
                    abi,
                }
            }
        }
    };
}

/// Declares a kernel's argument struct together with what a device layout keeps of it between
/// calls, from one list of fields: each field says once what the kernel sees and where its
/// value comes from.
///
/// ```ignore
/// crate::device_args! {
///     /// A PBC layout on the device: what `pbc_spmv` reads besides the operands.
///     pub(super) struct PbcArrays<T> from l: &PbcLayout<T>;
///     /// `pbc_spmv`'s arguments.
///     pub(super) struct PbcArgs<'a, T> {
///         blk_row: &[Idx],                                        // uploaded from l.blk_row
///         vs: &[u8] = &l.vstream,                                 // uploaded from the expression
///         part: &mut [T; l.nslots()],                             // zeroed at upload
///         nsplit: i32 = kernel_int("pbc split rows", l.split_row.len())?, // fixed at upload
///         axpby: Axpby<'a, T>,                                    // given at each launch
///     }
/// }
/// ```
///
/// Each field ends with a comma and is one of:
/// - `name: &[E]`: an array the kernel reads (`DevRef<'a, E>`, C `const E*`), uploaded from the
///   layout's field of the same name; `name: &[E] = expr` uploads `expr` (a `&[E]`) instead.
/// - `name: &mut [E; len]`: the device layout's own working buffer (counters, partial sums) of
///   `len` elements, zeroed at upload, which the kernel writes (`DevMut<'a, E>` through
///   [`DevMut::scratch`], C `E*`).
/// - `name: Type = expr`: a scalar (`i32`, `u32`, `u64`, `T`, [`Double`]) computed from the
///   layout at upload (`expr` may use `?`).
/// - `name: Type`: a value given at each launch (the operands `Axpby<'a, T>`, x, y, a nested
///   struct built per call).
///
/// It expands to the argument struct through [`kernel_args!`](crate::kernel_args), with the same
/// fields in the same order and types (so the kernel source declares the same C struct, and
/// `Name::entry` / `Name::params_entry` are there), and to the holder `Arrays<T>`: one
/// `CudaSlice` or scalar per uploaded, working or scalar field, `Arrays::upload(gpu, l)` (the
/// fields in list order) and `arrays.args(given..)`, which takes the launch's values in list
/// order and returns the argument struct borrowing the arrays. A room keeps the holder in its
/// device struct beside its kernels and grid, and launches with
/// `gpu.launch(&self.k, shape, &self.arrays.args(c.axpby()))`. A second kernel of the room
/// declares its own pair; an array both kernels see is declared in one and given to the other
/// (`long_part: DevRef<'a, T>`, `DevRef::new(&self.arrays.long_part)` at the launch). Declared
/// `flat struct`, the argument struct is a flat group: a second entry that takes the same
/// arrays and more parameters declares a struct of it and its extra fields (`csr-packed`'s
/// k-vector entries).
#[macro_export]
macro_rules! device_args {
    (
        $(#[$dmeta:meta])*
        $dvis:vis struct $dev:ident<$t:ident> from $l:ident : &$layout:ty;
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$a:lifetime, $t2:ident> { $($fields:tt)* }
    ) => {
        $crate::device_args!(@field [gpu arrays $l $a]
            [$(#[$dmeta])* $dvis $dev $t $layout] [$(#[$meta])* [struct] $vis $name]
            {} {} {} {} {} $($fields)*);
    };
    // `flat struct`: the argument struct is a flat group (`kernel_args! { flat struct .. }`),
    // so another struct can take its fields in place (an entry with more parameters).
    (
        $(#[$dmeta:meta])*
        $dvis:vis struct $dev:ident<$t:ident> from $l:ident : &$layout:ty;
        $(#[$meta:meta])*
        $vis:vis flat struct $name:ident<$a:lifetime, $t2:ident> { $($fields:tt)* }
    ) => {
        $crate::device_args!(@field [gpu arrays $l $a]
            [$(#[$dmeta])* $dvis $dev $t $layout] [$(#[$meta])* [flat struct] $vis $name]
            {} {} {} {} {} $($fields)*);
    };
    // `name: &[E] = expr`: read by the kernel, uploaded from `expr`.
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime] $dh:tt $ah:tt
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
        $(#[$fm:meta])* $f:ident : &[$e:ty] = $src:expr, $($rest:tt)*
    ) => {
        $crate::device_args!(@field [$gpu $d $l $a] $dh $ah
            {$($args)* $(#[$fm])* $f: $crate::gpu::DevRef<$a, $e>,}
            {$($keep)* $f: $crate::gpu::launch::__macro::CudaSlice<$e>,}
            {$($up)* $f: $gpu.upload($src)?,}
            {$($given)*}
            {$($new)* $f: $crate::gpu::DevRef::new(&$d.$f),}
            $($rest)*);
    };
    // `name: &[E]`: read by the kernel, uploaded from the layout's field `name`.
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime] $dh:tt $ah:tt
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
        $(#[$fm:meta])* $f:ident : &[$e:ty], $($rest:tt)*
    ) => {
        $crate::device_args!(@field [$gpu $d $l $a] $dh $ah
            {$($args)* $(#[$fm])* $f: $crate::gpu::DevRef<$a, $e>,}
            {$($keep)* $f: $crate::gpu::launch::__macro::CudaSlice<$e>,}
            {$($up)* $f: $gpu.upload(&$l.$f)?,}
            {$($given)*}
            {$($new)* $f: $crate::gpu::DevRef::new(&$d.$f),}
            $($rest)*);
    };
    // `name: &mut [E; len]`: the layout's working buffer, zeroed at upload.
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime] $dh:tt $ah:tt
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
        $(#[$fm:meta])* $f:ident : &mut [$e:ty; $len:expr], $($rest:tt)*
    ) => {
        $crate::device_args!(@field [$gpu $d $l $a] $dh $ah
            {$($args)* $(#[$fm])* $f: $crate::gpu::DevMut<$a, $e>,}
            {$($keep)* $f: $crate::gpu::launch::__macro::CudaSlice<$e>,}
            {$($up)* $f: $gpu.alloc_zeros::<$e>($len)?,}
            {$($given)*}
            {$($new)* $f: $crate::gpu::DevMut::scratch(&$d.$f),}
            $($rest)*);
    };
    // `name: Type = expr`: a scalar fixed at upload.
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime] $dh:tt $ah:tt
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
        $(#[$fm:meta])* $f:ident : $ty:ty = $init:expr, $($rest:tt)*
    ) => {
        $crate::device_args!(@field [$gpu $d $l $a] $dh $ah
            {$($args)* $(#[$fm])* $f: $ty,}
            {$($keep)* $f: $ty,}
            {$($up)* $f: $init,}
            {$($given)*}
            {$($new)* $f: $d.$f,}
            $($rest)*);
    };
    // `name: Type`: given at each launch.
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime] $dh:tt $ah:tt
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
        $(#[$fm:meta])* $f:ident : $ty:ty, $($rest:tt)*
    ) => {
        $crate::device_args!(@field [$gpu $d $l $a] $dh $ah
            {$($args)* $(#[$fm])* $f: $ty,}
            {$($keep)*}
            {$($up)*}
            {$($given)* $f: $ty,}
            {$($new)* $f,}
            $($rest)*);
    };
    (@field [$gpu:ident $d:ident $l:ident $a:lifetime]
        [$(#[$dmeta:meta])* $dvis:vis $dev:ident $t:ident $layout:ty]
        [$(#[$meta:meta])* [$($kw:tt)+] $vis:vis $name:ident]
        {$($args:tt)*} {$($keep:tt)*} {$($up:tt)*} {$($given:tt)*} {$($new:tt)*}
    ) => {
        $crate::kernel_args! {
            $(#[$meta])*
            $vis $($kw)+ $name<$a, $t> { $($args)* }
        }

        $(#[$dmeta])*
        $dvis struct $dev<$t: $crate::Scalar> {
            $($keep)*
            _precision: ::std::marker::PhantomData<fn() -> $t>,
        }

        impl<$t: $crate::Scalar> $dev<$t> {
            /// Uploads the layout's arrays, allocates the working buffers and computes the
            /// scalars, in the order of the argument struct.
            $dvis fn upload(
                $gpu: &$crate::gpu::Gpu,
                $l: &$layout,
            ) -> ::std::result::Result<Self, $crate::Error> {
                Ok($dev {
                    $($up)*
                    _precision: ::std::marker::PhantomData,
                })
            }

            #[doc = concat!("The `", stringify!($name), "` of one launch: these arrays and ",
                "scalars with the values given at the launch.")]
            // one parameter per field given at the launch, named and ordered as in the struct
            #[allow(clippy::too_many_arguments)]
            $dvis fn args<$a>(&$a self, $($given)*) -> $name<$a, $t> {
                let $d = self;
                $name { $($new)* }
            }
        }
    };
}

/// A loaded entry point that takes the argument struct `A`.
pub struct Kernel<A> {
    f: CudaFunction,
    name: &'static str,
    abi: Abi,
    _args: PhantomData<fn() -> A>,
}

impl<A: KernelArgs> Kernel<A> {
    pub(super) fn new(f: CudaFunction, entry: &Entry) -> Self {
        Kernel {
            f,
            name: entry.name,
            abi: entry.abi,
            _args: PhantomData,
        }
    }

    /// Pushes `args` the way the entry receives them.
    pub(super) fn push<'b>(&self, args: &'b A, b: &mut LaunchArgs<'b>) {
        use cudarc::driver::PushKernelArg;
        match self.abi {
            Abi::Struct => {
                b.arg(args);
            }
            Abi::Params => args.push_params(b),
        }
    }

    /// The entry's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The CTAs of `block` threads with `smem` bytes of dynamic shared memory that fit the whole
    /// GPU at once (occupancy per SM, at least 1, times the SM count): the size limit of a
    /// cooperative grid.
    pub fn resident_ctas(&self, gpu: &super::Gpu, block: u32, smem: u32) -> Result<usize> {
        let per_sm = self
            .f
            .occupancy_max_active_blocks_per_multiprocessor(block, smem as usize, None)
            .map_err(|e| Error::cuda(format!("{}: occupancy query", self.name), e))?;
        Ok(per_sm.max(1) as usize * gpu.sm_count())
    }

    /// Lets the entry use up to `bytes` of dynamic shared memory (needed above 48 KiB).
    pub fn allow_shared(&self, bytes: u32) -> Result<()> {
        self.f
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(|e| Error::cuda(format!("{}: opting in to shared memory", self.name), e))
    }

    pub(super) fn function(&self) -> &CudaFunction {
        &self.f
    }
}

/// The grid of one launch: CTAs, threads per CTA, dynamic shared memory, cooperative or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    ctas: usize,
    block: u32,
    shared: u32,
    cooperative: bool,
}

impl Shape {
    /// One thread per item: ⌈n / block⌉ CTAs of `block` threads.
    pub fn thread_per_item(n: usize, block: u32) -> Shape {
        Shape::ctas(n.div_ceil(block.max(1) as usize), block)
    }

    /// One warp per item: ⌈n / (block / 32)⌉ CTAs of `block` threads (`block` a multiple of 32).
    pub fn warp_per_item(n: usize, block: u32) -> Shape {
        Shape::ctas(n.div_ceil((block / 32).max(1) as usize), block)
    }

    /// A grid-stride loop over `n` items: ⌈n / block⌉ CTAs of `block` threads, at most
    /// `max_ctas`.
    pub fn grid_stride(n: usize, block: u32, max_ctas: usize) -> Shape {
        Shape::ctas(n.div_ceil(block.max(1) as usize).min(max_ctas), block)
    }

    /// `ctas` CTAs of `block` threads: one CTA per item, or a persistent grid the room sized.
    pub fn ctas(ctas: usize, block: u32) -> Shape {
        Shape {
            ctas,
            block,
            shared: 0,
            cooperative: false,
        }
    }

    /// A cooperative grid of `ctas` CTAs of `block` threads, all resident at once (a grid
    /// barrier needs that; the driver refuses a grid larger than
    /// [`Kernel::resident_ctas`]).
    pub fn cooperative(ctas: usize, block: u32) -> Shape {
        Shape {
            cooperative: true,
            ..Shape::ctas(ctas, block)
        }
    }

    /// The same grid with `bytes` of dynamic shared memory per CTA.
    pub fn shared(self, bytes: u32) -> Shape {
        Shape {
            shared: bytes,
            ..self
        }
    }

    /// Its CTAs.
    pub fn ctas_count(&self) -> usize {
        self.ctas
    }

    /// The driver's launch configuration; [`Error::TooLarge`] past 2^31−1 CTAs.
    pub(super) fn config(&self) -> Result<LaunchConfig> {
        Ok(LaunchConfig {
            grid_dim: (super::grid_dim("CTAs of one launch", self.ctas)?, 1, 1),
            block_dim: (self.block, 1, 1),
            shared_mem_bytes: self.shared,
        })
    }

    pub(super) fn is_cooperative(&self) -> bool {
        self.cooperative
    }
}

/// How the work enqueued now runs: launched on the stream, or captured into a CUDA graph and
/// replayed later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchMode {
    /// Launched on [`Gpu::stream`](super::Gpu::stream) now.
    Stream,
    /// Captured into a graph (the stream is capturing).
    Graph,
}

/// A launch choice that may differ between the modes: one cooperative launch saves a launch's
/// host overhead on a stream and costs a grid barrier in a graph, so a room may take it on a
/// stream only. The rule is data of the room (its cut points pick the variant at build time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByMode<V> {
    /// The same in both modes.
    Always(V),
    /// `stream` when launched on a stream, `graph` when captured.
    Split {
        /// The choice on a stream.
        stream: V,
        /// The choice in a graph.
        graph: V,
    },
}

impl<V: Copy> ByMode<V> {
    /// Whether the choice depends on the mode (only then is the driver asked).
    pub fn varies(&self) -> bool {
        matches!(self, ByMode::Split { .. })
    }

    /// The choice in `mode`.
    pub fn get(&self, mode: LaunchMode) -> V {
        match *self {
            ByMode::Always(v) => v,
            ByMode::Split { stream, .. } if mode == LaunchMode::Stream => stream,
            ByMode::Split { graph, .. } => graph,
        }
    }
}

/// The `static_assert`s that check the argument structs of `k`'s entries against the kernel
/// source in precision `p`. For an entry taking its struct by value: the struct's size and
/// alignment, each field's offset, C type and constness (once per struct), and that the entry
/// takes exactly that struct. For an entry taking the fields as parameters: their number and each
/// one's C type and constness. Appended to the source when the launch layer compiles it; empty
/// when `k` declares no entries.
pub fn layout_checks(k: &Kernels, p: Precision) -> String {
    if k.entries.is_empty() {
        return String::new();
    }
    let mut out = String::from(CHECK_HELPERS);
    let mut done: Vec<&'static str> = Vec::new();
    for e in k.entries {
        let l = (e.args.layout)(p);
        let s = e.args.name;
        for f in &l.fields {
            if let Some(n) = &f.nested {
                struct_checks_once(&mut out, &mut done, n);
            }
        }
        match e.abi {
            Abi::Struct => {
                struct_checks_once(&mut out, &mut done, &l);
                out.push_str(&format!(
                    "static_assert(spmvkit_args::same<decltype({}), void({s})>::value, \"entry {}: takes one {s} by value (gpu.rs Kernels list)\");\n",
                    e.name, e.name
                ));
            }
            Abi::Params => params_checks(&mut out, e.name, &l),
        }
    }
    out
}

/// Type helpers of the generated checks. The sources are header-free and NVRTC knows neither
/// `offsetof` nor `__builtin_offsetof`; its front end's `__INTADDR__` folds a member's address
/// off a null base to a constant, which is what `offsetof` expands to elsewhere.
const CHECK_HELPERS: &str = "namespace spmvkit_args {
template <class A, class B> struct same { enum { value = 0 }; };
template <class A> struct same<A, A> { enum { value = 1 }; };
template <class P> struct ptr { enum { is = 0, writable = 0 }; typedef void elem; };
template <class E> struct ptr<E*> { enum { is = 1, writable = 1 }; typedef E elem; };
template <class E> struct ptr<const E*> { enum { is = 1, writable = 0 }; typedef E elem; };
template <class E> struct word { enum { value = same<E, int>::value || same<E, unsigned>::value }; };
template <int I, class F> struct param;
template <class R, class A0, class... As> struct param<0, R(A0, As...)> { typedef A0 type; };
template <int I, class R, class A0, class... As> struct param<I, R(A0, As...)> {
    typedef typename param<I - 1, R(As...)>::type type;
};
template <class F> struct arity;
template <class R, class... As> struct arity<R(As...)> { enum { value = sizeof...(As) }; };
}
#define SPMVKIT_ARGS_OFFSET(S, f) __INTADDR__(&((S*)0)->f)
";

/// [`struct_checks`] unless `done` has the struct, and of the structs nested in it.
fn struct_checks_once(out: &mut String, done: &mut Vec<&'static str>, l: &ArgsLayout) {
    if done.contains(&l.name) {
        return;
    }
    done.push(l.name);
    for f in &l.fields {
        if let Some(n) = &f.nested {
            struct_checks_once(out, done, n);
        }
    }
    struct_checks(out, l);
}

fn struct_checks(out: &mut String, l: &ArgsLayout) {
    let s = l.name;
    out.push_str(&format!(
        "static_assert(sizeof({s}) == {size} && alignof({s}) == {align}, \"{s}: the Rust struct has {size} bytes, aligned to {align}\");\n",
        size = l.size,
        align = l.align
    ));
    for f in &l.fields {
        let (name, offset) = (f.name, f.offset);
        out.push_str(&format!(
            "static_assert(SPMVKIT_ARGS_OFFSET({s}, {name}) == {offset}, \"{s}.{name}: at offset {offset} in the Rust struct\");\n"
        ));
        let (test, want) = type_test(&format!("decltype({s}::{name})"), f.kind);
        out.push_str(&format!(
            "static_assert({test}, \"{s}.{name}: the Rust struct has {want} here\");\n"
        ));
    }
}

fn params_checks(out: &mut String, entry: &str, l: &ArgsLayout) {
    let (s, n) = (l.name, l.fields.len());
    out.push_str(&format!(
        "static_assert(spmvkit_args::arity<decltype({entry})>::value == {n}, \"entry {entry}: {n} parameters, the fields of the Rust {s}\");\n"
    ));
    for (i, f) in l.fields.iter().enumerate() {
        let ty = format!("spmvkit_args::param<{i}, decltype({entry})>::type");
        let (test, want) = type_test(&ty, f.kind);
        out.push_str(&format!(
            "static_assert({test}, \"entry {entry}, parameter {i} ({s}.{}): the Rust struct has {want} here\");\n",
            f.name
        ));
    }
}

/// A C++ test that type `ty` is what `kind` says, and the type in words.
fn type_test(ty: &str, kind: FieldKind) -> (String, &'static str) {
    match kind {
        FieldKind::Int => (format!("spmvkit_args::same<{ty}, int>::value"), "int"),
        FieldKind::Unsigned => (
            format!("spmvkit_args::same<{ty}, unsigned>::value"),
            "unsigned",
        ),
        FieldKind::U64 => (
            format!("spmvkit_args::same<{ty}, unsigned long long>::value"),
            "unsigned long long",
        ),
        FieldKind::Real => (format!("spmvkit_args::same<{ty}, real_t>::value"), "real_t"),
        FieldKind::Double => (format!("spmvkit_args::same<{ty}, double>::value"), "double"),
        FieldKind::Struct(name) => (format!("spmvkit_args::same<{ty}, {name}>::value"), name),
        FieldKind::Ptr { elem, writable } => {
            let p = format!("spmvkit_args::ptr<{ty}>");
            let (elem_test, want) = match (elem, writable) {
                (Elem::Byte, false) => ("same<PE, unsigned char>::value", "const unsigned char*"),
                (Elem::Byte, true) => ("same<PE, unsigned char>::value", "unsigned char*"),
                (Elem::Word, false) => ("word<PE>::value", "const int* or const unsigned*"),
                (Elem::Word, true) => ("word<PE>::value", "int* or unsigned*"),
                (Elem::U64, false) => (
                    "same<PE, unsigned long long>::value",
                    "const unsigned long long*",
                ),
                (Elem::U64, true) => ("same<PE, unsigned long long>::value", "unsigned long long*"),
                (Elem::Real, false) => ("same<PE, real_t>::value", "const real_t*"),
                (Elem::Real, true) => ("same<PE, real_t>::value", "real_t*"),
                (Elem::Double, false) => ("same<PE, double>::value", "const double*"),
                (Elem::Double, true) => ("same<PE, double>::value", "double*"),
                (Elem::Stored, false) => ("same<PE, val_t>::value", "const val_t*"),
                (Elem::Stored, true) => ("same<PE, val_t>::value", "val_t*"),
                (Elem::Offsets, false) => ("same<PE, off_t>::value", "const off_t*"),
                (Elem::Offsets, true) => ("same<PE, off_t>::value", "off_t*"),
            };
            let elem_test = format!(
                "spmvkit_args::{}",
                elem_test.replace("PE", &format!("{p}::elem"))
            );
            (
                format!(
                    "{p}::is && {p}::writable == {} && {elem_test}",
                    u8::from(writable)
                ),
                want,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernel_args! {
        /// A struct with one field of each kind.
        struct TestArgs<'a, T> {
            n: i32,
            rows: DevRef<'a, u32>,
            flags: u32,
            alpha: T,
            bytes: DevRef<'a, u8>,
            count: u64,
            meta: DevRef<'a, u64>,
            y: DevMut<'a, T>,
        }
    }

    crate::kernel_args! {
        /// A flat group: written out in place.
        flat struct TestTail<'a, T> {
            y: DevMut<'a, T>,
            alpha: T,
        }
    }

    crate::kernel_args! {
        /// A struct ending with the flat group.
        struct TestOuter<'a, T> {
            n: i32,
            tail: TestTail<'a, T>,
        }
    }

    #[test]
    fn flat_groups_stand_in_place() {
        let l = <TestOuter<'static, f32> as KernelArgs>::layout();
        let fields: Vec<(&str, usize)> = l.fields.iter().map(|f| (f.name, f.offset)).collect();
        assert_eq!(fields, [("n", 0), ("y", 8), ("alpha", 16)]);
        assert!(l.fields.iter().all(|f| f.nested.is_none()));
        assert_eq!((l.size, l.align), (24, 8));
    }

    const TEST_KERNELS: Kernels = Kernels {
        source: KernelSource {
            name: "test",
            source: "",
        },
        entries: &[
            TestArgs::entry("k1"),
            TestArgs::entry("k2"),
            TestArgs::params_entry("k3"),
        ],
    };

    #[test]
    fn layouts_follow_repr_c_in_both_precisions() {
        let f32l = (TEST_KERNELS.entries[0].args.layout)(Precision::F32);
        let f64l = (TEST_KERNELS.entries[0].args.layout)(Precision::F64);
        let offsets = |l: &ArgsLayout| l.fields.iter().map(|f| f.offset).collect::<Vec<_>>();
        // n, pad, rows, flags, alpha (4 or 8 bytes, then padding to 8), bytes, count, meta, y
        assert_eq!(offsets(&f32l), [0, 8, 16, 20, 24, 32, 40, 48]);
        assert_eq!((f32l.size, f32l.align), (56, 8));
        assert_eq!(offsets(&f64l), [0, 8, 16, 24, 32, 40, 48, 56]);
        assert_eq!((f64l.size, f64l.align), (64, 8));
        assert_eq!(f64l.name, "TestArgs");
        let kinds: Vec<FieldKind> = f64l.fields.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [
                FieldKind::Int,
                FieldKind::Ptr {
                    elem: Elem::Word,
                    writable: false
                },
                FieldKind::Unsigned,
                FieldKind::Real,
                FieldKind::Ptr {
                    elem: Elem::Byte,
                    writable: false
                },
                FieldKind::U64,
                FieldKind::Ptr {
                    elem: Elem::U64,
                    writable: false
                },
                FieldKind::Ptr {
                    elem: Elem::Real,
                    writable: true
                },
            ]
        );
        assert_eq!(<TestArgs<'static, f32> as KernelArgs>::layout(), f32l);
    }

    #[test]
    fn generated_checks_name_struct_field_and_entry() {
        let c = layout_checks(&TEST_KERNELS, Precision::F64);
        assert!(c.starts_with("namespace spmvkit_args {"), "{c}");
        for line in [
            "static_assert(sizeof(TestArgs) == 64 && alignof(TestArgs) == 8, \"TestArgs: the Rust struct has 64 bytes, aligned to 8\");",
            "static_assert(SPMVKIT_ARGS_OFFSET(TestArgs, n) == 0, \"TestArgs.n: at offset 0 in the Rust struct\");",
            "static_assert(spmvkit_args::same<decltype(TestArgs::n), int>::value, \"TestArgs.n: the Rust struct has int here\");",
            "static_assert(SPMVKIT_ARGS_OFFSET(TestArgs, bytes) == 32, \"TestArgs.bytes: at offset 32 in the Rust struct\");",
            "static_assert(spmvkit_args::same<decltype(TestArgs::alpha), real_t>::value, \"TestArgs.alpha: the Rust struct has real_t here\");",
            "static_assert(spmvkit_args::ptr<decltype(TestArgs::rows)>::is && spmvkit_args::ptr<decltype(TestArgs::rows)>::writable == 0 && spmvkit_args::word<spmvkit_args::ptr<decltype(TestArgs::rows)>::elem>::value, \"TestArgs.rows: the Rust struct has const int* or const unsigned* here\");",
            "static_assert(spmvkit_args::ptr<decltype(TestArgs::y)>::is && spmvkit_args::ptr<decltype(TestArgs::y)>::writable == 1 && spmvkit_args::same<spmvkit_args::ptr<decltype(TestArgs::y)>::elem, real_t>::value, \"TestArgs.y: the Rust struct has real_t* here\");",
            "static_assert(spmvkit_args::same<decltype(TestArgs::count), unsigned long long>::value, \"TestArgs.count: the Rust struct has unsigned long long here\");",
            "static_assert(spmvkit_args::same<decltype(k1), void(TestArgs)>::value, \"entry k1: takes one TestArgs by value (gpu.rs Kernels list)\");",
            "static_assert(spmvkit_args::same<decltype(k2), void(TestArgs)>::value, \"entry k2: takes one TestArgs by value (gpu.rs Kernels list)\");",
        ] {
            assert!(c.lines().any(|l| l == line), "missing: {line}\n{c}");
        }
        for line in [
            "static_assert(spmvkit_args::arity<decltype(k3)>::value == 8, \"entry k3: 8 parameters, the fields of the Rust TestArgs\");",
            "static_assert(spmvkit_args::same<spmvkit_args::param<0, decltype(k3)>::type, int>::value, \"entry k3, parameter 0 (TestArgs.n): the Rust struct has int here\");",
            "static_assert(spmvkit_args::ptr<spmvkit_args::param<7, decltype(k3)>::type>::is && spmvkit_args::ptr<spmvkit_args::param<7, decltype(k3)>::type>::writable == 1 && spmvkit_args::same<spmvkit_args::ptr<spmvkit_args::param<7, decltype(k3)>::type>::elem, real_t>::value, \"entry k3, parameter 7 (TestArgs.y): the Rust struct has real_t* here\");",
        ] {
            assert!(c.lines().any(|l| l == line), "missing: {line}\n{c}");
        }
        // the struct is checked once although two entries take it
        assert_eq!(c.matches("sizeof(TestArgs)").count(), 1);
        let f32c = layout_checks(&TEST_KERNELS, Precision::F32);
        assert!(
            f32c.contains("SPMVKIT_ARGS_OFFSET(TestArgs, bytes) == 24"),
            "{f32c}"
        );
        assert!(layout_checks(&Kernels::unchecked(TEST_KERNELS.source), Precision::F32).is_empty());
    }

    /// `good` with `edit` applied (which must change it, unless empty), as the source of
    /// `entries`.
    fn edited_kernels(
        name: &'static str,
        good: &str,
        edit: (&str, &str),
        entries: &'static [Entry],
    ) -> Kernels {
        let source = good.replacen(edit.0, edit.1, 1);
        assert!(
            edit.0.is_empty() || source != good,
            "{edit:?} changes nothing"
        );
        Kernels {
            source: KernelSource {
                name,
                source: Box::leak(source.into_boxed_str()),
            },
            entries,
        }
    }

    /// A kernel source matching `TestArgs` (k1, k2 by value; k3 by parameters), with `edit`
    /// applied.
    fn test_source(edit: (&str, &str)) -> Kernels {
        const GOOD: &str =
            "struct TestArgs { int n; const int* rows; unsigned flags; real_t alpha; \
            const unsigned char* bytes; unsigned long long count; const unsigned long long* meta; \
            real_t* y; };
extern \"C\" __global__ void k1(const TestArgs a) { a.y[0] = a.alpha; }
extern \"C\" __global__ void k2(TestArgs a) { a.y[0] = a.alpha; }
extern \"C\" __global__ void k3(int n, const int* __restrict__ rows, unsigned flags, real_t alpha,
    const unsigned char* bytes, unsigned long long count, const unsigned long long* meta,
    real_t* __restrict__ y) { y[0] = alpha; }
";
        edited_kernels("args-test", GOOD, edit, TEST_KERNELS.entries)
    }

    #[test]
    fn nvrtc_refuses_structs_and_parameters_that_disagree() {
        if !crate::testing::nvrtc_or_skip("nvrtc_refuses_structs_and_parameters_that_disagree") {
            return;
        }
        for p in Precision::ALL {
            let ptx = super::super::compile_checked_ptx(&test_source(("", "")), p, "sm_90")
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(ptx.contains(".entry k3("), "{p}");
        }
        for (edit, want) in [
            // two fields swapped
            (
                (
                    "unsigned flags; real_t alpha;",
                    "real_t alpha; unsigned flags;",
                ),
                "TestArgs.flags: at offset 16",
            ),
            // a field of another type
            (
                ("unsigned flags;", "int flags;"),
                "TestArgs.flags: the Rust struct has unsigned",
            ),
            // a pointer the kernel may write where Rust lends it read-only
            (
                ("const int* rows;", "int* rows;"),
                "TestArgs.rows: the Rust struct has const int*",
            ),
            // a field too few
            (
                ("real_t* y; };", "};"),
                "TestArgs: the Rust struct has 64 bytes",
            ),
            // an entry taking something else
            (
                ("void k2(TestArgs a)", "void k2(int n)"),
                "entry k2: takes one TestArgs",
            ),
            // parameter lists: one too many, a type slip
            (
                (
                    "real_t* __restrict__ y) {",
                    "real_t* __restrict__ y, int extra) {",
                ),
                "entry k3: 8 parameters",
            ),
            (
                ("rows, unsigned flags,", "rows, int flags,"),
                "entry k3, parameter 2 (TestArgs.flags)",
            ),
        ] {
            match super::super::compile_checked_ptx(&test_source(edit), Precision::F64, "sm_90") {
                Err(Error::Nvrtc { log, .. }) => assert!(log.contains(want), "{edit:?}: {log}"),
                other => panic!("{edit:?}: expected an NVRTC error, got {other:?}"),
            }
        }
    }

    crate::kernel_args! {
        /// A struct without `T`: C doubles in both precisions.
        struct TestDoubles<'a> {
            s: DevMut<'a, Double>,
            part: DevRef<'a, Double>,
            scale: Double,
            nb: i32,
        }
    }

    const TEST_DOUBLE_KERNELS: Kernels = Kernels {
        source: KernelSource {
            name: "test-doubles",
            source: "",
        },
        entries: &[TestDoubles::entry("d1"), TestDoubles::params_entry("d2")],
    };

    #[test]
    fn doubles_are_double_in_both_precisions() {
        for p in Precision::ALL {
            let l = (TEST_DOUBLE_KERNELS.entries[0].args.layout)(p);
            assert_eq!(l, <TestDoubles<'static> as KernelArgs>::layout());
            let fields: Vec<(&str, usize, FieldKind)> = l
                .fields
                .iter()
                .map(|f| (f.name, f.offset, f.kind))
                .collect();
            assert_eq!(
                fields,
                [
                    (
                        "s",
                        0,
                        FieldKind::Ptr {
                            elem: Elem::Double,
                            writable: true
                        }
                    ),
                    (
                        "part",
                        8,
                        FieldKind::Ptr {
                            elem: Elem::Double,
                            writable: false
                        }
                    ),
                    ("scale", 16, FieldKind::Double),
                    ("nb", 24, FieldKind::Int),
                ]
            );
            assert_eq!((l.size, l.align), (32, 8));
            let c = layout_checks(&TEST_DOUBLE_KERNELS, p);
            for line in [
                "static_assert(spmvkit_args::same<decltype(TestDoubles::scale), double>::value, \"TestDoubles.scale: the Rust struct has double here\");",
                "static_assert(spmvkit_args::ptr<decltype(TestDoubles::part)>::is && spmvkit_args::ptr<decltype(TestDoubles::part)>::writable == 0 && spmvkit_args::same<spmvkit_args::ptr<decltype(TestDoubles::part)>::elem, double>::value, \"TestDoubles.part: the Rust struct has const double* here\");",
                "static_assert(spmvkit_args::ptr<spmvkit_args::param<0, decltype(d2)>::type>::is && spmvkit_args::ptr<spmvkit_args::param<0, decltype(d2)>::type>::writable == 1 && spmvkit_args::same<spmvkit_args::ptr<spmvkit_args::param<0, decltype(d2)>::type>::elem, double>::value, \"entry d2, parameter 0 (TestDoubles.s): the Rust struct has double* here\");",
            ] {
                assert!(c.lines().any(|l| l == line), "{p}: missing: {line}\n{c}");
            }
        }
    }

    #[test]
    fn nvrtc_refuses_real_t_where_rust_has_double() {
        if !crate::testing::nvrtc_or_skip("nvrtc_refuses_real_t_where_rust_has_double") {
            return;
        }
        const GOOD: &str =
            "struct TestDoubles { double* s; const double* part; double scale; int nb; };
extern \"C\" __global__ void d1(const TestDoubles a) { a.s[0] = a.part[0] * a.scale; }
extern \"C\" __global__ void d2(double* __restrict__ s, const double* __restrict__ part,
    double scale, int nb) { s[0] = part[nb] * scale; }
";
        let with = |edit| edited_kernels("doubles-test", GOOD, edit, TEST_DOUBLE_KERNELS.entries);
        for p in Precision::ALL {
            super::super::compile_checked_ptx(&with(("", "")), p, "sm_90")
                .unwrap_or_else(|e| panic!("{p}: {e}"));
        }
        // real_t is double in f64, so the slips show in f32
        for (edit, want) in [
            (
                ("double scale; int nb; };", "real_t scale; int nb; };"),
                "TestDoubles.scale: the Rust struct has double here",
            ),
            (
                ("const double* part;", "const real_t* part;"),
                "TestDoubles.part: the Rust struct has const double*",
            ),
            (
                ("double scale, int nb)", "real_t scale, int nb)"),
                "entry d2, parameter 2 (TestDoubles.scale)",
            ),
            (
                (
                    "void d2(double* __restrict__ s,",
                    "void d2(real_t* __restrict__ s,",
                ),
                "entry d2, parameter 0 (TestDoubles.s)",
            ),
        ] {
            match super::super::compile_checked_ptx(&with(edit), Precision::F32, "sm_90") {
                Err(Error::Nvrtc { log, .. }) => assert!(log.contains(want), "{edit:?}: {log}"),
                other => panic!("{edit:?}: expected an NVRTC error, got {other:?}"),
            }
        }
    }

    #[test]
    fn shapes_compute_the_rooms_grids() {
        assert_eq!(Shape::thread_per_item(1000, 256).ctas_count(), 4);
        assert_eq!(Shape::thread_per_item(0, 256).ctas_count(), 0);
        assert_eq!(Shape::warp_per_item(9, 128).ctas_count(), 3);
        assert_eq!(Shape::warp_per_item(8, 128).ctas_count(), 2);
        assert_eq!(Shape::grid_stride(1 << 20, 256, 100).ctas_count(), 100);
        assert_eq!(Shape::grid_stride(300, 256, 100).ctas_count(), 2);
        let s = Shape::cooperative(7, 256).shared(1024);
        assert!(s.is_cooperative());
        let cfg = s.config().unwrap();
        assert_eq!(
            (cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes),
            ((7, 1, 1), (256, 1, 1), 1024)
        );
        assert!(Shape::ctas(i32::MAX as usize + 1, 32).config().is_err());
    }

    #[test]
    fn by_mode_picks_per_mode() {
        let split = ByMode::Split {
            stream: 1,
            graph: 2,
        };
        assert!(split.varies());
        assert_eq!(split.get(LaunchMode::Stream), 1);
        assert_eq!(split.get(LaunchMode::Graph), 2);
        let always = ByMode::Always(3);
        assert!(!always.varies());
        assert_eq!(always.get(LaunchMode::Graph), 3);
    }
}
