/*
 * arrays: CUDA arrays and the copies into and out of them, as the CUDA
 * runtime's cudaMalloc3DArray and cudaMemcpy3D use them (CuPy's texture
 * tests): 1D, 2D and 3D arrays of a few formats, their descriptors, data
 * carried host -> array -> device -> host by the 2D and 3D copies and by the
 * HtoA/AtoH/AtoD/DtoA/AtoA forms, copies that fall outside an array, and a
 * destroyed array; then texture objects over an array, linear and pitched
 * memory and a surface object, their descriptors read back, and a destroyed
 * array in a texture's resource; a mipmapped array, its levels and a texture
 * over it.
 *
 * It uses no module, so it runs on the simulated device and on a real GPU
 * alike. Where the driver's exact error is not documented the check accepts
 * any failure and prints the error's name (`ok NAME: CUDA_ERROR_...`), so
 * that runs natively and through vgpu can be compared line by line.
 *
 * Build:  cc -std=c11 -O2 -Wall -o arrays arrays.c -ldl
 * Usage:  arrays [LIBRARY]      (default: libcuda.so.1)
 * Output: one line per check, `ok NAME` or `FAIL NAME: ...`, then a summary.
 * Exit:   0 every check passed; 1 a check failed; 2 the library could not be
 *         loaded or lacks an entry point.
 */
#include "cuda_prelude.h"

typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;

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

typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    unsigned int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    unsigned int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;

typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;

typedef struct {
    int resType;
    union {
        struct {
            CUarray hArray;
        } array;
        struct {
            CUmipmappedArray hMipmappedArray;
        } mipmap;
        struct {
            CUdeviceptr devPtr;
            int format;
            unsigned int numChannels;
            size_t sizeInBytes;
        } linear;
        struct {
            CUdeviceptr devPtr;
            int format;
            unsigned int numChannels;
            size_t width, height, pitchInBytes;
        } pitch2D;
        int reserved[32];
    } res;
    unsigned int flags;
} CUDA_RESOURCE_DESC;

typedef struct {
    int addressMode[3];
    int filterMode;
    unsigned int flags, maxAnisotropy;
    int mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
    float borderColor[4];
    int reserved[12];
} CUDA_TEXTURE_DESC;

typedef struct {
    int format;
    size_t width, height, depth;
    unsigned int firstMipmapLevel, lastMipmapLevel, firstLayer, lastLayer;
    unsigned int reserved[16];
} CUDA_RESOURCE_VIEW_DESC;

_Static_assert(sizeof(CUDA_RESOURCE_DESC) == 144, "CUDA_RESOURCE_DESC is 144 bytes");
_Static_assert(sizeof(CUDA_TEXTURE_DESC) == 104, "CUDA_TEXTURE_DESC is 104 bytes");
_Static_assert(sizeof(CUDA_RESOURCE_VIEW_DESC) == 112, "CUDA_RESOURCE_VIEW_DESC is 112 bytes");
_Static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR) == 24, "CUDA_ARRAY_DESCRIPTOR is 24 bytes");
_Static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR) == 40, "CUDA_ARRAY3D_DESCRIPTOR is 40 bytes");
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D is 200 bytes");

enum {
    HOST = 1,
    DEVICE = 2,
    ARRAY = 3,
    FORMAT_UNSIGNED_INT8 = 0x01,
    FORMAT_UNSIGNED_INT16 = 0x02,
    FORMAT_FLOAT = 0x20,
    ARRAY3D_SURFACE_LDST = 0x02,
    RESOURCE_TYPE_ARRAY = 0,
    RESOURCE_TYPE_MIPMAPPED_ARRAY = 1,
    RESOURCE_TYPE_LINEAR = 2,
    RESOURCE_TYPE_PITCH2D = 3,
    ADDRESS_MODE_CLAMP = 1,
    TRSF_READ_AS_INTEGER = 0x01,
};

static struct {
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ArrayCreate)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*Array3DCreate)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    CUresult (*ArrayGetDescriptor)(CUDA_ARRAY_DESCRIPTOR *, CUarray);
    CUresult (*Array3DGetDescriptor)(CUDA_ARRAY3D_DESCRIPTOR *, CUarray);
    CUresult (*ArrayDestroy)(CUarray);
    CUresult (*MemcpyHtoA)(CUarray, size_t, const void *, size_t);
    CUresult (*MemcpyAtoH)(void *, CUarray, size_t, size_t);
    CUresult (*MemcpyHtoAAsync)(CUarray, size_t, const void *, size_t, CUstream);
    CUresult (*MemcpyAtoHAsync)(void *, CUarray, size_t, size_t, CUstream);
    CUresult (*MemcpyAtoD)(CUdeviceptr, CUarray, size_t, size_t);
    CUresult (*MemcpyDtoA)(CUarray, size_t, CUdeviceptr, size_t);
    CUresult (*MemcpyAtoA)(CUarray, size_t, CUarray, size_t, size_t);
    CUresult (*Memcpy2D)(const CUDA_MEMCPY2D *);
    CUresult (*Memcpy3D)(const CUDA_MEMCPY3D *);
    CUresult (*Memcpy3DAsync)(const CUDA_MEMCPY3D *, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned int);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*TexObjectCreate)(CUtexObject *, const CUDA_RESOURCE_DESC *,
                                const CUDA_TEXTURE_DESC *, const CUDA_RESOURCE_VIEW_DESC *);
    CUresult (*TexObjectDestroy)(CUtexObject);
    CUresult (*TexObjectGetResourceDesc)(CUDA_RESOURCE_DESC *, CUtexObject);
    CUresult (*TexObjectGetTextureDesc)(CUDA_TEXTURE_DESC *, CUtexObject);
    CUresult (*TexObjectGetResourceViewDesc)(CUDA_RESOURCE_VIEW_DESC *, CUtexObject);
    CUresult (*SurfObjectCreate)(CUsurfObject *, const CUDA_RESOURCE_DESC *);
    CUresult (*SurfObjectDestroy)(CUsurfObject);
    CUresult (*SurfObjectGetResourceDesc)(CUDA_RESOURCE_DESC *, CUsurfObject);
    CUresult (*MipmappedArrayCreate)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *,
                                     unsigned int);
    CUresult (*MipmappedArrayGetLevel)(CUarray *, CUmipmappedArray, unsigned int);
    CUresult (*MipmappedArrayDestroy)(CUmipmappedArray);
    CUresult (*ArrayGetSparseProperties)(void *, CUarray);
    CUresult (*ArrayGetPlane)(CUarray *, CUarray, unsigned int);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const struct cu_entry entries[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(ArrayCreate, "cuArrayCreate_v2"),
    ENTRY(Array3DCreate, "cuArray3DCreate_v2"),
    ENTRY(ArrayGetDescriptor, "cuArrayGetDescriptor_v2"),
    ENTRY(Array3DGetDescriptor, "cuArray3DGetDescriptor_v2"),
    ENTRY(ArrayDestroy, "cuArrayDestroy"),
    ENTRY(MemcpyHtoA, "cuMemcpyHtoA_v2"),
    ENTRY(MemcpyAtoH, "cuMemcpyAtoH_v2"),
    ENTRY(MemcpyHtoAAsync, "cuMemcpyHtoAAsync_v2"),
    ENTRY(MemcpyAtoHAsync, "cuMemcpyAtoHAsync_v2"),
    ENTRY(MemcpyAtoD, "cuMemcpyAtoD_v2"),
    ENTRY(MemcpyDtoA, "cuMemcpyDtoA_v2"),
    ENTRY(MemcpyAtoA, "cuMemcpyAtoA_v2"),
    ENTRY(Memcpy2D, "cuMemcpy2D_v2"),
    ENTRY(Memcpy3D, "cuMemcpy3D_v2"),
    ENTRY(Memcpy3DAsync, "cuMemcpy3DAsync_v2"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(TexObjectCreate, "cuTexObjectCreate"),
    ENTRY(TexObjectDestroy, "cuTexObjectDestroy"),
    ENTRY(TexObjectGetResourceDesc, "cuTexObjectGetResourceDesc"),
    ENTRY(TexObjectGetTextureDesc, "cuTexObjectGetTextureDesc"),
    ENTRY(TexObjectGetResourceViewDesc, "cuTexObjectGetResourceViewDesc"),
    ENTRY(SurfObjectCreate, "cuSurfObjectCreate"),
    ENTRY(SurfObjectDestroy, "cuSurfObjectDestroy"),
    ENTRY(SurfObjectGetResourceDesc, "cuSurfObjectGetResourceDesc"),
    ENTRY(MipmappedArrayCreate, "cuMipmappedArrayCreate"),
    ENTRY(MipmappedArrayGetLevel, "cuMipmappedArrayGetLevel"),
    ENTRY(MipmappedArrayDestroy, "cuMipmappedArrayDestroy"),
    ENTRY(ArrayGetSparseProperties, "cuArrayGetSparseProperties"),
    ENTRY(ArrayGetPlane, "cuArrayGetPlane"),
    ENTRY(GetErrorName, "cuGetErrorName"),
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

/* Byte i of pattern `seed`. */
static unsigned char pat(unsigned seed, size_t i)
{
    return (unsigned char)(i * 31u + seed * 7u + (i >> 8));
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(seed, i);
}

static void one_d(void)
{
    enum { N = 256, BYTES = N * 4 };
    CUDA_ARRAY_DESCRIPTOR d = {N, 0, FORMAT_FLOAT, 1}, got;
    CUarray a = NULL, b = NULL;
    if (!EXPECT("create_1d_float", cu.ArrayCreate(&a, &d), CUDA_SUCCESS))
        return;
    memset(&got, 0xff, sizeof(got));
    EXPECT("descriptor_1d", cu.ArrayGetDescriptor(&got, a), CUDA_SUCCESS);
    expect_true("descriptor_1d_values",
                got.Width == N && got.Height == 0 && got.Format == FORMAT_FLOAT &&
                    got.NumChannels == 1,
                "the descriptor is not the one the array was created with");

    static unsigned char in[BYTES], out[BYTES], mid[BYTES];
    fill(in, BYTES, 1);
    EXPECT("htoa_1d", cu.MemcpyHtoA(a, 0, in, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("atoh_1d", cu.MemcpyAtoH(out, a, 0, BYTES), CUDA_SUCCESS);
    expect_true("atoh_1d_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    CUdeviceptr dev = 0;
    EXPECT("alloc_1d", cu.MemAlloc(&dev, BYTES), CUDA_SUCCESS);
    EXPECT("atod_1d", cu.MemcpyAtoD(dev, a, 0, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("dtoh_1d", cu.MemcpyDtoH(out, dev, BYTES), CUDA_SUCCESS);
    expect_true("atod_1d_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* Device -> array at an offset, then array -> array. */
    EXPECT("memset_1d", cu.MemsetD8(dev, 0x5a, BYTES), CUDA_SUCCESS);
    EXPECT("dtoa_1d_offset", cu.MemcpyDtoA(a, 64, dev, 128), CUDA_SUCCESS);
    memcpy(mid, in, BYTES);
    memset(mid + 64, 0x5a, 128);
    EXPECT("create_1d_second", cu.ArrayCreate(&b, &d), CUDA_SUCCESS);
    EXPECT("atoa_1d", cu.MemcpyAtoA(b, 0, a, 0, BYTES), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("atoh_1d_second", cu.MemcpyAtoH(out, b, 0, BYTES), CUDA_SUCCESS);
    expect_true("atoa_1d_data", memcmp(mid, out, BYTES) == 0, "the bytes differ");

    /* The asynchronous forms, on a stream. */
    CUstream s = NULL;
    EXPECT("stream_create_1d", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    fill(in, BYTES, 4);
    EXPECT("htoa_async_1d", cu.MemcpyHtoAAsync(a, 0, in, BYTES, s), CUDA_SUCCESS);
    memset(out, 0, BYTES);
    EXPECT("atoh_async_1d", cu.MemcpyAtoHAsync(out, a, 0, BYTES, s), CUDA_SUCCESS);
    EXPECT("stream_synchronize_1d", cu.StreamSynchronize(s), CUDA_SUCCESS);
    expect_true("async_1d_data", memcmp(in, out, BYTES) == 0, "the bytes differ");
    cu.StreamDestroy(s);

    /* Outside the array. */
    expect_failure("htoa_1d_past_end", cu.MemcpyHtoA(a, BYTES - 4, in, 8));
    expect_failure("atoh_1d_past_end", cu.MemcpyAtoH(out, a, 4, BYTES));
    expect_failure("atod_1d_past_end", cu.MemcpyAtoD(dev, a, 8, BYTES));
    expect_failure("atoa_1d_past_end", cu.MemcpyAtoA(b, 4, a, 0, BYTES));

    /* Destroyed. */
    EXPECT("destroy_1d", cu.ArrayDestroy(a), CUDA_SUCCESS);
    if (invalid_handle_checks()) {
        expect_failure("htoa_destroyed", cu.MemcpyHtoA(a, 0, in, 16));
        expect_failure("descriptor_destroyed", cu.ArrayGetDescriptor(&got, a));
        expect_failure("destroy_destroyed", cu.ArrayDestroy(a));
    }
    EXPECT("destroy_1d_second", cu.ArrayDestroy(b), CUDA_SUCCESS);
    cu.MemFree(dev);
}

static void two_d(void)
{
    enum { W = 64, H = 32, ELEM = 4, ROW = W * ELEM, HOST_PITCH = ROW + 32 };
    CUDA_ARRAY_DESCRIPTOR d = {W, H, FORMAT_UNSIGNED_INT8, 4};
    CUDA_ARRAY3D_DESCRIPTOR got;
    CUarray a = NULL;
    if (!EXPECT("create_2d_uchar4", cu.ArrayCreate(&a, &d), CUDA_SUCCESS))
        return;
    memset(&got, 0xff, sizeof(got));
    EXPECT("descriptor3d_of_2d", cu.Array3DGetDescriptor(&got, a), CUDA_SUCCESS);
    expect_true("descriptor3d_of_2d_values",
                got.Width == W && got.Height == H && got.Depth == 0 &&
                    got.Format == FORMAT_UNSIGNED_INT8 && got.NumChannels == 4,
                "the descriptor is not the one the array was created with");

    static unsigned char in[HOST_PITCH * H], out[ROW * H];
    fill(in, sizeof(in), 2);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = HOST;
    c.srcHost = in;
    c.srcPitch = HOST_PITCH;
    c.dstMemoryType = ARRAY;
    c.dstArray = a;
    c.WidthInBytes = ROW;
    c.Height = H;
    EXPECT("memcpy2d_host_to_array", cu.Memcpy2D(&c), CUDA_SUCCESS);

    /* Array -> pitched device -> host. */
    CUdeviceptr dev = 0;
    size_t dev_pitch = ROW + 64;
    EXPECT("alloc_2d", cu.MemAlloc(&dev, dev_pitch * H), CUDA_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = ARRAY;
    c.srcArray = a;
    c.dstMemoryType = DEVICE;
    c.dstDevice = dev;
    c.dstPitch = dev_pitch;
    c.WidthInBytes = ROW;
    c.Height = H;
    EXPECT("memcpy2d_array_to_device", cu.Memcpy2D(&c), CUDA_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = DEVICE;
    c.srcDevice = dev;
    c.srcPitch = dev_pitch;
    c.dstMemoryType = HOST;
    c.dstHost = out;
    c.dstPitch = ROW;
    c.WidthInBytes = ROW;
    c.Height = H;
    EXPECT("memcpy2d_device_to_host", cu.Memcpy2D(&c), CUDA_SUCCESS);
    int same = 1;
    for (size_t y = 0; y < H; y++)
        same &= memcmp(out + y * ROW, in + y * HOST_PITCH, ROW) == 0;
    expect_true("memcpy2d_round_trip_data", same, "the bytes differ");

    /* A sub-rectangle of the array straight to host. */
    enum { X = 8 * ELEM, Y = 5, SW = 16 * ELEM, SH = 7 };
    static unsigned char sub[SW * SH];
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = ARRAY;
    c.srcArray = a;
    c.srcXInBytes = X;
    c.srcY = Y;
    c.dstMemoryType = HOST;
    c.dstHost = sub;
    c.dstPitch = SW;
    c.WidthInBytes = SW;
    c.Height = SH;
    EXPECT("memcpy2d_array_rect_to_host", cu.Memcpy2D(&c), CUDA_SUCCESS);
    same = 1;
    for (size_t y = 0; y < SH; y++)
        same &= memcmp(sub + y * SW, in + (Y + y) * HOST_PITCH + X, SW) == 0;
    expect_true("memcpy2d_array_rect_data", same, "the bytes differ");

    /* Outside the array: one row too many, one byte too wide. */
    c.srcY = H - SH + 1;
    expect_failure("memcpy2d_rows_past_end", cu.Memcpy2D(&c));
    c.srcY = 0;
    c.srcXInBytes = ROW - SW + 1;
    expect_failure("memcpy2d_bytes_past_end", cu.Memcpy2D(&c));

    EXPECT("destroy_2d", cu.ArrayDestroy(a), CUDA_SUCCESS);
    c.srcXInBytes = 0;
    if (invalid_handle_checks())
        expect_failure("memcpy2d_destroyed", cu.Memcpy2D(&c));
    cu.MemFree(dev);
}

static void three_d(void)
{
    enum { W = 16, H = 8, D = 4, ELEM = 4, ROW = W * ELEM, BYTES = ROW * H * D };
    CUDA_ARRAY3D_DESCRIPTOR d = {W, H, D, FORMAT_UNSIGNED_INT16, 2, ARRAY3D_SURFACE_LDST}, got;
    CUarray a = NULL;
    if (!EXPECT("create_3d_ushort2", cu.Array3DCreate(&a, &d), CUDA_SUCCESS))
        return;
    memset(&got, 0, sizeof(got));
    EXPECT("descriptor_3d", cu.Array3DGetDescriptor(&got, a), CUDA_SUCCESS);
    expect_true("descriptor_3d_values",
                got.Width == W && got.Height == H && got.Depth == D &&
                    got.Format == FORMAT_UNSIGNED_INT16 && got.NumChannels == 2 &&
                    got.Flags == ARRAY3D_SURFACE_LDST,
                "the descriptor is not the one the array was created with");

    static unsigned char in[BYTES], out[BYTES];
    fill(in, BYTES, 3);
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = HOST;
    c.srcHost = in;
    c.srcPitch = ROW;
    c.srcHeight = H;
    c.dstMemoryType = ARRAY;
    c.dstArray = a;
    c.WidthInBytes = ROW;
    c.Height = H;
    c.Depth = D;
    EXPECT("memcpy3d_host_to_array", cu.Memcpy3D(&c), CUDA_SUCCESS);

    /* Array -> device (one slice after another) -> host. */
    CUdeviceptr dev = 0;
    EXPECT("alloc_3d", cu.MemAlloc(&dev, BYTES), CUDA_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = ARRAY;
    c.srcArray = a;
    c.dstMemoryType = DEVICE;
    c.dstDevice = dev;
    c.dstPitch = ROW;
    c.dstHeight = H;
    c.WidthInBytes = ROW;
    c.Height = H;
    c.Depth = D;
    EXPECT("memcpy3d_array_to_device", cu.Memcpy3D(&c), CUDA_SUCCESS);
    EXPECT("dtoh_3d", cu.MemcpyDtoH(out, dev, BYTES), CUDA_SUCCESS);
    expect_true("memcpy3d_round_trip_data", memcmp(in, out, BYTES) == 0, "the bytes differ");

    /* A box of the array to host, on a stream. */
    enum { X = 2 * ELEM, Y = 3, Z = 1, BW = 5 * ELEM, BH = 4, BD = 2 };
    static unsigned char box[BW * BH * BD];
    CUstream s = NULL;
    EXPECT("stream_create", cu.StreamCreate(&s, 0), CUDA_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = ARRAY;
    c.srcArray = a;
    c.srcXInBytes = X;
    c.srcY = Y;
    c.srcZ = Z;
    c.dstMemoryType = HOST;
    c.dstHost = box;
    c.dstPitch = BW;
    c.dstHeight = BH;
    c.WidthInBytes = BW;
    c.Height = BH;
    c.Depth = BD;
    EXPECT("memcpy3d_async_box_to_host", cu.Memcpy3DAsync(&c, s), CUDA_SUCCESS);
    EXPECT("stream_synchronize", cu.StreamSynchronize(s), CUDA_SUCCESS);
    int same = 1;
    for (size_t z = 0; z < BD; z++)
        for (size_t y = 0; y < BH; y++)
            same &= memcmp(box + (z * BH + y) * BW, in + ((Z + z) * H + Y + y) * ROW + X, BW) == 0;
    expect_true("memcpy3d_box_data", same, "the bytes differ");

    /* Outside the array: one slice too many. */
    c.srcZ = D - BD + 1;
    expect_failure("memcpy3d_slices_past_end", cu.Memcpy3D(&c));

    EXPECT("destroy_3d", cu.ArrayDestroy(a), CUDA_SUCCESS);
    cu.StreamDestroy(s);
    cu.MemFree(dev);
}

static void textures(void)
{
    /* A texture over a 2D array. */
    CUDA_ARRAY_DESCRIPTOR d2 = {32, 16, FORMAT_UNSIGNED_INT8, 4};
    CUarray a = NULL;
    if (!EXPECT("tex_array_create", cu.ArrayCreate(&a, &d2), CUDA_SUCCESS))
        return;
    CUDA_RESOURCE_DESC res, got_res;
    memset(&res, 0, sizeof(res));
    res.resType = RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = a;
    CUDA_TEXTURE_DESC tex, got_tex;
    memset(&tex, 0, sizeof(tex));
    tex.addressMode[0] = tex.addressMode[1] = ADDRESS_MODE_CLAMP;
    tex.flags = TRSF_READ_AS_INTEGER;
    CUtexObject t = 0;
    EXPECT("tex_object_create_array", cu.TexObjectCreate(&t, &res, &tex, NULL), CUDA_SUCCESS);
    expect_true("tex_object_nonzero", t != 0, "the texture object is 0");
    memset(&got_res, 0xff, sizeof(got_res));
    EXPECT("tex_resource_desc", cu.TexObjectGetResourceDesc(&got_res, t), CUDA_SUCCESS);
    expect_true("tex_resource_desc_values",
                got_res.resType == RESOURCE_TYPE_ARRAY && got_res.res.array.hArray == a,
                "the resource is not the array");
    memset(&got_tex, 0xff, sizeof(got_tex));
    EXPECT("tex_texture_desc", cu.TexObjectGetTextureDesc(&got_tex, t), CUDA_SUCCESS);
    expect_true("tex_texture_desc_values",
                got_tex.addressMode[0] == ADDRESS_MODE_CLAMP &&
                    got_tex.addressMode[1] == ADDRESS_MODE_CLAMP &&
                    (got_tex.flags & TRSF_READ_AS_INTEGER) != 0 && got_tex.filterMode == 0,
                "the texture descriptor is not the one created with");
    CUDA_RESOURCE_VIEW_DESC view;
    /* Driver 580 answers for an object made without a view, too. */
    EXPECT("tex_view_desc_without_view", cu.TexObjectGetResourceViewDesc(&view, t), CUDA_SUCCESS);

    /* A texture over linear device memory, one over pitched memory. */
    CUdeviceptr dev = 0;
    EXPECT("tex_alloc", cu.MemAlloc(&dev, 1 << 16), CUDA_SUCCESS);
    memset(&res, 0, sizeof(res));
    res.resType = RESOURCE_TYPE_LINEAR;
    res.res.linear.devPtr = dev;
    res.res.linear.format = FORMAT_FLOAT;
    res.res.linear.numChannels = 1;
    res.res.linear.sizeInBytes = 4096;
    memset(&tex, 0, sizeof(tex));
    CUtexObject lin = 0;
    EXPECT("tex_object_create_linear", cu.TexObjectCreate(&lin, &res, &tex, NULL), CUDA_SUCCESS);
    memset(&got_res, 0, sizeof(got_res));
    EXPECT("tex_linear_resource_desc", cu.TexObjectGetResourceDesc(&got_res, lin), CUDA_SUCCESS);
    expect_true("tex_linear_resource_values",
                got_res.resType == RESOURCE_TYPE_LINEAR && got_res.res.linear.devPtr == dev &&
                    got_res.res.linear.sizeInBytes == 4096 &&
                    got_res.res.linear.format == FORMAT_FLOAT,
                "the linear resource is not the one created with");
    memset(&res, 0, sizeof(res));
    res.resType = RESOURCE_TYPE_PITCH2D;
    res.res.pitch2D.devPtr = dev;
    res.res.pitch2D.format = FORMAT_FLOAT;
    res.res.pitch2D.numChannels = 1;
    res.res.pitch2D.width = 64;
    res.res.pitch2D.height = 16;
    res.res.pitch2D.pitchInBytes = 512;
    CUtexObject pitched = 0;
    EXPECT("tex_object_create_pitch2d", cu.TexObjectCreate(&pitched, &res, &tex, NULL),
           CUDA_SUCCESS);
    expect_true("tex_objects_distinct", t != lin && lin != pitched && t != pitched,
                "two live objects share a value");

    /* Surfaces need an array made for them. */
    CUDA_ARRAY3D_DESCRIPTOR d3 = {16, 16, 0, FORMAT_FLOAT, 1, ARRAY3D_SURFACE_LDST};
    CUarray sa = NULL;
    EXPECT("surf_array_create", cu.Array3DCreate(&sa, &d3), CUDA_SUCCESS);
    memset(&res, 0, sizeof(res));
    res.resType = RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = sa;
    CUsurfObject surf = 0;
    EXPECT("surf_object_create", cu.SurfObjectCreate(&surf, &res), CUDA_SUCCESS);
    memset(&got_res, 0, sizeof(got_res));
    EXPECT("surf_resource_desc", cu.SurfObjectGetResourceDesc(&got_res, surf), CUDA_SUCCESS);
    expect_true("surf_resource_desc_values",
                got_res.resType == RESOURCE_TYPE_ARRAY && got_res.res.array.hArray == sa,
                "the resource is not the array");
    res.res.array.hArray = a;
    CUsurfObject plain = 0;
    /* Driver 580 makes a surface object over an array made without
     * CUDA_ARRAY3D_SURFACE_LDST too (what a kernel may do with it is its own
     * matter). */
    if (EXPECT("surf_object_on_plain_array", cu.SurfObjectCreate(&plain, &res), CUDA_SUCCESS))
        EXPECT("surf_object_on_plain_array_destroy", cu.SurfObjectDestroy(plain), CUDA_SUCCESS);

    /* A destroyed array in a texture descriptor. */
    CUDA_ARRAY_DESCRIPTOR d1 = {64, 0, FORMAT_FLOAT, 1};
    CUarray gone = NULL;
    EXPECT("tex_gone_array_create", cu.ArrayCreate(&gone, &d1), CUDA_SUCCESS);
    EXPECT("tex_gone_array_destroy", cu.ArrayDestroy(gone), CUDA_SUCCESS);
    res.res.array.hArray = gone;
    CUtexObject never = 0;
    if (invalid_handle_checks())
        expect_failure("tex_object_on_destroyed_array", cu.TexObjectCreate(&never, &res, &tex, NULL));
    EXPECT("tex_object_null_resource", cu.TexObjectCreate(&never, NULL, &tex, NULL),
           CUDA_ERROR_INVALID_VALUE);

    /* Destroy, then use again. */
    EXPECT("tex_object_destroy", cu.TexObjectDestroy(t), CUDA_SUCCESS);
    EXPECT("tex_object_destroy_linear", cu.TexObjectDestroy(lin), CUDA_SUCCESS);
    EXPECT("tex_object_destroy_pitch2d", cu.TexObjectDestroy(pitched), CUDA_SUCCESS);
    EXPECT("surf_object_destroy", cu.SurfObjectDestroy(surf), CUDA_SUCCESS);
    if (invalid_handle_checks())
        expect_failure("tex_object_destroy_again", cu.TexObjectDestroy(t));
    if (invalid_handle_checks())
        expect_failure("surf_object_destroy_again", cu.SurfObjectDestroy(surf));
    EXPECT("tex_arrays_destroy", cu.ArrayDestroy(a) | cu.ArrayDestroy(sa), CUDA_SUCCESS);
    cu.MemFree(dev);
}

static void mipmapped(void)
{
    enum { W = 64, H = 32, LEVELS = 3 };
    CUDA_ARRAY3D_DESCRIPTOR d = {W, H, 0, FORMAT_FLOAT, 1, 0}, got;
    CUmipmappedArray m = NULL;
    if (!EXPECT("mipmap_create", cu.MipmappedArrayCreate(&m, &d, LEVELS), CUDA_SUCCESS))
        return;
    CUarray level[LEVELS];
    int shapes = 1;
    for (unsigned i = 0; i < LEVELS; i++) {
        level[i] = NULL;
        EXPECT("mipmap_get_level", cu.MipmappedArrayGetLevel(&level[i], m, i), CUDA_SUCCESS);
        memset(&got, 0, sizeof(got));
        EXPECT("mipmap_level_descriptor", cu.Array3DGetDescriptor(&got, level[i]), CUDA_SUCCESS);
        shapes &= got.Width == (size_t)(W >> i) && got.Height == (size_t)(H >> i) &&
                  got.Depth == 0 && got.Format == FORMAT_FLOAT;
    }
    expect_true("mipmap_level_shapes", shapes, "a level's extent is not half the one above");
    CUarray past = NULL;
    expect_failure("mipmap_level_past_last", cu.MipmappedArrayGetLevel(&past, m, LEVELS));

    /* Data through level 1. */
    enum { LW = W / 2, LH = H / 2, ROW = LW * 4 };
    static unsigned char in[ROW * LH], out[ROW * LH];
    fill(in, sizeof(in), 5);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = HOST;
    c.srcHost = in;
    c.srcPitch = ROW;
    c.dstMemoryType = ARRAY;
    c.dstArray = level[1];
    c.WidthInBytes = ROW;
    c.Height = LH;
    EXPECT("mipmap_level_upload", cu.Memcpy2D(&c), CUDA_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = ARRAY;
    c.srcArray = level[1];
    c.dstMemoryType = HOST;
    c.dstHost = out;
    c.dstPitch = ROW;
    c.WidthInBytes = ROW;
    c.Height = LH;
    EXPECT("mipmap_level_download", cu.Memcpy2D(&c), CUDA_SUCCESS);
    expect_true("mipmap_level_data", memcmp(in, out, sizeof(in)) == 0, "the bytes differ");

    /* A texture over the whole mipmapped array. */
    CUDA_RESOURCE_DESC res, got_res;
    memset(&res, 0, sizeof(res));
    res.resType = RESOURCE_TYPE_MIPMAPPED_ARRAY;
    res.res.mipmap.hMipmappedArray = m;
    CUDA_TEXTURE_DESC tex;
    memset(&tex, 0, sizeof(tex));
    tex.maxMipmapLevelClamp = LEVELS - 1;
    CUtexObject t = 0;
    EXPECT("mipmap_tex_object_create", cu.TexObjectCreate(&t, &res, &tex, NULL), CUDA_SUCCESS);
    memset(&got_res, 0, sizeof(got_res));
    EXPECT("mipmap_tex_resource_desc", cu.TexObjectGetResourceDesc(&got_res, t), CUDA_SUCCESS);
    expect_true("mipmap_tex_resource_values",
                got_res.resType == RESOURCE_TYPE_MIPMAPPED_ARRAY &&
                    got_res.res.mipmap.hMipmappedArray == m,
                "the resource is not the mipmapped array");
    EXPECT("mipmap_tex_object_destroy", cu.TexObjectDestroy(t), CUDA_SUCCESS);

    /* Plain arrays are neither sparse nor multi-planar. */
    char props[64];
    expect_failure("sparse_properties_of_plain_array", cu.ArrayGetSparseProperties(props, level[0]));
    CUarray plane = NULL;
    expect_failure("plane_of_plain_array", cu.ArrayGetPlane(&plane, level[0], 0));

    EXPECT("mipmap_destroy", cu.MipmappedArrayDestroy(m), CUDA_SUCCESS);
    if (invalid_handle_checks())
        expect_failure("mipmap_destroy_again", cu.MipmappedArrayDestroy(m));
    if (invalid_handle_checks())
        expect_failure("mipmap_level_after_destroy", cu.Memcpy2D(&c));
}

static void invalid(void)
{
    CUDA_ARRAY_DESCRIPTOR d = {0, 4, FORMAT_FLOAT, 1};
    CUarray a = NULL;
    EXPECT("create_zero_width", cu.ArrayCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {8, 0, 4, FORMAT_FLOAT, 1, 0};
    EXPECT("create_3d_without_height", cu.Array3DCreate(&a, &d3), CUDA_ERROR_INVALID_VALUE);
    d3.Height = 4;
    d3.NumChannels = 3;
    EXPECT("create_three_channels", cu.Array3DCreate(&a, &d3), CUDA_ERROR_INVALID_VALUE);
    EXPECT("create_null_descriptor", cu.ArrayCreate(&a, NULL), CUDA_ERROR_INVALID_VALUE);
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
    one_d();
    two_d();
    three_d();
    textures();
    mipmapped();
    invalid();
    EXPECT("primary_release", cu.DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    return checks_summary();
}
