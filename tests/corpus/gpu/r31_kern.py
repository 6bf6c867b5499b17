# Kernel-level scenarios of round 31:
# tri_exp_fp16:     MoE router softmax benchmark in Triton; the float32 rows pass, the float16 rows reach tl.exp with an
#                   fp16 tile: Triton's CompilationError around "Expected dtype ['fp32', 'fp64'] but got fp16";
# jax_cache_notdir: a JAX regression fit whose persistent compilation cache directory lies under a regular file (a
#                   shared config points it at `<file>/xla`): JAX warns about the cache it cannot use or write and
#                   the fit finishes (no crash).
# ruff: noqa: E501
import argparse
import os
import sys
import time

R = os.environ.get("R31_ROOT", "/tmp/r31_files")


def tri_exp_fp16(a):
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def router_softmax(logits_ptr, probs_ptr, n_experts, stride, BLOCK_E: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK_E)
        mask = offs < n_experts
        x = tl.load(logits_ptr + row * stride + offs, mask=mask, other=float("-inf"))
        x = x - tl.max(x, axis=0)
        p = tl.exp(x)
        p = p / tl.sum(p, axis=0)
        tl.store(probs_ptr + row * stride + offs, p, mask=mask)

    print(f"router_softmax bench: triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    print(f"{'dtype':>8} {'tokens':>7} {'experts':>7} {'triton_us':>10} {'torch_us':>9} {'max_err':>9}", flush=True)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for tokens, experts in ((4096, 64), (16384, 128), (16384, 256)):
            logits = torch.randn(tokens, experts, device="cuda", dtype=dtype)
            probs = torch.empty_like(logits)
            block = triton.next_power_of_2(experts)

            def run():
                router_softmax[(tokens,)](logits, probs, experts, logits.stride(0), BLOCK_E=block)

            run()
            ref = torch.softmax(logits.float(), -1)
            err = (probs.float() - ref).abs().max().item()
            t_tri = do_bench(run) * 1000
            t_ref = do_bench(lambda: torch.softmax(logits, -1)) * 1000
            print(f"{str(dtype).split('.')[-1]:>8} {tokens:>7} {experts:>7} {t_tri:>10.1f} {t_ref:>9.1f} {err:>9.2e}", flush=True)


def jax_cache_notdir(a):
    import jax
    import jax.numpy as jnp

    cfg = f"{R}/jax_shared.cfg"  # the team's shared settings file; its folder was meant to hold the cache
    jax.config.update("jax_compilation_cache_dir", f"{cfg}/xla")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    print(f"jax {jax.__version__} devices={jax.devices()} cache_dir={cfg}/xla", flush=True)

    def init(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {"w1": jax.random.normal(k1, (64, 512)) * 0.05, "w2": jax.random.normal(k2, (512, 512)) * 0.05,
                "w3": jax.random.normal(k3, (512, 1)) * 0.05}

    def model(p, x):
        return jnp.tanh(jnp.tanh(x @ p["w1"]) @ p["w2"]) @ p["w3"]

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((model(p, x) - y) ** 2))(p)
        return jax.tree.map(lambda a, b: a - 0.05 * b, p, g), loss

    key = jax.random.PRNGKey(0)
    p = init(key)
    t0 = time.time()
    for i in range(1, 401):
        key, sub = jax.random.split(key)
        x = jax.random.normal(sub, (1024, 64))
        y = jnp.sin(x[:, :1]) + 0.1 * x[:, 1:2]
        p, loss = step(p, x, y)
        if i % 100 == 0:
            print(f"iter {i} loss {float(loss):.5f} ({(time.time() - t0):.2f}s)", flush=True)
    print("fit done", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True, choices=["tri_exp_fp16", "jax_cache_notdir"])
    a = ap.parse_args()
    globals()[a.scenario](a)


if __name__ == "__main__":
    sys.exit(main())
