//! Module images come without a length; this module finds it from the image.
//!
//! | image | recognised by | length |
//! |---|---|---|
//! | fatbin wrapper | magic `0x466243B1` | follows its data pointer to a fatbin header |
//! | fatbin header | magic `0xBA55ED50` | `header_size + files_size` |
//! | ELF (cubin) | `\x7fELF`, 64-bit | the furthest end of headers, sections and segments |
//! | anything else (PTX, text) | — | up to and including the terminating NUL |

use std::ffi::{c_void, CStr};

use crate::edge::{wire, CuError, CuResult};

const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;
const FATBIN_HEADER_MAGIC: u32 = 0xBA55_ED50;
/// Largest image the worker accepts (it stages big ones piece by piece).
const MAX_IMAGE: u64 = 2 << 30;
const SHT_NOBITS: u32 = 8;

/// Reads a little-endian integer of `N` bytes at `p + off`.
///
/// # Safety
/// `p + off .. p + off + N` must be readable.
unsafe fn read<const N: usize>(p: *const u8, off: u64) -> [u8; N] {
    let mut b = [0u8; N];
    // SAFETY: the caller guarantees the range is readable; `b` is a local.
    unsafe { std::ptr::copy_nonoverlapping(p.add(wire::usize(off)), b.as_mut_ptr(), N) };
    b
}

/// The bytes of the module image at `image`, with their length found from
/// the image itself.
///
/// # Safety
/// `image` must point to a valid CUDA module image (fatbin wrapper, fatbin,
/// cubin, or NUL-terminated PTX), as `cuModuleLoadData` requires.
pub unsafe fn bytes<'a>(image: *const c_void) -> CuResult<&'a [u8]> {
    if image.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let mut p = image.cast::<u8>();
    // SAFETY: every valid image is at least 4 bytes long.
    let mut magic = u32::from_le_bytes(unsafe { read::<4>(p, 0) });
    if magic == FATBIN_WRAPPER_MAGIC {
        // SAFETY: a wrapper is { magic u32, version u32, data *const, ... }.
        let data = u64::from_le_bytes(unsafe { read::<8>(p, 8) });
        if data == 0 {
            return Err(CuError::INVALID_IMAGE);
        }
        p = wire::handle::<u8>(data).cast_const();
        // SAFETY: the wrapper's data field points at a fatbin header.
        magic = u32::from_le_bytes(unsafe { read::<4>(p, 0) });
        if magic != FATBIN_HEADER_MAGIC {
            return Err(CuError::INVALID_IMAGE);
        }
    }
    let len = if magic == FATBIN_HEADER_MAGIC {
        // SAFETY: a fatbin header is { magic u32, version u16, header_size u16, files_size u64 }.
        let header = u64::from(u16::from_le_bytes(unsafe { read::<2>(p, 6) }));
        // SAFETY: as above.
        let files = u64::from_le_bytes(unsafe { read::<8>(p, 8) });
        header.checked_add(files).ok_or(CuError::INVALID_IMAGE)?
    } else if magic == u32::from_le_bytes(*b"\x7fELF") {
        // SAFETY: an ELF image starts with a full ELF header.
        unsafe { elf_len(p)? }
    } else {
        // SAFETY: anything else must be NUL-terminated text.
        (unsafe { CStr::from_ptr(p.cast()) }.to_bytes().len() + 1) as u64
    };
    if len > MAX_IMAGE {
        crate::log::line(format_args!(
            "module image of {len} bytes exceeds the {MAX_IMAGE}-byte limit"
        ));
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the image spans `len` readable bytes, as computed from its own headers.
    Ok(unsafe { std::slice::from_raw_parts(p, wire::usize(len)) })
}

/// # Safety
/// `p` must point to a complete 64-bit ELF image.
unsafe fn elf_len(p: *const u8) -> CuResult<u64> {
    // SAFETY: EI_CLASS is inside the ELF identification bytes.
    if unsafe { read::<1>(p, 4) }[0] != 2 {
        return Err(CuError::INVALID_IMAGE); // CUDA images are ELF64
    }
    // SAFETY: all offsets below are fields of the ELF64 header and of header
    // tables that the image's own header locates.
    unsafe {
        let phoff = u64::from_le_bytes(read::<8>(p, 0x20));
        let shoff = u64::from_le_bytes(read::<8>(p, 0x28));
        let phentsize = u64::from(u16::from_le_bytes(read::<2>(p, 0x36)));
        let phnum = u64::from(u16::from_le_bytes(read::<2>(p, 0x38)));
        let shentsize = u64::from(u16::from_le_bytes(read::<2>(p, 0x3A)));
        let shnum = u64::from(u16::from_le_bytes(read::<2>(p, 0x3C)));
        let bounded = |v: u64| {
            if v > MAX_IMAGE {
                Err(CuError::INVALID_IMAGE)
            } else {
                Ok(v)
            }
        };
        let mut end = 64u64;
        end = end.max(bounded(
            phoff.saturating_add(phnum.saturating_mul(phentsize)),
        )?);
        end = end.max(bounded(
            shoff.saturating_add(shnum.saturating_mul(shentsize)),
        )?);
        for i in 0..shnum {
            let sh = shoff + i * shentsize;
            let kind = u32::from_le_bytes(read::<4>(p, sh + 4));
            if kind == SHT_NOBITS {
                continue;
            }
            let off = u64::from_le_bytes(read::<8>(p, sh + 0x18));
            let size = u64::from_le_bytes(read::<8>(p, sh + 0x20));
            end = end.max(bounded(off.saturating_add(size))?);
        }
        for i in 0..phnum {
            let ph = phoff + i * phentsize;
            let off = u64::from_le_bytes(read::<8>(p, ph + 0x08));
            let filesz = u64::from_le_bytes(read::<8>(p, ph + 0x20));
            end = end.max(bounded(off.saturating_add(filesz))?);
        }
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_includes_nul() {
        let text = b"VGPU-SIM-MODULE 1\nkernel vector_add\n\0trailing";
        // SAFETY: NUL-terminated.
        let b = unsafe { bytes(text.as_ptr().cast()) }.expect("text image");
        assert_eq!(b.len(), 37);
        assert_eq!(*b.last().expect("non-empty"), 0);
    }

    #[test]
    fn fatbin_header_and_wrapper() {
        let mut fb = [0u8; 16 + 40];
        fb[..4].copy_from_slice(&FATBIN_HEADER_MAGIC.to_le_bytes());
        fb[6..8].copy_from_slice(&16u16.to_le_bytes());
        fb[8..16].copy_from_slice(&40u64.to_le_bytes());
        // SAFETY: a complete fatbin header followed by its files.
        let len = unsafe { bytes(fb.as_ptr().cast()) }.expect("fatbin").len();
        assert_eq!(len, 56);
        let mut wrapper = [0u8; 24];
        wrapper[..4].copy_from_slice(&FATBIN_WRAPPER_MAGIC.to_le_bytes());
        wrapper[8..16].copy_from_slice(&(fb.as_ptr() as u64).to_le_bytes());
        // SAFETY: the wrapper points at the fatbin above.
        let b = unsafe { bytes(wrapper.as_ptr().cast()) }.expect("wrapper");
        assert_eq!((b.as_ptr(), b.len()), (fb.as_ptr(), 56));
    }

    #[test]
    fn elf_length_covers_sections() {
        let mut elf = vec![0u8; 512];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[0x28..0x30].copy_from_slice(&256u64.to_le_bytes()); // shoff
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes()); // shentsize
        elf[0x3C..0x3E].copy_from_slice(&2u16.to_le_bytes()); // shnum
        let sh1 = 256 + 64;
        elf[sh1 + 4..sh1 + 8].copy_from_slice(&1u32.to_le_bytes());
        elf[sh1 + 0x18..sh1 + 0x20].copy_from_slice(&400u64.to_le_bytes());
        elf[sh1 + 0x20..sh1 + 0x28].copy_from_slice(&100u64.to_le_bytes());
        // SAFETY: a complete synthetic ELF64 image of 512 bytes.
        let len = unsafe { bytes(elf.as_ptr().cast()) }.expect("elf").len();
        assert_eq!(len, 500);
    }

    #[test]
    fn null_image() {
        // SAFETY: NULL is rejected before any read.
        let r = unsafe { bytes(std::ptr::null()) };
        assert_eq!(r.err(), Some(CuError::INVALID_VALUE));
    }
}
