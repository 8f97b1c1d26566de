//! What the client knows about a session's objects, so that it can answer
//! locally: which ids are live contexts and on which device, each function's
//! parameter layout, and which device ranges exist (to route `cuMemcpy`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A live context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxInfo {
    pub device: i32,
    pub primary: bool,
}

/// A function's kernel parameters: (offset, size) each, from `cuFuncGetParamInfo`.
pub type ParamLayout = Arc<[(u32, u32)]>;

/// A loaded function.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub module: u64,
    pub params: ParamLayout,
}

#[derive(Debug, Default)]
pub struct Objects {
    pub contexts: HashMap<u64, CtxInfo>,
    pub functions: HashMap<u64, FunctionInfo>,
    /// (module, name) → function id, so repeated look-ups return one handle.
    pub function_names: HashMap<(u64, Vec<u8>), u64>,
    /// (kernel, context) → function id, for `cuKernelGetFunction`.
    pub kernel_functions: HashMap<(u64, u64), u64>,
    /// Device ranges this session handed out: base → size.
    pub device_ranges: BTreeMap<u64, u64>,
    /// Shared pinned host memory: client address → allocation.
    pub host: BTreeMap<u64, HostInfo>,
}

/// Pinned host memory shared with the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostInfo {
    pub len: u64,
    /// Where the worker mapped the same pages.
    pub worker: u64,
    /// The pages' device pointer.
    pub dptr: u64,
    pub flags: u32,
}

impl Objects {
    /// Whether `ptr` lies in a device range this session knows.
    pub fn is_device(&self, ptr: u64) -> bool {
        self.device_ranges
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&base, &size)| ptr - base < size)
    }

    /// The shared pinned allocation holding `[p, p + len)`: (its client base, info).
    pub fn host_range(&self, p: u64, len: u64) -> Option<(u64, HostInfo)> {
        let (&base, &info) = self.host.range(..=p).next_back()?;
        let end = p.checked_add(len)?;
        (end <= base + info.len).then_some((base, info))
    }

    /// Forgets a module's functions.
    pub fn forget_module(&mut self, module: u64) {
        self.functions.retain(|_, f| f.module != module);
        self.function_names.retain(|(m, _), _| *m != module);
        let functions = &self.functions;
        self.kernel_functions.retain(|(k, _), _| functions.contains_key(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges() {
        let mut o = Objects::default();
        o.device_ranges.insert(0x1000, 0x100);
        assert!(o.is_device(0x1000));
        assert!(o.is_device(0x10ff));
        assert!(!o.is_device(0x1100));
        assert!(!o.is_device(0xfff));
    }
}
