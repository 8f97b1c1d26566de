//! Tickets of posted requests and what each must follow in the worker
//! (`docs/adr/0004-async-errors.md`, "Order across threads";
//! `crates/mediator/src/worker/order.rs` is the other side).

use rustc_hash::FxHashMap as HashMap;

use vgpu_proto::flags;

/// What a posted request must follow in the worker (`RequestHead::order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follows {
    /// Work on this stream (wire id): the stream's previous posted request
    /// and the last [`Follows::Everything`] request. On the legacy default
    /// stream, which synchronizes with the others, it is
    /// [`Follows::Everything`].
    Stream(u64),
    /// Every earlier posted request; later work on this stream follows it.
    /// For requests that look at other streams' work: an event record or a
    /// stream's wait for an event.
    AllThenStream(u64),
    /// Every earlier posted request, and every later one follows it:
    /// creating and destroying streams and events.
    Everything,
}

/// Issues tickets and remembers what later requests must follow.
#[derive(Debug, Default)]
pub(super) struct Tickets {
    /// The next ticket.
    pub(super) next: u32,
    /// The last [`Follows::Everything`] request.
    barrier: Option<u32>,
    /// Each stream's last posted request since the barrier (the barrier
    /// clears it: every later request follows the barrier anyway).
    streams: HashMap<u64, u32>,
}

/// A ticket, the flags that say what it follows, and the followed ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Issued {
    pub(super) ticket: u32,
    pub(super) flags: u32,
    pub(super) after: u32,
}

/// A followed ticket further back than this is not named: the request
/// follows everything instead, so wrap-around comparison stays exact.
const FAR_BACK: u32 = 1 << 30;

impl Tickets {
    pub(super) fn issue(&mut self, follows: Follows) -> Issued {
        let ticket = self.next;
        self.next = ticket.wrapping_add(1);
        let all = Issued {
            ticket,
            flags: flags::POSTED | flags::AFTER_ALL,
            after: 0,
        };
        let follows = match follows {
            Follows::Stream(s) | Follows::AllThenStream(s) if is_legacy(s) => Follows::Everything,
            other => other,
        };
        match follows {
            Follows::Everything => {
                self.barrier = Some(ticket);
                self.streams.clear();
                all
            }
            Follows::AllThenStream(s) => {
                if s != PER_THREAD_STREAM {
                    self.streams.insert(s, ticket);
                }
                all
            }
            Follows::Stream(s) => {
                // The per-thread stream is one thread's: its lane orders it.
                let before = if s == PER_THREAD_STREAM {
                    self.barrier
                } else {
                    self.streams.insert(s, ticket).or(self.barrier)
                };
                match before {
                    None => Issued {
                        ticket,
                        flags: flags::POSTED,
                        after: 0,
                    },
                    Some(t) if ticket.wrapping_sub(t) < FAR_BACK => Issued {
                        ticket,
                        flags: flags::POSTED | flags::AFTER,
                        after: t,
                    },
                    Some(_) => all,
                }
            }
        }
    }
}

/// The legacy default stream's wire ids (NULL and `CU_STREAM_LEGACY`).
fn is_legacy(stream: u64) -> bool {
    stream <= 1
}

/// `CU_STREAM_PER_THREAD`: the calling thread's default stream.
pub const PER_THREAD_STREAM: u64 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posted_requests_follow_their_stream_or_everything() {
        let mut t = Tickets::default();
        let issue = |t: &mut Tickets, f| {
            let i = t.issue(f);
            (i.ticket, i.flags & !flags::POSTED, i.after)
        };
        const AFTER: u32 = flags::AFTER;
        const ALL: u32 = flags::AFTER_ALL;
        // First work on two streams follows nothing; then each its own stream.
        assert_eq!(issue(&mut t, Follows::Stream(0x10)), (0, 0, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x20)), (1, 0, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x10)), (2, AFTER, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x20)), (3, AFTER, 1));
        // The per-thread stream is ordered by its lane alone.
        assert_eq!(issue(&mut t, Follows::Stream(PER_THREAD_STREAM)), (4, 0, 0));
        // An event record follows everything; its stream's work follows it.
        assert_eq!(issue(&mut t, Follows::AllThenStream(0x20)), (5, ALL, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x20)), (6, AFTER, 5));
        // The legacy stream and creation are barriers that all later work
        // follows.
        assert_eq!(issue(&mut t, Follows::Stream(0)), (7, ALL, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x10)), (8, AFTER, 7));
        assert_eq!(
            issue(&mut t, Follows::Stream(PER_THREAD_STREAM)),
            (9, AFTER, 7)
        );
        assert_eq!(issue(&mut t, Follows::Everything), (10, ALL, 0));
        assert_eq!(issue(&mut t, Follows::Stream(0x10)), (11, AFTER, 10));
        assert_eq!(issue(&mut t, Follows::AllThenStream(1)), (12, ALL, 0));
        assert_eq!(t.barrier, Some(12), "CU_STREAM_LEGACY is the legacy stream");
        // A followed ticket too far back is not named.
        t.next = 12 + FAR_BACK;
        assert_eq!(issue(&mut t, Follows::Stream(0x30)).1, ALL);
    }
}
