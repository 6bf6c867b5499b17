# Triton kernel scripts (round 14), --scenario:
# fp4_ptxas: an NVFP4 weight-quantization kernel whose inline PTX packs pairs with cvt...e2m1x2 (a
#   Blackwell instruction) compiled for the H200 (ptxas refuses it);
# spin_hang: a split-K GEMV benchmark whose kernel ends with a grid-wide spin barrier; fine while the
#   grid fits on the card at once, a hang once it does not; faulthandler's timer dumps the stacks.
import argparse
import faulthandler
import time

import torch
import triton
import triton.language as tl

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
print(f"device: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))}), "
      f"triton {triton.__version__}, torch {torch.__version__}", flush=True)


@triton.jit
def quant_nvfp4_kernel(x_ptr, scale_ptr, out_ptr, n_pairs, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_pairs
    s = tl.load(scale_ptr + offs // 8, mask=m, other=1.0)
    lo = tl.load(x_ptr + 2 * offs, mask=m, other=0.0) / s
    hi = tl.load(x_ptr + 2 * offs + 1, mask=m, other=0.0) / s
    packed = tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b8 byte0;
        cvt.rn.satfinite.e2m1x2.f32 byte0, $2, $1;
        cvt.u32.u8 $0, byte0;
        }
        """,
        constraints="=r,f,f", args=[lo, hi], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, packed.to(tl.uint8), mask=m)


def quantize_nvfp4(w):
    n_pairs = w.numel() // 2
    flat = w.float().reshape(-1)
    scale = flat.view(-1, 16).abs().amax(-1).clamp(min=1e-8) / 6.0
    out = torch.empty(n_pairs, dtype=torch.uint8, device=w.device)
    quant_nvfp4_kernel[(triton.cdiv(n_pairs, 1024),)](flat, scale, out, n_pairs, BLOCK=1024)
    return out, scale


@triton.jit
def splitk_gemv_kernel(w_ptr, x_ptr, part_ptr, y_ptr, counter_ptr, N, K, SPLIT: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // SPLIT
    ks = pid % SPLIT
    k_per = K // SPLIT
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k0 in range(0, k_per, BLOCK_K):
        offs = ks * k_per + k0 + tl.arange(0, BLOCK_K)
        acc += tl.load(w_ptr + row * K + offs).to(tl.float32) * tl.load(x_ptr + offs).to(tl.float32)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))
    # grid-wide barrier: every program has written its partial sum
    tl.atomic_add(counter_ptr, 1)
    n_prog = N * SPLIT
    cnt = tl.atomic_add(counter_ptr, 0)
    while cnt < n_prog:
        cnt = tl.atomic_add(counter_ptr, 0)
    if ks == 0:
        offs_s = row * SPLIT + tl.arange(0, SPLIT)
        tl.store(y_ptr + row, tl.sum(tl.load(part_ptr + offs_s), axis=0))


def gemv(w, x, split=8):
    N, K = w.shape
    part = torch.empty(N * split, device=w.device, dtype=torch.float32)
    y = torch.empty(N, device=w.device, dtype=torch.float32)
    counter = torch.zeros(1, device=w.device, dtype=torch.int32)
    splitk_gemv_kernel[(N * split,)](w, x, part, y, counter, N, K, SPLIT=split, BLOCK_K=128, num_warps=4)
    return y


if args.scenario == "fp4_ptxas":
    torch.manual_seed(0)
    layers = [f"model.layers.{i}.mlp.{n}" for i in range(2) for n in ("gate_proj", "up_proj", "down_proj")]
    print(f"quantizing {len(layers)} linear layers to NVFP4 (e2m1, block 16, fp32 block scales)", flush=True)
    for name in layers:
        w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        q, s = quantize_nvfp4(w)
        torch.cuda.synchronize()
        print(f"  {name}: {tuple(w.shape)} -> {q.numel()} bytes packed, {s.numel()} scales", flush=True)

elif args.scenario == "spin_hang":
    faulthandler.dump_traceback_later(25, exit=True)
    torch.manual_seed(0)
    for N in (64, 128, 256, 1024, 4096, 8192):
        K = 4096
        w = torch.randn(N, K, device="cuda", dtype=torch.float16)
        x = torch.randn(K, device="cuda", dtype=torch.float16)
        y = gemv(w, x)
        torch.cuda.synchronize()
        err = (y - (w.float() @ x.float())).abs().max().item()
        ms = triton.testing.do_bench(lambda: gemv(w, x), warmup=5, rep=20)
        print(f"split-K GEMV N={N:5d} K={K}: {ms * 1e3:8.1f} us, {2 * N * K * 2 / ms / 1e6:7.1f} GB/s, max err {err:.2e}",
              flush=True)
        faulthandler.dump_traceback_later(25, exit=True)
    print("done", flush=True)
