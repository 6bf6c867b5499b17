# Round 24: shared helpers for the r24_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r24_common.py --prep`, CPU only, run once by r24_run.sh) that
# builds and writes what some scenarios load:
# - libtokstats.so (C): a host-side token histogram of a batch (reads the ids through the pointer it is given);
# - libtokpack.so (C, -fstack-protector-strong): packs one document into a fixed 4096-token stack buffer before
#   copying it out, with no bound check (a document longer than 4096 tokens smashes the stack: glibc aborts);
# - libtokfsm.so (C): builds the token automaton of a grammar backend by following each token's merge chain
#   recursively; a merges table with a cycle recurses until the thread's stack is gone (SIGSEGV);
# - a small kernels repository (/tmp/r24_files/kernels: Triton softmax / RMSNorm / flag-barrier kernels, a ctypes
#   wrapper of libtokstats, their pytest files copied from r24_pt_*.py);
# - a server folder whose start script pip-installs a local CUDA extension (csrc/fused_rmsnorm) before it starts
#   the server; its setup.py still lists sm_70 (Volta), which CUDA 13's nvcc no longer targets;
# - a checkpoint of a torch.compile'd model (state_dict keys carry the `_orig_mod.` prefix).
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R24_ROOT", "/tmp/r24_files")  # R24_ROOT: elsewhere for a local dry run
LIB = f"{ROOT}/lib"
TOKSTATS = f"{LIB}/libtokstats.so"
TOKPACK = f"{LIB}/libtokpack.so"
TOKFSM = f"{LIB}/libtokfsm.so"
KERNELS = f"{ROOT}/kernels"
SRV = f"{ROOT}/srv"
CKPT = f"{ROOT}/ckpt/llama-350m-compiled/step_6000.pt"

TOKSTATS_C = r"""
#include <stdint.h>
/* histogram of the token ids of one batch (host memory), returns the number of ids seen */
long count_tokens(const int32_t* ids, long n, int vocab, int64_t* hist) {
    long seen = 0;
    for (long i = 0; i < n; i++) {
        int32_t t = ids[i];
        if (t >= 0 && t < vocab) { hist[t]++; seen++; }
    }
    return seen;
}
"""

TOKPACK_C = r"""
#include <stdint.h>
#include <string.h>
#define MAX_DOC 4096
/* copies one document into the packed sample, appending EOS; returns the number of tokens written */
int pack_doc(const int32_t* ids, int n, int eos, int32_t* out, int room) {
    int32_t buf[MAX_DOC + 1];
    int k = 0;
    for (int i = 0; i < n; i++) buf[k++] = ids[i];   /* documents are at most MAX_DOC tokens (pre-filtered) */
    buf[k++] = eos;
    if (k > room) k = room;
    memcpy(out, buf, (size_t)k * sizeof(int32_t));
    return k;
}
"""

TOKFSM_C = r"""
#include <stdint.h>
/* depth of the merge chain of token t: a token is built from its left part, which is built from its left part, ... */
static int chain_depth(const int32_t* left, int t, int vocab) {
    int l = left[t];
    if (l < 0 || l >= vocab) return 0;
    return 1 + chain_depth(left, l, vocab);
}
/* builds the automaton's state table: one state per token, its depth being the length of its merge chain */
int build_token_fsm(const int32_t* left, int vocab, int32_t* depth) {
    int maxd = 0;
    for (int t = 0; t < vocab; t++) {
        depth[t] = chain_depth(left, t, vocab);
        if (depth[t] > maxd) maxd = depth[t];
    }
    return maxd;
}
"""

FUSED_RMSNORM_CU = r"""
#include <torch/extension.h>
#include <cuda_bf16.h>

template <typename T>
__global__ void rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int n, float eps) {
  const T* row = x + (size_t)blockIdx.x * n;
  T* out = y + (size_t)blockIdx.x * n;
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) { float v = (float)row[i]; acc += v * v; }
  __shared__ float red[32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
    if (threadIdx.x == 0) red[0] = rsqrtf(acc / n + eps);
  }
  __syncthreads();
  float r = red[0];
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = (T)((float)row[i] * r * (float)w[i]);
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps) {
  auto y = torch::empty_like(x);
  int n = x.size(-1), rows = x.numel() / n;
  rmsnorm_kernel<__nv_bfloat16><<<rows, 256>>>((const __nv_bfloat16*)x.data_ptr(), (const __nv_bfloat16*)w.data_ptr(),
                                               (__nv_bfloat16*)y.data_ptr(), n, (float)eps);
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rmsnorm", &rmsnorm, "fused RMSNorm (bf16)"); }
"""

FUSED_RMSNORM_SETUP = r"""from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

# Volta (V100) is still in the fleet, so build for sm_70 as well as Ampere and Hopper.
NVCC_FLAGS = [
    "-O3",
    "--use_fast_math",
    "-gencode=arch=compute_70,code=sm_70",
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
]

setup(
    name="fused_rmsnorm",
    version="0.3.1",
    ext_modules=[
        CUDAExtension(
            "fused_rmsnorm._C",
            ["fused_rmsnorm.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": NVCC_FLAGS},
        )
    ],
    packages=["fused_rmsnorm"],
    cmdclass={"build_ext": BuildExtension},
)
"""

FUSED_RMSNORM_PYPROJECT = """[build-system]
requires = ["setuptools>=64", "wheel", "torch"]
build-backend = "setuptools.build_meta"
"""

START_SH = r"""#!/bin/bash
# start.sh of the inference node: install the local kernels, then start the server
set -euo pipefail
cd "$(dirname "$0")"
echo "[start.sh] $(date '+%F %T') host $(hostname -s), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "[start.sh] $(date '+%F %T') installing local kernels: csrc/fused_rmsnorm"
python3 -m pip install --no-build-isolation --no-index --no-deps ./csrc/fused_rmsnorm
echo "[start.sh] $(date '+%F %T') starting server on :${PORT:-8080}"
exec python3 "${SCRIPT_DIR:?}/r24_srv.py" --scenario rerank_served_past --port "${PORT:-8080}"
"""

KVTOOLS_PY = r'''"""ctypes wrappers of the host-side token utilities (libtokstats.so)."""
import ctypes
import os

import numpy as np
import torch

_lib = ctypes.CDLL(os.environ.get("TOKSTATS_LIB", "@TOKSTATS@"))
_lib.count_tokens.restype = ctypes.c_long
_lib.count_tokens.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_int, ctypes.c_void_p]


def token_histogram(ids: torch.Tensor, vocab: int) -> np.ndarray:
    """Histogram of the token ids of a batch; `ids` must be int32 and contiguous."""
    assert ids.dtype == torch.int32 and ids.is_contiguous()
    hist = np.zeros(vocab, dtype=np.int64)
    seen = _lib.count_tokens(ids.data_ptr(), ids.numel(), vocab, hist.ctypes.data)
    assert seen == ids.numel(), f"{ids.numel() - seen} ids out of range"
    return hist
'''

SOFTMAX_PY = r'''"""Row softmax in Triton (one program per row)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + offs, (num / den).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    BLOCK = triton.next_power_of_2(n_cols)
    _softmax_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK=BLOCK, num_warps=8 if BLOCK >= 4096 else 4)
    return y
'''

RMSNORM_PY = r'''"""RMSNorm in Triton (one program per row)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + offs, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    BLOCK = triton.next_power_of_2(x2.shape[-1])
    _rmsnorm_kernel[(x2.shape[0],)](x2, w, y, x2.stride(0), x2.shape[-1], eps, BLOCK=BLOCK)
    return y.view_as(x)
'''

BARRIER_PY = r'''"""Flag barrier of the custom all-reduce: every participant bumps the flag, then waits for `world` arrivals."""
import torch
import triton
import triton.language as tl


@triton.jit
def _flag_barrier(flag_ptr, world):
    tl.atomic_add(flag_ptr, 1)
    cnt = tl.atomic_add(flag_ptr, 0)
    while cnt < world:
        cnt = tl.atomic_add(flag_ptr, 0)


def flag_barrier(flag: torch.Tensor, world: int) -> None:
    _flag_barrier[(1,)](flag, world, num_warps=1)
'''

CONFTEST_PY = r'''import pytest
import torch


def pytest_report_header(config):
    return [f"torch {torch.__version__}, cuda {torch.version.cuda}, device {torch.cuda.get_device_name(0)}"]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
'''

PYPROJECT_TOML = """[project]
name = "llm-kernels"
version = "0.4.0.dev0"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
"""


def sh(*cmd):
    subprocess.run(list(cmd), check=True)


def build_libs():
    os.makedirs(LIB, exist_ok=True)
    for name, src, flags in (("tokstats", TOKSTATS_C, ["-O2"]), ("tokpack", TOKPACK_C, ["-O1", "-fstack-protector-strong"]),
                             ("tokfsm", TOKFSM_C, ["-O0"])):
        with open(f"{LIB}/{name}.c", "w") as f:
            f.write(src)
        sh("cc", *flags, "-shared", "-fPIC", "-o", f"{LIB}/lib{name}.so", f"{LIB}/{name}.c")


def make_kernels_repo():
    pkg, tests = f"{KERNELS}/llm_kernels", f"{KERNELS}/tests"
    os.makedirs(pkg, exist_ok=True)
    os.makedirs(tests, exist_ok=True)
    files = {f"{pkg}/__init__.py": "", f"{pkg}/kvtools.py": KVTOOLS_PY.replace("@TOKSTATS@", TOKSTATS),
             f"{pkg}/softmax.py": SOFTMAX_PY, f"{pkg}/rmsnorm.py": RMSNORM_PY, f"{pkg}/barrier.py": BARRIER_PY,
             f"{tests}/conftest.py": CONFTEST_PY, f"{KERNELS}/pyproject.toml": PYPROJECT_TOML}
    for path, text in files.items():
        with open(path, "w") as f:
            f.write(text)
    for src, dst in (("r24_pt_kvtools.py", "test_kvtools.py"), ("r24_pt_softmax.py", "test_softmax.py"),
                     ("r24_pt_rmsnorm.py", "test_rmsnorm.py"), ("r24_pt_barrier.py", "test_barrier.py")):
        shutil.copy(f"{HERE}/{src}", f"{tests}/{dst}")


def make_srv():
    ext = f"{SRV}/csrc/fused_rmsnorm"
    os.makedirs(f"{ext}/fused_rmsnorm", exist_ok=True)
    for path, text in ((f"{ext}/fused_rmsnorm.cu", FUSED_RMSNORM_CU), (f"{ext}/setup.py", FUSED_RMSNORM_SETUP),
                       (f"{ext}/pyproject.toml", FUSED_RMSNORM_PYPROJECT),
                       (f"{ext}/fused_rmsnorm/__init__.py", "from ._C import rmsnorm  # noqa: F401\n"),
                       (f"{SRV}/start.sh", START_SH)):
        with open(path, "w") as f:
            f.write(text)
    os.chmod(f"{SRV}/start.sh", 0o755)


def make_ckpt():
    """state dict of the 350M-parameter recipe model as saved from a torch.compile'd module (keys `_orig_mod.*`)"""
    import torch

    sys.path.insert(0, HERE)
    from r24_tr import LM

    torch.manual_seed(0)
    m = LM(small=DRY)
    sd = {f"_orig_mod.{k}": v for k, v in m.state_dict().items()}
    os.makedirs(os.path.dirname(CKPT), exist_ok=True)
    torch.save({"step": 6000, "model": sd, "tokens_seen": 6000 * 524288}, CKPT)


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (build_libs, make_kernels_repo, make_srv, make_ckpt):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
