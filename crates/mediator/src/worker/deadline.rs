//! The deadline on a request's rest: once the first bytes of a request
//! frame have come on a socket, the whole frame must follow within
//! `--frame-timeout-ms`, or the worker ends the session. A client that
//! declares a 64 MiB blob and sends none cannot hold its worker forever;
//! a client idle *between* requests may stay idle as long as it likes.
//!
//! The socket gets a read timeout once, a quarter of the deadline
//! ([`arm`]), so waiting costs no system call per request: a read that
//! times out before the frame's first byte simply waits again (and stops
//! when the session is closing); one that times out, or returns, after the
//! frame has taken longer than the deadline fails with `TimedOut`. The
//! session thus ends between one and one and a quarter deadlines after a
//! frame's first byte.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use vgpu_transport::Channel;

/// The read timeout [`arm`] gives a socket for a frame deadline of `limit`.
fn wake_interval(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_millis(10), Duration::from_secs(15))
}

/// Gives `ch` the read timeout that [`FrameReader`] relies on: its
/// socket's, or a VM guest's ring stream's read deadline.
pub fn arm(ch: &mut Channel, limit: Duration) {
    if let Err(e) = ch.set_read_timeout(Some(wake_interval(limit))) {
        tracing::warn!("cannot give a session channel its read timeout: {e}");
    }
}

/// Reads one request frame from an [`arm`]ed socket under the deadline:
/// make one per frame. `R` is the socket's channel, or a buffer over it.
pub struct FrameReader<'a, R: Read> {
    ch: &'a mut R,
    limit: Duration,
    /// When the frame's first byte came.
    started: Option<Instant>,
    /// False once the session is closing: waiting for a frame stops.
    alive: &'a dyn Fn() -> bool,
}

impl<'a, R: Read> FrameReader<'a, R> {
    pub fn new(ch: &'a mut R, limit: Duration, alive: &'a dyn Fn() -> bool) -> Self {
        FrameReader {
            ch,
            limit,
            started: None,
            alive,
        }
    }

    fn late(&self) -> bool {
        self.started.is_some_and(|t| t.elapsed() > self.limit)
    }
}

/// Whether `e` is an [`arm`]ed socket's read timeout.
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// The error of a frame that did not come whole in time.
pub fn frame_timed_out(limit: Duration) -> std::io::Error {
    std::io::Error::new(
        ErrorKind::TimedOut,
        format!("a request frame did not arrive whole within {limit:?} of its first bytes"),
    )
}

impl<R: Read> FrameReader<'_, R> {
    /// One read by `read` from the channel, under the deadline.
    fn timed(
        &mut self,
        mut read: impl FnMut(&mut R) -> std::io::Result<usize>,
    ) -> std::io::Result<usize> {
        loop {
            if self.late() {
                return Err(frame_timed_out(self.limit));
            }
            match read(self.ch) {
                Ok(n) => {
                    if self.started.is_none() && n > 0 {
                        self.started = Some(Instant::now());
                    } else if self.late() {
                        return Err(frame_timed_out(self.limit));
                    }
                    return Ok(n);
                }
                Err(e) if is_timeout(&e) && self.started.is_none() => {
                    if !(self.alive)() {
                        return Err(ErrorKind::ConnectionAborted.into());
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl<R: Read> Read for FrameReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.timed(|ch| ch.read(buf))
    }
    fn read_vectored(&mut self, bufs: &mut [std::io::IoSliceMut<'_>]) -> std::io::Result<usize> {
        self.timed(|ch| ch.read_vectored(bufs))
    }
}

/// Whether an error ended a frame at its deadline.
pub fn is_frame_timeout(e: &vgpu_proto::ProtoError) -> bool {
    matches!(e, vgpu_proto::ProtoError::Io(io) if io.kind() == ErrorKind::TimedOut)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn idle_is_fine_but_a_stalled_frame_times_out() {
        let (ours, theirs) = Channel::pair().expect("pair");
        idle_then_stalled(ours, theirs);
    }

    /// The same over a VM guest's ring stream.
    #[test]
    fn a_guest_frame_that_stalls_times_out_too() {
        use vgpu_transport::ivshmem::stream::ShmStream;
        use vgpu_transport::{Ring, WaitPolicy};
        let policy = WaitPolicy::default().with_timeout(Duration::from_millis(20));
        let (a, afd) = Ring::create(4096).expect("ring");
        let (b, bfd) = Ring::create(4096).expect("ring");
        let (a2, b2) = (Ring::map(&afd).expect("map"), Ring::map(&bfd).expect("map"));
        let end = |out: Ring, inp: Ring| {
            let (p, c) = (
                out.into_producer().expect("p"),
                inp.into_consumer().expect("c"),
            );
            Channel::from_shm(ShmStream::new(p, c, policy, Box::new(|| true)))
        };
        idle_then_stalled(end(a, b), end(b2, a2));
    }

    /// Idle for longer than the deadline, then half a frame from `theirs`:
    /// `ours` fails with `TimedOut` one deadline after the half came.
    fn idle_then_stalled(mut ours: Channel, mut theirs: Channel) {
        let limit = Duration::from_millis(200);
        arm(&mut ours, limit);
        let alive = || true;
        let writer = std::thread::spawn(move || {
            // Idle for longer than the deadline, then half a frame.
            std::thread::sleep(Duration::from_millis(500));
            theirs.write_all(b"half").expect("send");
            std::thread::sleep(Duration::from_millis(3000));
            drop(theirs);
        });
        let mut frame = [0u8; 8];
        let start = Instant::now();
        let err = FrameReader::new(&mut ours, limit, &alive)
            .read_exact(&mut frame)
            .expect_err("the frame never completes");
        let took = start.elapsed();
        assert_eq!(err.kind(), ErrorKind::TimedOut, "{err}");
        assert!(
            took >= Duration::from_millis(650),
            "idle time is not counted: {took:?}"
        );
        assert!(took < Duration::from_millis(2500), "{took:?}");
        writer.join().expect("writer");
    }

    #[test]
    fn a_whole_frame_reads_and_a_closing_session_stops_waiting() {
        let (mut ours, mut theirs) = Channel::pair().expect("pair");
        arm(&mut ours, Duration::from_millis(100));
        theirs.write_all(b"12345678").expect("send");
        let mut frame = [0u8; 8];
        FrameReader::new(&mut ours, Duration::from_millis(100), &|| true)
            .read_exact(&mut frame)
            .expect("reads");
        assert_eq!(&frame, b"12345678");
        let err = FrameReader::new(&mut ours, Duration::from_millis(100), &|| false)
            .read_exact(&mut frame)
            .expect_err("closing");
        assert_eq!(err.kind(), ErrorKind::ConnectionAborted);
    }
}
