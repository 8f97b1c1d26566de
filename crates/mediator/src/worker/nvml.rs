//! `NvmlQuery`: the values `libvgpu-nvml.so` cannot answer from the
//! handshake (`vgpu_proto::nvml`).
//!
//! - **The tenant's values** (memory used, processes) come from the live
//!   sessions of the caller's tenant ([`crate::sessions`]), on the device
//!   asked about (matched by UUID): the caller's uid as the kernel gives it
//!   for a local client; for a process in a VM guest, the sessions of the
//!   same guest with the uid it states; a client over TCP only states its
//!   uid, and is shown none.
//! - **The host's values** (utilization, clocks, temperature, power, ...)
//!   come from the host's own NVML, `libnvidia-ml.so.1`, which the worker
//!   loads on the first such query: from the real driver's directory first,
//!   then by name. A library exporting [`NVML_MARKER`] is vgpu's own and is
//!   refused. Without a host NVML (the simulated device) those values are
//!   `NVML_ERROR_NOT_SUPPORTED`.
//! - **PCI ids** come from sysfs, the driver version from the host NVML or
//!   `/sys/module/nvidia/version`.
//!
//! The host NVML's devices are matched to the worker's by UUID.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::path::Path;
use std::sync::OnceLock;

use vgpu_proto::nvml::{self as q, status, Process, Shape, NVML_MARKER};
use vgpu_proto::{nvml_query, DeviceSnapshot, Request};
use vgpu_transport::Channel;
use zerocopy::little_endian::{U32, U64};
use zerocopy::IntoBytes;

use super::calls::{self, Reply};
use super::exec::Lane;
use super::{Session, Tenant};
use crate::driver::Status;
use crate::sessions::{DeviceUse, SessionInfo};

/// A host NVML device handle (`nvmlDevice_t`).
type Device = *mut c_void;

/// What the worker keeps for NVML queries.
pub struct Nvml {
    /// The devices of the handshake: their UUIDs and bus ids.
    devices: Vec<([u8; 16], String)>,
    /// The host's NVML, loaded on first use (`None`: there is none).
    host: OnceLock<Option<HostNvml>>,
}

impl Nvml {
    /// The NVML state of a session whose handshake described `devices`.
    pub fn new(devices: &[DeviceSnapshot]) -> Nvml {
        Nvml {
            devices: devices
                .iter()
                .map(|d| (d.uuid, d.pci_bus_id_str().to_owned()))
                .collect(),
            host: OnceLock::new(),
        }
    }

    fn host(&self, driver: &Path) -> Option<&HostNvml> {
        self.host.get_or_init(|| HostNvml::load(driver)).as_ref()
    }
}

/// The host's `libnvidia-ml.so.1`, initialised.
struct HostNvml {
    lib: libloading::Library,
}

impl HostNvml {
    fn load(driver: &Path) -> Option<HostNvml> {
        let beside = driver.parent().map(|d| d.join("libnvidia-ml.so.1"));
        let candidates = beside
            .into_iter()
            .chain([Path::new("libnvidia-ml.so.1").to_owned()]);
        for path in candidates {
            // SAFETY: loading the host's NVML runs its initialisers, which
            // the worker, a process of its own for this session, allows.
            let Ok(lib) = (unsafe { libloading::Library::new(&path) }) else {
                continue;
            };
            // SAFETY: only the symbol's presence is checked; it is never used.
            if unsafe { lib.get::<*const c_void>(NVML_MARKER.as_bytes()) }.is_ok() {
                tracing::warn!(path = %path.display(), "skipping vgpu's own NVML library");
                continue;
            }
            let host = HostNvml { lib };
            // SAFETY: `nvmlInit_v2` takes no arguments.
            let st = host
                .symbol::<unsafe extern "C" fn() -> c_uint>("nvmlInit_v2")
                .map(|f| unsafe { f() });
            if st == Some(status::SUCCESS) {
                tracing::info!(path = %path.display(), "host NVML loaded");
                return Some(host);
            }
            tracing::warn!(path = %path.display(), ?st, "host NVML did not initialise");
        }
        tracing::info!("no host NVML: host values are NOT_SUPPORTED");
        None
    }

    /// The function `name` with the C type `F`.
    fn symbol<F: Copy>(&self, name: &str) -> Option<F> {
        let mut cname = name.as_bytes().to_vec();
        cname.push(0);
        // SAFETY: callers name `F` as the prototype `nvml.h` gives `name`.
        unsafe { self.lib.get::<F>(&cname) }.ok().map(|s| *s)
    }

    /// The host's handle of the device with `uuid`.
    fn device(&self, uuid: &[u8; 16]) -> Result<Device, u32> {
        type ByUuid = unsafe extern "C" fn(*const c_char, *mut Device) -> c_uint;
        let f: ByUuid = self
            .symbol("nvmlDeviceGetHandleByUUID")
            .ok_or(status::NOT_SUPPORTED)?;
        let text = format!("{}\0", q::uuid_string(uuid));
        let mut dev: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and a live out-pointer.
        match unsafe { f(text.as_ptr().cast(), &mut dev) } {
            status::SUCCESS => Ok(dev),
            // The host does not know the device (a simulated one).
            status::NOT_FOUND => Err(status::NOT_SUPPORTED),
            st => Err(st),
        }
    }

    /// The total memory of the device with `uuid` (`nvmlDeviceGetMemoryInfo`),
    /// 0 if it cannot say.
    fn memory_total(&self, uuid: &[u8; 16]) -> u64 {
        // nvmlMemory_t: total, free, used.
        type F = unsafe extern "C" fn(Device, *mut [c_ulonglong; 3]) -> c_uint;
        let (Some(f), Ok(dev)) = (
            self.symbol::<F>("nvmlDeviceGetMemoryInfo"),
            self.device(uuid),
        ) else {
            return 0;
        };
        let mut memory = [0 as c_ulonglong; 3];
        // SAFETY: `nvmlDeviceGetMemoryInfo` writes one `nvmlMemory_t`, three
        // unsigned long longs, through a live local of that size.
        match unsafe { f(dev, &mut memory) } {
            status::SUCCESS => memory[0],
            _ => 0,
        }
    }

    /// `nvmlDeviceGetFieldValues` on `dev` for the entries in `blob`.
    fn field_values(&self, dev: Device, blob: &[u8]) -> Answer {
        type F = unsafe extern "C" fn(Device, c_int, *mut u64) -> c_uint;
        let f: F = self
            .symbol("nvmlDeviceGetFieldValues")
            .ok_or(status::NOT_SUPPORTED)?;
        let count = blob.len() / q::FIELD_VALUE_SIZE;
        if !blob.len().is_multiple_of(q::FIELD_VALUE_SIZE) || count > q::MAX_FIELD_VALUES {
            return Err(status::INVALID_ARGUMENT);
        }
        // The entries hold 64-bit fields: an aligned copy.
        let mut values = vec![0u64; blob.len() / 8];
        values.as_mut_bytes().copy_from_slice(blob);
        let n = c_int::try_from(count).map_err(|_| status::INVALID_ARGUMENT)?;
        // SAFETY: `values` holds `count` whole `nvmlFieldValue_t`s, 8-byte
        // aligned, and the function has the prototype `nvml.h` gives it.
        check(unsafe { f(dev, n, values.as_mut_ptr()) })?;
        Ok((0, 0, values.as_bytes().to_vec()))
    }

    /// A system string: `f(char *, unsigned int length)`.
    fn system_string(&self, name: &str) -> Answer {
        type F = unsafe extern "C" fn(*mut c_char, c_uint) -> c_uint;
        let f: F = self.symbol(name).ok_or(status::NOT_SUPPORTED)?;
        let mut buf = [0 as c_char; q::MAX_STRING as usize];
        // SAFETY: the buffer holds `MAX_STRING` bytes, as the length says.
        check(unsafe { f(buf.as_mut_ptr(), q::MAX_STRING) })?;
        Ok((0, 0, c_string(&buf)))
    }

    /// Calls host function `name` of `shape` on `dev` with `arg`.
    fn pass(&self, name: &str, shape: Shape, dev: Device, arg: u32) -> Answer {
        let missing = status::NOT_SUPPORTED;
        let (mut a, mut b) = (0 as c_uint, 0 as c_uint);
        // Each call below: `symbol` resolved `name` with the prototype its
        // `Shape` states in `vgpu_proto::nvml::HOST`, and every pointer is a
        // live local of the right size.
        match shape {
            Shape::U32 => {
                type F = unsafe extern "C" fn(Device, *mut c_uint) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                // SAFETY: see above.
                check(unsafe { f(dev, &mut a) })?;
                Ok((a.into(), 0, Vec::new()))
            }
            Shape::U64 => {
                type F = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                let mut v: c_ulonglong = 0;
                // SAFETY: see above.
                check(unsafe { f(dev, &mut v) })?;
                Ok((v, 0, Vec::new()))
            }
            Shape::Pair => {
                type F = unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                // SAFETY: see above.
                check(unsafe { f(dev, &mut a, &mut b) })?;
                Ok((a.into(), b.into(), Vec::new()))
            }
            Shape::Struct2 => {
                type F = unsafe extern "C" fn(Device, *mut [c_uint; 2]) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                let mut v = [0 as c_uint; 2];
                // SAFETY: see above.
                check(unsafe { f(dev, &mut v) })?;
                Ok((v[0].into(), v[1].into(), Vec::new()))
            }
            Shape::ArgU32 => {
                type F = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                // SAFETY: see above.
                check(unsafe { f(dev, arg, &mut a) })?;
                Ok((a.into(), 0, Vec::new()))
            }
            Shape::ArgStr => {
                type F = unsafe extern "C" fn(Device, c_uint, *mut c_char, c_uint) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                let mut buf = [0 as c_char; q::MAX_STRING as usize];
                // SAFETY: see above.
                check(unsafe { f(dev, arg, buf.as_mut_ptr(), q::MAX_STRING) })?;
                Ok((0, 0, c_string(&buf)))
            }
            Shape::Struct(size) => {
                type F = unsafe extern "C" fn(Device, *mut u8) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                if size > q::MAX_STRING as usize {
                    return Err(status::UNKNOWN);
                }
                let mut bytes = vec![0u8; size];
                // SAFETY: see above; the buffer holds the structure's bytes.
                check(unsafe { f(dev, bytes.as_mut_ptr()) })?;
                Ok((0, 0, bytes))
            }
            Shape::Versioned(size, version) => {
                type F = unsafe extern "C" fn(Device, *mut u32) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                if size > q::MAX_STRING as usize || size % 4 != 0 || size < 4 {
                    return Err(status::UNKNOWN);
                }
                // 32-bit fields: an aligned buffer, the version first.
                let mut words = vec![0u32; size / 4];
                words[0] = q::struct_version(size, version);
                // SAFETY: see above; the buffer holds the structure.
                check(unsafe { f(dev, words.as_mut_ptr()) })?;
                Ok((0, 0, words.as_bytes().to_vec()))
            }
            Shape::Arg2U64 => {
                type F = unsafe extern "C" fn(Device, c_uint, c_uint, *mut c_ulonglong) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                let mut v: c_ulonglong = 0;
                // SAFETY: see above.
                check(unsafe { f(dev, arg >> 16, arg & 0xffff, &mut v) })?;
                Ok((v, 0, Vec::new()))
            }
            Shape::Str => {
                type F = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_uint;
                let f: F = self.symbol(name).ok_or(missing)?;
                let mut buf = [0 as c_char; q::MAX_STRING as usize];
                // SAFETY: see above.
                check(unsafe { f(dev, buf.as_mut_ptr(), q::MAX_STRING) })?;
                Ok((0, 0, c_string(&buf)))
            }
        }
    }
}

/// Two numbers and a blob, or NVML's failure code.
type Answer = Result<(u64, u64, Vec<u8>), u32>;

fn check(st: c_uint) -> Result<(), u32> {
    if st == status::SUCCESS {
        Ok(())
    } else {
        Err(st)
    }
}

/// The bytes of a NUL-terminated C string in `buf`, without the NUL.
fn c_string(buf: &[c_char]) -> Vec<u8> {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_bytes().to_vec())
        .unwrap_or_default()
}

/// Answers one query; `blob` is the request's.
fn answer(s: &Session, r: &nvml_query::Request, blob: &[u8]) -> Answer {
    let nvml = &s.nvml;
    let what = r.what.get();
    let host = || nvml.host(s.driver.path());
    match what {
        q::DRIVER_VERSION => match host() {
            Some(h) => h.system_string("nvmlSystemGetDriverVersion"),
            None => std::fs::read_to_string("/sys/module/nvidia/version")
                .map(|v| (0, 0, v.trim().as_bytes().to_vec()))
                .map_err(|_| status::NOT_SUPPORTED),
        },
        q::NVML_VERSION => host()
            .ok_or(status::NOT_SUPPORTED)?
            .system_string("nvmlSystemGetNVMLVersion"),
        _ => {
            let (uuid, bus_id) = usize::try_from(r.device.get())
                .ok()
                .and_then(|i| nvml.devices.get(i))
                .ok_or(status::INVALID_ARGUMENT)?;
            match what {
                q::MEMORY => {
                    let total = host().map_or(0, |h| h.memory_total(uuid));
                    Ok((tenant_memory(s.peer.tenant, uuid), total, Vec::new()))
                }
                q::PROCESSES => Ok((0, 0, tenant_processes(s.peer.tenant, uuid))),
                q::PCI_IDS => pci_ids(bus_id),
                q::FIELD_VALUES => {
                    let h = host().ok_or(status::NOT_SUPPORTED)?;
                    h.field_values(h.device(uuid)?, blob)
                }
                _ => {
                    let (name, shape) = q::host_entry(what).ok_or(status::INVALID_ARGUMENT)?;
                    let h = host().ok_or(status::NOT_SUPPORTED)?;
                    h.pass(name, shape, h.device(uuid)?, r.arg.get())
                }
            }
        }
    }
}

/// The sessions of `tenant`, and each one's use of the device with `uuid`
/// (none where it does not name that device).
///
/// A local client's tenant is its uid, the kernel's word; a process in a VM
/// guest sees the sessions of its own guest with the uid it states (their
/// pids are the guest's); a client over TCP only states its uid, so it is
/// shown no session (not even others of the uid it claims).
fn tenant_sessions(tenant: Option<Tenant>, uuid: &[u8; 16]) -> Vec<(SessionInfo, DeviceUse)> {
    let Some(tenant) = tenant else {
        return Vec::new();
    };
    crate::sessions::list()
        .into_iter()
        .filter(|x| x.uid == tenant.uid && x.guest == tenant.guest)
        .map(|x| {
            let on = x.devices.iter().find(|d| d.uuid == *uuid).copied();
            let none = DeviceUse {
                uuid: *uuid,
                memory: 0,
                contexts: 0,
            };
            (x, on.unwrap_or(none))
        })
        .collect()
}

/// The device memory the tenant's sessions hold on the device with `uuid`.
fn tenant_memory(tenant: Option<Tenant>, uuid: &[u8; 16]) -> u64 {
    tenant_sessions(tenant, uuid)
        .iter()
        .fold(0, |sum, (_, d)| sum.saturating_add(d.memory))
}

/// The processes of the tenant on the device with `uuid`, as the wire
/// carries them: a process is on a device where one of its sessions holds
/// memory or has a context, with the memory it holds there (the driver's
/// own count would add the context's few hundred MiB; vgpu counts the
/// session's allocations only, `docs/metrics.md`). An NVML session (this
/// one among them) has neither, so it is never listed.
fn tenant_processes(tenant: Option<Tenant>, uuid: &[u8; 16]) -> Vec<u8> {
    let mut by_pid: Vec<(u32, u64)> = Vec::new();
    for (x, d) in tenant_sessions(tenant, uuid) {
        if d.memory == 0 && d.contexts == 0 {
            continue;
        }
        match by_pid.iter_mut().find(|(pid, _)| *pid == x.client_pid) {
            Some((_, memory)) => *memory = memory.saturating_add(d.memory),
            None => by_pid.push((x.client_pid, d.memory)),
        }
    }
    by_pid
        .into_iter()
        .flat_map(|(pid, memory)| {
            Process {
                pid: U32::new(pid),
                reserved: U32::new(0),
                memory: U64::new(memory),
            }
            .as_bytes()
            .to_vec()
        })
        .collect()
}

/// The packed PCI ids of the device at `bus_id`, read from sysfs.
fn pci_ids(bus_id: &str) -> Answer {
    let dir = Path::new("/sys/bus/pci/devices").join(bus_id.to_ascii_lowercase());
    let read = |file: &str| -> Result<u64, u32> {
        let text = std::fs::read_to_string(dir.join(file)).map_err(|_| status::NOT_SUPPORTED)?;
        u64::from_str_radix(text.trim().trim_start_matches("0x"), 16)
            .map_err(|_| status::NOT_SUPPORTED)
    };
    let device = read("device")? << 16 | read("vendor")?;
    let subsystem = read("subsystem_device")? << 16 | read("subsystem_vendor")?;
    Ok((device, subsystem, Vec::new()))
}

/// The reply to a query: NVML's status in the fixed part, never a failed frame.
fn reply(s: &Session, r: &nvml_query::Request, blob: &[u8]) -> (nvml_query::Reply, Vec<u8>) {
    let (st, a, b, blob) = match answer(s, r, blob) {
        Ok((a, b, blob)) => (status::SUCCESS, a, b, blob),
        Err(st) => (st, 0, 0, Vec::new()),
    };
    let rep = nvml_query::Reply {
        status: U32::new(st),
        a: U64::new(a),
        b: U64::new(b),
    };
    (rep, blob)
}

/// Answers an `NvmlQuery` on the control connection. `false`: the
/// connection failed.
pub fn serve(s: &Session, control: &mut Channel, req: &Request) -> bool {
    let (st, fixed, blob) = match req.message::<nvml_query::Request>() {
        Ok(r) => {
            let (rep, blob) = reply(s, r, &req.blob);
            (super::status::SUCCESS, rep.as_bytes().to_vec(), blob)
        }
        Err(e) => {
            tracing::warn!("NvmlQuery: {e}");
            (super::status::INVALID_VALUE, Vec::new(), Vec::new())
        }
    };
    vgpu_proto::write_response(control, st.0, req.seq, &fixed, &blob).is_ok()
}

/// An `NvmlQuery` on a lane: answered as on the control connection.
pub fn nvml_query(_: &mut Lane, s: &Session, req: &Request) -> Result<Reply, Status> {
    let r: &nvml_query::Request = calls::message(req)?;
    let (rep, blob) = reply(s, r, &req.blob);
    Ok(Reply::new(&rep, blob))
}
