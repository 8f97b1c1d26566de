//! Shared by the protocol test tiers: the golden sample messages, the
//! annotated hex format of `fixtures/proto/`, the fuzz seed corpora and the
//! checks the fuzz targets run on every input.
//!
//! Each test binary uses its own part of this module.
#![allow(dead_code)]

pub mod arb;

use std::mem::{offset_of, size_of};
use std::path::PathBuf;

use vgpu_proto::sessions::{self, SessionRecord};
use vgpu_proto::{
    features, fill_str, DeviceSnapshot, Hello, HelloHead, Op, ProtoError, Request, RequestHead,
    Response, ResponseHead, Welcome, WelcomeHead, HELLO_MAGIC, MAX_BLOB, MAX_DEVICES,
    MAX_ENV_BYTES, MAX_FIXED, PROTOCOL_VERSION, SCHEMA_HASH,
};
use zerocopy::little_endian::{I32, U16, U32, U64};
use zerocopy::IntoBytes;

/// The fuzz targets, one per decoder.
pub const TARGETS: [&str; 4] = ["request", "response", "hello", "welcome"];

/// A device address as the real driver hands them out.
pub const DPTR: u64 = 0x7f3a_4a00_0000;
/// The client-minted context id the samples run under.
pub const CTX: u64 = 1;

// ---- paths -----------------------------------------------------------------

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `fixtures/proto/` at the repository root.
pub fn fixtures_dir() -> PathBuf {
    manifest_dir().join("../../fixtures/proto")
}

/// `crates/proto/fuzz/corpus/<target>/`.
pub fn corpus_dir(target: &str) -> PathBuf {
    manifest_dir().join("fuzz/corpus").join(target)
}

/// `VGPU_BLESS=1` regenerates the fixtures instead of checking them.
pub fn blessing() -> bool {
    std::env::var_os("VGPU_BLESS").is_some_and(|v| v == "1")
}

// ---- sample messages -------------------------------------------------------

/// The fixed part and blob of a representative request of a hand-written
/// operation: plausible handles, sizes and blobs. Table calls have
/// generated samples (`vgpu_proto::sample_request`).
///
/// The match is exhaustive over the hand-written operations on purpose: a
/// new one fails here until it has a sample, and then `VGPU_BLESS=1`
/// writes its fixture.
fn manual_sample(op: Op) -> (Vec<u8>, Vec<u8>) {
    use vgpu_proto::*;
    const STREAM: u64 = 3;
    const ARRAY: u64 = 10;
    const EVENT: u64 = 4;
    const MODULE: u64 = 6;
    const FUNCTION: u64 = 7;
    const LIBRARY: u64 = 8;
    const KERNEL: u64 = 9;
    const POOL: u64 = 10;
    const HOST: u64 = 0x7f00_0000_0000;
    const VMM_HANDLE: u64 = 0x11;
    let u = U64::new;
    let w = U32::new;
    fn b<M: IntoBytes + zerocopy::Immutable>(m: M) -> Vec<u8> {
        m.as_bytes().to_vec()
    }
    let none = Vec::new;
    match op {
        Op::OpenLane => (b(open_lane::Request {}), none()),
        Op::OpenCallbacks => (b(vgpu_proto::open_callbacks::Request {}), none()),
        Op::OpenOutput => (b(vgpu_proto::open_output::Request {}), none()),
        // stream 0x42000000000005, callback 7, cuStreamAddCallback
        Op::HostCallback => (
            b(vgpu_proto::host_callback::Request {
                stream: u(0x4200_0000_0000_0005),
                id: u(7),
                status: 1,
            }),
            none(),
        ),
        // ctx_id 1, CU_CTX_SCHED_AUTO, device 0
        Op::CtxCreate => (
            b(ctx_create::Request {
                ctx: u(CTX),
                flags: w(0),
                device: I32::new(0),
            }),
            none(),
        ),
        Op::CtxDestroy => (b(ctx_destroy::Request { ctx: u(CTX) }), none()),
        Op::PrimaryCtxRetain => (
            b(primary_ctx_retain::Request {
                ctx: u(2),
                device: I32::new(0),
            }),
            none(),
        ),
        Op::PrimaryCtxGet => (
            b(primary_ctx_get::Request {
                ctx: u(2),
                device: I32::new(0),
            }),
            none(),
        ),
        Op::MemAlloc => (b(mem_alloc::Request { bytes: u(1 << 20) }), none()),
        Op::MemFree => (b(mem_free::Request { dptr: u(DPTR) }), none()),
        Op::MemcpyHtoD => (
            b(memcpy_htod::Request {
                dst: u(DPTR),
                stream: u(0),
                is_async: 0,
            }),
            b"hello, device!\0".to_vec(),
        ),
        Op::MemcpyDtoH => (
            b(memcpy_dtoh::Request {
                src: u(DPTR),
                bytes: u(64),
                stream: u(STREAM),
                is_async: 1,
            }),
            none(),
        ),
        Op::MemcpyDtoD => (
            b(memcpy_dtod::Request {
                dst: u(DPTR + 0x1000),
                src: u(DPTR),
                bytes: u(0x1000),
                stream: u(0),
                is_async: 0,
            }),
            none(),
        ),
        Op::Memset => (
            b(memset::Request {
                dst: u(DPTR),
                value: w(0xab),
                element: 1,
                count: u(0x1000),
                stream: u(STREAM),
                is_async: 1,
            }),
            none(),
        ),
        // CU_STREAM_NON_BLOCKING, priority -1
        Op::StreamCreate => (
            b(stream_create::Request {
                stream: u(STREAM),
                flags: w(1),
                priority: I32::new(-1),
            }),
            none(),
        ),
        Op::StreamDestroy => (b(stream_destroy::Request { stream: u(STREAM) }), none()),
        // CU_EVENT_DISABLE_TIMING
        Op::EventCreate => (
            b(event_create::Request {
                event: u(EVENT),
                flags: w(2),
            }),
            none(),
        ),
        Op::EventDestroy => (b(event_destroy::Request { event: u(EVENT) }), none()),
        Op::ModuleLoadData => {
            // Two JIT options (u32 option, u32 pad, u64 value), then the image:
            // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES and CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES.
            let mut blob = Vec::new();
            for (option, value) in [(4u32, 1024u64), (6, 1024)] {
                blob.extend_from_slice(&option.to_le_bytes());
                blob.extend_from_slice(&0u32.to_le_bytes());
                blob.extend_from_slice(&value.to_le_bytes());
            }
            blob.extend_from_slice(b".version 8.0\n.target sm_90\n.address_size 64\n\0");
            (
                b(module_load_data::Request {
                    module: u(MODULE),
                    options: w(2),
                    stage: u(0),
                }),
                blob,
            )
        }
        Op::ModuleUnload => (b(module_unload::Request { module: u(MODULE) }), none()),
        Op::ModuleGetFunction => (
            b(module_get_function::Request {
                module: u(MODULE),
                function: u(FUNCTION),
            }),
            b"vector_add".to_vec(),
        ),
        Op::ModuleGlobal => (
            b(module_global::Request { module: u(MODULE) }),
            b"d_scale".to_vec(),
        ),
        Op::ModuleKernelNames => (
            b(module_kernel_names::Request { module: u(MODULE) }),
            none(),
        ),
        Op::FunctionName => (
            b(function_name::Request {
                function: u(KERNEL),
                kernel: 1,
            }),
            none(),
        ),
        // The first 16 kernels of a library.
        Op::EnumerateFunctions => (
            b(enumerate_functions::Request {
                owner: u(LIBRARY),
                count: w(16),
                library: 1,
            }),
            none(),
        ),
        Op::StageBlob => (
            b(stage_blob::Request {
                stage: u(0x77),
                offset: u(16 << 20),
                total: u(64 << 20),
            }),
            vec![0xa5; 256],
        ),
        Op::LaunchKernel => {
            // vector_add(const float *a, const float *b, float *c, int n)
            let mut params = Vec::new();
            for p in [DPTR, DPTR + 0x1000, DPTR + 0x2000] {
                params.extend_from_slice(&p.to_le_bytes());
            }
            params.extend_from_slice(&1024u32.to_le_bytes());
            let r = launch_kernel::Request {
                function: u(FUNCTION),
                grid_x: w(4),
                grid_y: w(1),
                grid_z: w(1),
                block_x: w(256),
                block_y: w(1),
                block_z: w(1),
                shared: w(0),
                stream: u(STREAM),
            };
            (b(r), params)
        }
        Op::LibraryLoadData => {
            // One library option (CU_LIBRARY_BINARY_IS_PRESERVED = 1), then the image.
            let mut blob = Vec::new();
            blob.extend_from_slice(&1u32.to_le_bytes());
            blob.extend_from_slice(&0u32.to_le_bytes());
            blob.extend_from_slice(&1u64.to_le_bytes());
            blob.extend_from_slice(b".version 8.0\n.target sm_90\n.address_size 64\n\0");
            let r = library_load_data::Request {
                library: u(LIBRARY),
                jit_options: w(0),
                library_options: w(1),
                stage: u(0),
            };
            (b(r), blob)
        }
        Op::LibraryUnload => (
            b(library_unload::Request {
                library: u(LIBRARY),
            }),
            none(),
        ),
        Op::LibraryGetKernel => (
            b(library_get_kernel::Request {
                library: u(LIBRARY),
                kernel: u(KERNEL),
            }),
            b"vector_add".to_vec(),
        ),
        Op::LibraryGlobal => (
            b(library_global::Request {
                library: u(LIBRARY),
            }),
            b"d_scale".to_vec(),
        ),
        Op::LibraryGetModule => (
            b(library_get_module::Request {
                library: u(LIBRARY),
                module: u(MODULE),
            }),
            none(),
        ),
        Op::KernelGetFunction => (
            b(kernel_get_function::Request {
                kernel: u(KERNEL),
                function: u(FUNCTION),
            }),
            none(),
        ),
        Op::OccupancyMaxActiveClusters | Op::LaunchKernelEx => {
            // One CUlaunchAttribute (72 bytes): CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 2x1x1.
            let mut blob = vec![0u8; 72];
            blob[..4].copy_from_slice(&4u32.to_le_bytes());
            for (i, d) in [2u32, 1, 1].iter().enumerate() {
                blob[8 + 4 * i..12 + 4 * i].copy_from_slice(&d.to_le_bytes());
            }
            let fixed = if op == Op::LaunchKernelEx {
                blob.extend_from_slice(&DPTR.to_le_bytes());
                b(launch_kernel_ex::Request {
                    function: u(FUNCTION),
                    grid_x: w(8),
                    grid_y: w(1),
                    grid_z: w(1),
                    block_x: w(128),
                    block_y: w(1),
                    block_z: w(1),
                    shared: w(0),
                    stream: u(STREAM),
                    attributes: w(1),
                })
            } else {
                b(occupancy_max_active_clusters::Request {
                    function: u(FUNCTION),
                    grid_x: w(8),
                    grid_y: w(1),
                    grid_z: w(1),
                    block_x: w(128),
                    block_y: w(1),
                    block_z: w(1),
                    shared: w(0),
                    stream: u(STREAM),
                    attributes: w(1),
                })
            };
            (fixed, blob)
        }
        // CU_MEMHOSTALLOC_DEVICEMAP
        Op::MemHostAlloc => (
            b(mem_host_alloc::Request {
                bytes: u(1 << 20),
                flags: w(2),
            }),
            none(),
        ),
        Op::MemFreeHost => (b(mem_free_host::Request { address: u(HOST) }), none()),
        // 100 bytes by 10 rows of 4-byte elements
        Op::MemAllocPitch => (
            b(vgpu_proto::mem_alloc_pitch::Request {
                width: u(100),
                height: u(10),
                element: w(4),
            }),
            none(),
        ),
        // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on
        Op::PointerSetSyncMemops => (
            b(vgpu_proto::pointer_set_sync_memops::Request {
                pointer: u(DPTR),
                value: w(1),
            }),
            none(),
        ),
        // 64 KiB at the client's address, CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP
        Op::MemShare => (
            b(vgpu_proto::mem_share::Request {
                address: u(HOST),
                bytes: u(1 << 16),
                flags: w(3),
            }),
            none(),
        ),
        Op::MemcpyHtoDShared => (
            b(memcpy_htod_shared::Request {
                dst: u(DPTR),
                host: u(HOST),
                bytes: u(4096),
                stream: u(STREAM),
                is_async: 1,
            }),
            none(),
        ),
        Op::MemcpyDtoHShared => (
            b(memcpy_dtoh_shared::Request {
                host: u(HOST),
                src: u(DPTR),
                bytes: u(4096),
                stream: u(STREAM),
                is_async: 1,
            }),
            none(),
        ),
        // CU_POINTER_ATTRIBUTE_MEMORY_TYPE and _DEVICE_ORDINAL
        Op::PointerGetAttributes => (
            b(pointer_get_attributes::Request {
                pointer: u(DPTR),
                single: 0,
            }),
            [2u32, 9].iter().flat_map(|a| a.to_le_bytes()).collect(),
        ),
        Op::MemAllocAsync => (
            b(mem_alloc_async::Request {
                bytes: u(1 << 20),
                stream: u(STREAM),
            }),
            none(),
        ),
        Op::MemFreeAsync => (
            b(mem_free_async::Request {
                dptr: u(DPTR),
                stream: u(STREAM),
            }),
            none(),
        ),
        // CU_STREAM_CAPTURE_MODE_RELAXED.
        Op::ExchangeCaptureMode => (
            b(exchange_capture_mode::Request { mode: U32::new(2) }),
            none(),
        ),
        Op::StreamCaptureInfo => (
            b(stream_capture_info::Request {
                stream: u(STREAM),
                per_thread: 0,
                edges: 1,
            }),
            none(),
        ),
        // Two nodes (ids), no edge data: set them as the dependencies.
        Op::UpdateCaptureDependencies => (
            b(update_capture_dependencies::Request {
                stream: u(STREAM),
                per_thread: 0,
                edges: 0,
                flags: U32::new(1),
                count: U32::new(2),
            }),
            [7u64, 9].iter().flat_map(|n| n.to_le_bytes()).collect(),
        ),
        // Into graph 5 after no node, relaxed.
        Op::BeginCaptureToGraph => (
            b(begin_capture_to_graph::Request {
                stream: u(STREAM),
                per_thread: 0,
                graph: u(5),
                mode: U32::new(2),
                count: U32::new(0),
                edges: 0,
            }),
            none(),
        ),
        // A kernel node of function 4 after no node, one 8-byte parameter.
        Op::GraphKernelNode => (
            b(graph_kernel_node::Request {
                graph: u(5),
                node: u(0),
                exec: u(0),
                function: u(4),
                kernel: u(0),
                ctx: u(0),
                grid_x: U32::new(1),
                grid_y: U32::new(1),
                grid_z: U32::new(1),
                block_x: U32::new(32),
                block_y: U32::new(1),
                block_z: U32::new(1),
                shared: U32::new(0),
                deps: U32::new(0),
                set: 0,
            }),
            vec![0x5a; 8],
        ),
        // 4 rows of 16 4-byte elements at a 256-byte pitch, after no node.
        Op::GraphMemsetNode => (
            b(graph_memset_node::Request {
                what: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                ctx: u(2),
                dst: u(DPTR),
                pitch: u(256),
                value: U32::new(7),
                element: U32::new(4),
                width: u(16),
                height: u(4),
                deps: U32::new(0),
            }),
            none(),
        ),
        Op::GraphKernelNodeParams => (b(graph_kernel_node_params::Request { node: u(9) }), none()),
        // cuGraphAddHostNode after one dependency, running the client's callback 3.
        Op::GraphHostNode => (
            b(graph_host_node::Request {
                what: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                id: u(3),
                deps: U32::new(1),
            }),
            9u64.to_le_bytes().to_vec(),
        ),
        // Remove one default edge 7 -> 9 (`cuGraphRemoveDependencies_v2`).
        Op::GraphEdges => (
            b(graph_edges::Request {
                add: 0,
                graph: u(5),
                count: U32::new(1),
            }),
            [7u64.to_le_bytes(), 9u64.to_le_bytes(), [0; 8]].concat(),
        ),
        // One 32-bit write of 7 at the sample device address.
        Op::StreamBatchMemOp => (
            b(stream_batch_mem_op::Request {
                stream: u(STREAM),
                count: U32::new(1),
                flags: U32::new(0),
            }),
            [
                2u64.to_le_bytes(),
                DPTR.to_le_bytes(),
                7u64.to_le_bytes(),
                [0; 8],
                [0; 8],
                [0; 8],
            ]
            .concat(),
        ),
        // One Snappy decompression (algorithm 2) of 9 bytes into 16, its
        // sizes and addresses around the sample device address.
        Op::MemBatchDecompress => (
            b(mem_batch_decompress::Request {
                stream: u(STREAM),
                count: u(1),
                flags: U32::new(0),
                params: 1,
                error_index: 1,
                index: u(0),
            }),
            [
                9u64.to_le_bytes(),
                16u64.to_le_bytes(),
                (DPTR + 0x100).to_le_bytes(),
                DPTR.to_le_bytes(),
                (DPTR + 0x40).to_le_bytes(),
                2u64.to_le_bytes(),
                [0; 8],
                [0; 8],
            ]
            .concat(),
        ),
        // One reference, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC, the client's callback 4.
        Op::UserObjectCreate => (
            b(user_object_create::Request {
                id: u(4),
                count: U32::new(1),
                flags: U32::new(1),
            }),
            none(),
        ),
        Op::GraphMemsetNodeParams => (b(graph_memset_node_params::Request { node: u(9) }), none()),
        Op::GraphHostNodeParams => (b(graph_host_node_params::Request { node: u(9) }), none()),
        // cuGraphAddMemAllocNode of 256 pinned bytes on device 0, after node 9, with one
        // read-write access descriptor for device 0.
        Op::GraphMemAllocNode => (
            b(graph_mem_alloc_node::Request {
                graph: u(5),
                deps: U32::new(1),
                alloc_type: U32::new(1),
                handle_types: U32::new(0),
                loc_type: U32::new(1),
                loc_id: I32::new(0),
                bytes: u(256),
                access: U32::new(1),
            }),
            [
                9u64.to_le_bytes().to_vec(),
                [1u32, 0, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ]
            .concat(),
        ),
        // cuGraphAddBatchMemOpNode in graph 5 after node 9, context 2: one 32-bit write
        // of 7 to DPTR (CU_STREAM_MEM_OP_WRITE_VALUE_32).
        Op::GraphBatchMemOpNode => (
            b(graph_batch_mem_op_node::Request {
                what: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                ctx: u(2),
                count: U32::new(1),
                flags: U32::new(0),
                deps: U32::new(1),
            }),
            [
                9u64.to_le_bytes().to_vec(),
                2u64.to_le_bytes().to_vec(),
                DPTR.to_le_bytes().to_vec(),
                7u64.to_le_bytes().to_vec(),
                vec![0; 24],
            ]
            .concat(),
        ),
        // An external-semaphore signal node after node 9: semaphore 6, fence value 1.
        Op::GraphExtSemNode => (
            b(graph_ext_sem_node::Request {
                what: 0,
                wait: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                count: U32::new(1),
                deps: U32::new(1),
            }),
            [
                9u64.to_le_bytes().to_vec(),
                6u64.to_le_bytes().to_vec(),
                1u64.to_le_bytes().to_vec(),
                vec![0; 136],
            ]
            .concat(),
        ),
        Op::GraphExtSemNodeParams => (
            b(graph_ext_sem_node_params::Request {
                node: u(9),
                wait: 1,
            }),
            none(),
        ),
        // An IF node of handle 1 with one body, in context 2, after node 9.
        Op::GraphConditionalNode => (
            b(graph_conditional_node::Request {
                graph: u(5),
                deps: U32::new(1),
                edges: 0,
                handle: u(1),
                kind: U32::new(0),
                size: U32::new(1),
                ctx: u(2),
            }),
            9u64.to_le_bytes().to_vec(),
        ),
        // cuGraphAddNode of an event record node (event 4) after node 9.
        Op::GraphNodeGeneric => (
            b(graph_node_generic::Request {
                what: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                deps: U32::new(1),
                edges: 0,
                ty: U32::new(7),
                value: u(4),
                ownership: U32::new(0),
            }),
            9u64.to_le_bytes().to_vec(),
        ),
        Op::GraphBatchMemOpNodeParams => (
            b(graph_batch_mem_op_node_params::Request { node: u(9) }),
            none(),
        ),
        Op::GraphMemAllocNodeParams => (
            b(graph_mem_alloc_node_params::Request { node: u(9) }),
            none(),
        ),
        // cuDeviceSetGraphMemAttribute of device 0: CU_GRAPH_MEM_ATTR_USED_MEM_HIGH reset to 0.
        Op::DeviceGraphMemAttribute => (
            b(device_graph_mem_attribute::Request {
                set: 1,
                dev: I32::new(0),
                attr: U32::new(1),
                value: u(0),
            }),
            none(),
        ),
        // cuGraphAddMemcpyNode of 4 rows of 64 bytes, host (pitch 64) to device (pitch 256).
        Op::GraphMemcpyNode => (
            b(graph_memcpy_node::Request {
                what: 0,
                graph: u(5),
                node: u(0),
                exec: u(0),
                ctx: u(CTX),
                deps: U32::new(0),
                src_kind: 1,
                src_addr: u(0x7f00_1000_0000),
                src_array: u(0),
                src_x: u(0),
                src_y: u(0),
                src_z: u(0),
                src_pitch: u(64),
                src_height: u(4),
                dst_kind: 2,
                dst_addr: u(DPTR),
                dst_array: u(0),
                dst_x: u(0),
                dst_y: u(0),
                dst_z: u(0),
                dst_pitch: u(256),
                dst_height: u(4),
                width: u(64),
                height: u(4),
                depth: u(1),
            }),
            none(),
        ),
        Op::GraphMemcpyNodeParams => (b(graph_memcpy_node_params::Request { node: u(9) }), none()),
        Op::GraphExecUpdate => (
            b(graph_exec_update::Request {
                exec: u(6),
                graph: u(5),
            }),
            none(),
        ),
        // CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.
        Op::GraphDebugDotPrint => (
            b(graph_debug_dot_print::Request {
                graph: u(5),
                flags: U32::new(1),
            }),
            none(),
        ),
        // The first 8 nodes of graph 5.
        Op::GraphQuery => (
            b(graph_query::Request {
                what: 0,
                handle: u(5),
                capacity: u(8),
                want: 1,
                v2: 0,
                edges: 0,
            }),
            none(),
        ),
        // Upload on the stream.
        Op::InstantiateWithParams => (
            b(instantiate_with_params::Request {
                graph: u(5),
                flags: u(2),
                upload_stream: u(STREAM),
                per_thread: 0,
            }),
            none(),
        ),
        // Host to device: 4 rows of 16 bytes packed, into a 64-byte pitch.
        Op::Memcpy2D => (
            b(memcpy2d::Request {
                direction: 1,
                src: u(0),
                src_pitch: u(0),
                src_x: u(0),
                src_y: u(0),
                dst: u(DPTR),
                dst_pitch: u(64),
                dst_x: u(8),
                dst_y: u(2),
                width: u(16),
                height: u(4),
                stream: u(STREAM),
                is_async: 1,
            }),
            vec![0x5a; 64],
        ),
        Op::PoolDestroy => (b(pool_destroy::Request { pool: u(POOL) }), none()),
        // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        Op::PoolGetAttribute => (
            b(pool_get_attribute::Request {
                pool: u(POOL),
                attr: w(4),
            }),
            none(),
        ),
        Op::PoolSetAttribute => (
            b(pool_set_attribute::Request {
                pool: u(POOL),
                attr: w(4),
                value: u(1 << 30),
            }),
            none(),
        ),
        Op::PoolAllocAsync => (
            b(pool_alloc_async::Request {
                bytes: u(1 << 20),
                pool: u(POOL),
                stream: u(STREAM),
            }),
            none(),
        ),
        // 64 MiB reserved, 2 MiB granularity, no hint.
        Op::MemAddressReserve => (
            b(mem_address_reserve::Request {
                size: u(64 << 20),
                alignment: u(2 << 20),
                addr: u(0),
                flags: u(0),
            }),
            none(),
        ),
        Op::MemAddressFree => (
            b(mem_address_free::Request {
                ptr: u(DPTR),
                size: u(64 << 20),
            }),
            none(),
        ),
        // Pinned memory on device 0, shareable as a POSIX descriptor.
        Op::MemCreate => {
            let mut prop = [0u8; 32];
            prop[0] = 1;
            prop[4] = 1;
            prop[8] = 1;
            (
                b(mem_create::Request {
                    size: u(2 << 20),
                    flags: u(0),
                    prop,
                }),
                none(),
            )
        }
        Op::MemRelease => (
            b(mem_release::Request {
                handle: u(VMM_HANDLE),
            }),
            none(),
        ),
        Op::MemMap => (
            b(mem_map::Request {
                ptr: u(DPTR),
                size: u(2 << 20),
                offset: u(0),
                handle: u(VMM_HANDLE),
                flags: u(0),
            }),
            none(),
        ),
        Op::MemUnmap => (
            b(mem_unmap::Request {
                ptr: u(DPTR),
                size: u(2 << 20),
            }),
            none(),
        ),
        // Device 0 (CU_MEM_LOCATION_TYPE_DEVICE), read-write.
        Op::MemSetAccess => (
            b(mem_set_access::Request {
                ptr: u(DPTR),
                size: u(2 << 20),
                count: w(1),
            }),
            [1u32, 0, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        Op::MemRetainAllocationHandle => (
            b(mem_retain_allocation_handle::Request { addr: u(DPTR) }),
            none(),
        ),
        Op::MemGetAllocationProperties => (
            b(mem_get_allocation_properties::Request {
                handle: u(VMM_HANDLE),
            }),
            none(),
        ),
        // One device, 2 MiB, no shareable handle types.
        Op::MulticastCreate => {
            let mut prop = [0u8; 32];
            prop[0] = 1;
            prop[8..16].copy_from_slice(&(2u64 << 20).to_le_bytes());
            (b(multicast_create::Request { prop }), none())
        }
        Op::MulticastAddDevice => (
            b(multicast_add_device::Request {
                handle: u(VMM_HANDLE),
                device: I32::new(0),
            }),
            none(),
        ),
        Op::MulticastBindMem => (
            b(multicast_bind_mem::Request {
                handle: u(VMM_HANDLE),
                mc_offset: u(0),
                mem: u(VMM_HANDLE + 1),
                mem_offset: u(0),
                size: u(2 << 20),
                flags: u(0),
            }),
            none(),
        ),
        Op::MulticastBindAddr => (
            b(multicast_bind_addr::Request {
                handle: u(VMM_HANDLE),
                mc_offset: u(0),
                ptr: u(DPTR),
                size: u(2 << 20),
                flags: u(0),
            }),
            none(),
        ),
        Op::MulticastUnbind => (
            b(multicast_unbind::Request {
                handle: u(VMM_HANDLE),
                device: I32::new(0),
                mc_offset: u(0),
                size: u(2 << 20),
            }),
            none(),
        ),
        Op::GreenCtxDestroy => (
            b(green_ctx_destroy::Request {
                green: u(vgpu_proto::ids::worker(vgpu_abi::HandleKind::GreenCtx, 1)),
            }),
            none(),
        ),
        // An SM resource (type 1) of 132 SMs, split into groups of 8.
        Op::SmResourceSplit => {
            let mut input = [0u8; 144];
            input[0] = 1;
            input[96] = 132;
            input[100] = 8;
            input[104] = 8;
            (
                b(sm_resource_split::Request {
                    input,
                    groups: w(4),
                    want_result: 1,
                    want_remaining: 1,
                    use_flags: w(0),
                    min_count: w(8),
                }),
                none(),
            )
        }
        Op::IpcGetMemHandle => (b(ipc_get_mem_handle::Request { dptr: u(DPTR) }), none()),
        Op::IpcOpenMemHandle => (
            b(ipc_open_mem_handle::Request {
                handle: [0x5a; 64],
                flags: w(1),
            }),
            none(),
        ),
        Op::IpcCloseMemHandle => (b(ipc_close_mem_handle::Request { dptr: u(DPTR) }), none()),
        Op::IpcGetEventHandle => (b(ipc_get_event_handle::Request { event: u(EVENT) }), none()),
        Op::IpcOpenEventHandle => (
            b(ipc_open_event_handle::Request {
                event: u(EVENT + 1),
                handle: [0xa5; 64],
            }),
            none(),
        ),
        Op::MemExportFd => (
            b(mem_export_fd::Request {
                handle: u(VMM_HANDLE),
                flags: u(0),
            }),
            none(),
        ),
        Op::MemExportShareable => (
            b(mem_export_shareable::Request {
                handle: u(VMM_HANDLE),
                kind: w(8),
                flags: u(0),
            }),
            none(),
        ),
        Op::MemImportFd => (b(mem_import_fd::Request {}), none()),
        Op::MemImportShareable => (
            b(mem_import_shareable::Request {
                kind: w(8),
                data: [0x3c; 64],
            }),
            none(),
        ),
        Op::MemRangeHandleFd => (
            b(mem_range_handle_fd::Request {
                dptr: u(DPTR),
                size: u(1 << 20),
                kind: w(1),
                flags: u(0),
            }),
            none(),
        ),
        Op::PoolExportFd => (
            b(pool_export_fd::Request {
                pool: u(POOL),
                flags: u(0),
            }),
            none(),
        ),
        Op::PoolExportShareable => (
            b(pool_export_shareable::Request {
                pool: u(POOL),
                kind: w(8),
                flags: u(0),
            }),
            none(),
        ),
        Op::PoolImportFd => (b(pool_import_fd::Request { flags: u(0) }), none()),
        Op::PoolImportShareable => (
            b(pool_import_shareable::Request {
                kind: w(8),
                flags: u(0),
                data: [0x4b; 64],
            }),
            none(),
        ),
        Op::PoolExportPointer => (b(pool_export_pointer::Request { dptr: u(DPTR) }), none()),
        Op::PoolImportPointer => (
            b(pool_import_pointer::Request {
                pool: u(POOL),
                data: [0x6d; 64],
            }),
            none(),
        ),
        Op::ImportExternalMemoryFd => (
            b(import_external_memory_fd::Request {
                desc: {
                    let mut d = [0u8; 104];
                    d[0] = 1;
                    d[24..32].copy_from_slice(&(2u64 << 20).to_le_bytes());
                    d
                },
            }),
            none(),
        ),
        Op::ImportExternalMemory => (
            b(import_external_memory::Request {
                desc: {
                    let mut d = [0u8; 104];
                    d[0] = 2;
                    d
                },
            }),
            none(),
        ),
        Op::ExternalMemoryMappedBuffer => (
            b(external_memory_mapped_buffer::Request {
                mem: u(0x4f00_8000_0000_0001),
                offset: u(0),
                size: u(2 << 20),
                flags: w(0),
            }),
            none(),
        ),
        Op::DestroyExternalMemory => (
            b(destroy_external_memory::Request {
                mem: u(0x4f00_8000_0000_0001),
            }),
            none(),
        ),
        Op::ImportExternalSemaphoreFd => (
            b(import_external_semaphore_fd::Request {
                desc: {
                    let mut d = [0u8; 96];
                    d[0] = 9;
                    d
                },
            }),
            none(),
        ),
        Op::ImportExternalSemaphore => (
            b(import_external_semaphore::Request {
                desc: {
                    let mut d = [0u8; 96];
                    d[0] = 2;
                    d
                },
            }),
            none(),
        ),
        Op::ExternalSemaphores => (
            b(external_semaphores::Request {
                stream: u(STREAM),
                count: w(1),
                wait: 1,
            }),
            {
                let mut blob = 0x4f00_8000_0000_0002u64.to_le_bytes().to_vec();
                blob.extend_from_slice(&[0u8; 144]);
                blob[8] = 2;
                blob
            },
        ),
        Op::DestroyExternalSemaphore => (
            b(destroy_external_semaphore::Request {
                sem: u(0x4f00_8000_0000_0002),
            }),
            none(),
        ),
        // One map info; its contents are the driver's to judge.
        Op::MemMapArrayAsync => (
            b(mem_map_array_async::Request {
                count: w(1),
                stream: u(STREAM),
                per_thread: 0,
            }),
            vec![0u8; size_of::<vgpu_abi::types::CUarrayMapInfo>()],
        ),
        Op::ArrayDestroy => (b(array_destroy::Request { array: u(ARRAY) }), none()),
        Op::MipmappedArrayDestroy => (
            b(mipmapped_array_destroy::Request {
                mipmap: u(ARRAY + 1),
            }),
            none(),
        ),
        // Host to array: 2 rows of 8 bytes packed, into a 2D array at (4, 1).
        Op::MemcpyArray => (
            b(memcpy_array::Request {
                src_kind: 1,
                src: u(0),
                src_array: u(0),
                src_x: u(0),
                src_y: u(0),
                src_z: u(0),
                src_pitch: u(0),
                src_height: u(0),
                dst_kind: 3,
                dst: u(0),
                dst_array: u(ARRAY),
                dst_x: u(4),
                dst_y: u(1),
                dst_z: u(0),
                dst_pitch: u(0),
                dst_height: u(0),
                width: u(8),
                height: u(2),
                depth: u(1),
                stream: u(STREAM),
                is_async: 1,
            }),
            vec![0x3c; 16],
        ),
        Op::MemcpyHtoA => (
            b(memcpy_htoa::Request {
                array: u(ARRAY),
                offset: u(16),
                stream: u(0),
                is_async: 0,
            }),
            vec![0xa5; 32],
        ),
        Op::MemcpyAtoH => (
            b(memcpy_atoh::Request {
                array: u(ARRAY),
                offset: u(16),
                bytes: u(32),
                stream: u(STREAM),
                is_async: 1,
            }),
            none(),
        ),
        // A texture over an array: resource (144 bytes) then texture (104) descriptors.
        Op::TexObjectCreate => (
            b(tex_object_create::Request {
                surface: 0,
                view: 0,
            }),
            vec![0x11; 144 + 104],
        ),
        Op::TexObjectDestroy => (
            b(tex_object_destroy::Request {
                object: u(1),
                surface: 0,
            }),
            none(),
        ),
        Op::TexObjectDescribe => (
            b(tex_object_describe::Request {
                object: u(1),
                surface: 1,
                what: 0,
            }),
            none(),
        ),
        // A 2D tiled map of 32-bit floats: globalDim (2 u64), globalStrides
        // (1 u64), boxDim (2 u32), elementStrides (2 u32).
        Op::TensorMapEncode => (
            b(tensor_map_encode::Request {
                kind: 0,
                data_type: U32::new(7),
                rank: U32::new(2),
                address: u(DPTR),
                channels_per_pixel: U32::new(0),
                pixels_per_column: U32::new(0),
                interleave: U32::new(0),
                mode: U32::new(0),
                swizzle: U32::new(0),
                l2_promotion: U32::new(0),
                oob_fill: U32::new(0),
                lower_width: I32::new(0),
                upper_width: I32::new(0),
            }),
            vec![0x22; 2 * 8 + 8 + 2 * 4 + 2 * 4],
        ),
        Op::TensorMapReplaceAddress => (
            b(tensor_map_replace_address::Request { address: u(DPTR) }),
            vec![0x33; 128],
        ),
        // a 128-thread block, no attributes
        Op::OccupancyMaxPotentialClusterSize => (
            b(vgpu_proto::occupancy_max_potential_cluster_size::Request {
                function: u(FUNCTION),
                grid_x: w(8),
                grid_y: w(1),
                grid_z: w(1),
                block_x: w(128),
                block_y: w(1),
                block_z: w(1),
                shared: w(0),
                stream: u(STREAM),
                attributes: w(0),
            }),
            none(),
        ),
        // 8 bytes at offset 0 of the function's legacy parameters
        Op::ParamSetv => (
            b(vgpu_proto::param_setv::Request {
                function: u(FUNCTION),
                offset: zerocopy::little_endian::I32::new(0),
            }),
            DPTR.to_le_bytes().to_vec(),
        ),
        // cuCheckpointProcessLock with a 1000 ms timeout
        Op::CheckpointProcess => (
            b(vgpu_proto::checkpoint_process::Request {
                action: 2,
                timeout_ms: w(1000),
                gpu_pairs: w(0),
            }),
            none(),
        ),
        // cuCoredumpGetAttributeGlobal(CU_COREDUMP_ENABLE_ON_EXCEPTION), one byte
        Op::CoredumpAttribute => (
            b(vgpu_proto::coredump_attribute::Request {
                attrib: w(1),
                global: 1,
                set: 0,
                size: u(1),
            }),
            none(),
        ),
        // everything after iterator 3, into 4096 bytes
        Op::LogsDump => (
            b(vgpu_proto::logs_dump::Request {
                has_iterator: 1,
                iterator: w(3),
                size: u(4096),
                flags: w(0),
            }),
            none(),
        ),
        // register a log callback as the client's callback 3
        // take the events a lane holds
        Op::TakeEvents => (b(vgpu_proto::take_events::Request {}), none()),
        // NVML: the clock of type 1 (SM) on device 0, a host value
        Op::NvmlQuery => (
            b(vgpu_proto::nvml_query::Request {
                device: w(0),
                what: w(101),
                arg: w(1),
            }),
            none(),
        ),
        Op::LogsCallback => (
            b(vgpu_proto::logs_callback::Request {
                id: u(3),
                register: 1,
                null: 0,
            }),
            none(),
        ),
        // register an async notification on device 0 as callback 4
        Op::AsyncNotification => (
            b(vgpu_proto::async_notification::Request {
                device: zerocopy::little_endian::I32::new(0),
                id: u(4),
                register: 1,
                null: 0,
                no_out: 0,
            }),
            none(),
        ),
        // one entry, no flags: function, stream, a 16x256 grid, 8 parameter bytes
        Op::LaunchMultiDevice => (
            b(vgpu_proto::launch_multi_device::Request {
                devices: w(1),
                flags: w(0),
            }),
            [
                0x4600_0000_0000_0001u64.to_le_bytes(),
                0x5300_0000_0000_0001u64.to_le_bytes(),
            ]
            .concat()
            .into_iter()
            .chain(
                [16u32, 1, 1, 256, 1, 1, 0, 8]
                    .into_iter()
                    .flat_map(u32::to_le_bytes),
            )
            .chain(7u64.to_le_bytes())
            .collect(),
        ),
        // a unified function by name
        Op::LibraryUnifiedFunction => (
            b(vgpu_proto::library_unified_function::Request {
                library: u(LIBRARY),
            }),
            b"device_add".to_vec(),
        ),
        // link 0x4c00000000000001 with one option: CU_JIT_LOG_VERBOSE = 1
        Op::LinkCreate => (
            b(vgpu_proto::link_create::Request {
                link: u(0x4c00_0000_0000_0001),
                options: w(1),
            }),
            [12u32.to_le_bytes(), 0u32.to_le_bytes()]
                .concat()
                .into_iter()
                .chain(1u64.to_le_bytes())
                .collect(),
        ),
        // a PTX input named "a.ptx", inline, no options
        Op::LinkAddData => (
            b(vgpu_proto::link_add_data::Request {
                link: u(0x4c00_0000_0000_0001),
                kind: w(1),
                options: w(0),
                stage: u(0),
                has_name: 1,
                name_len: w(5),
            }),
            b"a.ptx.version 8.0\n\0".to_vec(),
        ),
        Op::LinkComplete => (
            b(vgpu_proto::link_complete::Request {
                link: u(0x4c00_0000_0000_0001),
            }),
            none(),
        ),
        Op::LinkDestroy => (
            b(vgpu_proto::link_destroy::Request {
                link: u(0x4c00_0000_0000_0001),
            }),
            none(),
        ),
        other => vgpu_proto::sample_request(other)
            .unwrap_or_else(|| panic!("{other:?}: no sample: a hand-written op needs one here")),
    }
}

/// A representative request of `op`: generated for table calls, hand-written
/// for the hand-written operations.
pub fn sample_request(op: Op) -> Request {
    let (fixed, blob) = vgpu_proto::sample_request(op).unwrap_or_else(|| manual_sample(op));
    let ctx = if matches!(
        op,
        Op::OpenLane | Op::OpenCallbacks | Op::OpenOutput | Op::NvmlQuery | Op::CtxCreate
    ) {
        0
    } else {
        CTX
    };
    // Posted requests carry their ticket and the one they follow, the others
    // the fence of tickets issued before them; the control connection's
    // OpenLane is unordered.
    let (flags, order, after) = if op.postable() {
        (
            vgpu_proto::flags::POSTED | vgpu_proto::flags::AFTER,
            0x41,
            0x3f,
        )
    } else if matches!(
        op,
        Op::OpenLane | Op::OpenCallbacks | Op::OpenOutput | Op::NvmlQuery
    ) {
        (0, 0, 0)
    } else {
        (0, 0x42, 0)
    };
    Request {
        op,
        seq: 0x100 + u32::from(op as u16),
        ctx,
        flags,
        order,
        after,
        fixed,
        blob: blob.into(),
    }
}

/// The reply to `ModuleGetFunction`: three parameters and their layout.
pub fn sample_response() -> Response {
    let mut blob = Vec::new();
    for (offset, size) in [(0u32, 8u32), (8, 8), (16, 8), (24, 4)] {
        blob.extend_from_slice(&offset.to_le_bytes());
        blob.extend_from_slice(&size.to_le_bytes());
    }
    Response {
        status: 0,
        seq: 0x100 + u32::from(Op::ModuleGetFunction as u16),
        flags: 0,
        fixed: vgpu_proto::module_get_function::Reply {
            params: U32::new(4),
        }
        .as_bytes()
        .to_vec(),
        blob,
    }
}

/// A failed `MemAlloc`: `CUDA_ERROR_OUT_OF_MEMORY`, nothing else.
pub fn sample_error_response() -> Response {
    Response {
        status: 2,
        seq: 0x100 + u32::from(Op::MemAlloc as u16),
        flags: 0,
        fixed: vec![],
        blob: vec![],
    }
}

/// A failed `ModuleLoadData` (`CUDA_ERROR_INVALID_IMAGE`) whose driver
/// logged on the lane's thread: the lane holds events for `TakeEvents`.
pub fn sample_events_response() -> Response {
    Response {
        status: 200,
        seq: 0x100 + u32::from(Op::ModuleLoadData as u16),
        flags: vgpu_proto::reply_flags::EVENTS,
        fixed: vec![],
        blob: vec![],
    }
}

pub fn sample_hello() -> Hello {
    Hello {
        features: features::ALL,
        pid: 4242,
        uid: 1000,
        env: vec![
            ("CUDA_VISIBLE_DEVICES".into(), "0,1".into()),
            ("CUDA_DEVICE_ORDER".into(), "PCI_BUS_ID".into()),
            (
                "CUDA_CACHE_PATH".into(),
                "/home/user/.nv/ComputeCache".into(),
            ),
        ],
    }
}

fn device(
    name: &str,
    uuid_seed: u8,
    pci: &str,
    total_mem: u64,
    attrs: &[(usize, i32)],
) -> DeviceSnapshot {
    let mut d = DeviceSnapshot::default();
    fill_str(&mut d.name, name);
    for (i, b) in d.uuid.iter_mut().enumerate() {
        *b = uuid_seed.wrapping_add(u8::try_from(i).expect("16 uuid bytes").wrapping_mul(17));
    }
    fill_str(&mut d.pci_bus_id, pci);
    d.total_mem = U64::new(total_mem);
    for &(id, value) in attrs {
        d.set_attr(id, value);
    }
    d
}

/// `CUdevice_attribute` ids used by the samples.
pub mod attr {
    pub const MAX_THREADS_PER_BLOCK: usize = 1;
    pub const MAX_BLOCK_DIM_Z: usize = 4;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: usize = 8;
    pub const WARP_SIZE: usize = 10;
    pub const MULTIPROCESSOR_COUNT: usize = 16;
    pub const PCI_BUS_ID: usize = 33;
    pub const COMPUTE_CAPABILITY_MAJOR: usize = 75;
    pub const COMPUTE_CAPABILITY_MINOR: usize = 76;
}

/// A worker with two devices (CUDA 13.0).
pub fn sample_welcome() -> Welcome {
    let common = [
        (attr::MAX_THREADS_PER_BLOCK, 1024),
        (attr::MAX_BLOCK_DIM_Z, 64),
        (attr::MAX_SHARED_MEMORY_PER_BLOCK, 48 << 10),
        (attr::WARP_SIZE, 32),
    ];
    let h100 = [
        (attr::MULTIPROCESSOR_COUNT, 132),
        (attr::PCI_BUS_ID, 0x5e),
        (attr::COMPUTE_CAPABILITY_MAJOR, 9),
        (attr::COMPUTE_CAPABILITY_MINOR, 0),
    ];
    let l4 = [
        (attr::MULTIPROCESSOR_COUNT, 58),
        (attr::PCI_BUS_ID, 0x9a),
        (attr::COMPUTE_CAPABILITY_MAJOR, 8),
        (attr::COMPUTE_CAPABILITY_MINOR, 9),
    ];
    Welcome {
        init_status: 0,
        driver_version: 13000,
        features: features::ALL,
        devices: vec![
            device(
                "NVIDIA H100 80GB HBM3",
                0x3c,
                "0000:5E:00.0",
                81_559 << 20,
                &[&common[..], &h100].concat(),
            ),
            device(
                "NVIDIA L4",
                0xa1,
                "0000:9A:00.0",
                22_491 << 20,
                &[&common[..], &l4].concat(),
            ),
        ],
    }
}

/// `cuInit` failed with `CUDA_ERROR_NO_DEVICE`: no devices to describe.
pub fn sample_welcome_no_device() -> Welcome {
    Welcome {
        init_status: 100,
        driver_version: 13000,
        features: features::ALL,
        devices: vec![],
    }
}

// ---- encoding helpers and comparisons --------------------------------------

pub fn encode_hello(h: &Hello) -> Vec<u8> {
    let mut out = Vec::new();
    h.write(&mut out).expect("the hello encodes");
    out
}

pub fn encode_welcome(w: &Welcome) -> Vec<u8> {
    let mut out = Vec::new();
    w.write(&mut out).expect("the welcome encodes");
    out
}

/// Everything a [`Welcome`] carries, comparable (`Welcome` has no `PartialEq`).
pub fn welcome_key(w: &Welcome) -> (u32, i32, u64, Vec<Vec<u8>>) {
    let devices = w.devices.iter().map(|d| d.as_bytes().to_vec()).collect();
    (w.init_status, w.driver_version, w.features, devices)
}

/// What the fuzz target of `target` checks on one input: decoding never
/// panics, and whatever decodes re-encodes and decodes to the same value.
/// `Err` is the decoder's verdict on the input.
pub fn fuzz_check(target: &str, data: &[u8]) -> Result<(), ProtoError> {
    match target {
        "request" => {
            // The ring path's decoder takes exactly the frames the stream
            // decoder takes that fill the input, and decodes them alike.
            let mut ring = Request::empty();
            if vgpu_proto::decode_request_into(data, &mut ring).is_ok() {
                let req = Request::decode(data).expect("a ring frame decodes as a stream");
                assert_eq!(req, ring);
                assert_eq!(req.encode().expect("re-encodes").len(), data.len());
            }
            let req = Request::decode(data)?;
            let bytes = req.encode().expect("a decoded request re-encodes");
            let again = Request::decode(&bytes).expect("a re-encoded request decodes");
            assert_eq!(again, req);
        }
        "response" => {
            let resp = Response::read(&mut &data[..])?;
            let bytes = resp.encode().expect("a decoded response re-encodes");
            let again = Response::read(&mut &bytes[..]).expect("a re-encoded response decodes");
            assert_eq!(again, resp);
        }
        "hello" => {
            let hello = Hello::read(&mut &data[..])?;
            let bytes = encode_hello(&hello);
            let again = Hello::read(&mut &bytes[..]).expect("a re-encoded hello decodes");
            assert_eq!(again, hello);
        }
        "welcome" => {
            let welcome = Welcome::read(&mut &data[..])?;
            let bytes = encode_welcome(&welcome);
            let again = Welcome::read(&mut &bytes[..]).expect("a re-encoded welcome decodes");
            assert_eq!(welcome_key(&again), welcome_key(&welcome));
        }
        other => panic!("no fuzz target {other}"),
    }
    Ok(())
}

// ---- the annotated hex format ----------------------------------------------

/// Renders `# `-comment lines, then each section as a `## label` line and
/// its bytes, 16 to a line.
pub fn hex_text(comment: &[String], sections: &[(String, &[u8])]) -> String {
    let mut out = String::new();
    for line in comment {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    for (label, bytes) in sections {
        out.push_str(&format!("## {label} ({} B)\n", bytes.len()));
        for chunk in bytes.chunks(16) {
            let line: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&line.join(" "));
            out.push('\n');
        }
    }
    out
}

/// Parses the hex format: `#` lines are comments, whitespace is ignored.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let mut digits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        for c in line.chars().filter(|c| !c.is_whitespace()) {
            let d = c
                .to_digit(16)
                .ok_or_else(|| format!("line {}: {c:?} is not a hex digit", n + 1))?;
            digits.push(u8::try_from(d).expect("a hex digit fits a byte"));
        }
    }
    if digits.len() % 2 != 0 {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    Ok(digits.chunks_exact(2).map(|p| p[0] << 4 | p[1]).collect())
}

fn blob_note(blob: &[u8]) -> String {
    let text = blob.strip_suffix(&[0]).unwrap_or(blob);
    if !blob.is_empty()
        && text
            .iter()
            .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\n')
    {
        let s = std::str::from_utf8(text).expect("checked ASCII");
        let nul = if text.len() < blob.len() {
            " + NUL"
        } else {
            ""
        };
        format!("blob {} B: {:?}{nul}", blob.len(), s)
    } else {
        format!("blob {} B", blob.len())
    }
}

fn hexes(bytes: &[u8]) -> String {
    let v: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    v.join("")
}

const REGEN: &str = "Regenerate (after a deliberate wire change): VGPU_BLESS=1 cargo test -p vgpu-proto --test golden";

/// A golden message and the value it must decode to.
pub enum Sample {
    Request(Request),
    Response(Response),
    Hello(Hello),
    Welcome(Welcome),
    /// A status query (it has no fields).
    StatusQuery,
    SessionList(Vec<SessionRecord>),
}

pub struct Fixture {
    /// File name under `fixtures/proto/`.
    pub file: String,
    /// The encoding of `sample`.
    pub bytes: Vec<u8>,
    /// The annotated hex text of `bytes`.
    pub text: String,
    pub sample: Sample,
}

impl Fixture {
    fn new(
        file: String,
        comment: Vec<String>,
        sections: Vec<(String, &[u8])>,
        bytes: Vec<u8>,
        sample: Sample,
    ) -> Self {
        let joined: Vec<u8> = sections
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        assert_eq!(
            joined, bytes,
            "{file}: the annotated sections must cover the encoding exactly"
        );
        let text = hex_text(&comment, &sections);
        Fixture {
            file,
            bytes,
            text,
            sample,
        }
    }
}

fn request_fixture(op: Op) -> Fixture {
    let req = sample_request(op);
    let bytes = req.encode().expect("the sample request encodes");
    let n = op.request_len();
    let comment = vec![
        format!(
            "vgpu protocol v{PROTOCOL_VERSION} golden fixture: Request {} (wire id {})",
            op.name(),
            op as u16
        ),
        format!(
            "seq={:#x} ctx={} flags={:#x} order={:#x} after={:#x} fixed={}",
            req.seq,
            req.ctx,
            req.flags,
            req.order,
            req.after,
            hexes(&req.fixed)
        ),
        blob_note(&req.blob),
        REGEN.to_owned(),
    ];
    let head = size_of::<RequestHead>();
    let sections = vec![
        ("RequestHead".to_owned(), &bytes[..head]),
        (
            format!("fixed: {} request, {n} B", op.name()),
            &bytes[head..head + n],
        ),
        ("blob".to_owned(), &bytes[head + n..]),
    ];
    let file = format!("request-{}.hex", op.name());
    Fixture::new(file, comment, sections, bytes.clone(), Sample::Request(req))
}

fn response_fixture(file: &str, what: &str, resp: Response) -> Fixture {
    let bytes = resp.encode().expect("the sample response encodes");
    let n = resp.fixed.len();
    let comment = vec![
        format!("vgpu protocol v{PROTOCOL_VERSION} golden fixture: Response, {what}"),
        format!(
            "status={} seq={:#x} flags={:#x} fixed={}",
            resp.status,
            resp.seq,
            resp.flags,
            hexes(&resp.fixed)
        ),
        blob_note(&resp.blob),
        REGEN.to_owned(),
    ];
    let head = size_of::<ResponseHead>();
    let sections = vec![
        ("ResponseHead".to_owned(), &bytes[..head]),
        (format!("fixed: reply, {n} B"), &bytes[head..head + n]),
        ("blob".to_owned(), &bytes[head + n..]),
    ];
    Fixture::new(
        file.to_owned(),
        comment,
        sections,
        bytes.clone(),
        Sample::Response(resp),
    )
}

fn hello_fixture() -> Fixture {
    let hello = sample_hello();
    let bytes = encode_hello(&hello);
    let mut comment = vec![
        format!("vgpu protocol v{PROTOCOL_VERSION} golden fixture: Hello (client -> worker)"),
        format!(
            "schema={SCHEMA_HASH:#018x} features={:#x} pid={} uid={}",
            hello.features, hello.pid, hello.uid
        ),
    ];
    comment.extend(hello.env.iter().map(|(k, v)| format!("env {k}={v}")));
    comment.push(REGEN.to_owned());
    let head = size_of::<HelloHead>();
    let sections = vec![
        ("HelloHead".to_owned(), &bytes[..head]),
        ("env: KEY=VALUE\\0 entries".to_owned(), &bytes[head..]),
    ];
    Fixture::new(
        "hello.hex".to_owned(),
        comment,
        sections,
        bytes.clone(),
        Sample::Hello(hello),
    )
}

fn welcome_fixture() -> Fixture {
    let welcome = sample_welcome();
    let bytes = encode_welcome(&welcome);
    let mut comment = vec![
        format!("vgpu protocol v{PROTOCOL_VERSION} golden fixture: Welcome (worker -> client)"),
        format!(
            "init_status={} driver_version={} features={:#x} devices={}",
            welcome.init_status,
            welcome.driver_version,
            welcome.features,
            welcome.devices.len()
        ),
    ];
    for (i, d) in welcome.devices.iter().enumerate() {
        let attrs: Vec<String> = (0..vgpu_proto::ATTR_SLOTS)
            .filter_map(|a| d.attr(a).map(|v| format!("{a}={v}")))
            .collect();
        comment.push(format!(
            "device {i}: {:?} pci {} total_mem {} attrs {}",
            d.name_str(),
            d.pci_bus_id_str(),
            d.total_mem.get(),
            attrs.join(" ")
        ));
    }
    comment.push(REGEN.to_owned());
    let mut sections = vec![("WelcomeHead".to_owned(), &bytes[..size_of::<WelcomeHead>()])];
    for (i, d) in welcome.devices.iter().enumerate() {
        sections.push((format!("device {i}: name"), d.name.as_bytes()));
        sections.push((format!("device {i}: uuid"), d.uuid.as_bytes()));
        sections.push((format!("device {i}: pci_bus_id"), d.pci_bus_id.as_bytes()));
        sections.push((format!("device {i}: total_mem"), d.total_mem.as_bytes()));
        sections.push((format!("device {i}: attr_valid"), d.attr_valid.as_bytes()));
        sections.push((format!("device {i}: attrs"), d.attrs.as_bytes()));
    }
    Fixture::new(
        "welcome.hex".to_owned(),
        comment,
        sections,
        bytes.clone(),
        Sample::Welcome(welcome.clone()),
    )
}

/// Every golden fixture: one per op's request, three responses, the hello and
/// the welcome.
pub fn fixtures() -> Vec<Fixture> {
    let mut all: Vec<Fixture> = Op::ALL.iter().map(|&op| request_fixture(op)).collect();
    all.push(response_fixture(
        "response.hex",
        "fixed part and blob (reply to ModuleGetFunction)",
        sample_response(),
    ));
    all.push(response_fixture(
        "response-error.hex",
        "error status, no fixed part, no blob (failed MemAlloc)",
        sample_error_response(),
    ));
    all.push(response_fixture(
        "response-events.hex",
        "error status, events flag (failed ModuleLoadData that logged)",
        sample_events_response(),
    ));
    all.push(hello_fixture());
    all.push(welcome_fixture());
    all.extend(status_fixtures());
    all
}

/// Two live sessions, as the supervisor lists them.
pub fn sample_sessions() -> Vec<SessionRecord> {
    let record = |worker: u32, client: u32, uid: u32, transport: u32, memory: u64| SessionRecord {
        worker_pid: worker.into(),
        client_pid: client.into(),
        uid: uid.into(),
        transport: transport.into(),
        device_memory: memory.into(),
        started_ms: 1_795_000_000_123u64.into(),
        tenant: [0; sessions::TENANT_NAME_BYTES],
    };
    let mut first = record(4100, 4001, 1000, sessions::transport::UNIX_RINGS, 3 << 20);
    first.set_tenant("research");
    vec![first, record(4200, 77, 1001, sessions::transport::TCP, 0)]
}

/// The status query and the supervisor's list of live sessions.
fn status_fixtures() -> Vec<Fixture> {
    let mut query = Vec::new();
    sessions::write_query(&mut query).expect("the query encodes");
    let q = Fixture::new(
        "status-query.hex".to_owned(),
        vec![
            format!("vgpu protocol v{PROTOCOL_VERSION} golden fixture: status query (client -> supervisor)"),
            REGEN.to_owned(),
        ],
        vec![("StatusQuery".to_owned(), &query[..])],
        query.clone(),
        Sample::StatusQuery,
    );
    let list = sample_sessions();
    let mut bytes = Vec::new();
    sessions::write_list(&mut bytes, &list).expect("the list encodes");
    let mut comment = vec![format!(
        "vgpu protocol v{PROTOCOL_VERSION} golden fixture: session list (supervisor -> client), {} sessions",
        list.len()
    )];
    comment.extend(list.iter().map(|r| {
        format!(
            "worker {} client {} uid {} transport {} memory {} started_ms {} tenant {:?}",
            r.worker_pid,
            r.client_pid,
            r.uid,
            r.transport,
            r.device_memory,
            r.started_ms,
            r.tenant_name()
        )
    }));
    comment.push(REGEN.to_owned());
    let head = size_of::<sessions::ListHead>();
    let record = size_of::<SessionRecord>();
    let mut sections = vec![("ListHead".to_owned(), &bytes[..head])];
    for i in 0..list.len() {
        let at = head + i * record;
        sections.push((format!("session {i}"), &bytes[at..at + record]));
    }
    let l = Fixture::new(
        "session-list.hex".to_owned(),
        comment,
        sections,
        bytes.clone(),
        Sample::SessionList(list),
    );
    vec![q, l]
}

/// The text of `fixtures/proto/schema-hash.txt`.
pub fn schema_hash_text() -> String {
    format!(
        "# SCHEMA_HASH of the protocol v{PROTOCOL_VERSION} op table (crates/abi/src/remote/table.rs, {} ops).\n\
         # A different value is a wire break: peers built from the two tables refuse each other.\n\
         # {REGEN}\n\
         {SCHEMA_HASH:#018x}\n",
        Op::ALL.len()
    )
}

/// Parses the recorded hash: the one line that is not a comment.
pub fn parse_schema_hash(text: &str) -> Result<u64, String> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let line = lines.next().ok_or("no hash line")?;
    if let Some(extra) = lines.next() {
        return Err(format!("unexpected line {extra:?}"));
    }
    let hex = line
        .strip_prefix("0x")
        .ok_or_else(|| format!("{line:?} does not start with 0x"))?;
    u64::from_str_radix(hex, 16).map_err(|e| format!("{line:?}: {e}"))
}

// ---- fuzz seed corpora -----------------------------------------------------

/// One committed seed. `ok-*` seeds must decode, `err-*` seeds must be
/// refused; the corpus replay test holds them to that.
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A seed's file name and bytes.
type Named = (String, Vec<u8>);

fn patched(mut bytes: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    bytes[at..at + with.len()].copy_from_slice(with);
    bytes
}

fn cut(bytes: &[u8], len: usize) -> Vec<u8> {
    bytes[..len].to_vec()
}

/// A hello head that passes magic, version and schema, followed by `env`.
pub fn hello_with_raw_env(env: &[u8]) -> Vec<u8> {
    let head = HelloHead {
        magic: U32::new(HELLO_MAGIC),
        version: U16::new(PROTOCOL_VERSION),
        schema: U64::new(SCHEMA_HASH),
        env_len: U32::new(u32::try_from(env.len()).expect("test env blocks are small")),
        ..Default::default()
    };
    [head.as_bytes(), env].concat()
}

fn le32(v: usize) -> [u8; 4] {
    u32::try_from(v).expect("fits u32").to_le_bytes()
}

fn le16(v: usize) -> [u8; 2] {
    u16::try_from(v).expect("fits u16").to_le_bytes()
}

fn request_seeds() -> Vec<Named> {
    let mut s: Vec<Named> = Op::ALL
        .iter()
        .map(|&op| {
            (
                format!("ok-{}", op.name()),
                sample_request(op).encode().expect("encodes"),
            )
        })
        .collect();
    let alloc = sample_request(Op::MemAlloc).encode().expect("encodes");
    let htod = sample_request(Op::MemcpyHtoD).encode().expect("encodes");
    let free = sample_request(Op::MemFree).encode().expect("encodes");
    let op_at = offset_of!(RequestHead, op);
    let fixed_at = offset_of!(RequestHead, fixed_len);
    let blob_at = offset_of!(RequestHead, blob_len);
    s.push(("err-empty".into(), vec![]));
    s.push(("err-truncated-head".into(), cut(&alloc, 20)));
    s.push((
        "err-truncated-fixed".into(),
        cut(&alloc, size_of::<RequestHead>() + 4),
    ));
    s.push(("err-truncated-blob".into(), cut(&htod, htod.len() - 1)));
    s.push(("err-bad-magic".into(), patched(alloc.clone(), 0, b"VGRS")));
    s.push((
        "err-unknown-op".into(),
        patched(alloc.clone(), op_at, &9999u16.to_le_bytes()),
    ));
    let wrong_fixed = [patched(free.clone(), fixed_at, &le16(16)), vec![0; 8]].concat();
    s.push(("err-wrong-fixed-len".into(), wrong_fixed));
    s.push((
        "err-fixed-over-bound".into(),
        patched(free, fixed_at, &le16(MAX_FIXED + 1)),
    ));
    // A bool field that is neither 0 nor 1.
    let mut bad_bool = htod.clone();
    let is_async_at =
        size_of::<RequestHead>() + std::mem::offset_of!(vgpu_proto::memcpy_htod::Request, is_async);
    bad_bool[is_async_at] = 2;
    s.push(("err-bad-bool".into(), bad_bool));
    s.push((
        "err-blob-over-bound".into(),
        patched(alloc.clone(), blob_at, &le32(MAX_BLOB + 1)),
    ));
    let flags_at = offset_of!(RequestHead, flags);
    s.push((
        "err-posted-not-postable".into(),
        patched(
            alloc.clone(),
            flags_at,
            &vgpu_proto::flags::POSTED.to_le_bytes(),
        ),
    ));
    s.push((
        "err-undefined-flags".into(),
        patched(htod, flags_at, &0x8000_0001u32.to_le_bytes()),
    ));
    s.push((
        "err-blob-len-max".into(),
        patched(alloc, blob_at, &u32::MAX.to_le_bytes()),
    ));
    s
}

fn response_seeds() -> Vec<Named> {
    let ok = sample_response().encode().expect("encodes");
    let fixed_at = offset_of!(ResponseHead, fixed_len);
    let blob_at = offset_of!(ResponseHead, blob_len);
    vec![
        ("ok-fixed-blob".into(), ok.clone()),
        (
            "ok-error-status".into(),
            sample_error_response().encode().expect("encodes"),
        ),
        (
            "ok-events-flag".into(),
            sample_events_response().encode().expect("encodes"),
        ),
        ("err-empty".into(), vec![]),
        ("err-truncated-head".into(), cut(&ok, 12)),
        (
            "err-truncated-fixed".into(),
            cut(&ok, size_of::<ResponseHead>() + 3),
        ),
        ("err-truncated-blob".into(), cut(&ok, ok.len() - 1)),
        ("err-bad-magic".into(), patched(ok.clone(), 0, b"VGRQ")),
        (
            "err-fixed-over-bound".into(),
            patched(ok.clone(), fixed_at, &le16(MAX_FIXED + 1)),
        ),
        (
            "err-unknown-reply-flag".into(),
            patched(ok.clone(), offset_of!(ResponseHead, flags), &[8, 0]),
        ),
        (
            "err-reserved2".into(),
            patched(ok.clone(), offset_of!(ResponseHead, reserved2), &le32(1)),
        ),
        (
            "err-blob-over-bound".into(),
            patched(ok, blob_at, &le32(MAX_BLOB + 1)),
        ),
    ]
}

fn hello_seeds() -> Vec<Named> {
    let ok = encode_hello(&sample_hello());
    let no_env = encode_hello(&Hello {
        features: 0,
        pid: 1,
        uid: 0,
        env: vec![],
    });
    let version_at = offset_of!(HelloHead, version);
    let schema_at = offset_of!(HelloHead, schema);
    let env_at = offset_of!(HelloHead, env_len);
    vec![
        ("ok-hello".into(), ok.clone()),
        ("ok-no-env".into(), no_env),
        ("err-empty".into(), vec![]),
        ("err-truncated-head".into(), cut(&ok, 30)),
        ("err-truncated-env".into(), cut(&ok, ok.len() - 5)),
        ("err-bad-magic".into(), patched(ok.clone(), 0, b"VGWE")),
        (
            "err-bad-version".into(),
            patched(
                ok.clone(),
                version_at,
                &(PROTOCOL_VERSION + 1).to_le_bytes(),
            ),
        ),
        (
            "err-bad-schema".into(),
            patched(ok.clone(), schema_at, &(!SCHEMA_HASH).to_le_bytes()),
        ),
        (
            "err-env-over-bound".into(),
            patched(ok, env_at, &le32(MAX_ENV_BYTES + 1)),
        ),
        (
            "err-env-unterminated".into(),
            hello_with_raw_env(b"CUDA_VISIBLE_DEVICES=0"),
        ),
        (
            "err-env-foreign-key".into(),
            hello_with_raw_env(b"LD_PRELOAD=/tmp/evil.so\0"),
        ),
        (
            "err-env-no-equals".into(),
            hello_with_raw_env(b"CUDA_VISIBLE_DEVICES\0"),
        ),
        (
            "err-env-empty-entry".into(),
            hello_with_raw_env(b"CUDA_VISIBLE_DEVICES=0\0\0"),
        ),
        (
            "err-env-not-utf8".into(),
            hello_with_raw_env(b"CUDA_CACHE_PATH=\xff\xfe\0"),
        ),
    ]
}

fn welcome_seeds() -> Vec<Named> {
    let ok = encode_welcome(&sample_welcome());
    let version_at = offset_of!(WelcomeHead, version);
    let count_at = offset_of!(WelcomeHead, device_count);
    let head = size_of::<WelcomeHead>();
    let one_device = head + size_of::<DeviceSnapshot>();
    vec![
        ("ok-two-devices".into(), ok.clone()),
        (
            "ok-no-device".into(),
            encode_welcome(&sample_welcome_no_device()),
        ),
        ("err-empty".into(), vec![]),
        ("err-truncated-head".into(), cut(&ok, 16)),
        ("err-truncated-device".into(), cut(&ok, one_device + 100)),
        (
            "err-missing-device".into(),
            patched(ok.clone(), count_at, &le32(3)),
        ),
        (
            "err-too-many-devices".into(),
            patched(cut(&ok, head), count_at, &le32(MAX_DEVICES + 1)),
        ),
        ("err-bad-magic".into(), patched(ok.clone(), 0, b"VGHI")),
        (
            "err-bad-version".into(),
            patched(ok, version_at, &0u16.to_le_bytes()),
        ),
    ]
}

/// Every committed seed of every target.
pub fn corpus_seeds() -> Vec<Seed> {
    let per_target = [
        ("request", request_seeds()),
        ("response", response_seeds()),
        ("hello", hello_seeds()),
        ("welcome", welcome_seeds()),
    ];
    per_target
        .into_iter()
        .flat_map(|(target, seeds)| {
            seeds.into_iter().map(move |(name, bytes)| Seed {
                target,
                name,
                bytes,
            })
        })
        .collect()
}
