//! The operations of protocol v1: explicit, append-only wire ids.
//!
//! Each line names the operation, its wire id and how many scalar arguments its
//! request carries, and ends in `posted` when the request may be sent without
//! waiting for a reply ([`crate::flags::POSTED`]): such operations return
//! nothing but a status on success, and their failures are deferred to the
//! lane's next synchronizing request ([`Op::synchronizes`]). The argument
//! order is documented on each variant and in `docs/protocol.md`. Never
//! renumber or reuse an id; add new ones at the end.

use crate::ProtoError;

macro_rules! wire_ops {
    ($( $(#[$doc:meta])* $name:ident = $id:literal, args = $nargs:literal $(, $posted:ident)?; )*) => {
        /// One remoted operation. The discriminant is the wire id.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum Op { $( $(#[$doc])* $name = $id, )* }

        impl Op {
            /// Every operation, in wire-id order.
            pub const ALL: &'static [Op] = &[$(Op::$name),*];

            /// Number of scalar arguments a request of this operation carries.
            pub const fn nargs(self) -> usize {
                match self { $(Op::$name => $nargs,)* }
            }

            /// The operation's name, as used in logs and the schema hash.
            pub const fn name(self) -> &'static str {
                match self { $(Op::$name => stringify!($name),)* }
            }

            /// Whether a request of this operation may be posted
            /// ([`crate::flags::POSTED`]): it returns nothing but a status.
            pub const fn postable(self) -> bool {
                match self { $(Op::$name => posted!($($posted)?),)* }
            }
        }

        impl TryFrom<u16> for Op {
            type Error = ProtoError;
            fn try_from(id: u16) -> Result<Self, ProtoError> {
                match id {
                    $($id => Ok(Op::$name),)*
                    other => Err(ProtoError::UnknownOp(other)),
                }
            }
        }

        /// FNV-1a hash over every (id, name, arity, postable): peers built
        /// from different op tables refuse each other at the handshake.
        pub const SCHEMA_HASH: u64 = {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            $(
                h = fnv(h, &($id as u16).to_le_bytes());
                h = fnv(h, stringify!($name).as_bytes());
                h = fnv(h, &[$nargs as u8]);
                h = fnv(h, &[posted!($($posted)?) as u8]);
            )*
            h
        };
    };
}

macro_rules! posted {
    () => {
        false
    };
    (posted) => {
        true
    };
}

const fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

wire_ops! {
    /// Control connection: open a new lane. The reply is followed by one byte
    /// carrying descriptors (SCM_RIGHTS): with `outs[0] = 1` (only when
    /// `features::RINGS` was negotiated) three of them, the lane socket, the
    /// submission ring and the completion ring; otherwise (no outs, or
    /// `outs[0] = 0`) one, the lane socket, which then carries the frames.
    /// On a TCP control connection no descriptor follows: `outs = [2, port,
    /// token_lo, token_hi]`, and the client connects to the worker's host at
    /// `port` and sends the 16-byte token (`lane_kind::TCP`).
    OpenLane = 1, args = 0;

    /// (ctx_id, flags, device) → ()  Create a context; it becomes current on the lane.
    CtxCreate = 10, args = 3;
    /// (ctx_id) → ()
    CtxDestroy = 11, args = 1;
    /// () → ()  Synchronize the request's context.
    CtxSynchronize = 12, args = 0;
    /// (limit) → (value)
    CtxGetLimit = 13, args = 1;
    /// (limit, value) → ()
    CtxSetLimit = 14, args = 2;
    /// () → (least, greatest)
    CtxGetStreamPriorityRange = 15, args = 0;
    /// () → (flags)
    CtxGetFlags = 16, args = 0;
    /// () → (version)
    CtxGetApiVersion = 17, args = 0;

    /// (ctx_id, device) → ()  Retain the device's primary context under `ctx_id`.
    PrimaryCtxRetain = 20, args = 2;
    /// (device) → ()
    PrimaryCtxRelease = 21, args = 1;
    /// (device) → (flags, active)
    PrimaryCtxGetState = 22, args = 1;
    /// (device, flags) → ()
    PrimaryCtxSetFlags = 23, args = 2;
    /// (device) → ()
    PrimaryCtxReset = 24, args = 1;

    /// (bytes) → (dptr)
    MemAlloc = 30, args = 1;
    /// (dptr) → ()
    MemFree = 31, args = 1;
    /// () → (free, total)
    MemGetInfo = 32, args = 0;
    /// (dptr) → (base, size)
    MemGetAddressRange = 33, args = 1;

    /// (dst, stream, async) + blob → ()
    MemcpyHtoD = 40, args = 3, posted;
    /// (src, bytes, stream, async) → blob
    MemcpyDtoH = 41, args = 4;
    /// (dst, src, bytes, stream, async) → ()
    MemcpyDtoD = 42, args = 5, posted;
    /// (dst, value, element size, count, stream, async) → ()
    Memset = 43, args = 6, posted;

    /// (stream_id, flags, priority) → ()
    StreamCreate = 50, args = 3, posted;
    /// (stream) → ()
    StreamDestroy = 51, args = 1, posted;
    /// (stream) → ()
    StreamSynchronize = 52, args = 1;
    /// (stream) → ()  The status is the answer.
    StreamQuery = 53, args = 1;
    /// (stream, event, flags) → ()
    StreamWaitEvent = 54, args = 3, posted;
    /// (stream) → (flags)
    StreamGetFlags = 55, args = 1;
    /// (stream) → (priority)
    StreamGetPriority = 56, args = 1;

    /// (event_id, flags) → ()
    EventCreate = 60, args = 2, posted;
    /// (event) → ()
    EventDestroy = 61, args = 1, posted;
    /// (event, stream) → ()
    EventRecord = 62, args = 2, posted;
    /// (event) → ()
    EventSynchronize = 63, args = 1;
    /// (event) → ()  The status is the answer.
    EventQuery = 64, args = 1;
    /// (start, end) → (milliseconds as f32 bits)
    EventElapsedTime = 65, args = 2;

    /// (module_id, option count, staged image id or 0) + blob of options
    /// (u32 option, u32 pad, u64 value each) then the image, unless it was
    /// staged with StageBlob → blob of final option values (u64 each), then
    /// the info log and the error log, each NUL-terminated.
    ModuleLoadData = 70, args = 3;
    /// (module) → ()
    ModuleUnload = 71, args = 1;
    /// (module, function_id) + NUL-free name blob → (parameter count) + blob of
    /// (offset u32, size u32) pairs, little-endian.
    ModuleGetFunction = 72, args = 2;
    /// (module) + name blob → (dptr, bytes)
    ModuleGetGlobal = 73, args = 1;
    /// (function, gx, gy, gz, bx, by, bz, shared bytes, stream) + packed
    /// parameter blob → ()
    LaunchKernel = 74, args = 9, posted;

    /// (library_id, JIT option count, library option count, staged image id
    /// or 0) + blob of JIT options then library options (16 bytes each, as
    /// for ModuleLoadData) then the image unless staged → blob as for
    /// ModuleLoadData.
    LibraryLoadData = 80, args = 4;
    /// (library) → ()
    LibraryUnload = 81, args = 1;
    /// (library, kernel_id) + name blob → (parameter count) + layout blob, as
    /// for ModuleGetFunction. A kernel id is launchable like a function id.
    LibraryGetKernel = 82, args = 2;
    /// (library) + name blob → (dptr, bytes)
    LibraryGetGlobal = 83, args = 1;
    /// (library, module_id) → ()
    LibraryGetModule = 84, args = 2;
    /// (kernel, function_id) → (parameter count) + layout blob.
    KernelGetFunction = 85, args = 2;
    /// (function, attribute) → (value)
    FuncGetAttribute = 86, args = 2;
    /// (function, attribute, value) → ()
    FuncSetAttribute = 87, args = 3;
    /// (kernel, attribute, device) → (value)
    KernelGetAttribute = 88, args = 3;
    /// (kernel, attribute, value, device) → ()
    KernelSetAttribute = 89, args = 4;
    /// (function, block size, dynamic shared bytes, flags) → (blocks)
    OccupancyMaxActiveBlocks = 90, args = 4;
    /// (function, blocks, block size) → (bytes)
    OccupancyAvailableDynamicSMem = 91, args = 3;
    /// (function, gx, gy, gz, bx, by, bz, shared bytes, stream, attribute
    /// count) + blob of `CUlaunchAttribute`s → (clusters)
    OccupancyMaxActiveClusters = 92, args = 10;
    /// (function, gx, gy, gz, bx, by, bz, shared bytes, stream, attribute
    /// count) + blob of `CUlaunchAttribute`s then the packed parameters → ()
    LaunchKernelEx = 93, args = 10, posted;
    /// (stream) → (capture status)
    StreamIsCapturing = 94, args = 1;
    /// () → (loading mode)
    ModuleGetLoadingMode = 95, args = 0;
    /// (bytes, flags) → (address, device pointer); the reply is followed by
    /// one byte carrying the shared memory's fd (SCM_RIGHTS). The worker has
    /// mapped and registered the pages; the client maps the same pages at
    /// the same address when it can.
    MemHostAlloc = 96, args = 2;
    /// (address) → ()
    MemFreeHost = 97, args = 1;
    /// (dst, host address in shared pinned memory, bytes, stream, async) → ()
    MemcpyHtoDShared = 98, args = 5, posted;
    /// (host address in shared pinned memory, src, bytes, stream, async) → ()
    MemcpyDtoHShared = 99, args = 5, posted;
    /// (ctx_id, device) → ()  Map `ctx_id` to the device's primary context
    /// without retaining it, as the CUDA runtime's private interface does.
    PrimaryCtxGet = 100, args = 2;
    /// (pointer, single) + blob of attribute ids (u32 each) → blob of 16
    /// bytes per attribute (its value, zero-padded). `single` 1 asks as
    /// `cuPointerGetAttribute` does (an error for a non-CUDA pointer), 0 as
    /// `cuPointerGetAttributes` does (defaults and success). Context values
    /// come back as the client's context ids.
    PointerGetAttributes = 101, args = 2;
    /// (bytes, stream) → (dptr)  Stream-ordered allocation from the device's pool.
    MemAllocAsync = 102, args = 2;
    /// (dptr, stream) → ()
    MemFreeAsync = 103, args = 2;
    /// (direction, src, src pitch, src x, src y, dst, dst pitch, dst x, dst y,
    /// width in bytes, height, stream, async) → ()  A 2D copy. Direction 0:
    /// device to device; 1: host to device, the rows packed in the blob; 2:
    /// device to host, the rows come back packed in the reply blob. Host
    /// sides carry 0 for their address, pitch and offsets.
    Memcpy2D = 104, args = 13;
    /// (stage id, offset, total) + a chunk → ()  Builds up a large module
    /// image in the worker, piece by piece; the load that names the stage id
    /// consumes it.
    StageBlob = 105, args = 3;
    /// (event, stream, flags) → ()
    EventRecordWithFlags = 106, args = 3, posted;
    /// (module) → blob of the module's kernel names, each NUL-terminated, in
    /// the driver's order; the worker loads every function of the module.
    ModuleKernelNames = 107, args = 1;
}

impl Op {
    /// Whether a request of this operation, with these arguments, is a
    /// *synchronizing* call: one that in CUDA waits for, or observes the
    /// completion of, earlier work. Such a request returns the lane's
    /// deferred failure of a posted request, if there is one, instead of
    /// running (`docs/adr/0004-async-errors.md`).
    ///
    /// They are: context, stream and event synchronization and queries;
    /// every device-to-host copy into pageable memory (the data must be
    /// there on return); the synchronous forms of copies and memsets (their
    /// `async` argument is 0); and the calls that free or destroy what
    /// earlier work may still use: `cuMemFree`, `cuMemFreeHost`,
    /// `cuCtxDestroy`, and the release and reset of a primary context.
    pub fn synchronizes(self, args: &[u64]) -> bool {
        let sync_form = |at: usize| args.get(at) == Some(&0);
        match self {
            Op::CtxSynchronize
            | Op::StreamSynchronize
            | Op::StreamQuery
            | Op::EventSynchronize
            | Op::EventQuery
            | Op::MemcpyDtoH
            | Op::MemFree
            | Op::MemFreeHost
            | Op::CtxDestroy
            | Op::PrimaryCtxRelease
            | Op::PrimaryCtxReset => true,
            Op::MemcpyHtoD => sync_form(2),
            Op::MemcpyDtoD | Op::MemcpyHtoDShared | Op::MemcpyDtoHShared => sync_form(4),
            Op::Memset => sync_form(5),
            Op::Memcpy2D => sync_form(12),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posted_ops_return_only_a_status() {
        let posted: Vec<&str> = Op::ALL
            .iter()
            .filter(|op| op.postable())
            .map(|op| op.name())
            .collect();
        assert_eq!(
            posted,
            [
                "MemcpyHtoD",
                "MemcpyDtoD",
                "Memset",
                "StreamCreate",
                "StreamDestroy",
                "StreamWaitEvent",
                "EventCreate",
                "EventDestroy",
                "EventRecord",
                "LaunchKernel",
                "LaunchKernelEx",
                "MemcpyHtoDShared",
                "MemcpyDtoHShared",
                "EventRecordWithFlags",
            ]
        );
        for op in Op::ALL {
            if op.postable() {
                assert!(
                    !op.synchronizes(&[1; 16]),
                    "{op:?} in its async form must not synchronize"
                );
            }
        }
    }

    #[test]
    fn synchronous_forms_synchronize() {
        assert!(Op::MemcpyHtoD.synchronizes(&[0x1000, 0, 0]));
        assert!(!Op::MemcpyHtoD.synchronizes(&[0x1000, 3, 1]));
        assert!(Op::Memset.synchronizes(&[0x1000, 0, 1, 4, 0, 0]));
        assert!(!Op::Memset.synchronizes(&[0x1000, 0, 1, 4, 3, 1]));
        assert!(Op::MemcpyDtoH.synchronizes(&[0x1000, 4, 3, 1]));
        assert!(Op::StreamQuery.synchronizes(&[3]));
        assert!(!Op::MemAlloc.synchronizes(&[64]));
        assert!(
            !Op::MemcpyHtoD.synchronizes(&[]),
            "missing arguments: not a sync form"
        );
    }

    #[test]
    fn ids_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &op in Op::ALL {
            assert!(seen.insert(op as u16), "duplicate id {}", op as u16);
            assert_eq!(Op::try_from(op as u16).expect("known id"), op);
            assert!(op.nargs() <= crate::MAX_ARGS);
        }
        assert!(matches!(
            Op::try_from(9999),
            Err(ProtoError::UnknownOp(9999))
        ));
    }
}
