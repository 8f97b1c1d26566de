/*
 * tail_copies: the 32-bit first forms of the CUDA array calls (cuArrayCreate,
 * cuArray3DCreate, their descriptors, cuMemcpyHtoA/AtoH/AtoD/DtoA/AtoA and
 * the asynchronous HtoA/AtoH), which the driver refuses in a primary context,
 * the per-thread forms of the array copies
 * (_v2_ptds, _v2_ptsz), a destroyed array in a copy, and a legacy texture
 * reference of its own (cuTexRefCreate and the cuTexRef* setters and getters),
 * batches of linear copies (cuMemcpyBatchAsync, _v2) with a side outside
 * its allocation, batches of 3D copies between pointers and an array
 * (cuMemcpy3DBatchAsync), and cuMemMapArrayAsync of an array that is not sparse.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike. Where the driver's exact answer is not documented the check prints
 * it (`ok NAME: CUDA_ERROR_...`), so that runs natively and through vgpu can
 * be compared line by line.
 *
 * Build:  cc -std=c11 -O2 -Wall -o tail_copies tail_copies.c -ldl
 * Usage:  tail_copies [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUarray_st *CUarray;
typedef struct CUtexref_st *CUtexref;

/* The 32-bit descriptors of the first forms. */
typedef struct {
    unsigned int Width, Height;
    int Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR_v1;

typedef struct {
    unsigned int Width, Height, Depth;
    int Format;
    unsigned int NumChannels, Flags;
} CUDA_ARRAY_DESCRIPTOR3D_v1;

typedef struct {
    size_t Width, Height;
    int Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct {
    size_t Width, Height, Depth;
    int Format;
    unsigned int NumChannels, Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

/* CUmemcpyAttributes of a batch. */
typedef struct {
    int srcAccessOrder;
    struct {
        int type, id;
    } srcLocHint, dstLocHint;
    unsigned int flags;
} CUmemcpyAttributes;

_Static_assert(sizeof(CUmemcpyAttributes) == 24, "CUmemcpyAttributes is 24 bytes");
/* CUarrayMapInfo: one mapping of a sparse array's tiles. */
typedef struct {
    int resourceType;
    union {
        CUarray array;
        void *mipmap;
    } resource;
    int subresourceType;
    union {
        struct {
            unsigned int level, layer, offsetX, offsetY, offsetZ;
            unsigned int extentWidth, extentHeight, extentDepth;
        } sparseLevel;
        struct {
            unsigned int layer;
            unsigned long long offset, size;
        } miptail;
    } subresource;
    int memOperationType;
    int memHandleType;
    unsigned long long memHandle;
    unsigned long long offset;
    unsigned int deviceBitMask, flags, reserved[2];
} CUarrayMapInfo;

_Static_assert(sizeof(CUarrayMapInfo) == 96, "CUarrayMapInfo is 96 bytes");
/* CUmemcpy3DOperand and CUDA_MEMCPY3D_BATCH_OP of a 3D batch. */
typedef struct {
    int type;
    union {
        struct {
            CUdeviceptr ptr;
            size_t rowLength, layerHeight;
            struct {
                int type, id;
            } locHint;
        } ptr;
        struct {
            CUarray array;
            size_t x, y, z;
        } array;
    } op;
} CUmemcpy3DOperand;

typedef struct {
    CUmemcpy3DOperand src, dst;
    size_t width, height, depth;
    int srcAccessOrder;
    unsigned int flags;
} CUDA_MEMCPY3D_BATCH_OP;

_Static_assert(sizeof(CUDA_MEMCPY3D_BATCH_OP) == 112, "CUDA_MEMCPY3D_BATCH_OP is 112 bytes");
_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR_v1) == 16, "CUDA_ARRAY_DESCRIPTOR_v1 is 16 bytes");
_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR3D_v1) == 24, "CUDA_ARRAY3D_DESCRIPTOR_v1 is 24 bytes");
_Static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR) == 40, "CUDA_ARRAY3D_DESCRIPTOR is 40 bytes");

enum {
    FORMAT_UNSIGNED_INT8 = 0x01,
    FORMAT_FLOAT = 0x20,
    TRSA_OVERRIDE_FORMAT = 0x01,
    ADDRESS_MODE_CLAMP = 1,
    ADDRESS_MODE_BORDER = 3,
    FILTER_MODE_LINEAR = 1,
    TRSF_NORMALIZED_COORDINATES = 0x02,
    ATTRIBUTE_TEXTURE_ALIGNMENT = 14,
    SRC_ACCESS_ORDER_STREAM = 1,
    OPERAND_POINTER = 1,
    OPERAND_ARRAY = 2,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*ArrayDestroy)(CUarray);
    CUresult (*ArrayCreate)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*Array3DCreate)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    /* First forms. */
    CUresult (*ArrayCreate1)(CUarray *, const CUDA_ARRAY_DESCRIPTOR_v1 *);
    CUresult (*Array3DCreate1)(CUarray *, const CUDA_ARRAY_DESCRIPTOR3D_v1 *);
    CUresult (*ArrayGetDescriptor1)(CUDA_ARRAY_DESCRIPTOR_v1 *, CUarray);
    CUresult (*Array3DGetDescriptor1)(CUDA_ARRAY_DESCRIPTOR3D_v1 *, CUarray);
    CUresult (*MemcpyHtoA1)(CUarray, unsigned int, const void *, unsigned int);
    CUresult (*MemcpyAtoH1)(void *, CUarray, unsigned int, unsigned int);
    CUresult (*MemcpyHtoAAsync1)(CUarray, unsigned int, const void *, unsigned int, CUstream);
    CUresult (*MemcpyAtoHAsync1)(void *, CUarray, unsigned int, unsigned int, CUstream);
    CUresult (*MemcpyAtoA1)(CUarray, unsigned int, CUarray, unsigned int, unsigned int);
    /* Per-thread forms. */
    CUresult (*MemcpyHtoAPtds)(CUarray, size_t, const void *, size_t);
    CUresult (*MemcpyAtoHPtds)(void *, CUarray, size_t, size_t);
    CUresult (*MemcpyAtoDPtds)(CUdeviceptr, CUarray, size_t, size_t);
    CUresult (*MemcpyDtoAPtds)(CUarray, size_t, CUdeviceptr, size_t);
    CUresult (*MemcpyAtoAPtds)(CUarray, size_t, CUarray, size_t, size_t);
    CUresult (*MemcpyHtoAAsyncPtsz)(CUarray, size_t, const void *, size_t, CUstream);
    CUresult (*MemcpyAtoHAsyncPtsz)(void *, CUarray, size_t, size_t, CUstream);
    /* Texture and surface references. */
    CUresult (*TexRefCreate)(CUtexref *);
    CUresult (*TexRefDestroy)(CUtexref);
    CUresult (*TexRefSetArray)(CUtexref, CUarray, unsigned int);
    CUresult (*TexRefGetArray)(CUarray *, CUtexref);
    CUresult (*TexRefSetAddress)(size_t *, CUtexref, CUdeviceptr, size_t);
    CUresult (*TexRefGetAddress)(CUdeviceptr *, CUtexref);
    CUresult (*TexRefSetAddress2D)(CUtexref, const CUDA_ARRAY_DESCRIPTOR *, CUdeviceptr, size_t);
    CUresult (*TexRefSetFormat)(CUtexref, int, int);
    CUresult (*TexRefGetFormat)(int *, int *, CUtexref);
    CUresult (*TexRefSetAddressMode)(CUtexref, int, int);
    CUresult (*TexRefGetAddressMode)(int *, CUtexref, int);
    CUresult (*TexRefSetFilterMode)(CUtexref, int);
    CUresult (*TexRefGetFilterMode)(int *, CUtexref);
    CUresult (*TexRefSetMipmapFilterMode)(CUtexref, int);
    CUresult (*TexRefGetMipmapFilterMode)(int *, CUtexref);
    CUresult (*TexRefSetMipmapLevelBias)(CUtexref, float);
    CUresult (*TexRefGetMipmapLevelBias)(float *, CUtexref);
    CUresult (*TexRefSetMipmapLevelClamp)(CUtexref, float, float);
    CUresult (*TexRefGetMipmapLevelClamp)(float *, float *, CUtexref);
    CUresult (*TexRefSetMaxAnisotropy)(CUtexref, unsigned int);
    CUresult (*TexRefGetMaxAnisotropy)(int *, CUtexref);
    CUresult (*TexRefSetBorderColor)(CUtexref, float *);
    CUresult (*TexRefGetBorderColor)(float *, CUtexref);
    CUresult (*TexRefSetFlags)(CUtexref, unsigned int);
    CUresult (*TexRefGetFlags)(unsigned int *, CUtexref);
    CUresult (*MemcpyBatchAsync)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                 CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream);
    CUresult (*MemcpyBatchAsyncV2)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                   CUmemcpyAttributes *, size_t *, size_t, CUstream);
    CUresult (*MemMapArrayAsync)(CUarrayMapInfo *, unsigned int, CUstream);
    CUresult (*Memcpy3DBatchAsync)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *, unsigned long long,
                                   CUstream);
    /* The memory calls' 32-bit first forms (CUdeviceptr_v1 is 32 bits). */
    CUresult (*MemAlloc1)(unsigned int *, unsigned int);
    CUresult (*MemFree1)(unsigned int);
    CUresult (*MemAllocPitch1)(unsigned int *, unsigned int *, unsigned int, unsigned int,
                               unsigned int);
    CUresult (*MemGetAddressRange1)(unsigned int *, unsigned int *, unsigned int);
    CUresult (*MemHostGetDevicePointer1)(unsigned int *, void *, unsigned int);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(ArrayDestroy, "cuArrayDestroy"),
    ENTRY(ArrayCreate, "cuArrayCreate_v2"),
    ENTRY(Array3DCreate, "cuArray3DCreate_v2"),
    ENTRY(ArrayCreate1, "cuArrayCreate"),
    ENTRY(Array3DCreate1, "cuArray3DCreate"),
    ENTRY(ArrayGetDescriptor1, "cuArrayGetDescriptor"),
    ENTRY(Array3DGetDescriptor1, "cuArray3DGetDescriptor"),
    ENTRY(MemcpyHtoA1, "cuMemcpyHtoA"),
    ENTRY(MemcpyAtoH1, "cuMemcpyAtoH"),
    ENTRY(MemcpyHtoAAsync1, "cuMemcpyHtoAAsync"),
    ENTRY(MemcpyAtoHAsync1, "cuMemcpyAtoHAsync"),
    ENTRY(MemcpyAtoA1, "cuMemcpyAtoA"),
    ENTRY(MemcpyHtoAPtds, "cuMemcpyHtoA_v2_ptds"),
    ENTRY(MemcpyAtoHPtds, "cuMemcpyAtoH_v2_ptds"),
    ENTRY(MemcpyAtoDPtds, "cuMemcpyAtoD_v2_ptds"),
    ENTRY(MemcpyDtoAPtds, "cuMemcpyDtoA_v2_ptds"),
    ENTRY(MemcpyAtoAPtds, "cuMemcpyAtoA_v2_ptds"),
    ENTRY(MemcpyHtoAAsyncPtsz, "cuMemcpyHtoAAsync_v2_ptsz"),
    ENTRY(MemcpyAtoHAsyncPtsz, "cuMemcpyAtoHAsync_v2_ptsz"),
    ENTRY(TexRefCreate, "cuTexRefCreate"),
    ENTRY(TexRefDestroy, "cuTexRefDestroy"),
    ENTRY(TexRefSetArray, "cuTexRefSetArray"),
    ENTRY(TexRefGetArray, "cuTexRefGetArray"),
    ENTRY(TexRefSetAddress, "cuTexRefSetAddress_v2"),
    ENTRY(TexRefGetAddress, "cuTexRefGetAddress_v2"),
    ENTRY(TexRefSetAddress2D, "cuTexRefSetAddress2D_v3"),
    ENTRY(TexRefSetFormat, "cuTexRefSetFormat"),
    ENTRY(TexRefGetFormat, "cuTexRefGetFormat"),
    ENTRY(TexRefSetAddressMode, "cuTexRefSetAddressMode"),
    ENTRY(TexRefGetAddressMode, "cuTexRefGetAddressMode"),
    ENTRY(TexRefSetFilterMode, "cuTexRefSetFilterMode"),
    ENTRY(TexRefGetFilterMode, "cuTexRefGetFilterMode"),
    ENTRY(TexRefSetMipmapFilterMode, "cuTexRefSetMipmapFilterMode"),
    ENTRY(TexRefGetMipmapFilterMode, "cuTexRefGetMipmapFilterMode"),
    ENTRY(TexRefSetMipmapLevelBias, "cuTexRefSetMipmapLevelBias"),
    ENTRY(TexRefGetMipmapLevelBias, "cuTexRefGetMipmapLevelBias"),
    ENTRY(TexRefSetMipmapLevelClamp, "cuTexRefSetMipmapLevelClamp"),
    ENTRY(TexRefGetMipmapLevelClamp, "cuTexRefGetMipmapLevelClamp"),
    ENTRY(TexRefSetMaxAnisotropy, "cuTexRefSetMaxAnisotropy"),
    ENTRY(TexRefGetMaxAnisotropy, "cuTexRefGetMaxAnisotropy"),
    ENTRY(TexRefSetBorderColor, "cuTexRefSetBorderColor"),
    ENTRY(TexRefGetBorderColor, "cuTexRefGetBorderColor"),
    ENTRY(TexRefSetFlags, "cuTexRefSetFlags"),
    ENTRY(TexRefGetFlags, "cuTexRefGetFlags"),
    ENTRY(MemcpyBatchAsync, "cuMemcpyBatchAsync"),
    ENTRY(MemcpyBatchAsyncV2, "cuMemcpyBatchAsync_v2"),
    ENTRY(MemMapArrayAsync, "cuMemMapArrayAsync"),
    ENTRY(Memcpy3DBatchAsync, "cuMemcpy3DBatchAsync"),
    ENTRY(GetErrorName, "cuGetErrorName"),
    ENTRY(MemAlloc1, "cuMemAlloc"),
    ENTRY(MemFree1, "cuMemFree"),
    ENTRY(MemAllocPitch1, "cuMemAllocPitch"),
    ENTRY(MemGetAddressRange1, "cuMemGetAddressRange"),
    ENTRY(MemHostGetDevicePointer1, "cuMemHostGetDevicePointer"),
};

/* A call that must fail: which error is the driver's to choose; its name is printed. */
static int expect_failure(const char *name, CUresult got)
{
    checks++;
    if (got != CUDA_SUCCESS) {
        printf("ok %s: %s\n", name, error_name(cu.GetErrorName, got));
        return 1;
    }
    failures++;
    printf("FAIL %s: succeeded, expected an error\n", name);
    return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13u + seed * 5u + (i >> 7));
}

/* The first forms are calls of API version 3010. Driver 580 answers them in a
 * context of a later version, as a primary context is, with
 * CUDA_ERROR_INVALID_CONTEXT (it does so for cuArrayCreate, cuMemAlloc and
 * cuMemAllocHost). The descriptors and copies are tried on arrays of the _v2
 * form; each must fail, and the driver's error is printed. */
static void first_forms(void)
{
    enum { N = 128, BYTES = N * 4 };
    CUDA_ARRAY_DESCRIPTOR_v1 d1 = {N, 0, FORMAT_FLOAT, 1}, got;
    CUDA_ARRAY_DESCRIPTOR3D_v1 d3 = {16, 8, 4, FORMAT_UNSIGNED_INT8, 2, 0}, got3;
    CUarray a = NULL, b = NULL;
    EXPECT("v1_create_1d", cu.ArrayCreate1(&a, &d1), CUDA_ERROR_INVALID_CONTEXT);
    /* Driver 580 refuses the memory calls' first forms the same way, before
     * it reads an argument. */
    unsigned int p32 = 0, pitch32 = 0, size32 = 0;
    char host[64];
    EXPECT("v1_mem_alloc", cu.MemAlloc1(&p32, 4096), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("v1_mem_free", cu.MemFree1(0x1000), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("v1_mem_alloc_pitch", cu.MemAllocPitch1(&p32, &pitch32, 100, 10, 4),
           CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("v1_mem_get_address_range", cu.MemGetAddressRange1(&p32, &size32, 0x1000),
           CUDA_ERROR_INVALID_CONTEXT);
    EXPECT("v1_mem_host_get_device_pointer", cu.MemHostGetDevicePointer1(&p32, host, 0),
           CUDA_ERROR_INVALID_CONTEXT);
    expect_failure("v1_create_3d", cu.Array3DCreate1(&b, &d3));

    CUDA_ARRAY_DESCRIPTOR d = {N, 0, FORMAT_FLOAT, 1};
    a = b = NULL;
    if (!EXPECT("v2_create", cu.ArrayCreate(&a, &d), CUDA_SUCCESS) ||
        !EXPECT("v2_create_second", cu.ArrayCreate(&b, &d), CUDA_SUCCESS))
        return;
    expect_failure("v1_descriptor", cu.ArrayGetDescriptor1(&got, a));
    expect_failure("v1_descriptor_3d", cu.Array3DGetDescriptor1(&got3, a));

    static unsigned char in[BYTES], out[BYTES];
    fill(in, BYTES, 1);
    expect_failure("v1_htoa", cu.MemcpyHtoA1(a, 0, in, BYTES));
    expect_failure("v1_atoh", cu.MemcpyAtoH1(out, a, 0, BYTES));
    expect_failure("v1_atoa", cu.MemcpyAtoA1(b, 0, a, 0, BYTES));
    CUstream s = NULL;
    EXPECT("v1_stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    expect_failure("v1_htoa_async", cu.MemcpyHtoAAsync1(a, 0, in, BYTES, s));
    expect_failure("v1_atoh_async", cu.MemcpyAtoHAsync1(out, a, 0, BYTES, s));
    EXPECT("v1_stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    cu.StreamDestroy(s);

    /* cuMemcpyAtoD and cuMemcpyDtoA take a 32-bit device address, which
     * cannot name a primary context's allocations: not called here. */

    EXPECT("v2_destroy", cu.ArrayDestroy(a), CUDA_SUCCESS);
    EXPECT("v2_destroy_second", cu.ArrayDestroy(b), CUDA_SUCCESS);
}

/* The per-thread default stream forms. */
static void per_thread(void)
{
    enum { N = 256, BYTES = N * 4 };
    CUDA_ARRAY_DESCRIPTOR d = {N, 0, FORMAT_FLOAT, 1};
    CUarray a = NULL, b = NULL;
    if (!EXPECT("ptds_create", cu.ArrayCreate(&a, &d), CUDA_SUCCESS) ||
        !EXPECT("ptds_create_second", cu.ArrayCreate(&b, &d), CUDA_SUCCESS))
        return;
    static unsigned char in[BYTES], out[BYTES];
    CUdeviceptr dev = 0;
    EXPECT("ptds_alloc", cu.MemAlloc(&dev, BYTES), CUDA_SUCCESS);
    fill(in, BYTES, 3);
    EXPECT("ptds_htoa", cu.MemcpyHtoAPtds(a, 0, in, BYTES), CUDA_SUCCESS);
    EXPECT("ptds_atod", cu.MemcpyAtoDPtds(dev, a, 0, BYTES), CUDA_SUCCESS);
    EXPECT("ptds_dtoa", cu.MemcpyDtoAPtds(b, 0, dev, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("ptds_atoh", cu.MemcpyAtoHPtds(out, b, 0, BYTES), CUDA_SUCCESS);
    expect_true("ptds_round_trip_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    fill(in, BYTES, 4);
    EXPECT("ptsz_htoa_async", cu.MemcpyHtoAAsyncPtsz(a, 0, in, BYTES, NULL), CUDA_SUCCESS);
    EXPECT("ptds_atoa", cu.MemcpyAtoAPtds(b, 0, a, 0, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("ptsz_atoh_async", cu.MemcpyAtoHAsyncPtsz(out, b, 0, BYTES, NULL), CUDA_SUCCESS);
    EXPECT("ptsz_synchronize", cu.StreamSynchronize((CUstream)0x2), CUDA_SUCCESS);
    expect_true("ptsz_round_trip_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    expect_failure("ptds_atod_past_end", cu.MemcpyAtoDPtds(dev, a, 8, BYTES));
    expect_failure("ptds_dtoa_past_end", cu.MemcpyDtoAPtds(a, 8, dev, BYTES));
    EXPECT("ptds_destroy", cu.ArrayDestroy(a), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("ptds_atod_destroyed", cu.MemcpyAtoDPtds(dev, a, 0, 16));
        expect_failure("ptds_dtoa_destroyed", cu.MemcpyDtoAPtds(a, 0, dev, 16));
    }
    EXPECT("ptds_destroy_second", cu.ArrayDestroy(b), CUDA_SUCCESS);
    cu.MemFree(dev);
}

/* A texture reference of its own: what it is bound to and how it reads. */
static void texrefs(CUdevice device)
{
    int align = 0;
    EXPECT("texture_alignment",
           cu.DeviceGetAttribute(&align, ATTRIBUTE_TEXTURE_ALIGNMENT, device), CUDA_SUCCESS);
    const CUdeviceptr TEXTURE_ALIGNMENT = align > 0 ? (CUdeviceptr)align : 1;
    CUtexref t = NULL;
    CUresult r = cu.TexRefCreate(&t);
    if (r != CUDA_SUCCESS) {
        /* The driver may no longer make references of its own: its answer. */
        expect_failure("texref_create", r);
        return;
    }
    EXPECT("texref_create", r, CUDA_SUCCESS);

    EXPECT("texref_set_format", cu.TexRefSetFormat(t, FORMAT_FLOAT, 2), CUDA_SUCCESS);
    int fmt = 0, channels = 0;
    EXPECT("texref_get_format", cu.TexRefGetFormat(&fmt, &channels, t), CUDA_SUCCESS);
    expect_true("texref_format_values", fmt == FORMAT_FLOAT && channels == 2,
                "the format is not the one set");
    expect_failure("texref_set_format_three", cu.TexRefSetFormat(t, FORMAT_FLOAT, 3));

    EXPECT("texref_set_address_mode", cu.TexRefSetAddressMode(t, 1, ADDRESS_MODE_BORDER),
           CUDA_SUCCESS);
    int am = -1;
    EXPECT("texref_get_address_mode", cu.TexRefGetAddressMode(&am, t, 1), CUDA_SUCCESS);
    expect_true("texref_address_mode_value", am == ADDRESS_MODE_BORDER, "not the mode set");

    EXPECT("texref_set_filter_mode", cu.TexRefSetFilterMode(t, FILTER_MODE_LINEAR), CUDA_SUCCESS);
    int fm = -1;
    EXPECT("texref_get_filter_mode", cu.TexRefGetFilterMode(&fm, t), CUDA_SUCCESS);
    expect_true("texref_filter_mode_value", fm == FILTER_MODE_LINEAR, "not the mode set");
    EXPECT("texref_set_mipmap_filter_mode", cu.TexRefSetMipmapFilterMode(t, FILTER_MODE_LINEAR),
           CUDA_SUCCESS);
    fm = -1;
    EXPECT("texref_get_mipmap_filter_mode", cu.TexRefGetMipmapFilterMode(&fm, t), CUDA_SUCCESS);
    expect_true("texref_mipmap_filter_mode_value", fm == FILTER_MODE_LINEAR, "not the mode set");

    EXPECT("texref_set_mipmap_bias", cu.TexRefSetMipmapLevelBias(t, 0.5f), CUDA_SUCCESS);
    float bias = 0;
    EXPECT("texref_get_mipmap_bias", cu.TexRefGetMipmapLevelBias(&bias, t), CUDA_SUCCESS);
    expect_true("texref_mipmap_bias_value", bias == 0.5f, "not the bias set");
    EXPECT("texref_set_mipmap_clamp", cu.TexRefSetMipmapLevelClamp(t, 1.0f, 3.0f), CUDA_SUCCESS);
    float lo = 0, hi = 0;
    EXPECT("texref_get_mipmap_clamp", cu.TexRefGetMipmapLevelClamp(&lo, &hi, t), CUDA_SUCCESS);
    expect_true("texref_mipmap_clamp_values", lo == 1.0f && hi == 3.0f, "not the clamp set");

    EXPECT("texref_set_max_anisotropy", cu.TexRefSetMaxAnisotropy(t, 4), CUDA_SUCCESS);
    int aniso = 0;
    EXPECT("texref_get_max_anisotropy", cu.TexRefGetMaxAnisotropy(&aniso, t), CUDA_SUCCESS);
    expect_true("texref_max_anisotropy_value", aniso == 4, "not the anisotropy set");

    float border[4] = {0.25f, 0.5f, 0.75f, 1.0f}, got_border[4] = {0, 0, 0, 0};
    EXPECT("texref_set_border_color", cu.TexRefSetBorderColor(t, border), CUDA_SUCCESS);
    EXPECT("texref_get_border_color", cu.TexRefGetBorderColor(got_border, t), CUDA_SUCCESS);
    expect_true("texref_border_color_values", memcmp(border, got_border, sizeof(border)) == 0,
                "not the colour set");

    EXPECT("texref_set_flags", cu.TexRefSetFlags(t, TRSF_NORMALIZED_COORDINATES), CUDA_SUCCESS);
    unsigned int flags = 0;
    EXPECT("texref_get_flags", cu.TexRefGetFlags(&flags, t), CUDA_SUCCESS);
    expect_true("texref_flags_value", flags == TRSF_NORMALIZED_COORDINATES, "not the flags set");

    /* Bound to an array, then to linear memory. */
    CUDA_ARRAY_DESCRIPTOR d = {64, 0, FORMAT_UNSIGNED_INT8, 4};
    CUarray a = NULL, bound = NULL;
    EXPECT("texref_array_create", cu.ArrayCreate(&a, &d), CUDA_SUCCESS);
    expect_failure("texref_get_array_unbound", cu.TexRefGetArray(&bound, t));
    /* Driver 580 binds the array with flags 0 too (the format is then not
     * the array's); the binding below replaces it. */
    EXPECT("texref_set_array_no_flags", cu.TexRefSetArray(t, a, 0), CUDA_SUCCESS);
    EXPECT("texref_set_array", cu.TexRefSetArray(t, a, TRSA_OVERRIDE_FORMAT), CUDA_SUCCESS);
    EXPECT("texref_get_array", cu.TexRefGetArray(&bound, t), CUDA_SUCCESS);
    expect_true("texref_array_value", bound == a, "not the array bound");
    EXPECT("texref_get_format_of_array", cu.TexRefGetFormat(&fmt, &channels, t), CUDA_SUCCESS);
    expect_true("texref_array_format_values", fmt == FORMAT_UNSIGNED_INT8 && channels == 4,
                "the array's format did not override the reference's");

    CUdeviceptr dev = 0, got_dev = 0;
    size_t offset = 1;
    EXPECT("texref_alloc", cu.MemAlloc(&dev, 8192), CUDA_SUCCESS);
    EXPECT("texref_set_address", cu.TexRefSetAddress(&offset, t, dev, 4096), CUDA_SUCCESS);
    expect_true("texref_set_address_offset",
                offset < TEXTURE_ALIGNMENT && (dev - offset) % TEXTURE_ALIGNMENT == 0,
                "the offset does not lead back to an aligned address");
    EXPECT("texref_get_address", cu.TexRefGetAddress(&got_dev, t), CUDA_SUCCESS);
    expect_true("texref_address_value", got_dev == dev, "not the address bound");
    expect_failure("texref_get_array_after_address", cu.TexRefGetArray(&bound, t));
    CUDA_ARRAY_DESCRIPTOR d2 = {16, 16, FORMAT_FLOAT, 1};
    /* Pitched memory must start at the texture alignment. */
    CUdeviceptr aligned = (dev + TEXTURE_ALIGNMENT - 1) & ~(TEXTURE_ALIGNMENT - 1);
    EXPECT("texref_set_address_2d", cu.TexRefSetAddress2D(t, &d2, aligned, 128), CUDA_SUCCESS);
    EXPECT("texref_get_address_2d", cu.TexRefGetAddress(&got_dev, t), CUDA_SUCCESS);
    expect_true("texref_address_2d_value", got_dev == aligned, "not the address bound");
    expect_failure("texref_set_address_2d_short_pitch",
                   cu.TexRefSetAddress2D(t, &d2, aligned, 32));
    expect_failure("texref_set_address_2d_unaligned",
                   cu.TexRefSetAddress2D(t, &d2, aligned + 4, 128));
    /* vgpu binds only memory of the session's own allocations; the driver
     * need not look (it reads the memory only when a kernel fetches). */
    if (invalid_handle_checks())
        expect_failure("texref_set_address_past_end",
                       cu.TexRefSetAddress(&offset, t, dev, 8192 + 64));

    EXPECT("texref_destroy", cu.TexRefDestroy(t), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("texref_set_flags_destroyed", cu.TexRefSetFlags(t, 0));
        expect_failure("texref_destroy_destroyed", cu.TexRefDestroy(t));
    }
    EXPECT("texref_array_destroy", cu.ArrayDestroy(a), CUDA_SUCCESS);
    cu.MemFree(dev);
}

/* Batches of linear copies: host to device, device to device, device to host. */
static void batches(void)
{
    enum { BYTES = 4096 };
    static unsigned char in[BYTES], out[BYTES];
    fill(in, BYTES, 9);
    CUdeviceptr a = 0, b = 0;
    CUstream s = NULL;
    if (!EXPECT("batch_alloc_a", cu.MemAlloc(&a, BYTES), CUDA_SUCCESS) ||
        !EXPECT("batch_alloc_b", cu.MemAlloc(&b, BYTES), CUDA_SUCCESS) ||
        !EXPECT("batch_stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return;
    memset(out, 0, BYTES);
    CUdeviceptr dsts[3] = {a, b, (CUdeviceptr)(uintptr_t)out};
    CUdeviceptr srcs[3] = {(CUdeviceptr)(uintptr_t)in, a, b};
    size_t sizes[3] = {BYTES, BYTES, BYTES};
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = SRC_ACCESS_ORDER_STREAM;
    size_t idx = 0, fail = 7;
    EXPECT("batch_three", cu.MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s),
           CUDA_SUCCESS);
    EXPECT("batch_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("batch_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* The second form, device to host only. */
    memset(out, 0, BYTES);
    CUdeviceptr d2[1] = {(CUdeviceptr)(uintptr_t)out};
    CUdeviceptr s2[1] = {b};
    size_t n2[1] = {BYTES / 2};
    EXPECT("batch_v2", cu.MemcpyBatchAsyncV2(d2, s2, n2, 1, &attr, &idx, 1, s), CUDA_SUCCESS);
    EXPECT("batch_v2_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("batch_v2_data", memcmp(in, out, BYTES / 2) == 0, "the bytes differ");

    /* A side outside its allocation, the legacy stream, bad attribute indices. */
    sizes[1] = BYTES + 16;
    fail = 7;
    expect_failure("batch_side_past_end",
                   cu.MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s));
    printf("ok batch_side_past_end_index: %zu\n", fail);
    sizes[1] = BYTES;
    expect_failure("batch_legacy_stream",
                   cu.MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, NULL));
    size_t late = 1;
    expect_failure("batch_attrs_not_from_zero",
                   cu.MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &late, 1, &fail, s));
    attr.srcAccessOrder = 0;
    expect_failure("batch_attrs_no_order",
                   cu.MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, &fail, s));
    expect_failure("batch_empty", cu.MemcpyBatchAsync(dsts, srcs, sizes, 0, &attr, &idx, 1,
                                                      &fail, s));
    cu.StreamDestroy(s);
    cu.MemFree(a);
    cu.MemFree(b);
}

/* A pointer operand of `row` elements a row. */
static CUmemcpy3DOperand pointer(CUdeviceptr p, size_t row)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof(o));
    o.type = OPERAND_POINTER;
    o.op.ptr.ptr = p;
    o.op.ptr.rowLength = row;
    return o;
}

/* Batches of 3D copies: host to device, device to a float array (elements
 * of 4 bytes), the array back to host; then operations the batch refuses. */
static void batches_3d(void)
{
    enum { W = 16, H = 4, BYTES = W * H * 4 };
    static unsigned char in[BYTES], out[BYTES];
    fill(in, BYTES, 11);
    CUDA_ARRAY_DESCRIPTOR d = {W, H, FORMAT_FLOAT, 1};
    CUarray a = NULL;
    CUdeviceptr dev = 0;
    CUstream s = NULL;
    if (!EXPECT("batch3d_array", cu.ArrayCreate(&a, &d), CUDA_SUCCESS) ||
        !EXPECT("batch3d_alloc", cu.MemAlloc(&dev, BYTES), CUDA_SUCCESS) ||
        !EXPECT("batch3d_stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS))
        return;
    CUDA_MEMCPY3D_BATCH_OP ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].src = pointer((CUdeviceptr)(uintptr_t)in, 0);
    ops[0].dst = pointer(dev, 0);
    ops[0].width = W * 4;
    ops[0].height = H;
    ops[0].depth = 1;
    ops[0].srcAccessOrder = SRC_ACCESS_ORDER_STREAM;
    ops[1].src = pointer(dev, W);
    ops[1].dst.type = OPERAND_ARRAY;
    ops[1].dst.op.array.array = a;
    ops[1].width = W;
    ops[1].height = H;
    ops[1].depth = 1;
    ops[1].srcAccessOrder = SRC_ACCESS_ORDER_STREAM;
    size_t fail = 7;
    EXPECT("batch3d_two", cu.Memcpy3DBatchAsync(2, ops, &fail, 0, s), CUDA_SUCCESS);
    CUDA_MEMCPY3D_BATCH_OP back;
    memset(&back, 0, sizeof(back));
    back.src.type = OPERAND_ARRAY;
    back.src.op.array.array = a;
    back.dst = pointer((CUdeviceptr)(uintptr_t)out, 0);
    back.width = W;
    back.height = H;
    back.depth = 1;
    back.srcAccessOrder = SRC_ACCESS_ORDER_STREAM;
    memset(out, 0, BYTES);
    EXPECT("batch3d_back", cu.Memcpy3DBatchAsync(1, &back, &fail, 0, s), CUDA_SUCCESS);
    EXPECT("batch3d_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("batch3d_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* An extent of 0, rows past the array, the legacy stream. */
    ops[1].height = 0;
    fail = 7;
    expect_failure("batch3d_zero_extent", cu.Memcpy3DBatchAsync(2, ops, &fail, 0, s));
    printf("ok batch3d_zero_extent_index: %zu\n", fail);
    ops[1].height = H;
    back.src.op.array.y = 2;
    expect_failure("batch3d_past_array", cu.Memcpy3DBatchAsync(1, &back, &fail, 0, s));
    expect_failure("batch3d_legacy_stream", cu.Memcpy3DBatchAsync(2, ops, &fail, 0, NULL));
    EXPECT("batch3d_synchronize_after", cu.StreamSynchronize(s), CUDA_SUCCESS);
    cu.StreamDestroy(s);
    cu.ArrayDestroy(a);
    cu.MemFree(dev);
}

/* Mapping tiles needs a sparse array: an ordinary one is refused. */
static void sparse_maps(void)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {64, 64, 0, FORMAT_FLOAT, 1, 0};
    CUarray a = NULL;
    if (!EXPECT("map_array_create", cu.Array3DCreate(&a, &d), CUDA_SUCCESS))
        return;
    CUstream s = NULL;
    EXPECT("map_stream", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    CUarrayMapInfo m;
    memset(&m, 0, sizeof(m));
    m.resource.array = a;
    m.subresource.sparseLevel.extentWidth = 64;
    m.subresource.sparseLevel.extentHeight = 64;
    m.subresource.sparseLevel.extentDepth = 1;
    m.memOperationType = 2; /* CU_MEM_OPERATION_TYPE_UNMAP */
    m.deviceBitMask = 1;
    expect_failure("map_array_not_sparse", cu.MemMapArrayAsync(&m, 1, s));
    EXPECT("map_stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT("map_array_destroy", cu.ArrayDestroy(a), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("map_array_destroyed", cu.MemMapArrayAsync(&m, 1, s));
        expect_failure("map_array_null_infos", cu.MemMapArrayAsync(NULL, 1, s));
    }
    cu.StreamDestroy(s);
}

int main(int argc, char **argv)
{
    const char *library = argc > 1 ? argv[1] : NULL;
    cu_load(library, entries, CU_COUNT(entries));
    CUdevice dev;
    CUcontext ctx;
    if (!EXPECT("init", cu.Init(0), CUDA_SUCCESS) ||
        !EXPECT("device_get", cu.DeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !EXPECT("primary_retain", cu.DevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS) ||
        !EXPECT("set_current", cu.CtxSetCurrent(ctx), CUDA_SUCCESS))
        return checks_summary();
    first_forms();
    per_thread();
    texrefs(dev);
    batches();
    batches_3d();
    sparse_maps();
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
