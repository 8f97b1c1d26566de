//! Every symbol of the real driver, generated from the ABI table.
//!
//! For each export `cuX` this expands to a module `cuX` holding a `Probe` type
//! and the export itself, which calls `cuX::Probe.call(args)`. An implemented
//! entry point gives `Probe` an inherent `call` (see `api::implement!`), which
//! Rust's method resolution prefers; every other one falls back to the
//! `Fallback` trait, which logs its name once and returns
//! `CUDA_ERROR_NOT_SUPPORTED`. Adding a function is one `implement!` line.

#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

macro_rules! define_exports {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(
            vgpu_abi::export_probe!($name, ($($ty),*), $ret, crate::edge::not_supported);

            /// CUDA Driver API entry point (see NVIDIA's documentation of this name).
            #[no_mangle]
            #[allow(unused_unsafe)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                #[allow(unused_imports)]
                use self::$name::Fallback as _;
                let args = || {
                    let parts: Vec<String> = vec![$(crate::trace::describe(&$arg)),*];
                    parts.join(", ")
                };
                crate::edge::guard_traced(stringify!($name), args, move || {
                    // SAFETY: the application passes arguments that are valid for
                    // this entry point, as the CUDA API requires of its callers.
                    unsafe { $name::Probe.call(($($arg,)*)) }
                })
            }
        )*

        /// Every export by name, sorted as the ABI table is: what
        /// `cuGetProcAddress` hands out.
        pub static BY_NAME: &[(&str, unsafe extern "C" fn())] = &[$(
            (
                stringify!($name),
                // SAFETY: only the pointer's type changes; callers cast it back
                // to the entry point's real prototype before calling it.
                unsafe { std::mem::transmute::<unsafe extern "C" fn($($ty),*) -> $ret, unsafe extern "C" fn()>($name) },
            ),
        )*];
    };
}

vgpu_abi::cuda_exports!(define_exports);

/// The address of export `name`.
pub fn address(name: &str) -> Option<unsafe extern "C" fn()> {
    BY_NAME
        .binary_search_by(|(n, _)| n.cmp(&name))
        .ok()
        .map(|i| BY_NAME[i].1)
}
