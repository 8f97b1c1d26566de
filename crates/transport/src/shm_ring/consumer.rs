//! The consuming end of a ring: takes messages, publishing its index in
//! batches (module docs of [`super`], "Publish order").

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use super::{
    record_len, tag, to_usize, Ring, WaitPolicy, OFF_CONSUMER_STATE, OFF_PRODUCER_STATE,
    PREFETCH_AHEAD, RECORD_HEADER, RELEASE_BATCH, STATE_CLOSED,
};
use crate::wake;
use crate::TransportError;

/// The consuming end of a ring. `Send`, not `Sync`: one thread at a time.
#[derive(Debug)]
pub struct Consumer {
    pub(super) ring: Ring,
    /// Our index; the shared copy is only written.
    pub(super) head: Cell<u64>,
    /// The last `head` stored to the shared copy (publishing is batched).
    pub(super) published: Cell<u64>,
}

impl Consumer {
    /// Bytes in the data area.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Largest message: `capacity - 16`.
    pub fn max_message(&self) -> usize {
        self.ring.max_message()
    }

    /// Whether the producer has closed its end (messages may remain).
    pub fn peer_closed(&self) -> bool {
        self.ring.state(OFF_PRODUCER_STATE) == STATE_CLOSED
    }

    /// The oldest record: (its counter, payload length, record length), or
    /// `None` when the ring is empty, having published `head` first.
    /// Checks everything read from the peer.
    fn next_record(&self) -> Result<Option<(u64, usize, u64)>, TransportError> {
        let head = self.head.get();
        if self.ring.record_word(head)?.load(Ordering::Acquire) != tag(head) {
            // Nothing yet: whatever was taken becomes space for the producer
            // before this side waits.
            self.publish()?;
            if !self.peer_closed() {
                return Ok(None);
            }
            // Everything published before the close is visible now.
            if self.ring.record_word(head)?.load(Ordering::Acquire) != tag(head) {
                return Err(TransportError::PeerGone);
            }
        }
        let word = self
            .ring
            .record_word(head.wrapping_add(8))?
            .load(Ordering::Relaxed);
        if word > self.ring.max_message() as u64 {
            return Err(TransportError::Corrupt("record length out of range"));
        }
        Ok(Some((head, to_usize(word), record_len(word))))
    }

    /// Prefetches up to [`PREFETCH_AHEAD`] bytes after the record at `head`
    /// of record length `need`: the next messages, when more are waiting,
    /// are read sooner.
    fn prefetch_after(&self, head: u64, need: u64) {
        let next = head.wrapping_add(need);
        self.ring.prefetch(next, next.wrapping_add(PREFETCH_AHEAD));
    }

    /// Releases the record at `head` of record length `need`, publishing
    /// the new `head` once a batch of space has built up (module docs,
    /// "Publish order"; the rest is published when the ring is found empty).
    fn release(&self, head: u64, need: u64) -> Result<(), TransportError> {
        let new_head = head.wrapping_add(need);
        self.head.set(new_head);
        if new_head.wrapping_sub(self.published.get()) >= self.ring.cap() / RELEASE_BATCH {
            self.publish()?;
        }
        Ok(())
    }

    /// Stores `head` to the shared copy, if it moved since the last time,
    /// and wakes the producer if it sleeps for space.
    fn publish(&self) -> Result<(), TransportError> {
        let head = self.head.get();
        if head == self.published.get() {
            return Ok(());
        }
        self.published.set(head);
        self.ring.head().store(head, Ordering::Release);
        wake::notify(&self.ring.space_wake())
    }

    /// Takes the oldest message through `f`, which copies out what it wants
    /// of it ([`Message::read`]) into its own buffers: a reply's bulk bytes
    /// can go straight to their destination. The message is taken (its space
    /// released) whether or not `f` succeeds. `Ok(None)`: the ring is empty.
    /// Errors as [`Consumer::try_pop_into`], and `f`'s.
    pub fn try_pop_with<R>(
        &self,
        f: impl FnOnce(&Message<'_>) -> Result<R, TransportError>,
    ) -> Result<Option<R>, TransportError> {
        self.take_with(true, f)
    }

    /// [`Consumer::try_pop_with`]; `ahead`: prefetch what follows (more
    /// messages are likely waiting).
    fn take_with<R>(
        &self,
        ahead: bool,
        f: impl FnOnce(&Message<'_>) -> Result<R, TransportError>,
    ) -> Result<Option<R>, TransportError> {
        let Some((head, len, need)) = self.next_record()? else {
            return Ok(None);
        };
        if ahead {
            self.prefetch_after(head, need);
        }
        let msg = Message {
            ring: &self.ring,
            pos: head.wrapping_add(RECORD_HEADER as u64),
            len,
        };
        let r = f(&msg);
        self.release(head, need)?;
        r.map(Some)
    }

    /// [`Consumer::try_pop_with`], waiting for a message as `wait` says.
    pub fn pop_with<R>(
        &self,
        wait: &WaitPolicy,
        f: impl FnOnce(&Message<'_>) -> Result<R, TransportError>,
    ) -> Result<R, TransportError> {
        let mut f = Some(f);
        let mut attempt = |ahead: bool| -> Result<Option<R>, TransportError> {
            if self.next_record()?.is_none() {
                return Ok(None);
            }
            let f = f
                .take()
                .ok_or(TransportError::Corrupt("message taken twice"))?;
            self.take_with(ahead, f)
        };
        if let Some(r) = attempt(true)? {
            return Ok(r);
        }
        wake::wait_for(&self.ring.data_wake(), wait, || attempt(false))
    }

    /// Takes the oldest message into `buf` (replacing its contents).
    /// `Ok(false)`: the ring is empty. [`TransportError::PeerGone`]: empty and
    /// the producer closed. [`TransportError::Corrupt`]: the peer broke the
    /// ring.
    pub fn try_pop_into(&self, buf: &mut Vec<u8>) -> Result<bool, TransportError> {
        self.take_into(buf, true)
    }

    /// [`Consumer::try_pop_into`]; `ahead` as for [`Consumer::take_with`].
    fn take_into(&self, buf: &mut Vec<u8>, ahead: bool) -> Result<bool, TransportError> {
        let Some((head, len, need)) = self.next_record()? else {
            return Ok(false);
        };
        if ahead {
            self.prefetch_after(head, need);
        }
        buf.clear();
        buf.try_reserve(len).map_err(|_| {
            TransportError::Io(std::io::Error::from(std::io::ErrorKind::OutOfMemory))
        })?;
        let dst = buf
            .spare_capacity_mut()
            .get_mut(..len)
            .ok_or(TransportError::Corrupt("reserve came up short"))?;
        self.ring
            .read_data(head.wrapping_add(RECORD_HEADER as u64), dst)?;
        // SAFETY: `read_data` initialised the first `len` bytes of the spare
        // capacity, which `try_reserve` made at least `len` long.
        unsafe { buf.set_len(len) };
        self.release(head, need)?;
        Ok(true)
    }

    /// Takes the oldest message into `buf`, waiting as `wait` says.
    pub fn pop_into(&self, buf: &mut Vec<u8>, wait: &WaitPolicy) -> Result<(), TransportError> {
        if self.take_into(buf, true)? {
            return Ok(());
        }
        wake::wait_for(&self.ring.data_wake(), wait, || {
            Ok(self.take_into(buf, false)?.then_some(()))
        })
    }
}

/// A message being taken by [`Consumer::try_pop_with`]. Its bytes stay in
/// the shared ring and are only ever copied out, never borrowed.
#[derive(Debug)]
pub struct Message<'a> {
    ring: &'a Ring,
    /// Counter of its first payload byte.
    pos: u64,
    len: usize,
}

impl Message<'_> {
    /// Payload bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the message has no payload.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies bytes `at..at + dst.len()` of the message into `dst`.
    /// [`TransportError::TooLarge`] (nothing copied) if that range is not
    /// inside the message.
    pub fn read(&self, at: usize, dst: &mut [u8]) -> Result<(), TransportError> {
        match at.checked_add(dst.len()) {
            Some(end) if end <= self.len => {}
            _ => {
                return Err(TransportError::TooLarge {
                    len: at.saturating_add(dst.len()),
                    max: self.len,
                })
            }
        }
        // SAFETY: `&mut [u8]` and `&mut [MaybeUninit<u8>]` have the same
        // layout, and `read_data` only stores initialised bytes (copies of
        // the mapping's bytes), so `dst` stays initialised.
        let out = unsafe {
            std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<MaybeUninit<u8>>(), dst.len())
        };
        self.ring.read_data(self.pos.wrapping_add(at as u64), out)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.ring
            .map
            .u32_at(OFF_CONSUMER_STATE)
            .store(STATE_CLOSED, Ordering::Release);
        let _ = wake::wake_always(&self.ring.space_wake());
    }
}
