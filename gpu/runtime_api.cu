// An nvcc-built CUDA runtime program (<<<>>> launches): the runtime reaches
// the driver through cuGetProcAddress and the export tables.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void square(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

int main() {
    const int n = 1 << 20;
    float *h = new float[n], *d_in, *d_out;
    for (int i = 0; i < n; i++) h[i] = i % 1000;
    if (cudaMalloc(&d_in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&d_out, n * sizeof(float)) != cudaSuccess) {
        printf("FAIL cudaMalloc\n");
        return 1;
    }
    cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice);
    square<<<(n + 255) / 256, 256>>>(d_in, d_out, n);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += h[i] != float(i % 1000) * float(i % 1000);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    printf("device: %s, sm_%d%d\n", p.name, p.major, p.minor);
    printf("launch status: %s\n", cudaGetErrorString(e));
    printf("square[999] = %.0f, mismatches = %d\n", h[999], bad);
    cudaFree(d_in);
    cudaFree(d_out);
    printf(bad == 0 && e == cudaSuccess ? "PASS\n" : "FAIL\n");
    return bad != 0;
}
