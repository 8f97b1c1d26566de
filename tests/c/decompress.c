/*
 * decompress: cuMemBatchDecompressAsync and its _ptsz form. Two Snappy
 * blocks in device memory decompress into device memory, each operation
 * writing its output size to its dstActBytes word, when the device has a
 * Snappy engine (CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK bit 2);
 * a device without one (an H100 or H200: mask 0) refuses the batch, and the
 * code is printed. Bad batches print the driver's code and the error index
 * it leaves: a NULL array with a count, no operations, flags, a destination
 * outside the process's memory, an unknown algorithm, and (with an engine)
 * a corrupt block.
 *
 * Build:  cc -std=c11 -O2 -Wall -o decompress decompress.c -ldl
 * Usage:  decompress [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

#include <stdint.h>

typedef struct {
    size_t srcNumBytes;
    size_t dstNumBytes;
    unsigned int *dstActBytes;
    const void *src;
    void *dst;
    int algo;
    unsigned char padding[20];
} CUmemDecompressParams;

_Static_assert(sizeof(CUmemDecompressParams) == 64, "CUmemDecompressParams is 64 bytes");

enum {
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK = 136,
    CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY = 2,
    CU_STREAM_NON_BLOCKING = 1,
    CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE = 21,
};

/* The error index's value before a call. */
#define UNTOUCHED ((size_t)12345)

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*Decompress)(CUmemDecompressParams *, size_t, unsigned int, size_t *, CUstream);
    CUresult (*DecompressPtsz)(CUmemDecompressParams *, size_t, unsigned int, size_t *,
                               CUstream);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(PointerGetAttribute, "cuPointerGetAttribute"),
    ENTRY(Decompress, "cuMemBatchDecompressAsync"),
    ENTRY(DecompressPtsz, "cuMemBatchDecompressAsync_ptsz"),
    ENTRY(GetErrorName, "cuGetErrorName"),
};

/* Snappy blocks: "abcd" and a 12-byte copy from 4 back; "xy" and a 5-byte
 * copy from 2 back. */
static const unsigned char BLOCK_A[] = {16, 0x0c, 'a', 'b', 'c', 'd', 0x2e, 4, 0};
static const char TEXT_A[] = "abcdabcdabcdabcd";
static const unsigned char BLOCK_B[] = {7, 0x04, 'x', 'y', 0x05, 2};
static const char TEXT_B[] = "xyxyxyx";
/* A block that copies from before its first byte. */
static const unsigned char CORRUPT[] = {4, 0x0e, 1, 0};

/* Prints a call that must fail, its code and the error index it left. */
static void refused(const char *name, CUresult got, size_t index)
{
    checks++;
    if (got == CUDA_SUCCESS) {
        failures++;
        printf("FAIL %s: succeeded, expected an error\n", name);
        return;
    }
    char at[32];
    if (index == UNTOUCHED)
        snprintf(at, sizeof at, "untouched");
    else if (index == SIZE_MAX)
        snprintf(at, sizeof at, "SIZE_MAX");
    else
        snprintf(at, sizeof at, "%zu", index);
    printf("ok %s: %s index %s\n", name, error_name(cu.GetErrorName, got), at);
}

/* One operation on device memory. */
static CUmemDecompressParams op(CUdeviceptr src, size_t src_len, CUdeviceptr dst,
                                size_t dst_len, CUdeviceptr act, int algo)
{
    CUmemDecompressParams p;
    memset(&p, 0, sizeof p);
    p.srcNumBytes = src_len;
    p.dstNumBytes = dst_len;
    p.dstActBytes = (unsigned int *)(uintptr_t)act;
    p.src = (const void *)(uintptr_t)src;
    p.dst = (void *)(uintptr_t)dst;
    p.algo = algo;
    return p;
}

int main(int argc, char **argv)
{
    cu_load(argc > 1 ? argv[1] : NULL, entries, CU_COUNT(entries));
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    EXPECT("init", cu.Init(0), CUDA_SUCCESS);
    EXPECT("device", cu.DeviceGet(&dev, 0), CUDA_SUCCESS);
    EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS);
    int mask = 0;
    EXPECT("algorithm_mask",
           cu.DeviceGetAttribute(&mask, CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, dev),
           CUDA_SUCCESS);
    int engine = (mask & CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY) != 0;
    printf("ok snappy_engine: %s\n", engine ? "yes" : "no");

    CUstream s = NULL;
    CUresult r;
    CUdeviceptr src = 0, dst = 0, act = 0;
    EXPECT("stream_create", cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT("alloc_src", cu.MemAlloc(&src, 256), CUDA_SUCCESS);
    EXPECT("alloc_dst", cu.MemAlloc(&dst, 256), CUDA_SUCCESS);
    EXPECT("alloc_act", cu.MemAlloc(&act, 256), CUDA_SUCCESS);
    /* The driver's answer, printed for the comparison with the native run. */
    int capable = -1;
    r = cu.PointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, src);
    printf("ok hw_decompress_capable: %s %d\n", error_name(cu.GetErrorName, r), capable);
    EXPECT("upload_a", cu.MemcpyHtoD(src, BLOCK_A, sizeof BLOCK_A), CUDA_SUCCESS);
    EXPECT("upload_b", cu.MemcpyHtoD(src + 64, BLOCK_B, sizeof BLOCK_B), CUDA_SUCCESS);
    EXPECT("upload_corrupt", cu.MemcpyHtoD(src + 128, CORRUPT, sizeof CORRUPT), CUDA_SUCCESS);
    EXPECT("clear_dst", cu.MemsetD8(dst, 0, 256), CUDA_SUCCESS);
    EXPECT("clear_act", cu.MemsetD8(act, 0, 256), CUDA_SUCCESS);

    CUmemDecompressParams two[2] = {
        op(src, sizeof BLOCK_A, dst, 16, act, CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY),
        op(src + 64, sizeof BLOCK_B, dst + 64, 16, act + 4, CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY),
    };
    size_t index = UNTOUCHED;
    r = cu.Decompress(two, 2, 0, &index, s);
    if (engine) {
        EXPECT("batch", r, CUDA_SUCCESS);
        EXPECT("batch_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
        char out[256];
        unsigned int sizes[2] = {0, 0};
        EXPECT("download_dst", cu.MemcpyDtoH(out, dst, sizeof out), CUDA_SUCCESS);
        EXPECT("download_act", cu.MemcpyDtoH(sizes, act, sizeof sizes), CUDA_SUCCESS);
        expect_true("batch_output", memcmp(out, TEXT_A, 16) == 0 && memcmp(out + 64, TEXT_B, 7) == 0,
                    "the decompressed bytes differ");
        expect_true("batch_sizes", sizes[0] == 16 && sizes[1] == 7, "dstActBytes differ");

        /* The _ptsz form on the per-thread stream. */
        CUmemDecompressParams one = op(src + 64, sizeof BLOCK_B, dst + 128, 16, act + 8,
                                       CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY);
        EXPECT("batch_ptsz", cu.DecompressPtsz(&one, 1, 0, NULL, NULL), CUDA_SUCCESS);
        EXPECT("batch_ptsz_synchronize", cu.StreamSynchronize(NULL), CUDA_SUCCESS);
        EXPECT("download_ptsz", cu.MemcpyDtoH(out, dst + 128, 7), CUDA_SUCCESS);
        expect_true("batch_ptsz_output", memcmp(out, TEXT_B, 7) == 0, "the bytes differ");

        CUmemDecompressParams bad[2] = {
            two[0],
            op(src + 128, sizeof CORRUPT, dst + 192, 16, act + 12,
               CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY),
        };
        index = UNTOUCHED;
        r = cu.Decompress(bad, 2, 0, &index, s);
        if (r == CUDA_SUCCESS)
            r = cu.StreamSynchronize(s);
        refused("corrupt_block", r, index);
    } else {
        refused("batch_without_engine", r, index);
    }

    /* Batches the driver refuses. */
    index = UNTOUCHED;
    r = cu.Decompress(NULL, 1, 0, &index, s);
    refused("null_params", r, index);
    index = UNTOUCHED;
    r = cu.Decompress(two, 0, 0, &index, s);
    refused("no_operations", r, index);
    index = UNTOUCHED;
    r = cu.Decompress(two, 2, 1, &index, s);
    refused("flags", r, index);
    CUmemDecompressParams outside[2] = {
        two[0],
        op(src + 64, sizeof BLOCK_B, 4096, 16, act + 4, CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY),
    };
    index = UNTOUCHED;
    r = cu.Decompress(outside, 2, 0, &index, s);
    refused("destination_outside", r, index);
    CUmemDecompressParams unknown = op(src, sizeof BLOCK_A, dst, 16, act, 8);
    index = UNTOUCHED;
    r = cu.Decompress(&unknown, 1, 0, &index, s);
    refused("unknown_algorithm", r, index);

    EXPECT("synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("free_src", cu.MemFree(src), CUDA_SUCCESS);
    EXPECT("free_dst", cu.MemFree(dst), CUDA_SUCCESS);
    EXPECT("free_act", cu.MemFree(act), CUDA_SUCCESS);
    EXPECT("stream_destroy", cu.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
