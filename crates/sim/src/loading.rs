//! `cuModuleGetLoadingMode`: `CUDA_MODULE_LOADING`, read once on first use. `EAGER` and
//! `LAZY` select the mode; unset means `LAZY`, the driver's default since CUDA 12.2, and
//! any other value is reported on stderr and replaced by the default.

use std::sync::OnceLock;

use crate::cu::CUmoduleLoadingMode;

/// The variable the driver reads.
pub(crate) const VARIABLE: &str = "CUDA_MODULE_LOADING";

/// The mode a value of [`VARIABLE`] selects.
pub(crate) fn parse(value: Option<&str>) -> CUmoduleLoadingMode {
    match value.map(str::trim) {
        Some("EAGER") => CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING,
        None | Some("LAZY") => CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING,
        Some(other) => {
            eprintln!("vgpu-sim: ignoring {VARIABLE}={other:?} (want EAGER or LAZY); using LAZY");
            CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING
        }
    }
}

/// The process's loading mode.
pub(crate) fn mode() -> CUmoduleLoadingMode {
    static MODE: OnceLock<CUmoduleLoadingMode> = OnceLock::new();
    *MODE.get_or_init(|| parse(std::env::var(VARIABLE).ok().as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let (eager, lazy) = (
            CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING,
            CUmoduleLoadingMode::CU_MODULE_LAZY_LOADING,
        );
        assert_eq!(parse(None), lazy);
        assert_eq!(parse(Some("LAZY")), lazy);
        assert_eq!(parse(Some("EAGER")), eager);
        assert_eq!(parse(Some(" EAGER\n")), eager);
        assert_eq!(parse(Some("sometimes")), lazy);
    }
}
