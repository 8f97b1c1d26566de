//! Sending a TCP lane's large replies while the lane runs its next request.
//!
//! A device-to-host copy over TCP comes as pieces, several requested at
//! once. Run and answered one after the other, the lane alternates between
//! the driver's copy of a piece into its buffer and the socket's send of
//! it. A sender thread of the lane's own sends a reply whose blob is at
//! least [`LARGE`] while the lane copies the next piece into a second
//! buffer, so such a copy moves at the speed of the slower of the two, not
//! of their sum.
//!
//! The sender holds at most one reply. The lane waits for it
//! ([`Sender::wait`]) before it sends anything else, a small reply inline
//! or the next large one, so replies keep their order; the reply's buffers
//! come back to the lane to be reused (`exec::Lane::recycle`). A reply that
//! cannot be sent ends the lane at that wait, as an inline send that fails
//! does.
//!
//! By default it runs where a lane reads ahead ([`super::readahead::wanted`]:
//! TCP lanes on hosts of at least 4 CPUs, `VGPU_LANE_READAHEAD`), for the
//! same reason: on two CPUs a third busy thread takes its time from the
//! others. `VGPU_LANE_SENDER=0` in the mediator's environment turns it
//! off, `=1` on for every socket lane ([`wanted`]).

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use vgpu_transport::{FrameLane, TransportError};

/// Whether a socket lane has a sender thread: `VGPU_LANE_SENDER`, else
/// `reads_ahead`, whether it has a reader thread (module documentation).
pub fn wanted(reads_ahead: bool) -> bool {
    match std::env::var("VGPU_LANE_SENDER").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => reads_ahead,
    }
}

/// Replies with a blob of at least this many bytes go to the sender.
pub const LARGE: usize = 1 << 20;

/// A reply's head and blob.
type Frame = (Vec<u8>, Vec<u8>);

/// A lane's sender thread: see the module documentation.
pub struct Sender {
    /// Replies to send; dropped to stop the thread.
    jobs: Option<SyncSender<Frame>>,
    /// The buffers of each sent reply, or why it was not sent.
    sent: Receiver<Result<Frame, TransportError>>,
    /// A reply was handed over and not yet waited for.
    busy: bool,
    thread: Option<JoinHandle<()>>,
}

impl Sender {
    /// Starts a sender on a second descriptor of `io`'s socket; `None` for
    /// a lane without one (rings, TLS) or a thread that cannot start.
    pub fn start(io: &FrameLane) -> Option<Sender> {
        let mut out = FrameLane::socket(io.try_clone_socket()?);
        let (jobs, todo) = mpsc::sync_channel::<Frame>(1);
        let (done, sent) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("lane-sender".into())
            .spawn(move || {
                for (head, blob) in todo {
                    // The lane reads its next request after this reply.
                    let r = out.send_then_read(&[&head, &blob], || true);
                    let failed = r.is_err();
                    if done.send(r.map(|()| (head, blob))).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| tracing::warn!("no sender thread for a lane ({e}); it sends in turn"))
            .ok()?;
        Some(Sender {
            jobs: Some(jobs),
            sent,
            busy: false,
            thread: Some(thread),
        })
    }

    /// Waits until the reply handed over last is sent, and gives back its
    /// buffers (`None` when none was handed over); an error when it could
    /// not be sent.
    pub fn wait(&mut self) -> Result<Option<Frame>, TransportError> {
        if !std::mem::take(&mut self.busy) {
            return Ok(None);
        }
        match self.sent.recv() {
            Ok(sent) => sent.map(Some),
            Err(_) => Err(TransportError::PeerGone),
        }
    }

    /// Hands over a reply to send; [`Sender::wait`] first.
    pub fn hand(&mut self, head: Vec<u8>, blob: Vec<u8>) -> Result<(), TransportError> {
        debug_assert!(!self.busy, "one reply at a time");
        let jobs = self.jobs.as_ref().ok_or(TransportError::PeerGone)?;
        jobs.send((head, blob))
            .map_err(|_| TransportError::PeerGone)?;
        self.busy = true;
        Ok(())
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        // The thread sends what it holds, then finds no more work.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use vgpu_transport::Channel;

    #[test]
    fn replies_go_out_in_order_and_their_buffers_come_back() {
        let (ours, mut theirs) = Channel::pair().expect("pair");
        let io = FrameLane::socket(ours);
        let mut sender = Sender::start(&io).expect("a socket lane");
        assert!(matches!(sender.wait(), Ok(None)), "nothing handed over yet");
        sender
            .hand(b"head1".to_vec(), vec![1u8; 3000])
            .expect("handed");
        let (head, blob) = sender.wait().expect("sent").expect("buffers back");
        assert_eq!((&head[..], blob.len()), (&b"head1"[..], 3000));
        sender
            .hand(b"head2".to_vec(), vec![2u8; 10])
            .expect("handed");
        drop(sender);
        let mut got = vec![0u8; 5 + 3000 + 5 + 10];
        theirs.read_exact(&mut got).expect("both replies");
        assert_eq!(&got[..5], b"head1");
        assert!(got[5..3005].iter().all(|&b| b == 1));
        assert_eq!(&got[3005..3010], b"head2");
        assert!(got[3010..].iter().all(|&b| b == 2));
    }

    #[test]
    fn a_reply_that_cannot_be_sent_is_an_error_at_the_wait() {
        let (ours, theirs) = Channel::pair().expect("pair");
        let io = FrameLane::socket(ours);
        let mut sender = Sender::start(&io).expect("a socket lane");
        drop(theirs);
        sender
            .hand(b"head".to_vec(), vec![0u8; 64])
            .expect("handed");
        assert!(sender.wait().is_err());
    }
}
