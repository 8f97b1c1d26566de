//! The dispatch shape every exported C function of vgpu's libraries takes
//! (the CUDA client's `cuda_exports!`, the NVML library's
//! `nvml_functions!`): [`export_probe!`].

/// The module `$name` of one export: its argument tuple `Args`, a `Probe`
/// type the export calls, and the `Fallback` trait that answers
/// `$fallback(stringify!($name))` where no implementation gave `Probe` an
/// inherent `call` (Rust's method resolution prefers an inherent method,
/// so implementing an export is one `impl` of `Probe`, and every other
/// export falls back without being listed twice).
///
/// The module sees its parent's names (`use super::*`), where the export's
/// types are.
#[macro_export]
macro_rules! export_probe {
    ($name:ident, ($($ty:ty),*), $ret:ty, $fallback:path) => {
        pub mod $name {
            #[allow(unused_imports)]
            use super::*;
            /// The argument tuple of this export.
            pub type Args = ($($ty,)*);
            /// Dispatch target; implemented exports add an inherent `call`.
            pub struct Probe;
            /// The not-implemented fallback (unused where `Probe` has an
            /// inherent `call`).
            #[allow(dead_code)]
            pub trait Fallback {
                fn call(&self, _args: Args) -> $ret {
                    $fallback(stringify!($name))
                }
            }
            impl Fallback for Probe {}
        }
    };
}
