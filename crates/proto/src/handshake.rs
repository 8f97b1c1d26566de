//! The session handshake: [`Hello`] from the client, [`Welcome`] from the worker.
//!
//! ```text
//! hello   = HelloHead (40 B)   | env: env_len bytes of "KEY=VALUE\0" entries
//! welcome = WelcomeHead (32 B) | device_count × DeviceSnapshot
//! ```
//! The welcome carries everything the client answers locally afterwards: the
//! driver version and every device's name, UUID, PCI bus id, memory size and
//! attributes.

use std::io::{Read, Write};

use zerocopy::little_endian::{I32, U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::{ProtoError, MAX_DEVICES, MAX_ENV_BYTES, PROTOCOL_VERSION, SCHEMA_HASH};

/// `"VGHI"`, little-endian.
pub const HELLO_MAGIC: u32 = u32::from_le_bytes(*b"VGHI");
/// `"VGWE"`, little-endian.
pub const WELCOME_MAGIC: u32 = u32::from_le_bytes(*b"VGWE");
/// Device attribute slots in a snapshot (ids `0..ATTR_SLOTS`).
pub const ATTR_SLOTS: usize = 192;

const EXACT_ENV: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
];
const PREFIX_ENV: &[&str] = &["CUDA_CACHE_", "CUDA_DISABLE_"];

/// Whether an environment variable may travel to the worker.
pub fn env_allowed(key: &str) -> bool {
    EXACT_ENV.contains(&key)
        || PREFIX_ENV
            .iter()
            .any(|p| key.starts_with(p) && key.len() > p.len())
}

/// Fixed head of the client's hello.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct HelloHead {
    pub magic: U32,
    pub version: U16,
    pub reserved: U16,
    pub schema: U64,
    pub features: U64,
    pub pid: U32,
    pub uid: U32,
    pub env_len: U32,
    pub reserved2: U32,
}

/// The client's hello, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub features: u64,
    pub pid: u32,
    pub uid: u32,
    /// Allowlisted `(key, value)` pairs.
    pub env: Vec<(String, String)>,
}

/// Fixed head of the worker's welcome.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WelcomeHead {
    pub magic: U32,
    pub version: U16,
    pub reserved: U16,
    /// The `CUresult` of the worker's `cuInit`.
    pub init_status: U32,
    pub driver_version: I32,
    pub features: U64,
    pub device_count: U32,
    pub reserved2: U32,
}

/// Everything about one device that the client answers locally.
#[derive(Clone, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DeviceSnapshot {
    /// NUL-padded device name.
    pub name: [u8; 256],
    pub uuid: [u8; 16],
    /// NUL-padded PCI bus id, `"0000:5E:00.0"`.
    pub pci_bus_id: [u8; 32],
    pub total_mem: U64,
    /// Bit `i` set: attribute `i` answered successfully.
    pub attr_valid: [U64; ATTR_SLOTS / 64],
    pub attrs: [I32; ATTR_SLOTS],
}

impl Default for DeviceSnapshot {
    fn default() -> Self {
        DeviceSnapshot::new_zeroed()
    }
}

impl DeviceSnapshot {
    /// The attribute's value, or `None` if the device did not answer it.
    pub fn attr(&self, id: usize) -> Option<i32> {
        let valid = self.attr_valid.get(id / 64)?.get() & (1 << (id % 64)) != 0;
        valid.then(|| self.attrs[id].get())
    }

    /// Records an attribute; ids outside the snapshot are ignored.
    pub fn set_attr(&mut self, id: usize, value: i32) {
        if let Some(word) = self.attr_valid.get_mut(id / 64) {
            word.set(word.get() | (1 << (id % 64)));
            self.attrs[id] = I32::new(value);
        }
    }

    /// The name without its NUL padding.
    pub fn name_str(&self) -> &str {
        nul_str(&self.name)
    }

    /// The PCI bus id without its NUL padding.
    pub fn pci_bus_id_str(&self) -> &str {
        nul_str(&self.pci_bus_id)
    }
}

/// Copies `s` into a NUL-padded field, truncating to leave one NUL.
pub fn fill_str(field: &mut [u8], s: &str) {
    field.fill(0);
    let n = s.len().min(field.len().saturating_sub(1));
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

fn nul_str(field: &[u8]) -> &str {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    std::str::from_utf8(&field[..end]).unwrap_or("")
}

fn check_peer(version: u16, schema: Option<u64>) -> Result<(), ProtoError> {
    if version != PROTOCOL_VERSION {
        return Err(ProtoError::Version {
            peer: version,
            ours: PROTOCOL_VERSION,
        });
    }
    match schema {
        Some(peer) if peer != SCHEMA_HASH => Err(ProtoError::Schema {
            peer,
            ours: SCHEMA_HASH,
        }),
        _ => Ok(()),
    }
}

impl Hello {
    /// Encodes the hello. Entries that are not allowlisted are an error.
    pub fn write(&self, w: &mut impl Write) -> Result<(), ProtoError> {
        let mut env = Vec::new();
        for (k, v) in &self.env {
            if !env_allowed(k) || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(ProtoError::Env(k.clone()));
            }
            env.extend_from_slice(k.as_bytes());
            env.push(b'=');
            env.extend_from_slice(v.as_bytes());
            env.push(0);
        }
        if env.len() > MAX_ENV_BYTES {
            return Err(ProtoError::TooLong {
                what: "env",
                len: env.len(),
                max: MAX_ENV_BYTES,
            });
        }
        let head = HelloHead {
            magic: U32::new(HELLO_MAGIC),
            version: U16::new(PROTOCOL_VERSION),
            reserved: U16::new(0),
            schema: U64::new(SCHEMA_HASH),
            features: U64::new(self.features),
            pid: U32::new(self.pid),
            uid: U32::new(self.uid),
            env_len: U32::new(u32::try_from(env.len()).expect("bounded by MAX_ENV_BYTES")),
            reserved2: U32::new(0),
        };
        w.write_all(head.as_bytes())?;
        w.write_all(&env)?;
        w.flush()?;
        Ok(())
    }

    /// Reads and validates a hello.
    pub fn read(r: &mut impl Read) -> Result<Hello, ProtoError> {
        let mut head = HelloHead::default();
        r.read_exact(head.as_mut_bytes())?;
        if head.magic.get() != HELLO_MAGIC {
            return Err(ProtoError::BadMagic {
                found: head.magic.get(),
                expected: HELLO_MAGIC,
            });
        }
        check_peer(head.version.get(), Some(head.schema.get()))?;
        let len = head.env_len.get() as usize;
        if len > MAX_ENV_BYTES {
            return Err(ProtoError::TooLong {
                what: "env",
                len,
                max: MAX_ENV_BYTES,
            });
        }
        let mut raw = vec![0u8; len];
        r.read_exact(&mut raw)?;
        Ok(Hello {
            features: head.features.get(),
            pid: head.pid.get(),
            uid: head.uid.get(),
            env: parse_env(&raw)?,
        })
    }
}

fn parse_env(raw: &[u8]) -> Result<Vec<(String, String)>, ProtoError> {
    let mut out = Vec::new();
    if raw.is_empty() {
        return Ok(out);
    }
    let Some(body) = raw.strip_suffix(&[0]) else {
        return Err(ProtoError::Env(
            "environment block is not NUL-terminated".into(),
        ));
    };
    for entry in body.split(|&b| b == 0) {
        let text = std::str::from_utf8(entry).map_err(|_| ProtoError::Env("not UTF-8".into()))?;
        let (k, v) = text
            .split_once('=')
            .ok_or_else(|| ProtoError::Env(text.to_owned()))?;
        if !env_allowed(k) {
            return Err(ProtoError::Env(k.to_owned()));
        }
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok(out)
}

/// The worker's welcome, decoded.
#[derive(Clone, Debug)]
pub struct Welcome {
    pub init_status: u32,
    pub driver_version: i32,
    pub features: u64,
    pub devices: Vec<DeviceSnapshot>,
}

impl Welcome {
    /// Encodes the welcome.
    pub fn write(&self, w: &mut impl Write) -> Result<(), ProtoError> {
        if self.devices.len() > MAX_DEVICES {
            let len = self.devices.len();
            return Err(ProtoError::TooLong {
                what: "devices",
                len,
                max: MAX_DEVICES,
            });
        }
        let head = WelcomeHead {
            magic: U32::new(WELCOME_MAGIC),
            version: U16::new(PROTOCOL_VERSION),
            reserved: U16::new(0),
            init_status: U32::new(self.init_status),
            driver_version: I32::new(self.driver_version),
            features: U64::new(self.features),
            device_count: U32::new(u32::try_from(self.devices.len()).expect("bounded")),
            reserved2: U32::new(0),
        };
        w.write_all(head.as_bytes())?;
        for d in &self.devices {
            w.write_all(d.as_bytes())?;
        }
        w.flush()?;
        Ok(())
    }

    /// Reads and validates a welcome.
    pub fn read(r: &mut impl Read) -> Result<Welcome, ProtoError> {
        let mut head = WelcomeHead::default();
        r.read_exact(head.as_mut_bytes())?;
        if head.magic.get() != WELCOME_MAGIC {
            return Err(ProtoError::BadMagic {
                found: head.magic.get(),
                expected: WELCOME_MAGIC,
            });
        }
        check_peer(head.version.get(), None)?;
        let count = head.device_count.get() as usize;
        if count > MAX_DEVICES {
            return Err(ProtoError::TooLong {
                what: "devices",
                len: count,
                max: MAX_DEVICES,
            });
        }
        let mut devices = Vec::with_capacity(count);
        for _ in 0..count {
            let mut d = DeviceSnapshot::default();
            r.read_exact(d.as_mut_bytes())?;
            devices.push(d);
        }
        Ok(Welcome {
            init_status: head.init_status.get(),
            driver_version: head.driver_version.get(),
            features: head.features.get(),
            devices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_allowlist() {
        assert!(env_allowed("CUDA_VISIBLE_DEVICES"));
        assert!(env_allowed("CUDA_CACHE_PATH"));
        assert!(env_allowed("CUDA_DISABLE_PTX_JIT"));
        assert!(!env_allowed("CUDA_CACHE_"));
        assert!(!env_allowed("LD_PRELOAD"));
        assert!(!env_allowed("PATH"));
    }

    #[test]
    fn hello_refuses_foreign_env() {
        let hello = Hello {
            features: 0,
            pid: 1,
            uid: 0,
            env: vec![("LD_PRELOAD".into(), "x".into())],
        };
        assert!(matches!(
            hello.write(&mut Vec::new()),
            Err(ProtoError::Env(_))
        ));
    }

    #[test]
    fn snapshot_attrs() {
        let mut d = DeviceSnapshot::default();
        assert_eq!(d.attr(10), None);
        d.set_attr(10, 32);
        assert_eq!(d.attr(10), Some(32));
        d.set_attr(ATTR_SLOTS + 5, 1);
        assert_eq!(d.attr(ATTR_SLOTS + 5), None);
    }
}
