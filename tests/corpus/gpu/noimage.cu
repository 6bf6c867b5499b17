#include <cstdio>
#include <cstdlib>
#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
void check(cudaError_t result, char const *const func, const char *const file, int const line) {
  if (result) {
    fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, (int)result, cudaGetErrorName(result), func);
    exit(EXIT_FAILURE);
  }
}
__global__ void add(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.0f; }
int main() {
  int dev = 0; cudaDeviceProp prop; checkCudaErrors(cudaGetDeviceProperties(&prop, dev));
  printf("GPU Device %d: \"%s\" with compute capability %d.%d\n\n", dev, prop.name, prop.major, prop.minor);
  float *d; checkCudaErrors(cudaMalloc(&d, 1024 * sizeof(float)));
  printf("Launching kernel add<<<4, 256>>>\n");
  add<<<4, 256>>>(d, 1024);
  checkCudaErrors(cudaGetLastError());
  checkCudaErrors(cudaDeviceSynchronize());
  printf("Test PASSED\n");
  return 0;
}
