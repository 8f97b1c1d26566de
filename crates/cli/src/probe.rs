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
use vgpu_transport::tls::{admission, TlsSettings};
use vgpu_transport::Channel;

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

/// Probes the mediator at `address`, waiting at most `timeout` for each
/// step; a `pci:` device is looked for under the sysfs root `sysfs`, and
/// `pci` receives what was found of it ([`probe_pci`]).
/// A `tls://` mediator is reached with `tls`, as the client reaches it.
pub fn probe(
    address: &str,
    sysfs: &Path,
    timeout: Duration,
    tls: &TlsSettings,
    pci: &mut Vec<String>,
) -> Probe {
    match Target::parse(address) {
        Some(Target::Unix(path)) => probe_unix(&path, timeout),
        Some(Target::Tcp { host, port }) => probe_tcp(&host, port, timeout),
        Some(Target::Tls { host, port }) => match tls.open_session(&host, port, timeout) {
            Ok(ch) => handshake(timed(ch, timeout)),
            Err(e) => Probe::Unreachable(e.to_string()),
        },
        Some(Target::Pci(bdf)) => probe_pci(sysfs, &bdf.to_string(), timeout, pci),
        None => Probe::NotChecked(format!("{address}: not a mediator address")),
    }
}

/// Probes through a VM guest's vgpu PCI device, as the client reaches it:
/// maps its BARs, claims a session region, and runs the handshake over the
/// region's rings; the region is given back at once. `facts` receives the
/// device's description: BAR sizes, peer id, regions, lanes and the
/// wake-up mode.
fn probe_pci(sysfs: &Path, bdf: &str, timeout: Duration, facts: &mut Vec<String>) -> Probe {
    use std::sync::Arc;
    use vgpu_transport::ivshmem::guest::Device;
    let dev = match Device::open(sysfs, bdf) {
        Ok(d) => Arc::new(d),
        Err(e) => return Probe::Unreachable(e.to_string()),
    };
    let bar0 = std::fs::metadata(dev.path.join("resource0")).map_or(0, |m| m.len());
    let l = dev.layout;
    facts.push(format!(
        "PCI {bdf}: BAR0 {bar0} B (registers), BAR2 {} MiB (shared memory), peer id {}, host peer {}",
        dev.bar2.len() >> 20,
        dev.peer_id(),
        l.host_peer
    ));
    facts.push(format!(
        "{} session regions ({} in use), {} lanes each, rings of {} KiB each way",
        l.regions,
        dev.regions_in_use(),
        l.slots - 1,
        l.ring_capacity >> 10
    ));
    facts.push(
        "wake-up: guest to host by the BAR0 doorbell; host to guest by polling with backoff \
         (spin, yield, then naps of 20 us doubling to 1 ms)"
            .into(),
    );
    let policy = vgpu_transport::WaitPolicy {
        spin: Duration::from_micros(50),
        yield_for: Duration::ZERO,
        timeout: Some(Duration::from_millis(100)),
    };
    let (region, control) = match dev.claim(policy) {
        Ok(c) => c,
        Err(e) => return Probe::Unreachable(e.to_string()),
    };
    let region = Arc::new(region);
    // The ring stream has no time limit of its own: the handshake runs on a
    // thread, and giving the region back ends a wait that outlasts `timeout`.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(handshake(vgpu_transport::Channel::from_shm(control)));
    });
    let answer = rx.recv_timeout(timeout * 2);
    region.release();
    answer.unwrap_or_else(|_| {
        Probe::Unreachable(format!(
            "no welcome through {bdf} within {:?}: is a mediator serving this VM (--listen ivshmem:)?",
            timeout * 2
        ))
    })
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
pub fn sessions(
    address: &str,
    timeout: Duration,
    tls: &TlsSettings,
) -> Result<Vec<SessionRecord>, String> {
    fn ask(mut stream: impl Read + Write) -> Result<Vec<SessionRecord>, String> {
        vgpu_proto::sessions::write_query(&mut stream)
            .and_then(|()| vgpu_proto::sessions::read_list(&mut stream))
            .map_err(|e| format!("no valid session list (protocol v{PROTOCOL_VERSION}): {e}"))
    }
    match Target::parse(address) {
        Some(Target::Unix(path)) => ask(connect_unix(&path, timeout)?),
        Some(Target::Tcp { host, port }) => ask(connect_tcp(&host, port, timeout)?),
        Some(Target::Tls { host, port }) => {
            let open = |t: &TlsSettings| {
                let (client, token) = (t.client()?, t.bearer()?);
                admission::open_status(&host, port, &client, token, timeout)
            };
            ask(timed(open(tls).map_err(|e| e.to_string())?, timeout))
        }
        Some(Target::Pci(_)) | None => Err(format!(
            "{address}: only unix:, tcp:// and tls:// addresses can be asked by this version of vgpu"
        )),
    }
}

/// A channel whose reads and writes give up after `timeout`.
fn timed(ch: Channel, timeout: Duration) -> Channel {
    let _ = ch.set_timeout(Some(timeout));
    ch
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
