// The vector_add kernel of gpu/vector_add_driver.c, compiled by nvcc into a
// cubin and a fatbin so the GPU test also loads real nvcc images (ELF and
// fatbin length detection in the client).
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
