//! Reading a lane's replies: head, fixed part and bulk bytes, the bulk
//! bytes straight into the caller's buffer where one is given.

use std::io::Read;

use vgpu_proto::{read_response_head, ResponseHead};
use vgpu_transport::{FrameLane, Incoming, Split};

use super::LaneError;

/// Reads one reply: its head, fixed part and, unless `sink` took them,
/// its bulk bytes. On rings, a reply whose blob is exactly as long as
/// `sink` is copied from the ring straight into it.
pub(super) fn receive(
    io: &mut FrameLane,
    sink: Option<&mut [u8]>,
) -> Result<(ResponseHead, Vec<u8>, Vec<u8>), LaneError> {
    match sink {
        Some(dst) if !dst.is_empty() => {
            let want = dst.len();
            let fits = |head: &[u8]| {
                let mut rest = head;
                read_response_head(&mut rest)
                    .is_ok_and(|(h, _)| rest.is_empty() && h.blob_len() == want)
            };
            match io.recv_split(dst, fits, || true)? {
                Split::Split(head) => {
                    let (head, fixed) = read_response_head(&mut &head[..])?;
                    Ok((head, fixed, Vec::new()))
                }
                Split::Whole(frame) => from_frame(frame, Some(dst)),
                Split::Socket(ch) => read_socket(ch, Some(dst)),
            }
        }
        sink => match io.recv(|| true)? {
            Incoming::Buffered(frame) => from_frame(frame, sink),
            Incoming::Socket(ch) => read_socket(ch, sink),
        },
    }
}

/// A reply that came whole in one ring message.
fn from_frame(
    frame: &[u8],
    sink: Option<&mut [u8]>,
) -> Result<(ResponseHead, Vec<u8>, Vec<u8>), LaneError> {
    let mut rest = frame;
    let (head, fixed) = read_response_head(&mut rest)?;
    if rest.len() != head.blob_len() {
        return Err(LaneError::Broken("reply blob length differs from its head"));
    }
    let owned = take_blob(rest.len(), sink, |dst| {
        dst.copy_from_slice(rest);
        Ok(())
    })?;
    Ok((head, fixed, owned))
}

/// Reads one reply from a socket (through the lane's buffer, if it has
/// one).
fn read_socket(
    ch: &mut impl Read,
    sink: Option<&mut [u8]>,
) -> Result<(ResponseHead, Vec<u8>, Vec<u8>), LaneError> {
    let (head, fixed) = read_response_head(ch)?;
    let owned = take_blob(head.blob_len(), sink, |dst| ch.read_exact(dst))?;
    Ok((head, fixed, owned))
}

/// Fills `sink` (when it is exactly `len` long) or a new buffer through
/// `fill`; a sink of another length takes only an empty blob.
fn take_blob(
    len: usize,
    sink: Option<&mut [u8]>,
    fill: impl FnOnce(&mut [u8]) -> std::io::Result<()>,
) -> Result<Vec<u8>, LaneError> {
    match sink {
        Some(dst) if dst.len() == len => {
            fill(dst)?;
            Ok(Vec::new())
        }
        Some(_) if len != 0 => Err(LaneError::Broken("reply blob has an unexpected length")),
        _ => {
            let mut owned = vec![0u8; len];
            fill(&mut owned)?;
            Ok(owned)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_blobs_fill_the_sink_or_a_new_buffer() {
        let mut sink = [0u8; 4];
        assert!(take_blob(4, Some(&mut sink), |d| {
            d.copy_from_slice(b"abcd");
            Ok(())
        })
        .expect("fits")
        .is_empty());
        assert_eq!(&sink, b"abcd");
        assert!(take_blob(3, Some(&mut sink), |_| Ok(())).is_err());
        assert!(take_blob(0, Some(&mut sink), |_| Ok(()))
            .expect("an empty blob")
            .is_empty());
        assert_eq!(
            take_blob(2, None, |d| {
                d.copy_from_slice(b"xy");
                Ok(())
            })
            .expect("owned"),
            b"xy"
        );
    }
}
