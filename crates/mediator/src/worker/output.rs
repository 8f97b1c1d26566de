//! The session's output channel: device `printf` output reaches the
//! application's standard output, device `assert` messages its standard
//! error.
//!
//! The driver writes device `printf` output to its process's standard
//! output when it flushes its printf buffer (at synchronization, module
//! unload and context destruction), so before the synchronizing call
//! returns. `OpenOutput` makes the worker's standard output the write end
//! of a pipe, unbuffered, and passes the read end to the client, which
//! drains it after each call it waited for (never on the launch path) and
//! writes what it reads to the application's standard output: the bytes
//! appear where the native driver would have written them.
//!
//! The driver writes device `assert` messages to its standard error when
//! it reports `CUDA_ERROR_ASSERT`, so standard error gets the same
//! treatment: a second pipe, drained at the same points, whose bytes the
//! client writes to the application's standard error. The worker's own log
//! keeps going where it went before: the logger writes to a duplicate of
//! the original standard error made at start-up (`main.rs`).
//!
//! The pipes are made as large as the system allows (the driver's default
//! printf buffer is 1 MiB): a client that stopped draining would stall the
//! driver only after that much output.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use vgpu_proto::{write_response, Request};
use vgpu_transport::Channel;

use super::calls::Reply;
use super::exec::Lane;
use super::status;
use super::Session;
use crate::driver::Status;

/// Pipe capacity asked for: the driver's default printf buffer.
const PIPE_BYTES: libc::c_int = 1 << 20;

extern "C" {
    /// The C library's standard output stream, which the driver prints to.
    static mut stdout: *mut libc::FILE;
}

/// Makes a pipe and points descriptor `target` (standard output or
/// standard error) at it; returns the read end.
fn redirect(target: libc::c_int) -> std::io::Result<OwnedFd> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just opened both descriptors; nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on descriptors this function owns; a failure to grow
    // the pipe only leaves it at the default size.
    unsafe {
        libc::fcntl(fds[1], libc::F_SETPIPE_SZ, PIPE_BYTES);
        let flags = libc::fcntl(fds[0], libc::F_GETFL);
        libc::fcntl(fds[0], libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    // SAFETY: dup2 onto `target` closes what was there (the worker's
    // inherited descriptor; the logger holds its own duplicate of standard
    // error); `write` stays valid for the call.
    if unsafe { libc::dup2(fds[1], target) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    drop(write);
    Ok(read)
}

/// Points standard output and standard error at two pipes; returns their
/// read ends, in that order.
fn redirect_both() -> std::io::Result<[OwnedFd; 2]> {
    let out = redirect(libc::STDOUT_FILENO)?;
    let err = redirect(libc::STDERR_FILENO)?;
    // SAFETY: the C library's `stdout` is a valid stream for the process's
    // life; making it unbuffered before anything wrote through it sends
    // each driver write to the pipe at once. (`stderr` is unbuffered
    // already.)
    unsafe { libc::setvbuf(stdout, std::ptr::null_mut(), libc::_IONBF, 0) };
    Ok([out, err])
}

/// Opens the output channel: answers the `OpenOutput` request `seq` on the
/// control connection and passes the pipes' read ends (standard output,
/// then standard error). `false`: the control
/// connection failed.
pub fn open(session: &Session, control: &mut Channel, seq: u32) -> bool {
    let mut opened = session
        .output_opened
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if *opened {
        tracing::warn!("the output channel is already open");
        return write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok();
    }
    match redirect_both() {
        Ok([out, err]) => {
            *opened = true;
            write_response(control, status::SUCCESS.0, seq, &[], &[]).is_ok()
                && control.send_fd(out.as_fd()).is_ok()
                && control.send_fd(err.as_fd()).is_ok()
        }
        Err(e) => {
            tracing::error!("cannot make the output channel: {e}");
            write_response(control, status::INVALID_VALUE.0, seq, &[], &[]).is_ok()
        }
    }
}

/// The `OpenOutput` operation arriving on a lane: it belongs to the
/// control connection.
pub fn open_output(_: &mut Lane, _: &Session, _: &Request) -> Result<Reply, Status> {
    Err(status::INVALID_VALUE)
}
