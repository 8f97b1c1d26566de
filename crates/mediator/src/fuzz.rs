//! Checks that the fuzz targets of `crates/mediator/fuzz` run on each input
//! (the worker's: [`crate::worker::fuzz`]),
//! kept here so that the corpus replay test (`cargo test -p vgpu-mediator
//! --test fuzz_corpus`) runs the same checks on the stable toolchain.

use std::io::{ErrorKind, Read};
use std::time::Duration;

use vgpu_proto::{Hello, ProtoError};

use crate::admission::{read_opening, DeadlineRead, Opening};

/// A byte stream a peer controls: it hands out at most `chunk` bytes a
/// read, and after `stall_after` reads (0: never) it times out as a socket
/// with a read timeout does.
struct Script<'a> {
    data: &'a [u8],
    taken: usize,
    chunk: usize,
    reads: usize,
    stall_after: usize,
}

impl Read for Script<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reads += 1;
        if self.stall_after != 0 && self.reads > self.stall_after {
            return Err(ErrorKind::WouldBlock.into());
        }
        let left = &self.data[self.taken..];
        let n = left.len().min(buf.len()).min(self.chunk);
        buf[..n].copy_from_slice(&left[..n]);
        self.taken += n;
        Ok(n)
    }
}

impl<'a> Script<'a> {
    /// The peer a fuzz input describes: byte 0 the most bytes a read
    /// returns, byte 1 after how many reads it stalls, the rest what it
    /// sends (an input shorter than two bytes sends nothing).
    fn of(data: &'a [u8]) -> Script<'a> {
        let (chunk, stall_after, sent) = match data {
            [c, s, rest @ ..] => (usize::from(*c).max(1), usize::from(*s), rest),
            _ => (1, 0, &[][..]),
        };
        Script {
            data: sent,
            taken: 0,
            chunk,
            reads: 0,
            stall_after,
        }
    }
}

impl DeadlineRead for Script<'_> {
    fn set_read_timeout(&mut self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
}

/// The supervisor's handshake reader on a peer's bytes. Byte 0 sets the
/// most bytes a read returns, byte 1 after how many reads the peer stalls;
/// the rest is what the peer sends. Whatever comes, the reader returns; an
/// opening it accepts is exactly the bytes it read, no more, and a hello
/// re-encodes to them; a stall before the end is a time-out.
pub fn handshake(data: &[u8]) {
    let mut peer = Script::of(data);
    let stall_after = peer.stall_after;
    match read_opening(&mut peer, Duration::from_secs(3600)) {
        Ok(Opening::Hello(hello)) => {
            let mut again = Vec::new();
            hello
                .write(&mut again)
                .expect("an accepted hello re-encodes");
            assert_eq!(
                again.len(),
                peer.taken,
                "the hello is exactly what was read"
            );
            assert_eq!(Hello::read(&mut &again[..]).expect("decodes"), hello);
        }
        Ok(Opening::Query) => assert_eq!(peer.taken, 8, "a status query is 8 bytes"),
        Err(ProtoError::Io(e)) if e.kind() == ErrorKind::TimedOut => {
            assert!(stall_after != 0, "a time-out without a stall");
        }
        Err(_) => {}
    }
}

/// Whether the handshake reader accepts the opening a [`handshake`]
/// input sends (the corpus replay checks its `ok-*` seeds with it).
pub fn handshake_accepts(data: &[u8]) -> bool {
    data.len() >= 2 && read_opening(&mut Script::of(data), Duration::from_secs(3600)).is_ok()
}

/// The worker's handling of decoded requests: the request frames of
/// `data` run on a lane of a session whose driver is the simulated device
/// at `sim` ([`crate::worker::fuzz`]). Nothing may panic or crash, and
/// nothing a run makes outlives it.
pub fn worker_requests(sim: &std::path::Path, data: &[u8]) {
    crate::worker::fuzz::run_requests(sim, data);
}

/// Seeds for the worker's fuzz target: (name, frames). A context made and
/// made current, memory allocated, written, read, set and freed, a stream
/// and a synchronize, then the context destroyed; and a few bad frames.
pub fn worker_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use vgpu_proto::{write_request, Op};
    let ctx: u64 = 0x4100_0000_0000_0001;
    let stream: u64 = 0x4200_0000_0000_0002;
    let frame = |op: Op, ctx_id: u64, fixed: &[u8], blob: &[u8]| {
        let mut v = Vec::new();
        write_request(&mut v, op, 1, ctx_id, fixed, blob).expect("a valid seed frame");
        v
    };
    let mut create = Vec::new();
    create.extend_from_slice(&ctx.to_le_bytes());
    create.extend_from_slice(&0u32.to_le_bytes());
    create.extend_from_slice(&0i32.to_le_bytes());
    let mut stream_create = Vec::new();
    stream_create.extend_from_slice(&stream.to_le_bytes());
    stream_create.extend_from_slice(&0u32.to_le_bytes());
    stream_create.extend_from_slice(&0i32.to_le_bytes());
    let session = [
        frame(Op::CtxCreate, 0, &create, &[]),
        frame(Op::MemAlloc, ctx, &4096u64.to_le_bytes(), &[]),
        frame(Op::StreamCreate, ctx, &stream_create, &[]),
        frame(Op::CtxSynchronize, ctx, &[], &[]),
        frame(Op::MemFree, ctx, &0u64.to_le_bytes(), &[]),
        frame(Op::CtxDestroy, 0, &ctx.to_le_bytes(), &[]),
    ]
    .concat();
    let mut htod = vec![0u8; 17];
    htod[..8].copy_from_slice(&0x1000u64.to_le_bytes());
    let copy = [
        frame(Op::CtxCreate, 0, &create, &[]),
        frame(Op::MemcpyHtoD, ctx, &htod, &[0xAB; 64]),
        frame(Op::CtxDestroy, 0, &ctx.to_le_bytes(), &[]),
    ]
    .concat();
    let mut bad = frame(Op::MemAlloc, ctx, &u64::MAX.to_le_bytes(), &[]);
    bad.extend_from_slice(&[0xFF; 16]);
    vec![
        ("ok-session", session),
        ("ok-copy-to-a-forged-address", copy),
        ("err-huge-alloc-then-garbage", bad),
        ("err-no-context", frame(Op::CtxSynchronize, ctx, &[], &[])),
    ]
}
