//! The session's output channel: device `printf` output on the
//! application's standard output, device `assert` messages on its standard
//! error.
//!
//! At connect the client opens it with `OpenOutput` on the control
//! connection: the worker makes its standard output a pipe and passes the
//! read end. The driver writes device `printf` output there when it flushes
//! its buffer, during a synchronizing call and before that call replies, so
//! after each call it waited for the client reads what the pipe holds (one
//! non-blocking read when it is empty; posted calls, launches among them,
//! never look) and writes it through the C library's `stdout`, as the
//! driver does in a native process, so it keeps its place among the
//! application's own output. The worker's standard error is a second
//! pipe, drained at the same points into the C library's `stderr`: the
//! driver writes device `assert` messages there when it reports
//! `CUDA_ERROR_ASSERT`.
//!
//! One thread, `vgpu-output`, also drains the pipes whenever they hold
//! bytes, so that a flush larger than a pipe never stalls the driver
//! while the calling thread waits for its reply. Both drain under one lock:
//! once a caller holds it, every byte the driver wrote before the reply is
//! either written out already or still in the pipe for the caller to take.
//! Sessions over TCP have no output channel.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use vgpu_proto::{read_response_head, write_request, Op};
use vgpu_transport::Channel;

extern "C" {
    /// The C library's standard output stream.
    static mut stdout: *mut libc::FILE;
    /// The C library's standard error stream.
    static mut stderr: *mut libc::FILE;
}

/// The read ends of the worker's standard output and standard error.
#[derive(Debug)]
pub struct Output {
    /// The worker's standard output, for the application's `stdout`.
    out: OwnedFd,
    /// The worker's standard error, for the application's `stderr`.
    err: OwnedFd,
    /// Held while bytes move from the pipe to `stdout`.
    moving: Mutex<()>,
}

/// Opens the output channel on the control connection and starts its
/// thread; `None` when the worker could not (its log says why) or the
/// connection failed.
pub fn open(control: &mut Channel) -> Option<Arc<Output>> {
    write_request(control, Op::OpenOutput, 0, 0, &[], &[]).ok()?;
    let (head, _) = read_response_head(control).ok()?;
    if head.status.get() != 0 {
        crate::log::line(format_args!(
            "no output channel (status {}): device printf output stays in the worker",
            head.status.get()
        ));
        return None;
    }
    let out = Arc::new(Output {
        out: control.recv_fd().ok()?,
        err: control.recv_fd().ok()?,
        moving: Mutex::new(()),
    });
    let bg = Arc::clone(&out);
    let started = std::thread::Builder::new()
        .name("vgpu-output".into())
        .spawn(move || bg.serve());
    if started.is_err() {
        crate::log::line(format_args!(
            "no output thread: a flush larger than the pipe waits for the next call"
        ));
    }
    Some(out)
}

impl Output {
    /// Writes whatever the pipes hold to the application's standard output
    /// and standard error.
    pub fn drain(&self) {
        let _moving = self.moving.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the C library's streams are valid for the process's life.
        let (to_out, to_err) = unsafe { (stdout, stderr) };
        move_all(&self.out, to_out);
        move_all(&self.err, to_err);
    }

    /// Waits for bytes and drains them, until the worker's ends close.
    fn serve(&self) {
        loop {
            let mut p = [&self.out, &self.err].map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: `p` is an array of two valid pollfds; no timeout.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if p.iter().all(|p| p.revents & libc::POLLIN == 0) {
                // Hung up or failed with nothing to read: the worker is gone.
                return;
            }
            self.drain();
        }
    }
}

/// Moves bytes from `pipe` to `stream` until the pipe is empty (the caller
/// holds `moving`).
///
/// It runs after every call a thread waits for, almost always on an empty
/// pipe: the buffer is small, since clearing a large one would cost that
/// call microseconds.
fn move_all(pipe: &OwnedFd, stream: *mut libc::FILE) {
    let mut buf = [0u8; 4 << 10];
    loop {
        // SAFETY: `buf` is valid for writes of its length; the descriptor is
        // the session's own, non-blocking read end.
        let n = unsafe { libc::read(pipe.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(n) = usize::try_from(n) else { return };
        if n == 0 {
            return;
        }
        // SAFETY: `buf` holds `n` bytes read above; `stream` is one of the C
        // library's standard streams, valid for the process's life.
        unsafe { libc::fwrite(buf.as_ptr().cast(), 1, n, stream) };
    }
}
