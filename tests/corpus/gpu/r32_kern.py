# Kernel-level and JAX scenarios of round 32:
# tri_bitand: a fused "abs-max quantize" Triton kernel clears the sign bit with `x & 0x7FFFFFFF` on a float32 tile
#   (no bitcast): Triton's CompilationError around the operand-type error, after the reference path's rows printed;
# autotune_sigint: a Triton GEMM autotuner over 48 configs with do_bench; the operator presses Ctrl-C during the sweep:
#   KeyboardInterrupt inside the autotuner's benchmark (no crash: stopped);
# jax_prngkey: a JAX fine-tune now configured with the rbg PRNG restores its RNG state from a checkpoint that kept
#   jax.random.key_data() of a threefry key: wrap_key_data refuses the (2,)-shaped uint32 data at the resume.
# ruff: noqa: E501
import argparse
import logging
import os
import sys
import time

logging.basicConfig(format="%(levelname).1s%(asctime)s %(process)d %(filename)s:%(lineno)d] %(message)s", datefmt="%m%d %H:%M:%S", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("run")


# ---------------------------------------------------------------- tri_bitand
def tri_bitand():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def absmax_quant_kernel(x_ptr, q_ptr, s_ptr, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < N
        x = tl.load(x_ptr + row * N + offs, mask=m, other=0.0)
        ax = x & 0x7FFFFFFF  # |x| by clearing the sign bit
        amax = tl.max(ax, axis=0)
        scale = amax / 127.0
        q = tl.extra.cuda.libdevice.rint(x / scale)
        tl.store(q_ptr + row * N + offs, q.to(tl.int8), mask=m)
        tl.store(s_ptr + row, scale)

    torch.manual_seed(0)
    for rows, cols in ((1024, 4096), (4096, 4096), (8192, 14336)):
        x = torch.randn(rows, cols, device="cuda")
        ref_s = x.abs().amax(1) / 127
        ref_q = torch.round(x / ref_s[:, None]).to(torch.int8)
        log.info(f"reference quantize {rows}x{cols}: scale mean {ref_s.mean().item():.5f}, q range [{int(ref_q.min())}, {int(ref_q.max())}]")
    log.info("fused kernel: absmax_quant_kernel BLOCK=4096")
    x = torch.randn(1024, 4096, device="cuda")
    q = torch.empty_like(x, dtype=torch.int8)
    s = torch.empty(1024, device="cuda")
    absmax_quant_kernel[(1024,)](x, q, s, 4096, BLOCK=4096)
    torch.cuda.synchronize()
    log.info(f"max |q - ref| = {(q.float() - torch.round(x / s[:, None])).abs().max().item()}")


# ---------------------------------------------------------------- autotune_sigint
def autotune_sigint():
    import torch
    import triton
    import triton.language as tl

    os.environ["TRITON_PRINT_AUTOTUNING"] = "1"
    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s)
               for bm in (64, 128) for bn in (64, 128, 256) for bk in (32, 64) for w, s in ((4, 3), (8, 4))]
    configs = configs * 2

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def mm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            av = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
            bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(av, bv)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    log.info(f"tuning mm_kernel over {len(configs)} configs for 6 shapes (Ctrl-C to stop)")
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 8192), (8192, 28672, 8192), (16384, 8192, 28672), (32768, 16384, 16384)):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        t0 = time.time()
        mm_kernel[lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))](a, b, c, M, N, K)
        torch.cuda.synchronize()
        log.info(f"shape {M}x{N}x{K}: best {mm_kernel.best_config} after {time.time() - t0:.1f} s")
        del a, b, c


# ---------------------------------------------------------------- jax_prngkey
def jax_prngkey():
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_default_prng_impl", "rbg")
    log.info(f"jax {jax.__version__} devices {jax.devices()} prng_impl=rbg")
    ck = "/tmp/r32_out/jax_ckpt"
    os.makedirs(ck, exist_ok=True)
    # the checkpoint was written by the previous run, on threefry (the default then)
    old = jax.random.key(1234, impl="threefry2x32")
    np.save(f"{ck}/rng.npy", np.asarray(jax.random.key_data(old)))
    params = {"w": jnp.zeros((512, 512)), "b": jnp.zeros(512)}
    log.info(f"restored params from {ck} (step 3000) and rng state rng.npy")
    rng = jax.random.wrap_key_data(jnp.asarray(np.load(f"{ck}/rng.npy")))

    @jax.jit
    def step(p, key):
        x = jax.random.normal(key, (256, 512))
        loss = lambda p: jnp.mean((jnp.tanh(x @ p["w"] + p["b"]) - x) ** 2)
        l, g = jax.value_and_grad(loss)(p)
        return jax.tree.map(lambda a, b: a - 1e-2 * b, p, g), l

    for i in range(3001, 3100):
        rng, sub = jax.random.split(rng)
        params, l = step(params, sub)
        if i % 20 == 0:
            log.info(f"step {i} loss {float(l):.5f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    globals()[a.scenario]()


if __name__ == "__main__":
    main()
