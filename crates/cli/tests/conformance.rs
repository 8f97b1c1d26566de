//! Conformance of every table call, end to end: one test per call
//! (`conformance/generated.rs`, written by `cargo xtask gen-calls`, so adding
//! a table line adds its test).
//!
//! Each test starts a real mediator whose workers load the recording test
//! driver (`crates/recorder`), re-runs itself as a client child, makes one
//! of each fixture object through `libvgpu-cuda.so` (a context, stream,
//! event, allocation, module, function, library, kernel, memory pool, array
//! and mipmapped array), and calls the entry point with known values. The recorder's export checks that every
//! argument arrived as passed, handles translated to its own, and writes
//! known values into every output; the test then checks that they came back
//! (handles as the test's own ids, or worker-minted ids for kinds the test
//! never made). A mismatch fails the call with `CUDA_ERROR_ASSERT` and a
//! line in the recorder's log, which the failure message shows.

mod common;
#[path = "conformance/generated.rs"]
mod generated;

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::mem::MaybeUninit;
use std::path::Path;

use common::{Build, Harness, Mediator};
use vgpu_abi::types::CUresult;
use vgpu_abi::HandleKind;

/// Where the recorder writes its mismatch lines (set for the mediator).
const LOG_ENV: &str = "VGPU_RECORDER_LOG";

/// Runs `body` as the client child of test `name`, against a mediator on
/// the recording driver.
fn case(name: &str, body: impl FnOnce(&Fixture)) {
    if common::is_child() {
        let f = Fixture::make();
        body(&f);
        f.flush(name);
        return;
    }
    let mut h = Harness::without_mediator();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = dir.path().join("recorder.log");
    let log_text = log.to_string_lossy().into_owned();
    h.mediator = Some(Mediator::start_driver(
        &h.build,
        &h.build.recorder,
        &[(LOG_ENV, &log_text)],
    ));
    let out = h.run(h.self_test(name));
    if !out.status.success() {
        panic!(
            "{name} failed in the client:\n{}{}\nthe recorder says:\n{}\nthe mediator's log:\n{}",
            out.stdout,
            out.stderr,
            std::fs::read_to_string(&log).unwrap_or_default(),
            h.mediator().log_text()
        );
    }
}

/// The client library, loaded in the child, and the objects every test
/// may pass: each the test's own handle (the client's id).
pub struct Fixture {
    lib: *mut c_void,
    pub ctx: u64,
    pub stream: u64,
    pub event: u64,
    pub module: u64,
    pub function: u64,
    pub library: u64,
    pub kernel: u64,
    pub pool: u64,
    pub array: u64,
    pub mipmap: u64,
    pub dptr: u64,
}

impl Fixture {
    /// Begins a stream capture on the fixture stream with
    /// `cuStreamBeginCapture` (whose recorded form checks only the stream),
    /// for a call the client answers itself while no capture is open (the
    /// table's `capture` option).
    pub fn begin_capture(&self) {
        let begin: unsafe extern "C" fn(*mut c_void) -> CUresult = self.sym("cuStreamBeginCapture");
        // SAFETY: the ABI table's prototype; the fixture's live stream.
        self.ok("cuStreamBeginCapture", unsafe {
            begin(self.stream as *mut c_void)
        });
    }

    /// Loads `libvgpu-cuda.so` and makes one object of each kind.
    fn make() -> Fixture {
        let build: Build = common::build();
        let lib = load(&build.client);
        let mut f = Fixture {
            lib,
            ctx: 0,
            stream: 0,
            event: 0,
            module: 0,
            function: 0,
            library: 0,
            kernel: 0,
            pool: 0,
            array: 0,
            mipmap: 0,
            dptr: 0,
        };
        let init: unsafe extern "C" fn(c_uint) -> CUresult = f.sym("cuInit");
        // SAFETY: the prototypes are the ABI table's; every out-pointer is a
        // live local and every string NUL-terminated.
        unsafe {
            f.ok("cuInit", init(0));
            let ctx_create: unsafe extern "C" fn(*mut *mut c_void, c_uint, c_int) -> CUresult =
                f.sym("cuCtxCreate_v2");
            let mut h: *mut c_void = std::ptr::null_mut();
            f.ok("cuCtxCreate_v2", ctx_create(&mut h, 0, 0));
            f.ctx = h as u64;
            let stream_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CUresult =
                f.sym("cuStreamCreate");
            f.ok("cuStreamCreate", stream_create(&mut h, 0));
            f.stream = h as u64;
            let event_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CUresult =
                f.sym("cuEventCreate");
            f.ok("cuEventCreate", event_create(&mut h, 0));
            f.event = h as u64;
            let alloc: unsafe extern "C" fn(*mut u64, usize) -> CUresult = f.sym("cuMemAlloc_v2");
            let mut dptr = 0;
            f.ok("cuMemAlloc_v2", alloc(&mut dptr, 1 << 20));
            f.dptr = dptr;
            let image = c".version 8.0\n.target sm_90\n.address_size 64\n";
            let load: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CUresult =
                f.sym("cuModuleLoadData");
            f.ok("cuModuleLoadData", load(&mut h, image.as_ptr().cast()));
            f.module = h as u64;
            let get_function: unsafe extern "C" fn(
                *mut *mut c_void,
                *mut c_void,
                *const c_char,
            ) -> CUresult = f.sym("cuModuleGetFunction");
            f.ok(
                "cuModuleGetFunction",
                get_function(&mut h, f.module as *mut c_void, c"f".as_ptr()),
            );
            f.function = h as u64;
            let load_library: unsafe extern "C" fn(
                *mut *mut c_void,
                *const c_void,
                *mut c_void,
                *mut c_void,
                c_uint,
                *mut c_void,
                *mut c_void,
                c_uint,
            ) -> CUresult = f.sym("cuLibraryLoadData");
            let null = std::ptr::null_mut();
            f.ok(
                "cuLibraryLoadData",
                load_library(&mut h, image.as_ptr().cast(), null, null, 0, null, null, 0),
            );
            f.library = h as u64;
            let get_kernel: unsafe extern "C" fn(
                *mut *mut c_void,
                *mut c_void,
                *const c_char,
            ) -> CUresult = f.sym("cuLibraryGetKernel");
            f.ok(
                "cuLibraryGetKernel",
                get_kernel(&mut h, f.library as *mut c_void, c"k".as_ptr()),
            );
            f.kernel = h as u64;
            // The recorder hands out its one pool from the generated
            // export, for the device ordinal every generated test passes.
            let default_pool: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CUresult =
                f.sym("cuDeviceGetDefaultMemPool");
            f.ok("cuDeviceGetDefaultMemPool", default_pool(&mut h, 1));
            f.pool = h as u64;
            // The recorder's generated `cuArray3DCreate_v2` accepts only the
            // descriptor its own conformance test passes, and hands out the
            // fixture array.
            let array_create: unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CUresult =
                f.sym("cuArray3DCreate_v2");
            let descriptor = generated::pattern(
                vgpu_proto::Op::Array3DCreate_v2 as u16,
                1,
                std::mem::size_of::<vgpu_abi::types::CUDA_ARRAY3D_DESCRIPTOR>(),
            );
            f.ok(
                "cuArray3DCreate_v2",
                array_create(&mut h, descriptor.as_ptr().cast()),
            );
            f.array = h as u64;
            // Likewise for `cuMipmappedArrayCreate`: its descriptor and its
            // level count are those its generated test passes.
            let mipmap_create: unsafe extern "C" fn(
                *mut *mut c_void,
                *const c_void,
                c_uint,
            ) -> CUresult = f.sym("cuMipmappedArrayCreate");
            let descriptor = generated::pattern(
                vgpu_proto::Op::MipmappedArrayCreate as u16,
                1,
                std::mem::size_of::<vgpu_abi::types::CUDA_ARRAY3D_DESCRIPTOR>(),
            );
            f.ok(
                "cuMipmappedArrayCreate",
                mipmap_create(&mut h, descriptor.as_ptr().cast(), 2_680_467_020),
            );
            f.mipmap = h as u64;
        }
        f
    }

    /// The client's export `name` as a function of type `F` (the caller
    /// names the ABI table's prototype).
    pub fn sym<F: Copy>(&self, name: &str) -> F {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        let c = CString::new(name).expect("a symbol name");
        // SAFETY: `lib` is a live handle from dlopen; the name is NUL-terminated.
        let p = unsafe { libc::dlsym(self.lib, c.as_ptr()) };
        assert!(!p.is_null(), "the client does not export {name}");
        // SAFETY: a function pointer of the size of a data pointer, and the
        // caller gives the export's prototype.
        unsafe { std::mem::transmute_copy(&p) }
    }

    /// Panics unless `st` is `CUDA_SUCCESS`.
    #[track_caller]
    pub fn ok(&self, what: &str, st: CUresult) {
        assert_eq!(
            st,
            CUresult::CUDA_SUCCESS,
            "{what} returned {} (CUDA_ERROR_ASSERT: the recorder saw other arguments)",
            st.0
        );
    }

    /// A synchronizing call: the failure of a call that was posted comes
    /// back here.
    fn flush(&self, name: &str) {
        let sync: unsafe extern "C" fn() -> CUresult = self.sym("cuCtxSynchronize");
        // SAFETY: no arguments.
        let st = unsafe { sync() };
        self.ok(&format!("cuCtxSynchronize after {name}"), st);
    }
}

fn load(path: &Path) -> *mut c_void {
    let c = CString::new(path.to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: a NUL-terminated path; loading the client runs no constructors.
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!lib.is_null(), "cannot load {}", path.display());
    lib
}

/// A handle of the fixture, as the application holds it.
pub fn handle<T>(id: u64) -> *mut T {
    usize::try_from(id).expect("a 64-bit address space") as *mut T
}

/// Whether `id` is a handle id the worker minted for `kind`.
pub fn minted(id: u64, kind: HandleKind) -> bool {
    id & vgpu_proto::ids::WORKER != 0 && id >> 56 == u64::from(vgpu_proto::ids::tag(kind))
}

/// A C struct kept as its bytes (padding included), to pass by pointer.
pub struct Record<T> {
    value: Box<MaybeUninit<T>>,
}

impl<T> Record<T> {
    /// All zero.
    pub fn zeroed() -> Record<T> {
        Record {
            value: Box::new(MaybeUninit::zeroed()),
        }
    }

    /// From exactly `size_of::<T>()` bytes.
    pub fn from_bytes(bytes: &[u8]) -> Record<T> {
        assert_eq!(bytes.len(), std::mem::size_of::<T>());
        let mut r = Record::<T>::zeroed();
        // SAFETY: the box holds `size_of::<T>()` bytes; no overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), r.as_mut_ptr().cast::<u8>(), bytes.len())
        };
        r
    }

    pub fn as_ptr(&self) -> *const T {
        self.value.as_ptr()
    }

    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.value.as_mut_ptr()
    }

    /// Its bytes, as written.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; std::mem::size_of::<T>()];
        // SAFETY: the box's bytes were all initialised (zeroed, then copied into).
        unsafe {
            std::ptr::copy_nonoverlapping(self.as_ptr().cast::<u8>(), out.as_mut_ptr(), out.len())
        };
        out
    }
}
