//! `cuGetExportTable`: the private interfaces the CUDA runtime (and the
//! libraries that link it statically) ask the driver for, by UUID.
//!
//! Each table is a static with a fixed address: the integrity check hashes
//! the addresses handed out, so they must never move. Sized tables hold their
//! own size in bytes in slot 0. Slots whose meaning is not known return
//! `CUDA_ERROR_NOT_SUPPORTED` and log once; unknown UUIDs get
//! `CUDA_ERROR_INVALID_VALUE`, never a success without a table.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};

use vgpu_abi::types::CUuuid;

use super::context::{primary_id, to_handle};
use super::integrity::{self, DeviceId, Inputs};
use crate::edge::{guard, non_null, to_curesult, wire, write_out, CuError, CuResult};
use crate::objects::{CtxInfo, StorageDtor, StorageEntry};
use crate::runtime::runtime;

type Slot = Option<unsafe extern "C" fn()>;

/// A table whose slot 0 is its size in bytes.
#[repr(C)]
pub struct SizedTable<const N: usize> {
    size: usize,
    slots: [Slot; N],
}

/// A table without a size word, ended by a zero word.
#[repr(C)]
pub struct UnsizedTable<const N: usize> {
    slots: [Slot; N],
    end: usize,
}

macro_rules! slot {
    ($f:expr, $t:ty) => {
        // SAFETY: only the pointer's type changes; callers use the slot's real prototype.
        Some(unsafe { std::mem::transmute::<$t, unsafe extern "C" fn()>($f) })
    };
}

/// Slots whose meaning is not known: callers get NOT_SUPPORTED in the return register.
unsafe extern "C" fn unknown_slot() -> u32 {
    crate::log::once(
        "export-table-slot",
        format_args!("an unknown export-table slot was called"),
    );
    CuError::NOT_SUPPORTED.code().0
}
const UNKNOWN: Slot = slot!(unknown_slot, unsafe extern "C" fn() -> u32);

const fn sized<const N: usize>(slots: [Slot; N]) -> SizedTable<N> {
    SizedTable {
        size: (N + 1) * 8,
        slots,
    }
}

const fn unknown<const N: usize>() -> [Slot; N] {
    [UNKNOWN; N]
}

/// `6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9`: the runtime's interface.
static CUDART_INTERFACE: SizedTable<12> = {
    let mut s = unknown::<12>();
    s[1] = slot!(
        primary_context,
        unsafe extern "C" fn(*mut *mut c_void, c_int) -> u32
    );
    sized(s)
};

/// `A094798C-2E74-2E74-93F2-0800200C0A66`: tools callback hooks.
static TOOLS_RUNTIME_CALLBACK_HOOKS: SizedTable<6> = {
    let mut s = unknown::<6>();
    s[1] = slot!(
        callback_buffer_1024,
        unsafe extern "C" fn(*mut *mut c_void, *mut usize)
    );
    s[5] = slot!(
        callback_buffer_14,
        unsafe extern "C" fn(*mut *mut c_void, *mut usize)
    );
    sized(s)
};

/// `42D85A81-23F6-CB47-8298-F6E78A3AECDC`: tools thread state: slot 1 sets
/// the calling thread's current context, slot 2 reads it (cuBLASLt keys its
/// per-context state on it).
static TOOLS_TLS: SizedTable<2> = sized([
    slot!(tls_set_current, unsafe extern "C" fn(*mut c_void) -> u32),
    slot!(
        tls_get_current,
        unsafe extern "C" fn(*mut *mut c_void) -> u32
    ),
]);

/// `21318C60-9714-3248-8CA6-41FF7324C8F2`: context queries cuBLASLt uses:
/// slot 3 gives a context's device, slot 4 its unique id (as `cuCtxGetId`).
static CONTEXT_QUERIES: SizedTable<92> = {
    let mut s = unknown::<92>();
    s[2] = slot!(
        context_device,
        unsafe extern "C" fn(*mut c_void, *mut c_int) -> u32
    );
    s[3] = slot!(
        context_unique_id,
        unsafe extern "C" fn(*mut c_void, *mut u64) -> u32
    );
    s[90] = None;
    sized(s)
};

/// `C693336E-1121-DF11-A8C3-68F355D89593`: context-local storage.
static CONTEXT_LOCAL_STORAGE: UnsizedTable<3> = UnsizedTable {
    slots: [
        slot!(
            storage_put,
            unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, Option<StorageDtor>) -> u32
        ),
        slot!(
            storage_delete,
            unsafe extern "C" fn(*mut c_void, *mut c_void) -> u32
        ),
        slot!(
            storage_get,
            unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *mut c_void) -> u32
        ),
    ],
    end: 0,
};

/// Callback of the module walk: `(user data, function, name)`.
type KernelCallback = Option<unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char)>;

/// `6E163FBE-B958-444D-835C-E182AFF1991E`: the tools' module interface.
/// cuFFT gets its kernels' handles from slot 7, which walks a module's
/// kernels (loading them all) and reports each with its name.
static TOOLS_MODULE: SizedTable<7> = {
    let mut s = unknown::<7>();
    s[6] = slot!(
        module_kernels,
        unsafe extern "C" fn(*mut c_void, *mut c_void, KernelCallback, *mut c_void) -> c_int
    );
    sized(s)
};

/// `1734DC26-800D-4745-8726-C0F1E7DD8BCA`: thread-block cluster internals.
/// cuBLASLt fetches it and calls slot 4 (a TPC-to-GPC mapping) without
/// checking the fetch, then slot 13 to free what slot 4 returned. vgpu
/// answers slot 4 as the driver does on devices without that mapping
/// (NOT_SUPPORTED, nothing written), which cuBLASLt handles as "no mapping".
static CLUSTER_PROTOTYPE: SizedTable<16> = {
    let mut s = unknown::<16>();
    s[3] = slot!(
        cluster_tpc_mapping,
        unsafe extern "C" fn(*mut *mut u8, *mut *mut u8) -> u32
    );
    s[10] = slot!(cluster_set_limit, unsafe extern "C" fn() -> u32);
    s[12] = slot!(
        cluster_free_mapping,
        unsafe extern "C" fn(*mut u8, *mut u8) -> u32
    );
    s[13] = slot!(cluster_supported, unsafe extern "C" fn(*mut c_int) -> u32);
    sized(s)
};

/// Slot 4: no TPC mapping is exposed (the driver's own answer on devices
/// without one). Not logged: cuBLASLt calls it once per heuristic key.
unsafe extern "C" fn cluster_tpc_mapping(_a: *mut *mut u8, _b: *mut *mut u8) -> u32 {
    CuError::NOT_SUPPORTED.code().0
}

/// Slot 13: frees what slot 4 handed out, which is never anything.
unsafe extern "C" fn cluster_free_mapping(_a: *mut u8, _b: *mut u8) -> u32 {
    0
}

/// Slot 14: clusters are supported.
unsafe extern "C" fn cluster_supported(out: *mut c_int) -> u32 {
    if !out.is_null() {
        // SAFETY: checked non-NULL; the caller's out-pointer.
        unsafe { out.write(1) };
    }
    0
}

/// Slot 11 returns the previous cluster-size limit as a plain integer, not a
/// status; no traced program calls it. It answers the portable limit, 8.
unsafe extern "C" fn cluster_set_limit() -> u32 {
    8
}

/// `263E8860-7CD2-6143-92F6-BBD5006DFA7E`: context checks.
static CONTEXT_CHECKS: SizedTable<14> = {
    let mut s = unknown::<14>();
    s[1] = slot!(
        context_check,
        unsafe extern "C" fn(*mut c_void, *mut c_uint, *mut *mut c_void) -> u32
    );
    s[2] = slot!(checks_ok, unsafe extern "C" fn() -> u32);
    sized(s)
};

/// `D4082055-BDE6-704B-8D34-BA123C66E1F2`: the integrity check.
static INTEGRITY_CHECK: SizedTable<2> = {
    let mut s = unknown::<2>();
    s[0] = slot!(
        integrity_check,
        unsafe extern "C" fn(c_uint, u64, *mut [u64; 2]) -> u32
    );
    sized(s)
};

const fn uuid(text: &[u8; 16]) -> [u8; 16] {
    *text
}

/// (UUID bytes in written order, table address).
fn tables() -> [([u8; 16], *const c_void); 9] {
    [
        (
            uuid(b"\x6B\xD5\xFB\x6C\x5B\xF4\xE7\x4A\x89\x87\xD9\x39\x12\xFD\x9D\xF9"),
            (&raw const CUDART_INTERFACE).cast(),
        ),
        (
            uuid(b"\xA0\x94\x79\x8C\x2E\x74\x2E\x74\x93\xF2\x08\x00\x20\x0C\x0A\x66"),
            (&raw const TOOLS_RUNTIME_CALLBACK_HOOKS).cast(),
        ),
        (
            uuid(b"\x42\xD8\x5A\x81\x23\xF6\xCB\x47\x82\x98\xF6\xE7\x8A\x3A\xEC\xDC"),
            (&raw const TOOLS_TLS).cast(),
        ),
        (
            uuid(b"\xC6\x93\x33\x6E\x11\x21\xDF\x11\xA8\xC3\x68\xF3\x55\xD8\x95\x93"),
            (&raw const CONTEXT_LOCAL_STORAGE).cast(),
        ),
        (
            uuid(b"\x26\x3E\x88\x60\x7C\xD2\x61\x43\x92\xF6\xBB\xD5\x00\x6D\xFA\x7E"),
            (&raw const CONTEXT_CHECKS).cast(),
        ),
        (
            uuid(b"\xD4\x08\x20\x55\xBD\xE6\x70\x4B\x8D\x34\xBA\x12\x3C\x66\xE1\xF2"),
            (&raw const INTEGRITY_CHECK).cast(),
        ),
        (
            uuid(b"\x21\x31\x8C\x60\x97\x14\x32\x48\x8C\xA6\x41\xFF\x73\x24\xC8\xF2"),
            (&raw const CONTEXT_QUERIES).cast(),
        ),
        (
            uuid(b"\x6E\x16\x3F\xBE\xB9\x58\x44\x4D\x83\x5C\xE1\x82\xAF\xF1\x99\x1E"),
            (&raw const TOOLS_MODULE).cast(),
        ),
        (
            uuid(b"\x17\x34\xDC\x26\x80\x0D\x47\x45\x87\x26\xC0\xF1\xE7\xDD\x8B\xCA"),
            (&raw const CLUSTER_PROTOTYPE).cast(),
        ),
    ]
}

/// `cuGetExportTable`.
///
/// # Safety
/// `table` must be NULL or valid for a write of its pointee, as the CUDA API defines it.
/// `id` must be NULL or point to what the CUDA API says the caller passes there.
pub unsafe fn get(table: *mut *const c_void, id: *const CUuuid) -> CuResult<()> {
    non_null(table)?;
    non_null(id)?;
    // SAFETY: checked non-NULL; a CUuuid is 16 bytes.
    let bytes: [u8; 16] = unsafe { (*id).bytes }.map(|b| b as u8);
    match tables().iter().find(|(u, _)| *u == bytes) {
        // SAFETY: checked non-NULL; the application's out-pointer.
        Some(&(_, t)) => unsafe { write_out(table, t) },
        None => {
            let text: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
            crate::log::line(format_args!(
                "cuGetExportTable: unknown table {text} (CUDA_ERROR_INVALID_VALUE)"
            ));
            Err(CuError::INVALID_VALUE)
        }
    }
}

/// CUDART_INTERFACE slot 2: the device's primary context, not retained.
unsafe extern "C" fn primary_context(out: *mut *mut c_void, dev: c_int) -> u32 {
    guard("cudart_interface.primary_context", || {
        to_curesult((|| {
            let s = runtime().session()?;
            non_null(out)?;
            s.device(dev)?;
            let id = primary_id(dev);
            let r = vgpu_proto::primary_ctx_get::Request {
                ctx: zerocopy::little_endian::U64::new(id),
                device: zerocopy::little_endian::I32::new(dev),
            };
            let got = s.request(&r, &[]);
            super::context::primary_state_changed(s);
            match got {
                // The simulated device has no runtime interface of its own:
                // the worker then learns the context at its first retain.
                Ok(_) | Err(CuError::NOT_SUPPORTED) => {}
                Err(e) => return Err(e),
            }
            let known = s.objects().contexts.contains_key(&id);
            if !known {
                s.objects().add_context(
                    id,
                    CtxInfo {
                        device: dev,
                        primary: true,
                    },
                );
            }
            // SAFETY: checked non-NULL; the caller's out-pointer.
            unsafe { write_out(out, to_handle(id).cast()) }
        })())
    })
    .0
}

static mut CALLBACK_BUFFER_1024: [u32; 1024] = [0; 1024];
static mut CALLBACK_BUFFER_14: [u32; 14] = [0; 14];

/// TOOLS_RUNTIME_CALLBACK_HOOKS slots 2 and 6 hand out zeroed buffers owned by
/// the driver, with their length in elements. vgpu never reads them.
unsafe extern "C" fn callback_buffer_1024(buf: *mut *mut c_void, len: *mut usize) {
    // SAFETY: the caller passes writable out-pointers; the buffer is static.
    unsafe {
        if !buf.is_null() {
            *buf = (&raw mut CALLBACK_BUFFER_1024).cast();
        }
        if !len.is_null() {
            *len = 1024;
        }
    }
}

unsafe extern "C" fn callback_buffer_14(buf: *mut *mut c_void, len: *mut usize) {
    // SAFETY: as for `callback_buffer_1024`.
    unsafe {
        if !buf.is_null() {
            *buf = (&raw mut CALLBACK_BUFFER_14).cast();
        }
        if !len.is_null() {
            *len = 14;
        }
    }
}

/// The context a storage or check call names: NULL means the current one.
fn storage_context(ctx: *mut c_void) -> CuResult<u64> {
    let s = runtime().session()?;
    let id = if ctx.is_null() {
        crate::context::current()
    } else {
        ctx as u64
    };
    if id == 0 || !s.objects().contexts.contains_key(&id) {
        return Err(CuError::INVALID_CONTEXT);
    }
    Ok(id)
}

unsafe extern "C" fn storage_put(
    ctx: *mut c_void,
    key: *mut c_void,
    value: *mut c_void,
    dtor: Option<StorageDtor>,
) -> u32 {
    guard("context_local_storage.put", || {
        to_curesult((|| {
            let id = storage_context(ctx)?;
            let entry = StorageEntry {
                value: value as usize,
                dtor,
            };
            runtime()
                .session()?
                .objects()
                .ctx_storage
                .insert((id, key as usize), entry);
            Ok(())
        })())
    })
    .0
}

unsafe extern "C" fn storage_delete(ctx: *mut c_void, key: *mut c_void) -> u32 {
    guard("context_local_storage.delete", || {
        to_curesult((|| {
            let id = storage_context(ctx)?;
            let removed = runtime()
                .session()?
                .objects()
                .ctx_storage
                .remove(&(id, key as usize));
            removed.map(drop).ok_or(CuError::INVALID_HANDLE)
        })())
    })
    .0
}

unsafe extern "C" fn storage_get(
    value: *mut *mut c_void,
    ctx: *mut c_void,
    key: *mut c_void,
) -> u32 {
    guard("context_local_storage.get", || {
        to_curesult((|| {
            non_null(value)?;
            let id = storage_context(ctx)?;
            let found = runtime()
                .session()?
                .objects()
                .ctx_storage
                .get(&(id, key as usize))
                .copied();
            let entry = found.ok_or(CuError::INVALID_HANDLE)?;
            // SAFETY: checked non-NULL; the caller's out-pointer.
            unsafe { write_out(value, entry.value as *mut c_void) }
        })())
    })
    .0
}

/// TOOLS_TLS slot 1: `cuCtxSetCurrent` without validation.
unsafe extern "C" fn tls_set_current(ctx: *mut c_void) -> u32 {
    guard("tools_tls.set_current", || {
        to_curesult(
            runtime()
                .session()
                .map(|_| crate::context::set_current(ctx as u64)),
        )
    })
    .0
}

/// TOOLS_TLS slot 2: the calling thread's current context (NULL if none).
unsafe extern "C" fn tls_get_current(out: *mut *mut c_void) -> u32 {
    guard("tools_tls.get_current", || {
        to_curesult((|| {
            runtime().session()?;
            // SAFETY: the caller's out-pointer (NULL is rejected).
            unsafe { write_out(out, to_handle(crate::context::current()).cast()) }
        })())
    })
    .0
}

/// Context-query slot 3: the device of `ctx` (no fallback to the current one).
unsafe extern "C" fn context_device(ctx: *mut c_void, dev: *mut c_int) -> u32 {
    guard("context_queries.device", || {
        to_curesult((|| {
            let s = runtime().session()?;
            non_null(dev)?;
            let info = s.objects().contexts.get(&(ctx as u64)).copied();
            let info = info.ok_or(CuError::INVALID_CONTEXT)?;
            // SAFETY: checked non-NULL; the caller's out-pointer.
            unsafe { write_out(dev, info.device) }
        })())
    })
    .0
}

/// Context-query slot 4: the unique id of `ctx`; 0 for NULL.
unsafe extern "C" fn context_unique_id(ctx: *mut c_void, id: *mut u64) -> u32 {
    guard("context_queries.unique_id", || {
        to_curesult((|| {
            if id.is_null() {
                return Err(CuError::UNKNOWN);
            }
            // SAFETY: checked non-NULL; the caller's out-pointer.
            unsafe { write_out(id, 0)? };
            if ctx.is_null() {
                return Ok(());
            }
            let uid = super::context::unique_id(ctx as u64)?;
            // SAFETY: as above.
            unsafe { write_out(id, uid) }
        })())
    })
    .0
}

/// TOOLS_MODULE slot 7: calls `cb(ud, function, name)` for each kernel of
/// the module, in the driver's order; returns how many, or -1 when the
/// module is unknown or the walk fails. Names stay valid until the module
/// is unloaded.
unsafe extern "C" fn module_kernels(
    _ignored: *mut c_void,
    module: *mut c_void,
    cb: KernelCallback,
    ud: *mut c_void,
) -> c_int {
    let walk = || -> CuResult<Vec<(u64, *const c_char)>> {
        let s = runtime().session()?;
        let r = vgpu_proto::module_kernel_names::Request {
            module: zerocopy::little_endian::U64::new(module as u64),
        };
        let (_, blob) = s.request(&r, &[])?;
        let mut found = Vec::new();
        for name in blob.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let name = CString::new(name).map_err(|_| CuError::UNKNOWN)?;
            let mut f: vgpu_abi::types::CUfunction = std::ptr::null_mut();
            // SAFETY: live out-pointer; NUL-terminated name.
            unsafe { super::module::get_function(&mut f, module.cast(), name.as_ptr())? };
            let id = f as u64;
            let mut o = s.objects();
            let kept = o.kernel_names.entry(id).or_insert(name);
            found.push((id, kept.as_ptr()));
        }
        Ok(found)
    };
    match std::panic::catch_unwind(walk) {
        Ok(Ok(found)) => {
            if let Some(cb) = cb {
                for &(f, name) in &found {
                    // SAFETY: the caller's callback, with a live function id and
                    // a name that lives until the module is unloaded.
                    unsafe { cb(ud, wire::handle(f), name) };
                }
            }
            c_int::try_from(found.len()).unwrap_or(c_int::MAX)
        }
        _ => -1,
    }
}

/// CONTEXT_CHECKS slot 2: no check bits are ever set.
unsafe extern "C" fn context_check(
    ctx: *mut c_void,
    bits: *mut c_uint,
    _unused: *mut *mut c_void,
) -> u32 {
    guard("context_checks.check", || {
        to_curesult((|| {
            storage_context(ctx)?;
            if !bits.is_null() {
                // SAFETY: checked non-NULL; the caller's out-pointer.
                unsafe { write_out(bits, 0)? };
            }
            Ok(())
        })())
    })
    .0
}

unsafe extern "C" fn checks_ok() -> u32 {
    0
}

/// INTEGRITY_CHECK slot 1 (see `integrity`).
unsafe extern "C" fn integrity_check(
    version: c_uint,
    unix_seconds: u64,
    out: *mut [u64; 2],
) -> u32 {
    guard("integrity_check", || {
        to_curesult((|| {
            non_null(out)?;
            let (driver_version, devices) = match runtime().session() {
                Ok(s) => (s.driver_version, s.devices.iter().map(device_id).collect()),
                Err(_) => (13000, Vec::new()),
            };
            let inputs = Inputs {
                driver_version: driver_version.unsigned_abs(),
                version,
                pid: std::process::id(),
                // SAFETY: pthread_self has no preconditions.
                thread: wire::u32(unsafe { libc::pthread_self() } as u64),
                cudart_table: (&raw const CUDART_INTERFACE) as u64,
                integrity_table: (&raw const INTEGRITY_CHECK) as u64,
                check_fn: INTEGRITY_CHECK.slots[0].map_or(0, |f| f as usize as u64),
                unix_seconds,
                devices,
            };
            // SAFETY: checked non-NULL; the caller's out-pointer.
            unsafe { write_out(out, integrity::answer(&inputs)) }
        })())
    })
    .0
}

fn device_id(d: &vgpu_proto::DeviceSnapshot) -> DeviceId {
    const PCI_BUS: usize = 33;
    const PCI_DEVICE: usize = 34;
    const PCI_DOMAIN: usize = 50;
    DeviceId {
        uuid: d.uuid,
        pci_domain: d.attr(PCI_DOMAIN).unwrap_or(0),
        pci_bus: d.attr(PCI_BUS).unwrap_or(0),
        pci_device: d.attr(PCI_DEVICE).unwrap_or(0),
    }
}
