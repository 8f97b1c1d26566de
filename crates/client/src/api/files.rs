//! Loads from files and fat binaries: the image is read in the client (the
//! file is the application's) and loaded like an in-memory image.

use std::ffi::{c_char, c_uint, c_void, CStr};

use vgpu_abi::types::{CUjit_option, CUlibrary, CUlibraryOption, CUmodule};

use crate::edge::{non_null, CuError, CuResult};

/// The file's bytes, NUL-terminated so a PTX file is a valid image too.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated path.
unsafe fn read(name: *const c_char) -> CuResult<Vec<u8>> {
    non_null(name)?;
    // SAFETY: checked non-NULL; the application's NUL-terminated path.
    let path = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    let mut bytes = std::fs::read(&path).map_err(|e| {
        crate::log::line(format_args!("cannot read module file {path}: {e}"));
        CuError::FILE_NOT_FOUND
    })?;
    bytes.push(0);
    Ok(bytes)
}

pub unsafe fn module_load(m: *mut CUmodule, name: *const c_char) -> CuResult<()> {
    // SAFETY: the application's path.
    let image = unsafe { read(name)? };
    // SAFETY: `image` is a complete image in memory for the call's duration.
    unsafe {
        super::module::load_data(
            m,
            image.as_ptr().cast(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

pub unsafe fn module_load_fat_binary(m: *mut CUmodule, fat: *const c_void) -> CuResult<()> {
    // SAFETY: a fat binary is a module image the loader recognises.
    unsafe { super::module::load_data(m, fat, 0, std::ptr::null_mut(), std::ptr::null_mut()) }
}

#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe fn library_load_from_file(
    lib: *mut CUlibrary,
    name: *const c_char,
    jit_keys: *mut CUjit_option,
    jit_vals: *mut *mut c_void,
    njit: c_uint,
    lib_keys: *mut CUlibraryOption,
    lib_vals: *mut *mut c_void,
    nlib: c_uint,
) -> CuResult<()> {
    // SAFETY: the application's path.
    let image = unsafe { read(name)? };
    // SAFETY: `image` lives for the call; the option arrays are the application's.
    unsafe {
        super::library::load_data(
            lib,
            image.as_ptr().cast(),
            jit_keys,
            jit_vals,
            njit,
            lib_keys,
            lib_vals,
            nlib,
        )
    }
}
