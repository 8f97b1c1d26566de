//! The simulator's error: the `CUresult` an entry point returns, with a reason for the log.

use std::borrow::Cow;

use crate::cu::CUresult;

/// An error on its way to becoming a `CUresult`, with a reason for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub code: CUresult,
    pub why: Cow<'static, str>,
}

pub(crate) type Res<T> = Result<T, Error>;

/// Fails with `code`, giving `why` as the reason logged under `VGPU_LOG`.
pub(crate) fn err<T>(code: CUresult, why: impl Into<Cow<'static, str>>) -> Res<T> {
    Err(Error {
        code,
        why: why.into(),
    })
}
