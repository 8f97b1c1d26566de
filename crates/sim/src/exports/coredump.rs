//! GPU core dump attributes (`cuCoredump*Attribute*`) over
//! [`crate::coredump`].

use std::ffi::c_void;

use crate::context;
use crate::coredump::access;
use crate::cu::{CUcoredumpSettings, CUresult};
use crate::error::Res;
use crate::ffi::run;
use crate::state;

/// The attribute of the current context (`global` false) or the process.
///
/// # Safety
/// As for [`access`].
unsafe fn attribute(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
    global: bool,
    set: bool,
) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    let settings = if global {
        &mut st.ext.coredump.global
    } else {
        let ctx = context::current_usable(&st)?;
        let inherited = st.ext.coredump.global.clone();
        st.ext.coredump.contexts.entry(ctx).or_insert(inherited)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { access(settings, attrib.0, value, size, set) }
}

/// `cuCoredumpGetAttribute`.
///
/// # Safety
/// `value` must be NULL or hold `*size` writable bytes; `size` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cuCoredumpGetAttribute(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    run("cuCoredumpGetAttribute", || unsafe {
        attribute(attrib, value, size, false, false)
    })
}

/// `cuCoredumpGetAttributeGlobal`.
///
/// # Safety
/// As for `cuCoredumpGetAttribute`.
#[no_mangle]
pub unsafe extern "C" fn cuCoredumpGetAttributeGlobal(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    run("cuCoredumpGetAttributeGlobal", || unsafe {
        attribute(attrib, value, size, true, false)
    })
}

/// `cuCoredumpSetAttribute`.
///
/// # Safety
/// `value` must be NULL or hold `*size` readable bytes; `size` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn cuCoredumpSetAttribute(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    run("cuCoredumpSetAttribute", || unsafe {
        attribute(attrib, value, size, false, true)
    })
}

/// `cuCoredumpSetAttributeGlobal`.
///
/// # Safety
/// As for `cuCoredumpSetAttribute`.
#[no_mangle]
pub unsafe extern "C" fn cuCoredumpSetAttributeGlobal(
    attrib: CUcoredumpSettings,
    value: *mut c_void,
    size: *mut usize,
) -> CUresult {
    // SAFETY: forwarded from this function's contract.
    run("cuCoredumpSetAttributeGlobal", || unsafe {
        attribute(attrib, value, size, true, true)
    })
}
