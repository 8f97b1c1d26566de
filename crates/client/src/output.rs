//! The session's output channel: device `printf` output on the
//! application's standard output, device `assert` messages on its standard
//! error.
//!
//! At connect the client opens it with `OpenOutput` on the control
//! connection: the worker makes its standard output and standard error two
//! memfds and passes them. The driver writes device `printf` output to the
//! first when it flushes its buffer, during a synchronizing call and before
//! that call replies, and device `assert` messages to the second when it
//! reports `CUDA_ERROR_ASSERT`. The client moves the bytes through the C
//! library's `stdout` and `stderr`, as the driver does in a native process,
//! so they keep their place among the application's own output.
//!
//! After each call it waited for (posted calls, launches among them, never
//! look) the client checks whether the byte at each file's read position
//! is still zero, through a read-only mapping of the file: no system call
//! when there is nothing new, which is almost always. When there is, it
//! reads up to the file offset, which the worker's descriptor shares, so
//! it is the end of what the driver wrote. A NUL byte that the device
//! printed first hides what follows from the quick check; the thread
//! `vgpu-output` reads up to the offset every [`IDLE_CHECK`] and takes it
//! out, with output flushed during posted calls.
//! Both move bytes under one lock, and the read position moves only after
//! the bytes are written out, so once a caller sees zero at the read
//! position every byte before it is out.
//! Sessions over TCP have no output channel.

use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use vgpu_proto::output::WINDOW;
use vgpu_proto::{read_response_head, write_request, Op};
use vgpu_transport::Channel;

extern "C" {
    /// The C library's standard output stream.
    static mut stdout: *mut libc::FILE;
    /// The C library's standard error stream.
    static mut stderr: *mut libc::FILE;
}

/// How often `vgpu-output` looks for bytes that no caller took.
const IDLE_CHECK: Duration = Duration::from_millis(50);
/// Moved bytes are punched out of the file (freeing their memory) in
/// steps of this many bytes.
const PUNCH_STEP: u64 = 1 << 20;

/// One of the worker's output files.
#[derive(Debug)]
struct Stream {
    file: OwnedFd,
    /// The file's first [`WINDOW`] bytes, mapped read-only.
    map: NonNull<u8>,
    /// Where the next unmoved byte is; moved only under `Output::moving`.
    read: std::sync::atomic::AtomicU64,
    /// Bytes below this have been punched out of the file.
    punched: std::sync::atomic::AtomicU64,
    /// `stdout` (false) or `stderr` (true) of the C library.
    to_err: bool,
}

// SAFETY: the mapping is read-only and lives as long as the stream; the
// position fields are atomics.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

/// The worker's standard output and standard error.
#[derive(Debug)]
pub struct Output {
    streams: [Stream; 2],
    /// Held while bytes move from the files to the C library's streams.
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
    let (out_file, err_file) = (control.recv_fd().ok()?, control.recv_fd().ok()?);
    let streams = match (Stream::map(out_file, false), Stream::map(err_file, true)) {
        (Ok(out), Ok(err)) => [out, err],
        (Err(e), _) | (_, Err(e)) => {
            crate::log::line(format_args!(
                "no output channel (cannot map the worker's output: {e}): device printf output stays in the worker"
            ));
            return None;
        }
    };
    let out = Arc::new(Output {
        streams,
        moving: Mutex::new(()),
    });
    let bg = Arc::downgrade(&out);
    let started = std::thread::Builder::new()
        .name("vgpu-output".into())
        .spawn(move || serve(&bg));
    if started.is_err() {
        crate::log::line(format_args!(
            "no output thread: output flushed during posted calls waits for the next call"
        ));
    }
    Some(out)
}

impl Output {
    /// Writes what the driver wrote since the last time to the
    /// application's standard output and standard error; costs no system
    /// call when there is nothing.
    pub fn drain(&self) {
        if self.streams.iter().any(Stream::has_news) {
            self.move_all();
        }
    }

    /// Moves every byte up to each file's offset.
    fn move_all(&self) {
        let _moving = self.moving.lock().unwrap_or_else(|e| e.into_inner());
        for stream in &self.streams {
            stream.move_out();
        }
    }
}

/// The `vgpu-output` thread: takes out what no caller did, until the
/// session's output is dropped.
fn serve(output: &Weak<Output>) {
    loop {
        std::thread::sleep(IDLE_CHECK);
        match output.upgrade() {
            Some(output) => output.move_all(),
            None => return,
        }
    }
}

/// [`WINDOW`] as a length (vgpu supports 64-bit targets only).
#[allow(clippy::cast_possible_truncation)]
const WINDOW_LEN: usize = WINDOW as usize;

impl Stream {
    /// Maps the first [`WINDOW`] bytes of `file`.
    fn map(file: OwnedFd, to_err: bool) -> std::io::Result<Stream> {
        let len = WINDOW_LEN;
        // SAFETY: a fresh read-only shared mapping of a descriptor this
        // stream owns; it is unmapped in `drop`.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Stream {
            file,
            map: NonNull::new(at.cast()).ok_or_else(std::io::Error::last_os_error)?,
            read: 0.into(),
            punched: 0.into(),
            to_err,
        })
    }

    /// Whether bytes may wait past the read position: the byte there is
    /// not zero, or the position is past the mapping.
    fn has_news(&self) -> bool {
        let read = self.read.load(std::sync::atomic::Ordering::Acquire);
        if read >= WINDOW {
            return true;
        }
        let Ok(at) = usize::try_from(read) else {
            return true;
        };
        // SAFETY: `at` is inside the mapping, which is valid for reads of
        // WINDOW bytes while `self` lives; the driver writes the file
        // concurrently, so the read is volatile.
        unsafe { self.map.as_ptr().add(at).read_volatile() != 0 }
    }

    /// Writes the bytes from the read position up to the file offset to
    /// the C library's stream (the caller holds `Output::moving`).
    fn move_out(&self) {
        use std::sync::atomic::Ordering::{Acquire, Release};
        // SAFETY: the descriptor is the stream's own; lseek with SEEK_CUR
        // and offset 0 reads the shared offset without moving it.
        let end = unsafe { libc::lseek(self.file.as_raw_fd(), 0, libc::SEEK_CUR) };
        let Ok(end) = u64::try_from(end) else { return };
        let mut read = self.read.load(Acquire);
        let mut buf = [0u8; 16 << 10];
        while read < end {
            let want = usize::try_from(end - read).map_or(buf.len(), |n| buf.len().min(n));
            // SAFETY: `buf` is valid for writes of `want` bytes; pread
            // leaves the shared offset alone.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    want,
                    read as libc::off_t,
                )
            };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            // SAFETY: the C library's streams are valid for the process's
            // life; `buf` holds `n` bytes read above.
            unsafe {
                let stream = if self.to_err { stderr } else { stdout };
                libc::fwrite(buf.as_ptr().cast(), 1, n, stream);
            }
            read += n as u64;
            self.read.store(read, Release);
        }
        self.punch(read);
    }

    /// Frees the memory of the bytes moved out, in [`PUNCH_STEP`]s.
    fn punch(&self, read: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let from = self.punched.load(Relaxed);
        let to = read - read % PUNCH_STEP;
        if to <= from {
            return;
        }
        // SAFETY: fallocate on the stream's own descriptor; the range was
        // read already and reads back as zeros, which no one looks at.
        let done = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                from as libc::off_t,
                (to - from) as libc::off_t,
            )
        };
        if done == 0 {
            self.punched.store(to, Relaxed);
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Stream::map`, unmapped once.
        unsafe { libc::munmap(self.map.as_ptr().cast(), WINDOW_LEN) };
    }
}
