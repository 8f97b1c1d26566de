//! Lanes: each client thread that makes calls gets its own connection to its
//! own worker thread, opened on the session's control connection. A blocking
//! call on one thread therefore never stalls another.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use vgpu_proto::{read_response_head, write_request, Op};
use vgpu_transport::Channel;

use crate::edge::{CuError, CuResult};
use crate::runtime::Session;

impl Session {
    pub(crate) fn open_lane(&self) -> CuResult<Channel> {
        let control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let mut control = control;
        write_request(&mut *control, Op::OpenLane, 0, 0, &[], &[])
            .map_err(|e| self.fail("open lane", e))?;
        let (head, _) = read_response_head(&mut *control).map_err(|e| self.fail("open lane", e))?;
        crate::edge::check(head.status.get())?;
        let fd = control.recv_fd().map_err(|e| self.fail("open lane", e))?;
        Ok(Channel::from_fd(fd))
    }

    pub(crate) fn exchange(
        &self,
        ctx: u64,
        op: Op,
        args: &[u64],
        blob: &[u8],
        mut sink: Option<&mut [u8]>,
        mut fd_out: Option<&mut Option<OwnedFd>>,
    ) -> CuResult<(Vec<u64>, Vec<u8>)> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(CuError::DEVICE_UNAVAILABLE);
        }
        let mut run = |lane: &mut Lane| -> CuResult<(Vec<u64>, Vec<u8>)> {
            lane.seq = lane.seq.wrapping_add(1);
            let ch = &mut lane.chan;
            write_request(ch, op, lane.seq, ctx, args, blob)
                .map_err(|e| self.fail(op.name(), e))?;
            let (head, outs) = read_response_head(ch).map_err(|e| self.fail(op.name(), e))?;
            let len = head.blob_len();
            let mut owned = Vec::new();
            match sink.as_deref_mut() {
                Some(dst) if dst.len() == len => {
                    std::io::Read::read_exact(ch, dst).map_err(|e| self.fail(op.name(), e))?
                }
                Some(_) if len != 0 => {
                    return Err(self.fail(op.name(), "reply blob has an unexpected length"))
                }
                _ => {
                    owned.resize(len, 0);
                    std::io::Read::read_exact(ch, &mut owned)
                        .map_err(|e| self.fail(op.name(), e))?;
                }
            }
            crate::edge::check(head.status.get())?;
            if let Some(slot) = fd_out.as_deref_mut() {
                *slot = Some(ch.recv_fd().map_err(|e| self.fail(op.name(), e))?);
            }
            Ok((outs, owned))
        };
        let on_thread = LANE.try_with(|cell| -> CuResult<(Vec<u64>, Vec<u8>)> {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|l| l.serial != self.serial) {
                *slot = Some(Lane {
                    chan: self.open_lane()?,
                    serial: self.serial,
                    seq: 0,
                });
            }
            let lane = slot.as_mut().expect("lane was just opened");
            run(lane)
        });
        match on_thread {
            Ok(r) => r,
            // The thread's locals are being torn down (a call from a TLS
            // destructor): use a lane for this one call.
            Err(_) => run(&mut Lane {
                chan: self.open_lane()?,
                serial: self.serial,
                seq: 0,
            }),
        }
    }
}

/// A thread's connection to its worker thread.
struct Lane {
    chan: Channel,
    serial: u64,
    seq: u32,
}

thread_local! {
    static LANE: RefCell<Option<Lane>> = const { RefCell::new(None) };
}
