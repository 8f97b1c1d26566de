//! The session's output channel: device `printf` output on the
//! application's standard output.
//!
//! At connect the client opens it with `OpenOutput` on the control
//! connection: the worker makes its standard output a pipe and passes the
//! read end. The driver writes device `printf` output there when it flushes
//! its buffer, during a synchronizing call and before that call replies, so
//! after each call it waited for the client reads what the pipe holds (one
//! non-blocking read when it is empty; posted calls, launches among them,
//! never look) and writes it through the C library's `stdout`, as the
//! driver does in a native process, so it keeps its place among the
//! application's own output. Sessions over TCP have no output channel.

use std::os::fd::{AsRawFd, OwnedFd};

use vgpu_proto::{read_response_head, write_request, Op};
use vgpu_transport::Channel;

extern "C" {
    /// The C library's standard output stream.
    static mut stdout: *mut libc::FILE;
}

/// Opens the output channel on the control connection; `None` when the
/// worker could not (its log says why) or the connection failed.
pub fn open(control: &mut Channel) -> Option<OwnedFd> {
    write_request(control, Op::OpenOutput, 0, 0, &[], &[]).ok()?;
    let (head, _) = read_response_head(control).ok()?;
    if head.status.get() != 0 {
        crate::log::line(format_args!(
            "no output channel (status {}): device printf output stays in the worker",
            head.status.get()
        ));
        return None;
    }
    control.recv_fd().ok()
}

/// Writes whatever the pipe holds to the application's standard output.
pub fn drain(pipe: &OwnedFd) {
    let mut buf = [0u8; 64 << 10];
    loop {
        // SAFETY: `buf` is valid for writes of its length; the descriptor
        // is the session's own, non-blocking read end.
        let n = unsafe { libc::read(pipe.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(n) = usize::try_from(n) else { return };
        if n == 0 {
            return;
        }
        // SAFETY: `buf` holds `n` bytes read above; the C library's
        // `stdout` is valid for the process's life.
        unsafe { libc::fwrite(buf.as_ptr().cast(), 1, n, stdout) };
    }
}
