//! GPU core dump attributes: kept per process and per context (a context
//! starts from the process's settings); the simulator never writes a dump.

use std::collections::HashMap;
use std::ffi::c_void;

use crate::cu::CUresult;
use crate::error::{err, Res};

/// One set of core dump settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `CU_COREDUMP_ENABLE_ON_EXCEPTION` .. `CU_COREDUMP_ENABLE_USER_TRIGGER`.
    flags: [bool; 4],
    file: Vec<u8>,
    pipe: Vec<u8>,
    generation: i32,
}

impl Default for Settings {
    fn default() -> Self {
        // Driver 580's answers on a GPU: only TRIGGER_HOST is on.
        Settings {
            flags: [false, true, false, false],
            file: Vec::new(),
            pipe: Vec::new(),
            generation: 0,
        }
    }
}

/// The process's settings and each context's own.
#[derive(Debug, Default)]
pub(crate) struct Coredump {
    pub global: Settings,
    pub contexts: HashMap<usize, Settings>,
}

/// Every `CUCoredumpGenerationFlags` bit.
const GENERATION_BITS: i32 = 0x1f;

fn bad<T>(why: &str) -> Res<T> {
    err(CUresult::CUDA_ERROR_INVALID_VALUE, why.to_string())
}

/// Reads or writes one attribute of `s`.
///
/// # Safety
/// `value` must hold `*size` bytes (readable for a set, writable for a get).
pub(crate) unsafe fn access(
    s: &mut Settings,
    attrib: u32,
    value: *mut c_void,
    size: *mut usize,
    set: bool,
) -> Res<()> {
    if value.is_null() || size.is_null() {
        return bad("value or size is NULL");
    }
    // SAFETY: non-NULL; readable and writable by the contract.
    let cap = unsafe { size.read_unaligned() };
    // SAFETY: `value` holds `cap` bytes by the contract.
    let bytes = unsafe { std::slice::from_raw_parts_mut(value.cast::<u8>(), cap) };
    let written = match attrib {
        1..=4 => {
            let Some(b) = bytes.first_mut() else {
                return bad("size below 1");
            };
            let flag = &mut s.flags[attrib as usize - 1];
            if set {
                *flag = *b != 0;
            } else {
                *b = u8::from(*flag);
            }
            1
        }
        5 | 6 => {
            let text = if attrib == 5 {
                &mut s.file
            } else {
                &mut s.pipe
            };
            if set {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                *text = bytes[..end].to_vec();
                end + 1
            } else {
                if cap < text.len() + 1 {
                    return bad("buffer too small for the name");
                }
                bytes[..text.len()].copy_from_slice(text);
                bytes[text.len()] = 0;
                text.len() + 1
            }
        }
        7 => {
            let Some(word) = bytes.get_mut(..4) else {
                return bad("size below 4");
            };
            if set {
                let v = i32::from_ne_bytes(word.try_into().expect("4 bytes"));
                if v & !GENERATION_BITS != 0 {
                    return bad("unknown generation flags");
                }
                s.generation = v;
            } else {
                word.copy_from_slice(&s.generation.to_ne_bytes());
            }
            4
        }
        _ => return bad("unknown coredump attribute"),
    };
    // SAFETY: writable by the contract.
    unsafe { size.write_unaligned(written) };
    Ok(())
}
