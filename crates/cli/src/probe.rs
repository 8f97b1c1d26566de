//! Asking a mediator who it is: connect, send a hello, read the welcome.
//!
//! The probe is a real session: the mediator starts a worker, the worker loads
//! its driver and answers with a snapshot of every device, and the session
//! ends when the probe disconnects.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use vgpu_proto::sessions::SessionRecord;
use vgpu_proto::{features, Hello, Welcome, PROTOCOL_VERSION};

use vgpu_transport::discovery::Target;

/// What a probe found.
#[derive(Debug)]
pub enum Probe {
    /// The handshake completed.
    Answered(Welcome),
    /// Nothing listens there, or the handshake failed; the string says why.
    Unreachable(String),
    /// The address is neither a Unix socket nor TCP; it is not checked here.
    NotChecked(String),
}

/// Probes the mediator at `address`, waiting at most `timeout` for each step.
pub fn probe(address: &str, timeout: Duration) -> Probe {
    match Target::parse(address) {
        Some(Target::Unix(path)) => probe_unix(&path, timeout),
        Some(Target::Tcp { host, port }) => probe_tcp(&host, port, timeout),
        Some(Target::Pci(_)) | None => Probe::NotChecked(format!(
            "{address}: only unix: and tcp:// addresses can be checked by this version of vgpu"
        )),
    }
}

fn probe_unix(path: &Path, timeout: Duration) -> Probe {
    match connect_unix(path, timeout) {
        Ok(stream) => handshake(stream),
        Err(why) => Probe::Unreachable(why),
    }
}

fn connect_unix(path: &Path, timeout: Duration) -> Result<UnixStream, String> {
    let stream = UnixStream::connect(path)
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("cannot set a timeout on the connection: {e}"))?;
    Ok(stream)
}

fn probe_tcp(host: &str, port: u16, timeout: Duration) -> Probe {
    match connect_tcp(host, port, timeout) {
        Ok(stream) => handshake(stream),
        Err(why) => Probe::Unreachable(why),
    }
}

/// Connects to `host:port` (each address it resolves to, `timeout` each),
/// as the client library does. `host` is as `Target::Tcp` holds it: an IPv6
/// literal without brackets.
fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<TcpStream, String> {
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let mut why = format!("{host} has no address");
    for addr in addrs {
        let stream = match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => s,
            Err(e) => {
                why = format!("cannot connect to {addr}: {e}");
                continue;
            }
        };
        stream
            .set_nodelay(true)
            .and_then(|()| stream.set_read_timeout(Some(timeout)))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|e| format!("cannot set up the connection: {e}"))?;
        return Ok(stream);
    }
    Err(why)
}

/// Asks the mediator at `address` for its live sessions (a status query,
/// answered by the supervisor without starting a worker); the answer is
/// bounded and validated by [`vgpu_proto::sessions::read_list`].
pub fn sessions(address: &str, timeout: Duration) -> Result<Vec<SessionRecord>, String> {
    fn ask(mut stream: impl Read + Write) -> Result<Vec<SessionRecord>, String> {
        vgpu_proto::sessions::write_query(&mut stream)
            .and_then(|()| vgpu_proto::sessions::read_list(&mut stream))
            .map_err(|e| format!("no valid session list (protocol v{PROTOCOL_VERSION}): {e}"))
    }
    match Target::parse(address) {
        Some(Target::Unix(path)) => ask(connect_unix(&path, timeout)?),
        Some(Target::Tcp { host, port }) => ask(connect_tcp(&host, port, timeout)?),
        Some(Target::Pci(_)) | None => Err(format!(
            "{address}: only unix: and tcp:// addresses can be asked by this version of vgpu"
        )),
    }
}

/// Sends a hello on a connected stream and reads the welcome.
fn handshake(mut stream: impl Read + Write) -> Probe {
    let hello = Hello {
        features: features::ALL,
        pid: std::process::id(),
        uid: crate::privdir::uid(),
        env: Vec::new(),
    };
    if let Err(e) = hello.write(&mut stream) {
        return Probe::Unreachable(format!(
            "sending the hello (protocol v{PROTOCOL_VERSION}) failed: {e}"
        ));
    }
    match Welcome::read(&mut stream) {
        Ok(w) => Probe::Answered(w),
        Err(e) => Probe::Unreachable(format!(
            "no valid welcome (protocol v{PROTOCOL_VERSION}): {e}"
        )),
    }
}

/// One line per device of a welcome.
pub fn describe(w: &Welcome) -> Vec<String> {
    let mut lines = vec![format!(
        "driver API version {}.{}, cuInit status {}, {} device(s)",
        w.driver_version / 1000,
        w.driver_version % 1000 / 10,
        w.init_status,
        w.devices.len()
    )];
    for (i, d) in w.devices.iter().enumerate() {
        lines.push(format!(
            "device {i}: {} ({} MiB, PCI {})",
            d.name_str(),
            d.total_mem.get() >> 20,
            d.pci_bus_id_str()
        ));
    }
    lines
}
