//! Every function of `nvml.h`, generated from the header (`nvml_functions!`).
//!
//! For each export `nvmlX` this expands to a module `nvmlX` holding a `Probe`
//! type and the export itself, which calls `nvmlX::Probe.call(args)`. An
//! implemented function gives `Probe` an inherent `call` (see
//! `api::implement!`), which Rust's method resolution prefers; every other
//! one falls back to the `Fallback` trait: `NVML_ERROR_UNINITIALIZED` before
//! `nvmlInit`, `NVML_ERROR_NOT_SUPPORTED` after. Implementing a function is
//! one `implement!` line.

#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use std::ffi::c_char;

#[allow(unused_imports)]
use crate::generated::types::*;

macro_rules! define_exports {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(
            vgpu_abi::export_probe!($name, ($($ty),*), $ret, crate::edge::not_supported);

            /// NVML entry point (see NVIDIA's documentation of this name).
            #[no_mangle]
            #[allow(unused_unsafe)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                #[allow(unused_imports)]
                use self::$name::Fallback as _;
                crate::edge::guard(stringify!($name), move || {
                    // SAFETY: the application passes arguments that are valid
                    // for this function, as the NVML API requires of callers.
                    unsafe { $name::Probe.call(($($arg,)*)) }
                })
            }
        )*
    };
}

nvml_functions!(define_exports);

/// `nvmlErrorString`: NVML's message for `result` (a static string; it
/// needs no `nvmlInit`).
#[no_mangle]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    crate::edge::error_string(result.0).as_ptr()
}
