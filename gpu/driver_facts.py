"""Driver facts: what the real driver answers for the edge cases vgpu must match.

Runs natively (or through vgpu, to compare) and prints one line per question:
`name: CUDA_ERROR_... values`. Nothing here asserts; the output is the fact
sheet that vgpu's semantics are checked against.

    python3 gpu/driver_facts.py            # the parent
    (it re-runs itself as a child for the questions that need two processes)
"""

import ctypes
import mmap
import os
import subprocess
import sys

from cuda.bindings import driver as cu

libc = ctypes.CDLL(None, use_errno=True)


def name(err):
    return getattr(err, "name", str(err))


def ask(label, fn, *args):
    """Call fn(*args), print the CUresult and any values, return the values."""
    try:
        out = fn(*args)
    except Exception as e:  # the binding refused the arguments
        print(f"{label}: raised {type(e).__name__}: {e}")
        return None
    if not isinstance(out, tuple):
        out = (out,)
    err, rest = out[0], out[1:]
    shown = []
    for v in rest:
        if hasattr(v, "getPtr"):
            shown.append(type(v).__name__)
        elif isinstance(v, (bytes, bytearray)):
            shown.append(v[:16].hex())
        else:
            shown.append(repr(v)[:120])
    print(f"{label}: {name(err)} {' '.join(shown)}".rstrip())
    return rest if err == cu.CUresult.CUDA_SUCCESS else None


def val(label, fn, *args):
    r = ask(label, fn, *args)
    return None if r is None else (r[0] if len(r) == 1 else r)


PTX_OK = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) { ret; }
"""


def child(kind, hexhandle):
    cu.cuInit(0)
    dev = val("child.cuDeviceGet", cu.cuDeviceGet, 0)
    ctx = val("child.cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, dev)
    cu.cuCtxSetCurrent(ctx)
    raw = bytes.fromhex(hexhandle)
    if kind == "mem":
        h = cu.CUipcMemHandle()
        h.reserved = raw
        p = val("child.ipcOpen", cu.cuIpcOpenMemHandle, h,
                cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        p2 = val("child.ipcOpen twice", cu.cuIpcOpenMemHandle, h,
                 cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        print(f"child.same pointer twice: {p is not None and p2 is not None and int(p) == int(p2)}")
        if p is not None:
            buf = bytearray(16)
            ask("child.read opened", cu.cuMemcpyDtoH, buf, p, 16)
            print(f"child.opened bytes: {bytes(buf[:4]).hex()}")
            ask("child.ipcClose", cu.cuIpcCloseMemHandle, p)
            ask("child.ipcClose again", cu.cuIpcCloseMemHandle, p)
        if p2 is not None:
            ask("child.ipcClose second open", cu.cuIpcCloseMemHandle, p2)
        z = cu.CUipcMemHandle()
        z.reserved = bytes(64)
        ask("child.ipcOpen zero handle", cu.cuIpcOpenMemHandle, z, 1)
        f = cu.CUipcMemHandle()
        f.reserved = bytes(range(64))
        ask("child.ipcOpen forged handle", cu.cuIpcOpenMemHandle, f, 1)
        g = cu.CUipcMemHandle()
        g.reserved = raw[:8] + bytes(56)
        ask("child.ipcOpen truncated handle", cu.cuIpcOpenMemHandle, g, 1)
    else:
        h = cu.CUipcEventHandle()
        h.reserved = raw
        ev = val("child.ipcOpenEvent", cu.cuIpcOpenEventHandle, h)
        if ev is not None:
            ask("child.eventSynchronize", cu.cuEventSynchronize, ev)
            ask("child.eventQuery", cu.cuEventQuery, ev)
            ask("child.eventDestroy", cu.cuEventDestroy, ev)
        z = cu.CUipcEventHandle()
        z.reserved = bytes(64)
        ask("child.ipcOpenEvent zero handle", cu.cuIpcOpenEventHandle, z)


def main():
    ask("cuInit", cu.cuInit, 0)
    dev = val("cuDeviceGet", cu.cuDeviceGet, 0)
    ctx = val("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, dev)
    ask("cuCtxSetCurrent", cu.cuCtxSetCurrent, ctx)
    A = cu.CUdevice_attribute
    for a in ["CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY", "CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS",
              "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS",
              "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES",
              "CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST",
              "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM",
              "CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED", "CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES", "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR",
              "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS",
              "CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED",
              "CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK",
              "CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH",
              "CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD", "CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH"]:
        if hasattr(A, a):
            val(f"attr {a[len('CU_DEVICE_ATTRIBUTE_'):]}", cu.cuDeviceGetAttribute, getattr(A, a), dev)
    err, stream = cu.cuStreamCreate(0)

    # ---- managed memory ----
    P = cu.CUpointer_attribute
    R = cu.CUmem_range_attribute
    m = val("cuMemAllocManaged", cu.cuMemAllocManaged, 1 << 16, 1)
    ask("cuMemAllocManaged size 0", cu.cuMemAllocManaged, 0, 1)
    ask("cuMemAllocManaged flags 0", cu.cuMemAllocManaged, 4096, 0)
    ask("cuMemAllocManaged flags 7", cu.cuMemAllocManaged, 4096, 7)
    d = val("cuMemAlloc", cu.cuMemAlloc, 1 << 16)
    if m is not None:
        for a in ["CU_POINTER_ATTRIBUTE_MEMORY_TYPE", "CU_POINTER_ATTRIBUTE_IS_MANAGED",
                  "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", "CU_POINTER_ATTRIBUTE_HOST_POINTER",
                  "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", "CU_POINTER_ATTRIBUTE_RANGE_SIZE",
                  "CU_POINTER_ATTRIBUTE_MAPPED", "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL",
                  "CU_POINTER_ATTRIBUTE_ACCESS_FLAGS", "CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE",
                  "CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE", "CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES",
                  "CU_POINTER_ATTRIBUTE_SYNC_MEMOPS", "CU_POINTER_ATTRIBUTE_BUFFER_ID"]:
            if hasattr(P, a):
                val(f"managed ptr {a[len('CU_POINTER_ATTRIBUTE_'):]}", cu.cuPointerGetAttribute,
                    getattr(P, a), int(m) + 4096)
        val("managed ptr ACCESS_FLAGS on device alloc", cu.cuPointerGetAttribute,
            P.CU_POINTER_ATTRIBUTE_IS_MANAGED, d)

        def ranges(tag):
            for a in ["CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY", "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION",
                      "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION",
                      "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE",
                      "CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID",
                      "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE",
                      "CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID"]:
                if hasattr(R, a):
                    val(f"range {tag} {a[len('CU_MEM_RANGE_ATTRIBUTE_'):]}", cu.cuMemRangeGetAttribute,
                        4, getattr(R, a), m, 1 << 16)
            val(f"range {tag} ACCESSED_BY(4 slots)", cu.cuMemRangeGetAttribute, 16,
                R.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, 1 << 16)

        ranges("fresh")
        ask("range READ_MOSTLY on device alloc", cu.cuMemRangeGetAttribute, 4,
            R.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, d, 4096)
        ask("range READ_MOSTLY dataSize 3", cu.cuMemRangeGetAttribute, 3,
            R.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4096)
        Adv = cu.CUmem_advise
        loc = cu.CUmemLocation()
        loc.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        loc.id = 0
        bad = cu.CUmemLocation()
        bad.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        bad.id = 99
        ask("advise SET_READ_MOSTLY", cu.cuMemAdvise, m, 1 << 16, Adv.CU_MEM_ADVISE_SET_READ_MOSTLY, loc)
        ask("advise SET_PREFERRED_LOCATION dev", cu.cuMemAdvise, m, 1 << 16,
            Adv.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc)
        ask("advise SET_ACCESSED_BY dev", cu.cuMemAdvise, m, 1 << 16, Adv.CU_MEM_ADVISE_SET_ACCESSED_BY, loc)
        ask("advise on device alloc", cu.cuMemAdvise, d, 4096, Adv.CU_MEM_ADVISE_SET_READ_MOSTLY, loc)
        ask("advise bad device 99", cu.cuMemAdvise, m, 4096, Adv.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad)
        ask("advise unaligned", cu.cuMemAdvise, int(m) + 1, 4096, Adv.CU_MEM_ADVISE_SET_READ_MOSTLY, loc)
        ask("advise size 0", cu.cuMemAdvise, m, 0, Adv.CU_MEM_ADVISE_SET_READ_MOSTLY, loc)
        ask("prefetch to dev", cu.cuMemPrefetchAsync, m, 1 << 16, loc, 0, stream)
        cu.cuStreamSynchronize(stream)
        ranges("after advise+prefetch")
        for fn in ("cuMemPrefetchAsync", "cuMemPrefetchAsync_v2"):
            if not hasattr(cu, fn):
                continue
            f = getattr(cu, fn)
            try:
                ask(f"{fn} invalid device 99", f, m, 4096, bad, 0, stream)
            except Exception:
                pass
            try:
                ask(f"{fn} on device alloc", f, d, 4096, loc, 0, stream)
            except Exception:
                pass
        host = cu.CUmemLocation()
        host.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_HOST
        host.id = 0
        try:
            ask("prefetch to host", cu.cuMemPrefetchAsync, m, 1 << 16, host, 0, stream)
        except Exception:
            pass
        cu.cuStreamSynchronize(stream)
        ranges("after host prefetch")
        ask("attach HOST", cu.cuStreamAttachMemAsync, stream, m, 0, 2)
        ask("attach SINGLE", cu.cuStreamAttachMemAsync, stream, m, 0, 4)
        ask("attach GLOBAL", cu.cuStreamAttachMemAsync, stream, m, 0, 1)
        ask("attach device alloc", cu.cuStreamAttachMemAsync, stream, d, 0, 2)
        ask("attach length 4096", cu.cuStreamAttachMemAsync, stream, m, 4096, 2)
        cu.cuStreamSynchronize(stream)
        ask("cuMemFree managed", cu.cuMemFree, m)

    # ---- host registration ----
    size = 1 << 16
    buf = mmap.mmap(-1, size)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    ask("hostRegister flags 0", cu.cuMemHostRegister, addr, size, 0)
    ask("hostRegister twice", cu.cuMemHostRegister, addr, size, 0)
    ask("hostRegister overlapping", cu.cuMemHostRegister, addr + 4096, 4096, 0)
    val("hostGetFlags registered", cu.cuMemHostGetFlags, addr)
    val("hostGetFlags registered middle", cu.cuMemHostGetFlags, addr + 100)
    dp = val("hostGetDevicePointer", cu.cuMemHostGetDevicePointer, addr, 0)
    print(f"registered devptr == hostptr: {dp is not None and int(dp) == addr}")
    val("registered ptr MEMORY_TYPE", cu.cuPointerGetAttribute, P.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr)
    val("registered ptr IS_MANAGED", cu.cuPointerGetAttribute, P.CU_POINTER_ATTRIBUTE_IS_MANAGED, addr)
    val("registered ptr RANGE_SIZE", cu.cuPointerGetAttribute, P.CU_POINTER_ATTRIBUTE_RANGE_SIZE, addr + 8)
    ask("hostUnregister middle", cu.cuMemHostUnregister, addr + 4096)
    ask("hostUnregister", cu.cuMemHostUnregister, addr)
    ask("hostUnregister again", cu.cuMemHostUnregister, addr)
    other = mmap.mmap(-1, 4096)
    oaddr = ctypes.addressof(ctypes.c_char.from_buffer(other))
    ask("hostUnregister never registered", cu.cuMemHostUnregister, oaddr)
    ask("hostGetFlags unregistered", cu.cuMemHostGetFlags, oaddr)
    ask("hostRegister unaligned", cu.cuMemHostRegister, addr + 8, 100, 0)
    ask("hostUnregister unaligned", cu.cuMemHostUnregister, addr + 8)
    ask("hostRegister size 0", cu.cuMemHostRegister, addr, 0, 0)
    for fl, nm in [(1, "PORTABLE"), (2, "DEVICEMAP"), (4, "IOMEMORY"), (8, "READ_ONLY"), (3, "PORTABLE|DEVICEMAP"),
                   (16, "bad flag 16")]:
        r = ask(f"hostRegister {nm}", cu.cuMemHostRegister, addr, size, fl)
        if r is not None:
            val(f"hostGetFlags after {nm}", cu.cuMemHostGetFlags, addr)
            ask(f"hostUnregister after {nm}", cu.cuMemHostUnregister, addr)
    ask("hostRegister NULL", cu.cuMemHostRegister, 0, 4096, 0)
    ph = val("cuMemHostAlloc", cu.cuMemHostAlloc, 4096, 0)
    if ph is not None:
        ask("hostRegister on cuMemHostAlloc memory", cu.cuMemHostRegister, ph, 4096, 0)
        ask("hostUnregister on cuMemHostAlloc memory", cu.cuMemHostUnregister, ph)

    # ---- IPC ----
    ask("cuMemsetD32 marker", cu.cuMemsetD32, d, 0xABCD1234, 16)
    h = val("ipcGetMemHandle", cu.cuIpcGetMemHandle, d)
    ask("ipcGetMemHandle interior", cu.cuIpcGetMemHandle, int(d) + 4096)
    ask("ipcGetMemHandle garbage", cu.cuIpcGetMemHandle, 0x1234)
    ask("ipcGetMemHandle managed", cu.cuIpcGetMemHandle, val("managed2", cu.cuMemAllocManaged, 4096, 1))
    if h is not None:
        ask("ipcOpen in exporting process", cu.cuIpcOpenMemHandle, h, 1)
        ask("ipcClose never opened (a cuMemAlloc pointer)", cu.cuIpcCloseMemHandle, d)
        ask("ipcClose garbage", cu.cuIpcCloseMemHandle, 0x1000)
        print(f"handle bytes: {bytes(h.reserved)[:64].hex()}")
        out = subprocess.run([sys.executable, __file__, "child", "mem", bytes(h.reserved).hex()],
                             capture_output=True, text=True)
        sys.stdout.write(out.stdout + out.stderr)
    pa = val("cuMemAllocAsync", cu.cuMemAllocAsync, 4096, stream)
    cu.cuStreamSynchronize(stream)
    if pa is not None:
        ask("ipcGetMemHandle pool memory", cu.cuIpcGetMemHandle, pa)
    E = cu.CUevent_flags
    ev = val("eventCreate INTERPROCESS|DISABLE_TIMING", cu.cuEventCreate,
             E.CU_EVENT_INTERPROCESS | E.CU_EVENT_DISABLE_TIMING)
    ask("eventCreate INTERPROCESS alone", cu.cuEventCreate, E.CU_EVENT_INTERPROCESS)
    plain = val("eventCreate plain", cu.cuEventCreate, 0)
    ask("ipcGetEventHandle plain", cu.cuIpcGetEventHandle, plain)
    if ev is not None:
        cu.cuEventRecord(ev, stream)
        eh = val("ipcGetEventHandle", cu.cuIpcGetEventHandle, ev)
        if eh is not None:
            ask("ipcOpenEvent in exporting process", cu.cuIpcOpenEventHandle, eh)
            out = subprocess.run([sys.executable, __file__, "child", "event", bytes(eh.reserved).hex()],
                                 capture_output=True, text=True)
            sys.stdout.write(out.stdout + out.stderr)

    # ---- VMM shareable handles ----
    H = cu.CUmemAllocationHandleType
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = 0
    prop.requestedHandleTypes = H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    gran = val("granularity", cu.cuMemGetAllocationGranularity, prop, 0)
    gh = val("cuMemCreate POSIX_FD", cu.cuMemCreate, gran, prop, 0)
    if gh is not None:
        fd = val("export POSIX_FD", cu.cuMemExportToShareableHandle, gh, H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
        ask("export FABRIC", cu.cuMemExportToShareableHandle, gh, H.CU_MEM_HANDLE_TYPE_FABRIC, 0)
        if fd is not None:
            ask("import own fd", cu.cuMemImportFromShareableHandle, int(fd), H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    prop.requestedHandleTypes = H.CU_MEM_HANDLE_TYPE_FABRIC
    ask("cuMemCreate FABRIC", cu.cuMemCreate, gran, prop, 0)
    prop.requestedHandleTypes = H.CU_MEM_HANDLE_TYPE_NONE
    nh = val("cuMemCreate NONE", cu.cuMemCreate, gran, prop, 0)
    if nh is not None:
        ask("export POSIX_FD from NONE", cu.cuMemExportToShareableHandle, nh,
            H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
    devnull = os.open("/dev/null", os.O_RDONLY)
    ask("import /dev/null fd", cu.cuMemImportFromShareableHandle, devnull, H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    mfd = os.memfd_create("x")
    os.ftruncate(mfd, 1 << 21)
    ask("import memfd", cu.cuMemImportFromShareableHandle, mfd, H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    ask("import fd -1", cu.cuMemImportFromShareableHandle, -1, H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    ask("import fd 987 (closed)", cu.cuMemImportFromShareableHandle, 987, H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    if hasattr(cu, "cuMemGetHandleForAddressRange"):
        ask("getHandleForAddressRange dmabuf", cu.cuMemGetHandleForAddressRange, d, 1 << 16,
            cu.CUmemRangeHandleType.CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)

    # ---- pools ----
    pp = cu.CUmemPoolProps()
    pp.allocType = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    pp.handleTypes = H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    pp.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    pp.location.id = 0
    pool = val("poolCreate POSIX_FD", cu.cuMemPoolCreate, pp)
    if pool is not None:
        val("poolExport POSIX_FD", cu.cuMemPoolExportToShareableHandle, pool,
            H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
        pptr = val("allocFromPool", cu.cuMemAllocFromPoolAsync, 4096, pool, stream)
        cu.cuStreamSynchronize(stream)
        if pptr is not None:
            val("poolExportPointer", cu.cuMemPoolExportPointer, pptr)
    dpool = val("default pool", cu.cuDeviceGetDefaultMemPool, dev)
    if dpool is not None:
        ask("default pool export", cu.cuMemPoolExportToShareableHandle, dpool,
            H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)

    # ---- linker ----
    J = cu.CUjit_option
    for tag, ptx in [("bad PTX", b"this is not ptx\0"), ("good PTX", PTX_OK + b"\0")]:
        opts = [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        errbuf = bytearray(1024)
        vals = [errbuf, 1024]
        st = val(f"linkCreate ({tag})", cu.cuLinkCreate, len(opts), opts, vals)
        if st is None:
            continue
        ask(f"linkAddData {tag}", cu.cuLinkAddData, st, cu.CUjitInputType.CU_JIT_INPUT_PTX, ptx, len(ptx),
            b"in.ptx", 0, None, None)
        print(f"link error log after {tag}: {bytes(errbuf).split(bytes(1))[0][:200]!r}")
        r = ask(f"linkComplete {tag}", cu.cuLinkComplete, st)
        if r is not None:
            print(f"linkComplete size>0: {int(r[1]) > 0}")
        ask(f"linkDestroy {tag}", cu.cuLinkDestroy, st)
    st = val("linkCreate empty", cu.cuLinkCreate, 0, [], [])
    if st is not None:
        ask("linkComplete empty", cu.cuLinkComplete, st)
        ask("linkAddFile missing", cu.cuLinkAddFile, st, cu.CUjitInputType.CU_JIT_INPUT_PTX, b"/nonexistent.ptx",
            0, None, None)
        cu.cuLinkDestroy(st)

    # ---- legacy texrefs, launches ----
    mod = val("moduleLoadData", cu.cuModuleLoadData, PTX_OK + b"\0")
    if hasattr(cu, "cuTexRefCreate"):
        ask("texRefCreate", cu.cuTexRefCreate)
    if mod is not None:
        if hasattr(cu, "cuModuleGetTexRef"):
            ask("moduleGetTexRef missing", cu.cuModuleGetTexRef, mod, b"tex")
        if hasattr(cu, "cuModuleGetSurfRef"):
            ask("moduleGetSurfRef missing", cu.cuModuleGetSurfRef, mod, b"surf")
        fn = val("moduleGetFunction", cu.cuModuleGetFunction, mod, b"k")
        if fn is not None:
            for nm, args in [("cuFuncSetBlockShape", (fn, 32, 1, 1)), ("cuFuncSetSharedSize", (fn, 0)),
                             ("cuParamSetSize", (fn, 8)), ("cuParamSeti", (fn, 0, 1)),
                             ("cuLaunch", (fn,)), ("cuLaunchGrid", (fn, 1, 1)),
                             ("cuLaunchGridAsync", (fn, 1, 1, stream))]:
                if hasattr(cu, nm):
                    ask(nm, getattr(cu, nm), *args)
            ask("ctxSynchronize after legacy", cu.cuCtxSynchronize)

    # ---- peer, multicast, green contexts, misc ----
    val("canAccessPeer self", cu.cuDeviceCanAccessPeer, dev, dev)
    for a in cu.CUdevice_P2PAttribute:
        val(f"p2pAttribute {a.name} self", cu.cuDeviceGetP2PAttribute, a, dev, dev)
    ask("ctxEnablePeerAccess self", cu.cuCtxEnablePeerAccess, ctx, 0)
    ask("ctxDisablePeerAccess self", cu.cuCtxDisablePeerAccess, ctx)
    d2 = val("cuMemAlloc 2", cu.cuMemAlloc, 4096)
    ask("memcpyPeer same ctx", cu.cuMemcpyPeer, d2, ctx, d, ctx, 4096)
    if hasattr(cu, "cuMulticastGetGranularity"):
        mp = cu.CUmulticastObjectProp()
        mp.numDevices = 1
        mp.size = 1 << 21
        mp.handleTypes = H.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        ask("multicastGetGranularity", cu.cuMulticastGetGranularity, mp,
            cu.CUmulticastGranularity_flags.CU_MULTICAST_GRANULARITY_MINIMUM)
        ask("multicastCreate", cu.cuMulticastCreate, mp)
    if hasattr(cu, "cuDeviceGetDevResource"):
        res = val("deviceGetDevResource SM", cu.cuDeviceGetDevResource, dev,
                  cu.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM)
        if res is not None:
            print(f"sm resource: smCount={res.sm.smCount}"
                  f" min={getattr(res.sm, 'minSmPartitionSize', '?')}"
                  f" align={getattr(res.sm, 'smCoscheduledAlignment', '?')}")
            for n in (1, 8, 16, 200):
                r = ask(f"smResourceSplitByCount minCount={n}", cu.cuDevSmResourceSplitByCount, 0, res, 0, n)
                if r is not None:
                    print(f"  split: {r}")
    for nm, args in [("cuCheckpointProcessGetState", (os.getpid(),)),
                     ("cuCheckpointProcessGetRestoreThreadId", (os.getpid(),)),
                     ("cuLogsCurrent", (0,)),
                     ("cuDeviceGetGraphMemAttribute",
                      (dev, cu.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT))]:
        if hasattr(cu, nm):
            ask(nm, getattr(cu, nm), *args)
    if hasattr(cu, "cuCoredumpGetAttributeGlobal"):
        for a in cu.CUcoredumpSettings:
            try:
                ask(f"coredumpGetAttributeGlobal {a.name}", cu.cuCoredumpGetAttributeGlobal, a)
            except Exception as e:
                print(f"coredump {a.name}: {e}")
    print("done")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
