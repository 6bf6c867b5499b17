# Native (C/C++/CUDA) programs of round 31, written out by `python3 r31_native.py --write DIR` (r31_run.sh builds and
# runs them through their own job scripts; none of these prints a Python traceback):
# tokidx/    (cpp_badalloc) a shard indexer built with nvcc: it reads each tokenized shard's header, sizes its offset
#            table from the header's document count and uploads the offsets to the GPU. The second shard was written
#            by an older exporter whose header holds the token count (a 64-bit number of about 4.4e12) where the
#            document count belongs: std::vector's allocation of ~35 TB throws std::bad_alloc, nothing catches it,
#            "terminate called after throwing an instance of 'std::bad_alloc'", abort, the job script's bash reports
#            the Aborted command;
# kvxfer/    (cu_glog_check) a KV-block transfer agent with glog-style logging (I/W/F lines, CHECK macros): its
#            events are created with cudaEventDisableTiming for the copy path, then the stats path asks
#            cudaEventElapsedTime for them -> cudaErrorInvalidResourceHandle, an `F1208 ... Check failed:` line,
#            "*** Check failure stack trace: ***" with real backtrace frames, abort;
# fusedops/  (ninja_nvcc) a hand-written build.ninja compiling two CUDA sources; rope.cu uses __half2 intrinsics
#            without including cuda_fp16.h: nvcc's "error: identifier ... is undefined" lines, "N errors detected in
#            the compilation of", ninja's FAILED line and "ninja: build stopped: subcommand failed.";
# tiles/     (cu_pitch) a satellite-tile uploader: the uint8 band uploads fine, the float32 band passes the source
#            pitch in elements where cudaMemcpy2D wants bytes -> cudaErrorInvalidPitchValue on one bare error line;
# staging/   (cu_hostreg) a CMake/CTest project: the pinned staging pool registers its arena with cudaHostRegister
#            and the "grow" path registers the same arena again -> cudaErrorHostMemoryAlreadyRegistered; CTest's
#            "***Failed", "50% tests passed" and "Errors while running CTest";
# vocab/     (ctypes_abort, run by r31_train.py) libvocabmap.so, an extern "C" id remapper whose std::vector::at throws
#            std::out_of_range across the C boundary -> std::terminate -> "Fatal Python error: Aborted".
import os
import struct
import sys

TOKIDX = r'''// tokidx.cu: build the document-offset index of tokenized shards and stage it on the GPU
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <vector>
#include <string>
#include <cuda_runtime.h>

struct Header { char magic[8]; uint32_t version; uint32_t dtype; uint64_t n_docs; };

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int dev = 0;
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, dev);
  printf("tokidx: device %s, %d shard(s)\n", prop.name, argc - 1);
  for (int a = 1; a < argc; ++a) {
    std::string path = argv[a];
    std::ifstream f(path, std::ios::binary);
    if (!f) { fprintf(stderr, "tokidx: cannot open %s\n", path.c_str()); return 2; }
    Header h;
    f.read(reinterpret_cast<char *>(&h), sizeof(h));
    printf("tokidx: %s version=%u dtype=%u docs=%llu\n", path.c_str(), h.version, h.dtype, (unsigned long long)h.n_docs);
    std::vector<uint64_t> offsets(h.n_docs + 1);
    std::vector<uint32_t> lens(h.n_docs);
    f.read(reinterpret_cast<char *>(lens.data()), sizeof(uint32_t) * h.n_docs);
    offsets[0] = 0;
    for (uint64_t i = 0; i < h.n_docs; ++i) offsets[i + 1] = offsets[i] + lens[i];
    uint64_t *d = nullptr;
    cudaMalloc(&d, sizeof(uint64_t) * offsets.size());
    cudaMemcpy(d, offsets.data(), sizeof(uint64_t) * offsets.size(), cudaMemcpyHostToDevice);
    printf("tokidx: %s indexed %llu docs, %llu tokens, %.1f KiB on device\n", path.c_str(),
           (unsigned long long)h.n_docs, (unsigned long long)offsets.back(), sizeof(uint64_t) * offsets.size() / 1024.0);
    std::ofstream(path + ".idx", std::ios::binary).write(reinterpret_cast<char *>(offsets.data()), sizeof(uint64_t) * offsets.size());
    cudaFree(d);
  }
  return 0;
}
'''

TOKIDX_JOB = r'''#!/bin/bash
# data-prep stage 3/5: index the tokenized shards before packing
set -e
cd "$(dirname "$0")"
echo "[prep] $(date -u +%FT%TZ) stage 3/5: build document index"
nvcc -O2 -std=c++17 -o tokidx tokidx.cu || exit 1
for s in shards/*.bin; do
  ./tokidx "$s"
done
echo "[prep] $(date -u +%FT%TZ) stage 3/5 done"
'''

KVXFER = r'''// kv_xfer_agent.cu: moves KV-cache blocks between a prefill pool and a decode pool, reports bandwidth
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <execinfo.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cuda_runtime.h>

// minimal glog-compatible logging (the agent is built without glog on the inference nodes)
class LogMessage {
 public:
  LogMessage(char sev, const char *file, int line) : sev_(sev) {
    struct timeval tv; gettimeofday(&tv, nullptr);
    struct tm t; localtime_r(&tv.tv_sec, &t);
    const char *base = strrchr(file, '/');
    char head[128];
    snprintf(head, sizeof(head), "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", sev, t.tm_mon + 1, t.tm_mday, t.tm_hour,
             t.tm_min, t.tm_sec, (long)tv.tv_usec, (long)syscall(SYS_gettid), base ? base + 1 : file, line);
    os_ << head;
  }
  ~LogMessage() {
    os_ << "\n";
    fputs(os_.str().c_str(), stderr);
    if (sev_ == 'F') {
      fputs("*** Check failure stack trace: ***\n", stderr);
      void *frames[32];
      int n = backtrace(frames, 32);
      backtrace_symbols_fd(frames, n, 2);
      fflush(stderr);
      abort();
    }
  }
  std::ostream &stream() { return os_; }
 private:
  char sev_;
  std::ostringstream os_;
};
#define LOG(sev) LogMessage(#sev[0], __FILE__, __LINE__).stream()
#define CHECK_CUDA(call)                                                                                    \
  for (cudaError_t e_ = (call); e_ != cudaSuccess; e_ = cudaSuccess)                                         \
  LogMessage('F', __FILE__, __LINE__).stream() << "Check failed: " #call " == cudaSuccess (" << (int)e_       \
                                                << " vs. 0) " << cudaGetErrorName(e_) << ": " << cudaGetErrorString(e_) << " "

struct Pool { char *base; size_t block_bytes; int blocks; };

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 512;
  size_t block_bytes = 2 * 32 * 16 * 8 * 128 * 2;  // K+V, 32 layers, 16 tokens, 8 kv heads, 128 dims, bf16
  LOG(I) << "kv_xfer_agent starting: blocks=" << blocks << " block_bytes=" << block_bytes;
  Pool prefill{nullptr, block_bytes, blocks}, decode{nullptr, block_bytes, blocks};
  CHECK_CUDA(cudaMalloc(&prefill.base, block_bytes * blocks));
  CHECK_CUDA(cudaMalloc(&decode.base, block_bytes * blocks));
  LOG(I) << "pools ready: " << (2.0 * block_bytes * blocks / (1 << 30)) << " GiB";
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  // the copy path only needs ordering, not timestamps
  CHECK_CUDA(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&stop, cudaEventDisableTiming));
  for (int round = 1; round <= 4; ++round) {
    CHECK_CUDA(cudaEventRecord(start, s));
    for (int b = 0; b < blocks; b += 4)
      CHECK_CUDA(cudaMemcpyAsync(decode.base + (size_t)b * block_bytes, prefill.base + (size_t)b * block_bytes,
                                 4 * block_bytes, cudaMemcpyDeviceToDevice, s));
    CHECK_CUDA(cudaEventRecord(stop, s));
    CHECK_CUDA(cudaEventSynchronize(stop));
    LOG(I) << "transfer round " << round << ": " << blocks << " blocks moved";
    if (round == 2) LOG(W) << "decode pool 93% full, evicting 64 blocks";
  }
  // periodic stats report
  float ms = 0.f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  LOG(I) << "last round " << ms << " ms, " << (blocks * block_bytes / ms / 1e6) << " GB/s";
  return 0;
}
'''

KVXFER_JOB = r'''#!/bin/bash
# start the KV transfer agent of a disaggregated prefill/decode node
cd "$(dirname "$0")"
echo "node-agent: building kv_xfer_agent ($(nvcc --version | tail -1))"
nvcc -O2 -std=c++17 -o kv_xfer_agent kv_xfer_agent.cu || exit 1
echo "node-agent: launching kv_xfer_agent --blocks 512"
./kv_xfer_agent 512
echo "node-agent: kv_xfer_agent exited with status $?"
'''

RMSNORM = r'''// rmsnorm.cu
#include <cuda_bf16.h>
#include <cstdint>

__global__ void rmsnorm_bf16(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y, int d, float eps) {
  const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * d;
  __shared__ float red[32];
  float s = 0.f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) { float v = __bfloat162float(xr[i]); s += v * v; }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (threadIdx.x == 0) red[0] = rsqrtf(s / d + eps);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < d; i += blockDim.x)
    y[(int64_t)blockIdx.x * d + i] = __float2bfloat16(__bfloat162float(xr[i]) * red[0] * __bfloat162float(w[i]));
}

extern "C" void launch_rmsnorm(const void *x, const void *w, void *y, int rows, int d, float eps, cudaStream_t s) {
  rmsnorm_bf16<<<rows, 256, 0, s>>>((const __nv_bfloat16 *)x, (const __nv_bfloat16 *)w, (__nv_bfloat16 *)y, d, eps);
}
'''

ROPE = r'''// rope.cu: rotary embedding on fp16 q/k, two elements at a time
#include <cstdint>
#include <cuda_runtime.h>

__global__ void rope_half2(void *q_raw, const float *cos_t, const float *sin_t, int heads, int half_dim) {
  int tok = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
  if (i >= half_dim / 2) return;
  __half2 *row = reinterpret_cast<__half2 *>(q_raw) + ((int64_t)tok * heads + h) * half_dim;
  __half2 c = __floats2half2_rn(cos_t[tok * half_dim + 2 * i], cos_t[tok * half_dim + 2 * i + 1]);
  __half2 s = __floats2half2_rn(sin_t[tok * half_dim + 2 * i], sin_t[tok * half_dim + 2 * i + 1]);
  __half2 x1 = row[i], x2 = row[i + half_dim / 2];
  row[i] = __hsub2(__hmul2(x1, c), __hmul2(x2, s));
  row[i + half_dim / 2] = __hfma2(x1, s, __hmul2(x2, c));
}

extern "C" void launch_rope(void *q, const float *cos_t, const float *sin_t, int tokens, int heads, int head_dim,
                            cudaStream_t st) {
  rope_half2<<<dim3(tokens, heads), head_dim / 4, 0, st>>>(q, cos_t, sin_t, heads, head_dim / 2);
}
'''

FUSED_NINJA = '''# fusedops: small fused kernels for the serving stack (generated by tools/gen_ninja.py)
nvcc = nvcc
cuflags = -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -lineinfo

rule cu
  command = $nvcc $cuflags -c $in -o $out
  description = NVCC $out

rule so
  command = $nvcc -shared $in -o $out
  description = LINK $out

build obj/rmsnorm.o: cu src/rmsnorm.cu
build obj/rope.o: cu src/rope.cu
build libfusedops.so: so obj/rmsnorm.o obj/rope.o
default libfusedops.so
'''

FUSED_JOB = r'''#!/bin/bash
# build the fused ops library before the server image is assembled
set -euo pipefail
cd "$(dirname "$0")"
NINJA=${NINJA:-ninja}
echo "== fusedops: configure (sm_90, $(nvcc --version | tail -1))"
mkdir -p obj
echo "== fusedops: build"
$NINJA -j 2
echo "== fusedops: installed libfusedops.so"
'''

TILES = r'''// tile_upload.cu: upload a multi-band satellite tile into pitched device memory and compute band means
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CK(call)                                                                                             \
  do {                                                                                                       \
    cudaError_t e = (call);                                                                                  \
    if (e != cudaSuccess) {                                                                                  \
      fprintf(stderr, "%s:%d %s failed: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorString(e),         \
              cudaGetErrorName(e));                                                                          \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

template <typename T>
__global__ void band_sum(const char *base, size_t pitch, int w, int h, double *out) {
  int y = blockIdx.x;
  if (y >= h) return;
  const T *row = reinterpret_cast<const T *>(base + y * pitch);
  double s = 0;
  for (int x = threadIdx.x; x < w; x += blockDim.x) s += (double)row[x];
  atomicAdd(out, s);
}

template <typename T>
double upload_band(const char *name, int w, int h) {
  std::vector<T> host((size_t)w * h);
  for (size_t i = 0; i < host.size(); ++i) host[i] = (T)(i % 251);
  char *dev; size_t pitch;
  CK(cudaMallocPitch((void **)&dev, &pitch, w * sizeof(T), h));
  printf("band %-6s %dx%d elem=%zuB pitch=%zu\n", name, w, h, sizeof(T), pitch);
  // source rows are tightly packed: one row is w elements
  size_t src_pitch = w;
  CK(cudaMemcpy2D(dev, pitch, host.data(), src_pitch, w * sizeof(T), h, cudaMemcpyHostToDevice));
  double *d_sum, sum = 0;
  CK(cudaMalloc(&d_sum, sizeof(double)));
  CK(cudaMemset(d_sum, 0, sizeof(double)));
  band_sum<T><<<h, 256>>>(dev, pitch, w, h, d_sum);
  CK(cudaGetLastError());
  CK(cudaMemcpy(&sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost));
  cudaFree(dev); cudaFree(d_sum);
  return sum / ((double)w * h);
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int w = 10980, h = 10980;  // Sentinel-2 10 m tile
  printf("tile T32TQM: %dx%d\n", w, h);
  printf("band %-6s mean %.4f\n", "SCL", upload_band<uint8_t>("SCL", w, h));
  printf("band %-6s mean %.4f\n", "B04", upload_band<float>("B04", w, h));
  printf("band %-6s mean %.4f\n", "B08", upload_band<float>("B08", w, h));
  return 0;
}
'''

TILES_JOB = r'''#!/bin/bash
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o tile_upload tile_upload.cu || exit 1
./tile_upload
'''

STAGING = r'''// staging_pool.cu: pinned host staging pool for checkpoint streaming, with an H2D bandwidth check
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <chrono>
#include <cuda_runtime.h>

static void ck(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + " -> " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

class StagingPool {
 public:
  explicit StagingPool(size_t cap) : cap_(cap) {
    arena_ = static_cast<char *>(aligned_alloc(4096, 4 * cap));  // room to grow without moving
    ck(cudaHostRegister(arena_, cap_, cudaHostRegisterDefault), "cudaHostRegister(arena, cap)");
  }
  void grow(size_t cap) {  // extend the registered range in place
    ck(cudaHostRegister(arena_, cap, cudaHostRegisterDefault), "cudaHostRegister(arena, new_cap)");
    cap_ = cap;
  }
  char *data() { return arena_; }
  size_t cap() const { return cap_; }
 private:
  char *arena_;
  size_t cap_;
};

static double h2d(StagingPool &p, size_t bytes) {
  char *d; ck(cudaMalloc(&d, bytes), "cudaMalloc");
  memset(p.data(), 1, bytes);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ck(cudaMemcpy(d, p.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudaFree(d);
  return 5.0 * bytes / s / 1e9;
}

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "small";
  try {
    StagingPool pool(256ull << 20);
    printf("[staging] pool registered: %zu MiB\n", pool.cap() >> 20);
    printf("[staging] H2D %zu MiB: %.1f GB/s\n", pool.cap() >> 20, h2d(pool, pool.cap()));
    if (mode == "grow") {
      printf("[staging] growing pool to %d MiB for the 70B shard size\n", 1024);
      pool.grow(1024ull << 20);
      printf("[staging] H2D %zu MiB: %.1f GB/s\n", pool.cap() >> 20, h2d(pool, pool.cap()));
    }
  } catch (const std::exception &e) {
    fprintf(stderr, "[staging] error: %s\n", e.what());
    return 1;
  }
  printf("[staging] ok\n");
  return 0;
}
'''

STAGING_CMAKE = '''cmake_minimum_required(VERSION 3.18)
project(staging_pool LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
set(CMAKE_CXX_STANDARD 17)
add_executable(staging_pool staging_pool.cu)
enable_testing()
add_test(NAME h2d_small COMMAND staging_pool small)
add_test(NAME h2d_grow COMMAND staging_pool grow)
'''

STAGING_JOB = r'''#!/bin/bash
# CI step: configure, build and test the checkpoint staging pool
set -e
cd "$(dirname "$0")"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build
cd build && ctest --output-on-failure
'''

VOCAB = r'''// vocabmap.cpp: remap tokenizer ids into the packed embedding table's row order
#include <cstdint>
#include <vector>
#include <fstream>

static std::vector<int32_t> g_table;

extern "C" int vm_load(const char *path) {
  std::ifstream f(path, std::ios::binary);
  int32_t n = 0;
  f.read(reinterpret_cast<char *>(&n), 4);
  g_table.resize(n);
  f.read(reinterpret_cast<char *>(g_table.data()), 4 * (size_t)n);
  return n;
}

extern "C" void vm_remap(const int32_t *ids, int64_t n, int32_t *out) {
  for (int64_t i = 0; i < n; ++i) out[i] = g_table.at(ids[i]);
}
'''


def write(root):
    for d in ("tokidx/shards", "kvxfer", "fusedops/src", "tiles", "staging", "vocab"):
        os.makedirs(f"{root}/{d}", exist_ok=True)

    def put(rel, text, exe=False):
        with open(f"{root}/{rel}", "w") as f:
            f.write(text)
        if exe:
            os.chmod(f"{root}/{rel}", 0o755)

    put("tokidx/tokidx.cu", TOKIDX)
    put("tokidx/index_shards.sh", TOKIDX_JOB, True)
    # shard 00000: a proper header; shard 00001: an old exporter's header, token count in the document-count field
    lens = [37 + (i * 7919) % 2000 for i in range(20000)]
    for name, n_docs, ver in (("c4-en-00000.bin", len(lens), 3), ("c4-en-00001.bin", 4_398_046_511_104 + 123457, 2)):
        with open(f"{root}/tokidx/shards/{name}", "wb") as f:
            f.write(struct.pack("<8sIIQ", b"TOKSHRD\0", ver, 2, n_docs))
            f.write(struct.pack(f"<{len(lens)}I", *lens))
    put("kvxfer/kv_xfer_agent.cu", KVXFER)
    put("kvxfer/start_agent.sh", KVXFER_JOB, True)
    put("fusedops/src/rmsnorm.cu", RMSNORM)
    put("fusedops/src/rope.cu", ROPE)
    put("fusedops/build.ninja", FUSED_NINJA)
    put("fusedops/build.sh", FUSED_JOB, True)
    put("tiles/tile_upload.cu", TILES)
    put("tiles/run.sh", TILES_JOB, True)
    put("staging/staging_pool.cu", STAGING)
    put("staging/CMakeLists.txt", STAGING_CMAKE)
    put("staging/ci.sh", STAGING_JOB, True)
    put("vocab/vocabmap.cpp", VOCAB)
    # the remap table covers 50277 ids (the tokenizer grew to 50281 after four special tokens were added)
    with open(f"{root}/vocab/remap.bin", "wb") as f:
        n = 50277
        f.write(struct.pack("<i", n))
        f.write(struct.pack(f"<{n}i", *[(i * 7) % n for i in range(n)]))
    print(root)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write(sys.argv[2])
    else:
        sys.exit("usage: r31_native.py --write DIR")
