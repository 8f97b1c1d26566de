//! The session's output channel: device `printf` output reaches the
//! application's standard output, device `assert` messages its standard
//! error.
//!
//! The driver writes device `printf` output to its process's standard
//! output when it flushes its printf buffer (at synchronization, module
//! unload and context destruction), so before the synchronizing call
//! returns. `OpenOutput` makes the worker's standard output a memfd,
//! unbuffered, written from offset 0 on, and passes the same open file to
//! the client. The client maps it to see new bytes without a system call
//! after each call it waited for, asks the shared file offset (the end of
//! what the driver wrote) only when there are some, and writes them to the
//! application's standard output: the bytes appear where the native driver
//! would have written them.
//!
//! The driver writes device `assert` messages to its standard error when
//! it reports `CUDA_ERROR_ASSERT`, so standard error gets the same
//! treatment: a second memfd, whose bytes the client writes to the
//! application's standard error. The worker's own log keeps going where it
//! went before: the logger writes to a duplicate of the original standard
//! error made at start-up (`main.rs`).
//!
//! A file never fills as a pipe does, so the driver never stalls on a
//! client that is slow to drain. The file is sized to the client's view
//! ([`WINDOW`]) but sparse: it holds memory only for bytes written and not
//! yet consumed, since the client punches out what it has moved.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{ftruncate, memfd_create, MemfdFlags};
use vgpu_proto::{output::WINDOW, write_response, Request};
use vgpu_transport::Channel;

use super::calls::Reply;
use super::exec::Lane;
use super::status;
use super::Session;
use crate::driver::Status;

extern "C" {
    /// The C library's standard output stream, which the driver prints to.
    static mut stdout: *mut libc::FILE;
}

/// Makes a sparse memfd of [`WINDOW`] bytes and points descriptor `target`
/// (standard output or standard error) at it, sharing its file offset;
/// returns the memfd.
fn redirect(target: libc::c_int, name: &str) -> std::io::Result<OwnedFd> {
    let file = memfd_create(name, MemfdFlags::CLOEXEC)?;
    ftruncate(&file, WINDOW)?;
    // SAFETY: dup2 onto `target` closes what was there (the worker's
    // inherited descriptor; the logger holds its own duplicate of standard
    // error) and makes it a second descriptor of the same open file, so
    // the two share the offset the client reads.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&file), target) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// Points standard output and standard error at two memfds; returns them,
/// in that order.
fn redirect_both() -> std::io::Result<[OwnedFd; 2]> {
    let out = redirect(libc::STDOUT_FILENO, "vgpu-stdout")?;
    let err = redirect(libc::STDERR_FILENO, "vgpu-stderr")?;
    // SAFETY: the C library's `stdout` is a valid stream for the process's
    // life; making it unbuffered before anything wrote through it sends
    // each driver write to the file at once. (`stderr` is unbuffered
    // already.)
    unsafe { libc::setvbuf(stdout, std::ptr::null_mut(), libc::_IONBF, 0) };
    Ok([out, err])
}

/// Opens the output channel: answers the `OpenOutput` request `seq` on the
/// control connection and passes the two files (standard output, then
/// standard error). `false`: the control
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
