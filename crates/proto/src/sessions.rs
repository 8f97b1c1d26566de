//! The session list: a control request that the supervisor answers itself,
//! without starting a worker (`vgpu status`).
//!
//! ```text
//! query = StatusQuery (8 B)                       client → supervisor
//! list  = ListHead (16 B) | count × SessionRecord  supervisor → client
//! ```
//! A connection whose first four bytes are [`QUERY_MAGIC`] is a status
//! query; any other first bytes start a session ([`crate::Hello`]). The
//! supervisor answers one list and closes the connection. `count` is at
//! most [`MAX_SESSIONS`], checked before anything is allocated.

use std::io::{Read, Write};

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::{ProtoError, PROTOCOL_VERSION};

/// `"VGSQ"`, little-endian: the first bytes of a status query.
pub const QUERY_MAGIC: u32 = u32::from_le_bytes(*b"VGSQ");
/// `"VGSL"`, little-endian: the first bytes of the supervisor's answer.
pub const LIST_MAGIC: u32 = u32::from_le_bytes(*b"VGSL");
/// Most sessions one mediator serves at once, and so most records a list
/// may carry.
pub const MAX_SESSIONS: usize = 256;

/// How a session's client reaches its worker ([`SessionRecord::transport`]).
pub mod transport {
    /// A Unix socket, lanes on their sockets.
    pub const UNIX: u32 = 1;
    /// A Unix socket, lanes on shared-memory rings.
    pub const UNIX_RINGS: u32 = 2;
    /// TCP: the client is on another host.
    pub const TCP: u32 = 3;
    /// A VM guest's ivshmem device: rings in the device's shared memory.
    pub const IVSHMEM: u32 = 4;
    /// TLS over TCP: the client is on another host.
    pub const TLS: u32 = 5;

    /// The transport's name: `unix`, `unix+rings`, `tcp`, `ivshmem`, `tls`,
    /// or `unknown` for any other code.
    pub fn name(code: u32) -> &'static str {
        match code {
            UNIX => "unix",
            UNIX_RINGS => "unix+rings",
            TCP => "tcp",
            IVSHMEM => "ivshmem",
            TLS => "tls",
            _ => "unknown",
        }
    }
}

/// The client's status query.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct StatusQuery {
    pub magic: U32,
    pub version: U16,
    pub reserved: U16,
}

/// Fixed head of the supervisor's answer.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ListHead {
    pub magic: U32,
    pub version: U16,
    pub reserved: U16,
    pub count: U32,
    /// Bytes of each record (`size_of::<SessionRecord>()`).
    pub record_bytes: U32,
}

/// One live session.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct SessionRecord {
    pub worker_pid: U32,
    pub client_pid: U32,
    /// The client's uid: its peer credentials on a Unix socket, what it
    /// states over TCP.
    pub uid: U32,
    /// A [`transport`] code.
    pub transport: U32,
    /// Bytes of device memory the session holds.
    pub device_memory: U64,
    /// When the session started, in milliseconds since the Unix epoch.
    pub started_ms: U64,
    /// The session's tenant (the mediator file's `[[tenant]]` name, UTF-8,
    /// NUL-padded; all zero: no tenant), as the supervisor admitted it.
    pub tenant: [u8; TENANT_NAME_BYTES],
}

/// Bytes of one [`SessionRecord`] on the wire.
const RECORD_BYTES: u32 = 64;
const _: () = assert!(std::mem::size_of::<SessionRecord>() == RECORD_BYTES as usize);

/// The longest tenant name, in bytes.
pub const TENANT_NAME_BYTES: usize = 32;

impl SessionRecord {
    /// The tenant's name; empty for none (or for bytes that are not UTF-8).
    pub fn tenant_name(&self) -> &str {
        let end = self
            .tenant
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(TENANT_NAME_BYTES);
        std::str::from_utf8(&self.tenant[..end]).unwrap_or("")
    }

    /// Sets the tenant's name, cut at [`TENANT_NAME_BYTES`].
    pub fn set_tenant(&mut self, name: &str) {
        self.tenant = [0; TENANT_NAME_BYTES];
        let n = name.len().min(TENANT_NAME_BYTES);
        self.tenant[..n].copy_from_slice(&name.as_bytes()[..n]);
    }
}

/// Sends a status query.
pub fn write_query(w: &mut impl Write) -> Result<(), ProtoError> {
    let q = StatusQuery {
        magic: U32::new(QUERY_MAGIC),
        version: U16::new(PROTOCOL_VERSION),
        reserved: U16::new(0),
    };
    w.write_all(q.as_bytes())?;
    w.flush()?;
    Ok(())
}

/// Reads and validates a status query.
pub fn read_query(r: &mut impl Read) -> Result<(), ProtoError> {
    let mut q = StatusQuery::default();
    r.read_exact(q.as_mut_bytes())?;
    check_head(q.magic.get(), QUERY_MAGIC, q.version.get())
}

/// Sends the list of live sessions; more than [`MAX_SESSIONS`] is an error.
pub fn write_list(w: &mut impl Write, sessions: &[SessionRecord]) -> Result<(), ProtoError> {
    let count = bounded(sessions.len())?;
    let head = ListHead {
        magic: U32::new(LIST_MAGIC),
        version: U16::new(PROTOCOL_VERSION),
        reserved: U16::new(0),
        count: U32::new(u32::try_from(count).expect("bounded by MAX_SESSIONS")),
        record_bytes: U32::new(RECORD_BYTES),
    };
    w.write_all(head.as_bytes())?;
    w.write_all(sessions.as_bytes())?;
    w.flush()?;
    Ok(())
}

/// Reads and validates a list of live sessions.
pub fn read_list(r: &mut impl Read) -> Result<Vec<SessionRecord>, ProtoError> {
    let mut head = ListHead::default();
    r.read_exact(head.as_mut_bytes())?;
    check_head(head.magic.get(), LIST_MAGIC, head.version.get())?;
    let count = bounded(head.count.get() as usize)?;
    if head.record_bytes.get() != RECORD_BYTES {
        return Err(ProtoError::RecordSize {
            found: head.record_bytes.get(),
            expected: RECORD_BYTES,
        });
    }
    let mut sessions = vec![SessionRecord::default(); count];
    r.read_exact(sessions.as_mut_slice().as_mut_bytes())?;
    Ok(sessions)
}

fn bounded(count: usize) -> Result<usize, ProtoError> {
    if count > MAX_SESSIONS {
        return Err(ProtoError::TooLong {
            what: "sessions",
            len: count,
            max: MAX_SESSIONS,
        });
    }
    Ok(count)
}

fn check_head(magic: u32, expected: u32, version: u16) -> Result<(), ProtoError> {
    if magic != expected {
        return Err(ProtoError::BadMagic {
            found: magic,
            expected,
        });
    }
    if version != PROTOCOL_VERSION {
        return Err(ProtoError::Version {
            peer: version,
            ours: PROTOCOL_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pid: u32) -> SessionRecord {
        SessionRecord {
            worker_pid: U32::new(pid),
            client_pid: U32::new(pid + 1),
            uid: U32::new(1000),
            transport: U32::new(transport::UNIX_RINGS),
            device_memory: U64::new(1 << 20),
            started_ms: U64::new(1_700_000_000_000),
            tenant: [0; TENANT_NAME_BYTES],
        }
    }

    #[test]
    fn records_of_another_size_are_refused() {
        let mut wire = Vec::new();
        write_list(&mut wire, &[SessionRecord::default()]).expect("write");
        // An older build's 32-byte records.
        wire[12..16].copy_from_slice(&32u32.to_le_bytes());
        match read_list(&mut &wire[..]) {
            Err(ProtoError::RecordSize {
                found: 32,
                expected,
            }) => {
                assert_eq!(expected as usize, std::mem::size_of::<SessionRecord>());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn query_and_list_round_trip() {
        let mut bytes = Vec::new();
        write_query(&mut bytes).expect("write");
        assert_eq!(&bytes[..4], b"VGSQ");
        read_query(&mut bytes.as_slice()).expect("read");

        let mut named = record(20);
        named.set_tenant("research");
        assert_eq!(named.tenant_name(), "research");
        let sessions = [record(10), named];
        let mut bytes = Vec::new();
        write_list(&mut bytes, &sessions).expect("write");
        assert_eq!(bytes.len(), 16 + 2 * 64);
        assert_eq!(read_list(&mut bytes.as_slice()).expect("read"), sessions);
    }

    #[test]
    fn hostile_lists_are_refused() {
        let mut bytes = Vec::new();
        write_list(&mut bytes, &[record(1)]).expect("write");
        // A count past the bound is refused before anything is allocated.
        let mut big = bytes.clone();
        big[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read_list(&mut big.as_slice()),
            Err(ProtoError::TooLong { .. })
        ));
        // A truncated record, a wrong magic, another version.
        assert!(read_list(&mut &bytes[..bytes.len() - 1]).is_err());
        let mut magic = bytes.clone();
        magic[0] = b'X';
        assert!(matches!(
            read_list(&mut magic.as_slice()),
            Err(ProtoError::BadMagic { .. })
        ));
        let mut version = bytes;
        version[4] ^= 0xff;
        assert!(matches!(
            read_list(&mut version.as_slice()),
            Err(ProtoError::Version { .. })
        ));
        let too_many = vec![record(1); MAX_SESSIONS + 1];
        assert!(write_list(&mut Vec::new(), &too_many).is_err());
        assert_eq!(transport::name(99), "unknown");
        assert_eq!(transport::name(transport::TLS), "tls");
    }
}
