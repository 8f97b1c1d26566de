//! `cuGetProcAddress` as the real driver answers it, computed from the function table.
//!
//! The caller (the client's `cuGetProcAddress`/`cuGetProcAddress_v2` export) is
//! responsible for the checks that do not depend on the symbol:
//! * a NULL `symbol` or `pfn` gives `CUDA_ERROR_INVALID_VALUE`;
//! * a requested `version` above the driver's own version (`cuDriverGetVersion`) gives
//!   `CUDA_ERROR_INVALID_VALUE`;
//! * flags other than the `CU_GET_PROC_ADDRESS_*` bits give `CUDA_ERROR_INVALID_VALUE`;
//! * mapping [`ProcResolution`] to `CUresult` and `CUdriverProcAddressQueryResult`
//!   (`CU_GET_PROC_ADDRESS_SUCCESS`, `_SYMBOL_NOT_FOUND`, `_VERSION_NOT_SUFFICIENT`).

use crate::table::{FnDesc, PerThread};
use crate::types::CUdriverProcAddress_flags;
use crate::FUNCTIONS;

/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` as a flag bit.
const PER_THREAD_FLAG: u64 =
    CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.0 as u64;

/// The driver's answer to one `cuGetProcAddress(symbol, version, flags)` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcResolution {
    /// The export that the driver hands out.
    Found(&'static FnDesc),
    /// No API of that name (also for exports that have no `PFN_` typedef, such as the
    /// `cudbg*` debugger symbols, and for suffixed export names like `cuMemAlloc_v2`:
    /// the driver is asked for API names, not export names).
    SymbolNotFound,
    /// The API exists, but only in versions newer than the one requested.
    VersionNotSufficient,
}

/// Looks an export up by its exact symbol name.
pub fn find(name: &str) -> Option<&'static FnDesc> {
    FUNCTIONS
        .binary_search_by(|f| f.name.cmp(name))
        .ok()
        .and_then(|i| FUNCTIONS.get(i))
}

/// The table entries whose names start with `prefix` (a contiguous run: the table is
/// sorted by name).
fn with_prefix(prefix: &str) -> impl Iterator<Item = &'static FnDesc> + '_ {
    let start = FUNCTIONS.partition_point(|f| f.name < prefix);
    FUNCTIONS[start..]
        .iter()
        .take_while(move |f| f.name.starts_with(prefix))
}

/// Resolves `symbol` (an API name such as `cuMemcpyHtoD`) at ABI `version` (e.g.
/// 12000) with `cuGetProcAddress` `flags`:
/// * the variant is the default-stream export with the highest ABI version ≤ `version`;
/// * with `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` (2) set, its `_ptds`/`_ptsz`
///   export is returned instead when one exists with ABI version ≤ `version`;
/// * `CU_GET_PROC_ADDRESS_DEFAULT` (0) and `CU_GET_PROC_ADDRESS_LEGACY_STREAM` (1) both
///   give the legacy-stream export: the driver's default is the legacy stream unless
///   the caller asks for per-thread streams.
pub fn resolve(symbol: &str, version: i32, flags: u64) -> ProcResolution {
    let mut exists = false;
    let mut best: Option<&'static FnDesc> = None;
    for f in with_prefix(symbol) {
        if f.base != symbol || !f.signature_known || f.per_thread != PerThread::None {
            continue;
        }
        exists = true;
        if i64::from(f.version) <= i64::from(version) && best.is_none_or(|b| f.version > b.version)
        {
            best = Some(f);
        }
    }
    let Some(best) = best else {
        return if exists {
            ProcResolution::VersionNotSufficient
        } else {
            ProcResolution::SymbolNotFound
        };
    };
    if flags & PER_THREAD_FLAG != 0 {
        let per_thread = with_prefix(best.name).find(|f| {
            matches!(f.name.strip_prefix(best.name), Some("_ptds" | "_ptsz"))
                && i64::from(f.version) <= i64::from(version)
        });
        if let Some(f) = per_thread {
            return ProcResolution::Found(f);
        }
        // An API that has per-thread variants is not handed out below the
        // first of them when per-thread semantics are asked for (checked
        // against the real driver 580 for every version boundary).
        let has_per_thread = with_prefix(symbol)
            .any(|f| f.base == symbol && f.signature_known && f.per_thread != PerThread::None);
        if has_per_thread {
            return ProcResolution::VersionNotSufficient;
        }
    }
    ProcResolution::Found(best)
}
