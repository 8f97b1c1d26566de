//! External memory (`crate::external`) and semaphores (`crate::semaphore`): the exports
//! the worker calls.

use std::ffi::c_uint;

use crate::cu::{
    CUdeviceptr, CUexternalMemory, CUexternalSemaphore, CUmipmappedArray, CUresult, CUstream,
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC, CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
    CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS,
};
use crate::error::{err, Res};
use crate::ffi::{handle, key, run, Out};
use crate::graph::{self, RawSemParams};
use crate::{external, semaphore, state};

/// A descriptor the caller passes by pointer, copied out.
///
/// # Safety
/// `p` must be NULL or valid for a read of a `T`.
unsafe fn read<T: Copy>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return err(
            CUresult::CUDA_ERROR_INVALID_VALUE,
            format!("{what} is NULL"),
        );
    }
    // SAFETY: non-NULL, and valid for a read by this function's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `cuImportExternalMemory`.
///
/// # Safety
/// `out` must be NULL or valid for writes, `desc` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuImportExternalMemory(
    out: *mut CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
) -> CUresult {
    run("cuImportExternalMemory", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, "extMem_out") }?;
        // SAFETY: as above.
        let d = unsafe { read(desc, "memHandleDesc") }?;
        // SAFETY: the union's `fd` member; checked against the type in the model.
        let fd = unsafe { d.handle.fd };
        let k = external::import(&mut sim.lock(), d.type_.0, fd, d.size, d.flags)?;
        out.write(handle(k));
        Ok(())
    })
}

/// `cuExternalMemoryGetMappedBuffer`.
///
/// # Safety
/// `dptr` must be NULL or valid for writes, `desc` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuExternalMemoryGetMappedBuffer(
    dptr: *mut CUdeviceptr,
    mem: CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
) -> CUresult {
    run("cuExternalMemoryGetMappedBuffer", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(dptr, "devPtr") }?;
        // SAFETY: as above.
        let d = unsafe { read(desc, "bufferDesc") }?;
        let budget = sim.cfg.memory_bytes;
        let mut st = sim.lock();
        out.write(external::mapped_buffer(
            &mut st,
            budget,
            key(mem),
            d.offset,
            d.size,
            d.flags,
        )?);
        Ok(())
    })
}

/// `cuExternalMemoryGetMappedMipmappedArray` (`crate::external`).
///
/// # Safety
/// `desc` must be NULL or valid for reads.
pub(crate) unsafe fn external_memory_get_mapped_mipmapped_array(
    out: Out<CUmipmappedArray>,
    mem: CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC,
) -> Res<()> {
    let sim = state::sim()?;
    // SAFETY: forwarded from this function's contract.
    let d = unsafe { read(desc, "mipmapDesc") }?;
    let budget = sim.cfg.memory_bytes;
    let mut st = sim.lock();
    let k = external::mapped_mipmapped_array(
        &mut st,
        budget,
        key(mem),
        d.offset,
        &d.arrayDesc,
        d.numLevels,
    )?;
    out.write(handle(k));
    Ok(())
}

/// `cuDestroyExternalMemory`.
#[no_mangle]
pub extern "C" fn cuDestroyExternalMemory(mem: CUexternalMemory) -> CUresult {
    run("cuDestroyExternalMemory", || {
        external::destroy(&mut state::sim()?.lock(), key(mem))
    })
}

/// `cuImportExternalSemaphore` (`crate::semaphore`).
///
/// # Safety
/// `out` must be NULL or valid for writes, `desc` NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn cuImportExternalSemaphore(
    out: *mut CUexternalSemaphore,
    desc: *const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
) -> CUresult {
    run("cuImportExternalSemaphore", || {
        let sim = state::sim()?;
        // SAFETY: forwarded from this function's contract.
        let out = unsafe { Out::new(out, "extSem_out") }?;
        // SAFETY: as above.
        let d = unsafe { read(desc, "semHandleDesc") }?;
        // SAFETY: the union's `fd` member; checked against the type in the model.
        let fd = unsafe { d.handle.fd };
        out.write(handle(semaphore::import(&mut sim.lock(), d.type_.0, fd)?));
        Ok(())
    })
}

/// The semaphores and their `count` parameter structs (signal and wait parameters both
/// are 144 bytes and start with the fence value).
///
/// # Safety
/// `sems` and `params` must be NULL or readable for `count` elements.
unsafe fn operands<P>(
    sems: *const CUexternalSemaphore,
    params: *const P,
    count: c_uint,
) -> Res<(Vec<usize>, Vec<RawSemParams>)> {
    if count != 0 && (sems.is_null() || params.is_null()) {
        return err(CUresult::CUDA_ERROR_INVALID_VALUE, "a NULL array");
    }
    let n = count as usize;
    let (mut keys, mut raw) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // SAFETY: readable for `count` elements by this function's contract.
        keys.push(key(unsafe { sems.add(i).read_unaligned() }));
        // SAFETY: as above; each struct is `RawSemParams`' size.
        raw.push(unsafe { params.add(i).cast::<RawSemParams>().read_unaligned() });
    }
    Ok((keys, raw))
}

/// `cuSignalExternalSemaphoresAsync` (`wait` false) or `cuWaitExternalSemaphoresAsync`
/// on `stream`: on a capturing stream, an external-semaphore node of the capture's
/// graph; otherwise a wait blocks until satisfied (see `crate::semaphore`).
fn semaphores(
    name: &str,
    wait: bool,
    sems: *const CUexternalSemaphore,
    params: *const RawSemParams,
    count: c_uint,
    stream: CUstream,
) -> CUresult {
    run(name, || {
        let sim = state::sim()?;
        // SAFETY: the caller's arrays, as the CUDA API defines them.
        let (keys, raw) = unsafe { operands(sems, params, count) }?;
        let resolved = {
            let mut st = sim.lock();
            crate::stream::usable(&st, key(stream))?;
            let node = || graph::Work::ExtSem {
                wait,
                sems: keys.clone(),
                params: raw.clone(),
            };
            if graph::captured(&mut st, key(stream), node)? {
                return Ok(());
            }
            semaphore::resolve(&st, &keys)?
        };
        let values: Vec<u64> = raw.iter().map(|p| p[0]).collect();
        match wait {
            true => semaphore::wait(&resolved, &values),
            false => semaphore::signal(&resolved, &values),
        }
    })
}

/// `cuSignalExternalSemaphoresAsync`.
///
/// # Safety
/// The arrays must be NULL or readable for `count` elements.
#[no_mangle]
pub unsafe extern "C" fn cuSignalExternalSemaphoresAsync(
    sems: *const CUexternalSemaphore,
    params: *const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
    count: c_uint,
    stream: CUstream,
) -> CUresult {
    let name = "cuSignalExternalSemaphoresAsync";
    semaphores(name, false, sems, params.cast(), count, stream)
}

/// `cuWaitExternalSemaphoresAsync`.
///
/// # Safety
/// The arrays must be NULL or readable for `count` elements.
#[no_mangle]
pub unsafe extern "C" fn cuWaitExternalSemaphoresAsync(
    sems: *const CUexternalSemaphore,
    params: *const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS,
    count: c_uint,
    stream: CUstream,
) -> CUresult {
    let name = "cuWaitExternalSemaphoresAsync";
    semaphores(name, true, sems, params.cast(), count, stream)
}

/// `cuDestroyExternalSemaphore`.
#[no_mangle]
pub extern "C" fn cuDestroyExternalSemaphore(sem: CUexternalSemaphore) -> CUresult {
    run("cuDestroyExternalSemaphore", || {
        semaphore::destroy(&mut state::sim()?.lock(), key(sem))
    })
}
