//! Modules in the simulator's text format (see the crate header), functions, texture and
//! surface references, and `cuLaunchKernel`.

use std::collections::HashMap;
use std::ffi::c_void;

use crate::context;
use crate::cu::{CUdeviceptr, CUmoduleLoadingMode, CUresult};
use crate::kernels::Kernel;
use crate::memory;
use crate::state::{err, Res, State};
use crate::stream;

/// The first line of every simulator module.
pub(crate) const MAGIC: &str = "VGPU-SIM-MODULE 1";
/// Longest image accepted, NUL excluded.
pub(crate) const MAX_IMAGE: usize = 1 << 20;
/// Largest module global.
const MAX_GLOBAL: usize = 1 << 30;

/// A loaded module.
#[derive(Debug)]
pub(crate) struct Module {
    pub ctx: usize,
    kernels: Vec<String>,
    /// name -> (device address, size); allocations owned by `ctx`, freed at unload.
    globals: HashMap<String, (CUdeviceptr, usize)>,
    /// Function handles already handed out, by kernel name.
    functions: HashMap<String, usize>,
    /// Texture and surface reference handles, by name, minted at load.
    texrefs: HashMap<String, usize>,
    surfrefs: HashMap<String, usize>,
}

/// A function handle's target.
#[derive(Debug)]
pub(crate) struct Function {
    pub module: usize,
    pub kernel: Kernel,
    /// `cuFuncIsLoaded`: set at creation under eager loading, else by `cuFuncLoad` or the
    /// first launch.
    pub loaded: bool,
}

/// A parsed image: kernel names, (global name, size), texture and surface reference
/// names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Image {
    pub kernels: Vec<String>,
    pub globals: Vec<(String, usize)>,
    pub texrefs: Vec<String>,
    pub surfrefs: Vec<String>,
}

/// How many of the declared `kernels` the simulator can run: the ones a real image would
/// contain (any other name behaves as a kernel missing from the image).
pub(crate) fn runnable(kernels: &[String]) -> u32 {
    let n = kernels
        .iter()
        .filter(|k| Kernel::by_name(k).is_some())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn valid_name(s: &str) -> bool {
    (1..=255).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses a module image (without its NUL).
pub(crate) fn parse(text: &[u8]) -> Result<Image, String> {
    let text = std::str::from_utf8(text).map_err(|_| "image is not UTF-8 text".to_string())?;
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some(MAGIC) {
        return Err(format!("image does not start with {MAGIC:?}"));
    }
    let mut image = Image::default();
    for (no, line) in lines.enumerate().map(|(i, l)| (i + 2, l.trim())) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["kernel", name] if valid_name(name) => {
                if image.kernels.iter().any(|k| k == name) {
                    return Err(format!("line {no}: kernel {name} declared twice"));
                }
                image.kernels.push((*name).to_string());
            }
            ["global", name, size] if valid_name(name) => {
                let size: usize = size
                    .parse()
                    .ok()
                    .filter(|s| (1..=MAX_GLOBAL).contains(s))
                    .ok_or_else(|| format!("line {no}: global size must be 1..={MAX_GLOBAL}"))?;
                if image.globals.iter().any(|(g, _)| g == name) {
                    return Err(format!("line {no}: global {name} declared twice"));
                }
                image.globals.push(((*name).to_string(), size));
            }
            [kind @ ("texref" | "surfref"), name] if valid_name(name) => {
                let list = if *kind == "texref" {
                    &mut image.texrefs
                } else {
                    &mut image.surfrefs
                };
                if list.iter().any(|t| t == name) {
                    return Err(format!("line {no}: {kind} {name} declared twice"));
                }
                list.push((*name).to_string());
            }
            _ => return Err(format!("line {no}: cannot parse {line:?}")),
        }
    }
    Ok(image)
}

/// Reads a NUL-terminated image, stopping at the first byte that rules it out, so a
/// short binary image (cubin, fatbin) is never over-read.
///
/// # Safety
/// `image` must be non-NULL and readable up to its NUL terminator or up to the first
/// byte that differs from [`MAGIC`], whichever comes first.
pub(crate) unsafe fn read_image(image: *const u8) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    loop {
        // SAFETY: we read no further than the contract allows: we stop at NUL, at the first
        // mismatch with MAGIC, and after MAX_IMAGE bytes.
        let b = unsafe { image.add(bytes.len()).read() };
        if b == 0 {
            return Ok(bytes);
        }
        if bytes.len() < MAGIC.len() && MAGIC.as_bytes()[bytes.len()] != b {
            return Err(format!(
                "not a vgpu-sim module (PTX, cubin and fatbin images need a GPU); expected {MAGIC:?}"
            ));
        }
        if bytes.len() == MAX_IMAGE {
            return Err(format!("image longer than {MAX_IMAGE} bytes"));
        }
        bytes.push(b);
    }
}

/// `cuModuleLoadData`: loads a parsed image into the current context.
pub(crate) fn load(st: &mut State, budget: u64, image: &Image) -> Res<usize> {
    let ctx = context::current_usable(st)?;
    let mut globals = HashMap::new();
    for (name, size) in &image.globals {
        match memory::alloc(st, budget, ctx, *size) {
            Ok(p) => {
                globals.insert(name.clone(), (p, *size));
            }
            Err(e) => {
                for (p, _) in globals.values() {
                    let _ = memory::free(st, *p);
                }
                return Err(e);
            }
        }
    }
    let mut refs = |names: &[String]| -> HashMap<String, usize> {
        names.iter().map(|n| (n.clone(), st.mint())).collect()
    };
    let (texrefs, surfrefs) = (refs(&image.texrefs), refs(&image.surfrefs));
    let key = st.mint();
    st.modules.insert(
        key,
        Module {
            ctx,
            kernels: image.kernels.clone(),
            globals,
            functions: HashMap::new(),
            texrefs,
            surfrefs,
        },
    );
    Ok(key)
}

fn module(st: &State, key: usize) -> Res<&Module> {
    match st.modules.get(&key) {
        Some(m) => Ok(m),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("module {key:#x} does not exist"),
        ),
    }
}

/// `cuModuleUnload`: frees the module's globals and invalidates its functions.
pub(crate) fn unload(st: &mut State, key: usize) -> Res<()> {
    module(st, key)?;
    if let Some(m) = st.modules.remove(&key) {
        for (p, _) in m.globals.values() {
            let _ = memory::free(st, *p);
        }
        st.functions.retain(|_, f| f.module != key);
    }
    Ok(())
}

/// `cuModuleGetFunction`: the same handle for the same name.
pub(crate) fn get_function(st: &mut State, key: usize, name: &str) -> Res<usize> {
    let m = module(st, key)?;
    if let Some(&f) = m.functions.get(name) {
        return Ok(f);
    }
    if !m.kernels.iter().any(|k| k == name) {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no kernel {name:?}"),
        );
    }
    let Some(kernel) = Kernel::by_name(name) else {
        return err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("kernel {name:?} is not a built-in of the simulator"),
        );
    };
    let f = st.mint();
    let loaded = crate::loading::mode() == CUmoduleLoadingMode::CU_MODULE_EAGER_LOADING;
    st.functions.insert(
        f,
        Function {
            module: key,
            kernel,
            loaded,
        },
    );
    if let Some(m) = st.modules.get_mut(&key) {
        m.functions.insert(name.to_string(), f);
    }
    Ok(f)
}

/// `cuModuleGetGlobal_v2`: (address, size).
pub(crate) fn get_global(st: &State, key: usize, name: &str) -> Res<(CUdeviceptr, usize)> {
    match module(st, key)?.globals.get(name) {
        Some(&g) => Ok(g),
        None => err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no global {name:?}"),
        ),
    }
}

/// `cuModuleGetFunctionCount`: the module's kernels that the simulator can run.
pub(crate) fn function_count(st: &State, key: usize) -> Res<u32> {
    Ok(runnable(&module(st, key)?.kernels))
}

/// `cuModuleGetTexRef` / `cuModuleGetSurfRef`: the handle of a reference the image
/// declared with `texref`/`surfref` (`surface` selects which); the same handle every
/// time, invalid once the module is unloaded.
pub(crate) fn get_ref(st: &State, key: usize, name: &str, surface: bool) -> Res<usize> {
    let m = module(st, key)?;
    let (refs, kind) = if surface {
        (&m.surfrefs, "surface")
    } else {
        (&m.texrefs, "texture")
    };
    match refs.get(name) {
        Some(&h) => Ok(h),
        None => err(
            CUresult::CUDA_ERROR_NOT_FOUND,
            format!("module has no {kind} reference {name:?}"),
        ),
    }
}

/// `cuFuncGetModule`: the module a function belongs to.
pub(crate) fn module_of(st: &State, func: usize) -> Res<usize> {
    Ok(function(st, func)?.module)
}

/// `cuFuncLoad`: loads the function (a no-op once loaded).
pub(crate) fn load_function(st: &mut State, func: usize) -> Res<()> {
    function(st, func)?;
    if let Some(f) = st.functions.get_mut(&func) {
        f.loaded = true;
    }
    Ok(())
}

/// Looks up a function handle.
pub(crate) fn function(st: &State, key: usize) -> Res<&Function> {
    match st.functions.get(&key) {
        Some(f) => Ok(f),
        None => err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            format!("function {key:#x} does not exist"),
        ),
    }
}

/// `cuFuncGetParamInfo`.
pub(crate) fn param_info(st: &State, key: usize, index: usize) -> Res<(usize, usize)> {
    let k = match st.ext.libraries.kernel(key) {
        Some(k) => k.kernel,
        None => function(st, key)?.kernel,
    };
    match k.param_info(index) {
        Some(info) => Ok(info),
        None => err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{} has no parameter {index}", k.name()),
        ),
    }
}

/// Launch geometry and resources of one `cuLaunchKernel`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

impl Launch {
    /// Checks the geometry against the simulated device's limits and the function's
    /// dynamic shared memory limit (`max_shared`); returns the total number of threads.
    pub(crate) fn threads(&self, max_shared: u32) -> Res<u128> {
        let [gx, gy, gz] = self.grid;
        let [bx, by, bz] = self.block;
        let bad = |why: String| err(CUresult::CUDA_ERROR_INVALID_VALUE, why);
        if self.grid.contains(&0) || self.block.contains(&0) {
            return bad(format!(
                "zero dimension in grid {:?} / block {:?}",
                self.grid, self.block
            ));
        }
        if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
            return bad(format!(
                "grid {:?} exceeds (2^31-1, 65535, 65535)",
                self.grid
            ));
        }
        let per_block = u64::from(bx) * u64::from(by) * u64::from(bz);
        if bx > 1024 || by > 1024 || bz > 64 || per_block > 1024 {
            return bad(format!(
                "block {:?} exceeds 1024 threads or (1024, 1024, 64)",
                self.block
            ));
        }
        if self.shared_bytes > max_shared {
            return bad(format!(
                "{} bytes of dynamic shared memory requested; the function allows {max_shared}",
                self.shared_bytes
            ));
        }
        let blocks = u128::from(gx) * u128::from(gy) * u128::from(gz);
        Ok(blocks * u128::from(per_block))
    }
}

/// `cuLaunchKernel`: runs the kernel now. A memory fault does not fail the launch; it
/// becomes the context's sticky error, as an asynchronous fault on a GPU does.
///
/// # Safety
/// `params` must satisfy the `kernelParams` contract of `cuLaunchKernel` for the kernel.
pub(crate) unsafe fn launch(
    st: &mut State,
    func: usize,
    geometry: Launch,
    stream_key: usize,
    params: *const *const c_void,
) -> Res<()> {
    let func = crate::library::resolve(st, func)?;
    let f = function(st, func)?;
    let kernel = f.kernel;
    let fctx = module(st, f.module)?.ctx;
    let ctx = stream::usable(st, stream_key)?;
    if fctx != ctx {
        return err(
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            "function belongs to a module of another context",
        );
    }
    let (_, attrs) = crate::funcattr::for_launch(st, func)?;
    let threads = geometry.threads(attrs.max_dynamic_shared.unsigned_abs())?;
    if let Some(f) = st.functions.get_mut(&func) {
        f.loaded = true;
    }
    // SAFETY: forwarded contract.
    let outcome = unsafe { kernel.launch(st, params, threads) }?;
    if let Err(fault) = outcome {
        if crate::state::log_enabled() {
            eprintln!("vgpu-sim: {} faulted: {}", kernel.name(), fault.why);
        }
        context::live_mut(st, ctx)?.sticky = Some(fault.code);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_format() {
        let img = parse(b"VGPU-SIM-MODULE 1\n# c\n\nkernel vector_add\nglobal counter 4\n")
            .expect("valid image");
        assert_eq!(img.kernels, ["vector_add"]);
        assert_eq!(img.globals, [("counter".to_string(), 4)]);
        let img = parse(b"VGPU-SIM-MODULE 1\ntexref tex\nsurfref tex\nsurfref surf\n")
            .expect("valid image");
        assert_eq!(img.texrefs, ["tex"]);
        assert_eq!(img.surfrefs, ["tex", "surf"]);
    }

    #[test]
    fn rejects_bad_images() {
        for bad in [
            &b"VGPU-SIM-MODULE 2\n"[..],
            b"kernel x\n",
            b"VGPU-SIM-MODULE 1\nkernel\n",
            b"VGPU-SIM-MODULE 1\nkernel a b\n",
            b"VGPU-SIM-MODULE 1\nglobal g 0\n",
            b"VGPU-SIM-MODULE 1\nglobal g x\n",
            b"VGPU-SIM-MODULE 1\nkernel a\nkernel a\n",
            b"VGPU-SIM-MODULE 1\nkernel a-b\n",
            b"VGPU-SIM-MODULE 1\nlaunch a\n",
            b"VGPU-SIM-MODULE 1\ntexref t\ntexref t\n",
            b"VGPU-SIM-MODULE 1\nsurfref\n",
            b"VGPU-SIM-MODULE 1\ntexref a b\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn read_image_stops_at_nul_and_at_mismatch() {
        let ok = b"VGPU-SIM-MODULE 1\nkernel saxpy\n\0trailing";
        // SAFETY: NUL-terminated buffer.
        let bytes = unsafe { read_image(ok.as_ptr()) }.expect("reads");
        assert_eq!(bytes, &ok[..ok.len() - 9]);
        // An ELF header: rejected at its first byte, nothing past it is read.
        let elf = [0x7fu8];
        // SAFETY: the first byte mismatches, so only one byte is read.
        assert!(unsafe { read_image(elf.as_ptr()) }.is_err());
    }
}
