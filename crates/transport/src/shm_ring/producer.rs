//! The producing end of a ring: appends messages (module docs of
//! [`super`]: records, publish order, wake-ups).

use std::cell::Cell;
use std::sync::atomic::Ordering;

use super::{
    record_len, tag, Ring, WaitPolicy, OFF_CONSUMER_STATE, OFF_PRODUCER_STATE, RECORD_HEADER,
    STATE_CLOSED,
};
use crate::wake;
use crate::TransportError;

/// The producing end of a ring. `Send`, not `Sync`: one thread at a time.
#[derive(Debug)]
pub struct Producer {
    pub(super) ring: Ring,
    /// Our index; the shared copy is only written.
    pub(super) tail: Cell<u64>,
    /// Last `head` read from the peer (checked), to skip re-reading its line.
    pub(super) head_cache: Cell<u64>,
}

impl Producer {
    /// Bytes in the data area.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Largest message: `capacity - 16`.
    pub fn max_message(&self) -> usize {
        self.ring.max_message()
    }

    /// Whether the consumer has closed its end.
    pub fn peer_closed(&self) -> bool {
        self.ring.state(OFF_CONSUMER_STATE) == STATE_CLOSED
    }

    /// Appends one message, the concatenation of `parts`. `Ok(false)`: not
    /// enough free space now. Errors: [`TransportError::TooLarge`] (callers
    /// chunk), [`TransportError::PeerGone`], [`TransportError::Corrupt`].
    pub fn try_push(&self, parts: &[&[u8]]) -> Result<bool, TransportError> {
        let max = self.ring.max_message();
        let len = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
        if len > max {
            return Err(TransportError::TooLarge { len, max });
        }
        if self.peer_closed() {
            return Err(TransportError::PeerGone);
        }
        let cap = self.ring.cap();
        let need = record_len(len as u64);
        let tail = self.tail.get();
        if cap - tail.wrapping_sub(self.head_cache.get()) < need {
            let head = self.ring.head().load(Ordering::Acquire);
            let used = tail.wrapping_sub(head);
            if used > cap {
                return Err(TransportError::Corrupt("head index out of range"));
            }
            self.head_cache.set(head);
            if cap - used < need {
                return Ok(false);
            }
        }
        let mut pos = tail.wrapping_add(RECORD_HEADER as u64);
        for part in parts {
            self.ring.write_data(pos, part)?;
            pos = pos.wrapping_add(part.len() as u64);
        }
        self.ring
            .record_word(tail.wrapping_add(8))?
            .store(len as u64, Ordering::Relaxed);
        self.ring
            .record_word(tail)?
            .store(tag(tail), Ordering::Release);
        let new_tail = tail.wrapping_add(need);
        self.tail.set(new_tail);
        self.ring.tail().store(new_tail, Ordering::Release);
        wake::notify(&self.ring.data_wake())?;
        Ok(true)
    }

    /// Appends one message, waiting for space as `wait` says.
    pub fn push(&self, parts: &[&[u8]], wait: &WaitPolicy) -> Result<(), TransportError> {
        if self.try_push(parts)? {
            return Ok(());
        }
        wake::wait_for(&self.ring.space_wake(), wait, || {
            Ok(self.try_push(parts)?.then_some(()))
        })
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.ring
            .map
            .u32_at(OFF_PRODUCER_STATE)
            .store(STATE_CLOSED, Ordering::Release);
        let _ = wake::wake_always(&self.ring.data_wake());
    }
}
