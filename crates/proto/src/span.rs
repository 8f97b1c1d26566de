//! The bytes a device range of a table call spans (`range(..)` and
//! `pitched(..)` notes of the remoting table), computed alike by the client,
//! which checks a range before posting the call, and by the worker, which
//! checks it against the session's live allocations.

/// The product of a range's factors; `None` on overflow.
pub fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f))
}

/// The bytes `height` rows of `width` bytes at `pitch` span, from the first
/// row's start to the last row's end (0 for an empty region); `None` on
/// overflow.
pub fn pitched(pitch: u64, width: u64, height: u64) -> Option<u64> {
    if width == 0 || height == 0 {
        return Some(0);
    }
    pitch.checked_mul(height - 1)?.checked_add(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(product(&[2, 3]), Some(6));
        assert_eq!(product(&[]), Some(1));
        assert_eq!(product(&[u64::MAX, 2]), None);
        assert_eq!(pitched(64, 16, 4), Some(3 * 64 + 16));
        assert_eq!(pitched(64, 16, 0), Some(0));
        assert_eq!(pitched(64, 0, 4), Some(0));
        assert_eq!(pitched(u64::MAX, 1, 3), None);
    }
}
