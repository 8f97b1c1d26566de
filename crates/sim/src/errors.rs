//! `cuGetErrorName` / `cuGetErrorString`: the real driver's names and messages.

use std::ffi::CStr;

use crate::cu::CUresult;

/// (code, name, message) for every code the simulator can name.
static TABLE: &[(u32, &CStr, &CStr)] = &[
    (0, c"CUDA_SUCCESS", c"no error"),
    (1, c"CUDA_ERROR_INVALID_VALUE", c"invalid argument"),
    (2, c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory"),
    (3, c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error"),
    (4, c"CUDA_ERROR_DEINITIALIZED", c"driver shutting down"),
    (
        34,
        c"CUDA_ERROR_STUB_LIBRARY",
        c"CUDA driver is a stub library",
    ),
    (
        46,
        c"CUDA_ERROR_DEVICE_UNAVAILABLE",
        c"CUDA-capable device(s) is/are busy or unavailable",
    ),
    (
        100,
        c"CUDA_ERROR_NO_DEVICE",
        c"no CUDA-capable device is detected",
    ),
    (101, c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal"),
    (
        200,
        c"CUDA_ERROR_INVALID_IMAGE",
        c"device kernel image is invalid",
    ),
    (
        201,
        c"CUDA_ERROR_INVALID_CONTEXT",
        c"invalid device context",
    ),
    (
        209,
        c"CUDA_ERROR_NO_BINARY_FOR_GPU",
        c"no kernel image is available for execution on the device",
    ),
    (
        215,
        c"CUDA_ERROR_UNSUPPORTED_LIMIT",
        c"limit is not supported on this architecture",
    ),
    (
        218,
        c"CUDA_ERROR_INVALID_PTX",
        c"a PTX JIT compilation failed",
    ),
    (301, c"CUDA_ERROR_FILE_NOT_FOUND", c"file not found"),
    (
        400,
        c"CUDA_ERROR_INVALID_HANDLE",
        c"invalid resource handle",
    ),
    (500, c"CUDA_ERROR_NOT_FOUND", c"named symbol not found"),
    (600, c"CUDA_ERROR_NOT_READY", c"device not ready"),
    (
        700,
        c"CUDA_ERROR_ILLEGAL_ADDRESS",
        c"an illegal memory access was encountered",
    ),
    (
        701,
        c"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        c"too many resources requested for launch",
    ),
    (
        702,
        c"CUDA_ERROR_LAUNCH_TIMEOUT",
        c"the launch timed out and was terminated",
    ),
    (
        708,
        c"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
        c"cannot set while device is active in this process",
    ),
    (
        709,
        c"CUDA_ERROR_CONTEXT_IS_DESTROYED",
        c"context is destroyed",
    ),
    (710, c"CUDA_ERROR_ASSERT", c"device-side assert triggered"),
    (
        715,
        c"CUDA_ERROR_ILLEGAL_INSTRUCTION",
        c"an illegal instruction was encountered",
    ),
    (
        712,
        c"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        c"part or all of the requested memory range is already mapped",
    ),
    (
        713,
        c"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        c"pointer does not correspond to a registered memory region",
    ),
    (716, c"CUDA_ERROR_MISALIGNED_ADDRESS", c"misaligned address"),
    (
        719,
        c"CUDA_ERROR_LAUNCH_FAILED",
        c"unspecified launch failure",
    ),
    (
        720,
        c"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
        c"too many blocks in cooperative launch",
    ),
    (800, c"CUDA_ERROR_NOT_PERMITTED", c"operation not permitted"),
    (801, c"CUDA_ERROR_NOT_SUPPORTED", c"operation not supported"),
    (
        912,
        c"CUDA_ERROR_INVALID_CLUSTER_SIZE",
        c"a kernel launch error has occurred due to cluster misconfiguration",
    ),
    (999, c"CUDA_ERROR_UNKNOWN", c"unknown error"),
];

fn entry(code: CUresult) -> Option<&'static (u32, &'static CStr, &'static CStr)> {
    TABLE.iter().find(|(c, _, _)| *c == code.0)
}

/// The `CUDA_ERROR_*` name of `code`, if the simulator knows it.
pub(crate) fn name(code: CUresult) -> Option<&'static str> {
    entry(code).and_then(|(_, n, _)| n.to_str().ok())
}

/// The name of `code` as a static C string.
pub(crate) fn name_c(code: CUresult) -> Option<&'static CStr> {
    entry(code).map(|(_, n, _)| *n)
}

/// The real driver's message for `code` as a static C string.
pub(crate) fn string_c(code: CUresult) -> Option<&'static CStr> {
    entry(code).map(|(_, _, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_unique_and_names_match_values() {
        for (i, (code, _, _)) in TABLE.iter().enumerate() {
            assert!(TABLE[i + 1..].iter().all(|(c, _, _)| c != code));
        }
        assert_eq!(
            name(CUresult::CUDA_ERROR_INVALID_VALUE),
            Some("CUDA_ERROR_INVALID_VALUE")
        );
        assert_eq!(
            name(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            Some("CUDA_ERROR_ILLEGAL_ADDRESS")
        );
        assert_eq!(
            name(CUresult::CUDA_ERROR_NOT_READY),
            Some("CUDA_ERROR_NOT_READY")
        );
        assert_eq!(
            string_c(CUresult::CUDA_ERROR_INVALID_VALUE),
            Some(c"invalid argument")
        );
        assert_eq!(name(CUresult(12345)), None);
    }
}
