//! Legacy texture and surface references: the references `cuTexRefCreate`
//! makes and those a module image declares (`texref NAME`, `surfref NAME`).
//! The simulated device keeps what each is bound to and how it reads; it runs
//! no kernel that fetches through one.

use std::ffi::{c_int, c_uint};

use crate::array;
use crate::context;
use crate::cu::{
    CUDA_ARRAY_DESCRIPTOR_v1, CUaddress_mode, CUarray, CUarray_format, CUdeviceptr, CUdeviceptr_v1,
    CUfilter_mode, CUmipmappedArray, CUresult, CUsurfref, CUtexref, CUDA_ARRAY3D_SURFACE_LDST,
    CUDA_ARRAY_DESCRIPTOR, CU_TRSA_OVERRIDE_FORMAT,
};
use crate::error::{err, Res};
use crate::ffi::{key, Out};
use crate::memory;
use crate::state::array::{Binding, TexRef};
use crate::state::{self, State};

/// Whether `k` is a reference a live module declared (`surface` selects
/// surface references).
fn declared(st: &State, k: usize, surface: bool) -> bool {
    st.modules.values().any(|m| {
        let refs = if surface { &m.surfrefs } else { &m.texrefs };
        refs.values().any(|&h| h == k)
    })
}

/// Runs `f` on texture reference `h` under the lock, with a current context.
/// A module's reference is set up on first use, in the default state.
fn with<T>(h: CUtexref, f: impl FnOnce(&mut TexRef) -> Res<T>) -> Res<T> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    context::current(&st)?;
    let k = key(h);
    if !st.ext.texrefs.contains_key(&k) {
        if !declared(&st, k, false) {
            return err(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("{k:#x} is not a texture reference"),
            );
        }
        st.ext.texrefs.insert(k, TexRef::default());
    }
    match st.ext.texrefs.get_mut(&k) {
        Some(t) => f(t),
        None => err(CUresult::CUDA_ERROR_INVALID_VALUE, "no texture reference"),
    }
}

/// `CUDA_ERROR_INVALID_VALUE` with `why` unless `ok`.
fn check(ok: bool, why: impl Into<std::borrow::Cow<'static, str>>) -> Res<()> {
    if ok {
        Ok(())
    } else {
        err(CUresult::CUDA_ERROR_INVALID_VALUE, why)
    }
}

/// `cuTexRefCreate`: a reference of the current context, bound to nothing.
pub(crate) fn tex_ref_create(out: Out<CUtexref>) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    context::current(&st)?;
    let k = st.mint();
    st.ext.texrefs.insert(k, TexRef::default());
    out.write(k as CUtexref);
    Ok(())
}

/// `cuTexRefDestroy`: only references `cuTexRefCreate` made.
pub(crate) fn tex_ref_destroy(h: CUtexref) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    context::current(&st)?;
    let k = key(h);
    check(
        !declared(&st, k, false),
        "a module's reference is not destroyed",
    )?;
    match st.ext.texrefs.remove(&k) {
        Some(_) => Ok(()),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{k:#x} is not a texture reference"),
        ),
    }
}

/// `cuTexRefSetArray`: with `CU_TRSA_OVERRIDE_FORMAT` the array's format
/// becomes the reference's. Driver 580 takes other flags too (0 included)
/// and binds the array all the same.
pub(crate) fn tex_ref_set_array(h: CUtexref, a: CUarray, flags: c_uint) -> Res<()> {
    let (format, channels) = {
        let st = state::sim()?.lock();
        let arr = array::get(&st, key(a))?;
        (arr.format, arr.channels)
    };
    with(h, |t| {
        t.binding = Binding::Array(key(a));
        if flags & CU_TRSA_OVERRIDE_FORMAT != 0 {
            t.format = format;
            t.channels = c_int::try_from(channels).unwrap_or(0);
        }
        Ok(())
    })
}

/// `cuTexRefGetArray`: `CUDA_ERROR_INVALID_VALUE` unless bound to an array.
pub(crate) fn tex_ref_get_array(out: Out<CUarray>, h: CUtexref) -> Res<()> {
    let a = with(h, |t| match t.binding {
        Binding::Array(a) => Ok(a),
        _ => err(CUresult::CUDA_ERROR_INVALID_VALUE, "not bound to an array"),
    })?;
    out.write(a as CUarray);
    Ok(())
}

/// `cuTexRefSetMipmappedArray`: `Flags` as for `cuTexRefSetArray`.
pub(crate) fn tex_ref_set_mipmapped_array(
    h: CUtexref,
    m: CUmipmappedArray,
    flags: c_uint,
) -> Res<()> {
    check(
        flags == CU_TRSA_OVERRIDE_FORMAT,
        "Flags must be CU_TRSA_OVERRIDE_FORMAT",
    )?;
    {
        let st = state::sim()?.lock();
        array::get_mipmapped(&st, key(m))?;
    }
    with(h, |t| {
        t.binding = Binding::Mipmapped(key(m));
        Ok(())
    })
}

/// `cuTexRefGetMipmappedArray`: `CUDA_ERROR_INVALID_VALUE` unless bound to one.
pub(crate) fn tex_ref_get_mipmapped_array(out: Out<CUmipmappedArray>, h: CUtexref) -> Res<()> {
    let m = with(h, |t| match t.binding {
        Binding::Mipmapped(m) => Ok(m),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "not bound to a mipmapped array",
        ),
    })?;
    out.write(m as CUmipmappedArray);
    Ok(())
}

/// Binds linear memory: `bytes` at `dptr` must lie in a live allocation. The
/// offset back is how far `dptr` is past the texture alignment.
fn bind_linear(h: CUtexref, dptr: CUdeviceptr, bytes: usize) -> Res<usize> {
    {
        let st = state::sim()?.lock();
        memory::range(&st, dptr, bytes.max(1))?;
    }
    with(h, |t| {
        t.binding = Binding::Memory { dptr, pitch: None };
        Ok(())
    })?;
    Ok(usize::try_from(dptr % TEXTURE_ALIGNMENT).unwrap_or(0))
}

/// `CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT` of the simulated devices.
const TEXTURE_ALIGNMENT: u64 = 512;
/// `CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT` of the simulated devices.
const PITCH_ALIGNMENT: usize = 32;

/// `cuTexRefSetAddress`: the 32-bit form.
pub(crate) fn tex_ref_set_address(
    offset: Out<c_uint>,
    h: CUtexref,
    dptr: CUdeviceptr_v1,
    bytes: c_uint,
) -> Res<()> {
    let off = bind_linear(h, CUdeviceptr::from(dptr), bytes as usize)?;
    offset.write(c_uint::try_from(off).unwrap_or(0));
    Ok(())
}

/// `cuTexRefSetAddress_v2`.
pub(crate) fn tex_ref_set_address_v2(
    offset: Out<usize>,
    h: CUtexref,
    dptr: CUdeviceptr,
    bytes: usize,
) -> Res<()> {
    offset.write(bind_linear(h, dptr, bytes)?);
    Ok(())
}

/// The bound linear or pitched address (`CUDA_ERROR_INVALID_VALUE` otherwise).
fn address(h: CUtexref) -> Res<CUdeviceptr> {
    with(h, |t| match t.binding {
        Binding::Memory { dptr, .. } => Ok(dptr),
        _ => err(CUresult::CUDA_ERROR_INVALID_VALUE, "not bound to memory"),
    })
}

/// `cuTexRefGetAddress`: the 32-bit form; an address past 4 GiB does not fit.
pub(crate) fn tex_ref_get_address(out: Out<CUdeviceptr_v1>, h: CUtexref) -> Res<()> {
    let a = address(h)?;
    let a = CUdeviceptr_v1::try_from(a).or_else(|_| {
        err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            "the address does not fit 32 bits",
        )
    })?;
    out.write(a);
    Ok(())
}

/// `cuTexRefGetAddress_v2`.
pub(crate) fn tex_ref_get_address_v2(out: Out<CUdeviceptr>, h: CUtexref) -> Res<()> {
    out.write(address(h)?);
    Ok(())
}

/// Binds pitched 2D memory described by `d`: the address aligned to the
/// texture alignment, the pitch to the pitch alignment and at least a row.
fn bind_2d(h: CUtexref, d: CUDA_ARRAY_DESCRIPTOR, dptr: CUdeviceptr, pitch: usize) -> Res<()> {
    let elem = element(d.Format.0, d.NumChannels)?;
    let row = d.Width.saturating_mul(elem);
    check(
        dptr.is_multiple_of(TEXTURE_ALIGNMENT),
        "dptr is not aligned",
    )?;
    check(
        pitch.is_multiple_of(PITCH_ALIGNMENT) && pitch >= row,
        "Pitch is not aligned or is shorter than a row",
    )?;
    {
        let st = state::sim()?.lock();
        let bytes = pitch.saturating_mul(d.Height.max(1));
        memory::range(&st, dptr, bytes)?;
    }
    with(h, |t| {
        t.binding = Binding::Memory {
            dptr,
            pitch: Some(pitch),
        };
        t.format = d.Format.0;
        t.channels = c_int::try_from(d.NumChannels).unwrap_or(0);
        Ok(())
    })
}

/// The bytes of one element of `format` with `channels` channels.
fn element(format: u32, channels: u32) -> Res<usize> {
    match vgpu_abi::array::element_bytes(format, channels).and_then(|b| usize::try_from(b).ok()) {
        Some(b) => Ok(b),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("format {format:#x} with {channels} channels"),
        ),
    }
}

/// Reads a descriptor the application passed.
///
/// # Safety
/// `p` must be NULL or readable.
unsafe fn read<T>(p: *const T) -> Res<T> {
    check(!p.is_null(), "desc is NULL")?;
    // SAFETY: non-NULL and readable by the contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuTexRefSetAddress2D`: the 32-bit form.
///
/// # Safety
/// `desc` must be NULL or readable.
pub(crate) unsafe fn tex_ref_set_address2d(
    h: CUtexref,
    desc: *const CUDA_ARRAY_DESCRIPTOR_v1,
    dptr: CUdeviceptr_v1,
    pitch: c_uint,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { read(desc) }?;
    let d2 = CUDA_ARRAY_DESCRIPTOR {
        Width: d.Width as usize,
        Height: d.Height as usize,
        Format: d.Format,
        NumChannels: d.NumChannels,
    };
    bind_2d(h, d2, CUdeviceptr::from(dptr), pitch as usize)
}

/// `cuTexRefSetAddress2D_v2`.
///
/// # Safety
/// `desc` must be NULL or readable.
pub(crate) unsafe fn tex_ref_set_address2d_v2(
    h: CUtexref,
    desc: *const CUDA_ARRAY_DESCRIPTOR,
    dptr: CUdeviceptr,
    pitch: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    bind_2d(h, unsafe { read(desc) }?, dptr, pitch)
}

/// `cuTexRefSetAddress2D_v3`: as `_v2`.
///
/// # Safety
/// `desc` must be NULL or readable.
pub(crate) unsafe fn tex_ref_set_address2d_v3(
    h: CUtexref,
    desc: *const CUDA_ARRAY_DESCRIPTOR,
    dptr: CUdeviceptr,
    pitch: usize,
) -> Res<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe { tex_ref_set_address2d_v2(h, desc, dptr, pitch) }
}

/// `cuTexRefSetFormat`: 1, 2 or 4 components of a known format.
pub(crate) fn tex_ref_set_format(h: CUtexref, fmt: CUarray_format, n: c_int) -> Res<()> {
    check(matches!(n, 1 | 2 | 4), format!("{n} components"))?;
    element(fmt.0, 1)?;
    with(h, |t| {
        t.format = fmt.0;
        t.channels = n;
        Ok(())
    })
}

/// `cuTexRefGetFormat`.
pub(crate) fn tex_ref_get_format(fmt: Out<CUarray_format>, n: Out<c_int>, h: CUtexref) -> Res<()> {
    let (f, c) = with(h, |t| Ok((t.format, t.channels)))?;
    fmt.write(CUarray_format(f));
    n.write(c);
    Ok(())
}

/// The index of dimension `dim` (0, 1 or 2).
fn dimension(dim: c_int) -> Res<usize> {
    match usize::try_from(dim) {
        Ok(d @ 0..=2) => Ok(d),
        _ => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("dimension {dim}"),
        ),
    }
}

/// `cuTexRefSetAddressMode`.
pub(crate) fn tex_ref_set_address_mode(h: CUtexref, dim: c_int, am: CUaddress_mode) -> Res<()> {
    let d = dimension(dim)?;
    check(
        am.0 <= CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER.0,
        "not a CUaddress_mode",
    )?;
    with(h, |t| {
        t.address_mode[d] = am.0;
        Ok(())
    })
}

/// `cuTexRefGetAddressMode`.
pub(crate) fn tex_ref_get_address_mode(
    out: Out<CUaddress_mode>,
    h: CUtexref,
    dim: c_int,
) -> Res<()> {
    let d = dimension(dim)?;
    out.write(CUaddress_mode(with(h, |t| Ok(t.address_mode[d]))?));
    Ok(())
}

/// A `CUfilter_mode` value.
fn filter(fm: CUfilter_mode) -> Res<u32> {
    check(
        fm.0 <= CUfilter_mode::CU_TR_FILTER_MODE_LINEAR.0,
        "not a CUfilter_mode",
    )?;
    Ok(fm.0)
}

/// `cuTexRefSetFilterMode`.
pub(crate) fn tex_ref_set_filter_mode(h: CUtexref, fm: CUfilter_mode) -> Res<()> {
    let v = filter(fm)?;
    with(h, |t| {
        t.filter = v;
        Ok(())
    })
}

/// `cuTexRefGetFilterMode`.
pub(crate) fn tex_ref_get_filter_mode(out: Out<CUfilter_mode>, h: CUtexref) -> Res<()> {
    out.write(CUfilter_mode(with(h, |t| Ok(t.filter))?));
    Ok(())
}

/// `cuTexRefSetMipmapFilterMode`.
pub(crate) fn tex_ref_set_mipmap_filter_mode(h: CUtexref, fm: CUfilter_mode) -> Res<()> {
    let v = filter(fm)?;
    with(h, |t| {
        t.mipmap_filter = v;
        Ok(())
    })
}

/// `cuTexRefGetMipmapFilterMode`.
pub(crate) fn tex_ref_get_mipmap_filter_mode(out: Out<CUfilter_mode>, h: CUtexref) -> Res<()> {
    out.write(CUfilter_mode(with(h, |t| Ok(t.mipmap_filter))?));
    Ok(())
}

/// `cuTexRefSetMipmapLevelBias`.
pub(crate) fn tex_ref_set_mipmap_level_bias(h: CUtexref, bias: f32) -> Res<()> {
    with(h, |t| {
        t.mipmap_bias = bias;
        Ok(())
    })
}

/// `cuTexRefGetMipmapLevelBias`.
pub(crate) fn tex_ref_get_mipmap_level_bias(out: Out<f32>, h: CUtexref) -> Res<()> {
    out.write(with(h, |t| Ok(t.mipmap_bias))?);
    Ok(())
}

/// `cuTexRefSetMipmapLevelClamp`.
pub(crate) fn tex_ref_set_mipmap_level_clamp(h: CUtexref, min: f32, max: f32) -> Res<()> {
    with(h, |t| {
        t.mipmap_clamp = (min, max);
        Ok(())
    })
}

/// `cuTexRefGetMipmapLevelClamp`.
pub(crate) fn tex_ref_get_mipmap_level_clamp(min: Out<f32>, max: Out<f32>, h: CUtexref) -> Res<()> {
    let (lo, hi) = with(h, |t| Ok(t.mipmap_clamp))?;
    min.write(lo);
    max.write(hi);
    Ok(())
}

/// `cuTexRefSetMaxAnisotropy`.
pub(crate) fn tex_ref_set_max_anisotropy(h: CUtexref, v: c_uint) -> Res<()> {
    with(h, |t| {
        t.max_anisotropy = v;
        Ok(())
    })
}

/// `cuTexRefGetMaxAnisotropy`.
pub(crate) fn tex_ref_get_max_anisotropy(out: Out<c_int>, h: CUtexref) -> Res<()> {
    let v = with(h, |t| Ok(t.max_anisotropy))?;
    out.write(c_int::try_from(v).unwrap_or(c_int::MAX));
    Ok(())
}

/// `cuTexRefSetBorderColor`: four floats.
///
/// # Safety
/// `color` must be NULL or hold 4 readable floats.
pub(crate) unsafe fn tex_ref_set_border_color(h: CUtexref, color: *mut f32) -> Res<()> {
    check(!color.is_null(), "pBorderColor is NULL")?;
    // SAFETY: non-NULL, and 4 floats by this function's contract.
    let c = unsafe { color.cast::<[f32; 4]>().read_unaligned() };
    with(h, |t| {
        t.border = c;
        Ok(())
    })
}

/// `cuTexRefGetBorderColor`: four floats.
///
/// # Safety
/// `color` must be NULL or hold 4 writable floats.
pub(crate) unsafe fn tex_ref_get_border_color(color: *mut f32, h: CUtexref) -> Res<()> {
    check(!color.is_null(), "pBorderColor is NULL")?;
    let c = with(h, |t| Ok(t.border))?;
    // SAFETY: non-NULL, and 4 floats by this function's contract.
    unsafe { color.cast::<[f32; 4]>().write_unaligned(c) };
    Ok(())
}

/// `cuTexRefSetFlags`: `CU_TRSF_*` bits.
pub(crate) fn tex_ref_set_flags(h: CUtexref, flags: c_uint) -> Res<()> {
    with(h, |t| {
        t.flags = flags;
        Ok(())
    })
}

/// `cuTexRefGetFlags`.
pub(crate) fn tex_ref_get_flags(out: Out<c_uint>, h: CUtexref) -> Res<()> {
    out.write(with(h, |t| Ok(t.flags))?);
    Ok(())
}

/// The key of module surface reference `h` (`CUDA_ERROR_INVALID_VALUE` otherwise).
fn surface(st: &State, h: CUsurfref) -> Res<usize> {
    let k = key(h);
    check(
        declared(st, k, true),
        format!("{k:#x} is not a surface reference"),
    )?;
    Ok(k)
}

/// `cuSurfRefSetArray`: `Flags` must be 0 and the array made with
/// `CUDA_ARRAY3D_SURFACE_LDST`.
pub(crate) fn surf_ref_set_array(h: CUsurfref, a: CUarray, flags: c_uint) -> Res<()> {
    let sim = state::sim()?;
    let mut st = sim.lock();
    context::current(&st)?;
    let k = surface(&st, h)?;
    check(flags == 0, "Flags must be 0")?;
    let arr = array::get(&st, key(a))?;
    check(
        arr.flags & CUDA_ARRAY3D_SURFACE_LDST != 0,
        "the array was not made for surface load/store",
    )?;
    st.ext.surfrefs.insert(k, key(a));
    Ok(())
}

/// `cuSurfRefGetArray`: `CUDA_ERROR_INVALID_VALUE` unless bound.
pub(crate) fn surf_ref_get_array(out: Out<CUarray>, h: CUsurfref) -> Res<()> {
    let sim = state::sim()?;
    let st = sim.lock();
    context::current(&st)?;
    let k = surface(&st, h)?;
    match st.ext.surfrefs.get(&k) {
        Some(&a) => {
            out.write(a as CUarray);
            Ok(())
        }
        None => err(CUresult::CUDA_ERROR_INVALID_VALUE, "not bound to an array"),
    }
}
