/*
 * tensormap: tensor maps (TMA descriptors), as JAX, Triton and
 * FlashAttention-3 encode them on Hopper. A 2D tiled map over an
 * allocation encodes, with 128 bytes not all zero; replacing its address
 * changes it and replacing it back restores it; and the driver's
 * CUDA_ERROR_INVALID_VALUE comes back for a rank of 0 or 6, a misaligned
 * global address, a stride that is not a multiple of 16 and a NULL map.
 *
 * The last line before the summary is `checksum HEX`, a checksum of the 128
 * bytes of a map encoded over a fixed address (the driver does not
 * dereference it when encoding), so that the native driver and vgpu print
 * the same line on a GPU; on the simulated device the value is the sim's own.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * (of compute capability 9.0 or more) alike.
 *
 * Build:  cc -std=c11 -O2 -Wall -o tensormap tensormap.c -ldl
 * Usage:  tensormap [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, the checksum
 *         line, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

/* The driver's 128-byte map, 64-byte aligned as cuda.h declares it. */
typedef struct {
    _Alignas(64) unsigned long long opaque[16];
} CUtensorMap;

enum { DATA_TYPE_FLOAT32 = 7, ROWS = 64, COLS = 128, FIXED_ADDRESS = 0x100000 };

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*EncodeTiled)(CUtensorMap *, int, unsigned int, void *, const uint64_t *,
                            const uint64_t *, const unsigned int *, const unsigned int *, int, int,
                            int, int);
    CUresult (*ReplaceAddress)(CUtensorMap *, void *);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(EncodeTiled, "cuTensorMapEncodeTiled"),
    ENTRY(ReplaceAddress, "cuTensorMapReplaceAddress"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* A row-major ROWS x COLS matrix of floats, 32 x 32 boxes. The arrays have
 * room for rank 6 so that a rank the driver refuses never reads past them. */
static uint64_t dims[6] = {COLS, ROWS, 1, 1, 1, 1};
static uint64_t strides[5] = {COLS * 4, COLS * ROWS * 4, COLS * ROWS * 4, COLS * ROWS * 4,
                              COLS * ROWS * 4};
static unsigned int box[6] = {32, 32, 1, 1, 1, 1};
static unsigned int elem[6] = {1, 1, 1, 1, 1, 1};

static CUresult encode(CUtensorMap *map, unsigned int rank, CUdeviceptr address,
                       const uint64_t *global_strides)
{
    return cu.EncodeTiled(map, DATA_TYPE_FLOAT32, rank, (void *)(uintptr_t)address, dims,
                          global_strides, box, elem, 0, 0, 0, 0);
}

static int all_zero(const CUtensorMap *m)
{
    for (int i = 0; i < 16; i++)
        if (m->opaque[i] != 0)
            return 0;
    return 1;
}

/* FNV-1a over the map's bytes. */
static unsigned long long checksum(const CUtensorMap *m)
{
    const unsigned char *p = (const unsigned char *)m->opaque;
    unsigned long long h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < sizeof m->opaque; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUcontext primary = NULL;
    CUdeviceptr buffer = 0;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(primary), CUDA_SUCCESS) ||
        !EXPECT("mem_alloc", cu.MemAlloc(&buffer, 2 * ROWS * COLS * 4), CUDA_SUCCESS))
        return checks_summary();

    static CUtensorMap map, again, other;
    if (EXPECT("encode_tiled_2d", encode(&map, 2, buffer, strides), CUDA_SUCCESS))
        expect_true("encode_tiled_2d_not_zero", !all_zero(&map), "the 128 bytes are all zero");
    EXPECT("encode_tiled_2d_again", encode(&again, 2, buffer, strides), CUDA_SUCCESS);
    expect_true("encode_deterministic", memcmp(&map, &again, sizeof map) == 0,
                "the same arguments gave other bytes");

    CUdeviceptr second = buffer + ROWS * COLS * 4;
    EXPECT("replace_address", cu.ReplaceAddress(&again, (void *)(uintptr_t)second), CUDA_SUCCESS);
    expect_true("replace_address_changes", memcmp(&map, &again, sizeof map) != 0,
                "the map did not change");
    EXPECT("encode_at_second", encode(&other, 2, second, strides), CUDA_SUCCESS);
    expect_true("replace_equals_encode", memcmp(&other, &again, sizeof map) == 0,
                "replacing differs from encoding at the new address");
    EXPECT("replace_address_back", cu.ReplaceAddress(&again, (void *)(uintptr_t)buffer),
           CUDA_SUCCESS);
    expect_true("replace_back_restores", memcmp(&map, &again, sizeof map) == 0,
                "replacing the address back did not restore the map");
    EXPECT("replace_misaligned", cu.ReplaceAddress(&again, (void *)(uintptr_t)(buffer + 8)),
           CUDA_ERROR_INVALID_VALUE);
    /* Driver 580 dereferences a NULL map (the process dies); vgpu refuses it. */
    if (invalid_handle_checks())
        EXPECT("replace_null_map", cu.ReplaceAddress(NULL, (void *)(uintptr_t)buffer),
               CUDA_ERROR_INVALID_VALUE);

    EXPECT("rank_0", encode(&other, 0, buffer, strides), CUDA_ERROR_INVALID_VALUE);
    EXPECT("rank_6", encode(&other, 6, buffer, strides), CUDA_ERROR_INVALID_VALUE);
    EXPECT("misaligned_address", encode(&other, 2, buffer + 8, strides),
           CUDA_ERROR_INVALID_VALUE);
    uint64_t bad_strides[1] = {COLS * 4 + 4};
    EXPECT("stride_not_multiple_of_16", encode(&other, 2, buffer, bad_strides),
           CUDA_ERROR_INVALID_VALUE);
    if (invalid_handle_checks())
        EXPECT("null_map", encode(NULL, 2, buffer, strides), CUDA_ERROR_INVALID_VALUE);

    EXPECT("encode_fixed_address", encode(&other, 2, FIXED_ADDRESS, strides), CUDA_SUCCESS);
    printf("checksum %016llx\n", checksum(&other));

    EXPECT("mem_free", cu.MemFree(buffer), CUDA_SUCCESS);
    return checks_summary();
}
