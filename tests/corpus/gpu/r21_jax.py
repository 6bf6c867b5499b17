# JAX training jobs for round 21 (absl-style log lines), one per --scenario:
# clip_numpy: a language-model run that turns on gradient clipping after the warm-up (step 100); the clipping
#   helper computes the global norm with numpy, which inside the newly jitted step meets traced arrays;
# scan_bf16: a decoder whose layers run under lax.scan over stacked parameters; the mixed-precision policy casts
#   the parameters to bf16 inside the body while the carried activations start as float32: the scan's carry
#   changes dtype;
# pallas_oob: a JAX decode server's paged-KV gather is a Pallas kernel; the page allocator hands out page ids from
#   the logical pool of the config (num_pages=1048576, sharded 8 ways) while the physical KV buffer was sized from
#   the memory fraction (4096 pages): the first request that gets a page from a high shard reads far past the
#   buffer (the kernel does no bounds check).
import argparse
import logging
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging as alog

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
alog.use_absl_handler()
alog.set_verbosity(alog.INFO)
logging.root.setLevel(logging.INFO)

V, D, L, T, B = 32000, 512, 6, 256, 16
if jax.default_backend() == "cpu":  # a local dry run
    V, T, B = 4000, 32, 2


def init(key):
    ks = jax.random.split(key, 4)
    return {"embed": jax.random.normal(ks[0], (V, D)) * 0.02,
            "w1": jax.random.normal(ks[1], (L, D, 4 * D)) / np.sqrt(D),
            "w2": jax.random.normal(ks[2], (L, 4 * D, D)) / np.sqrt(4 * D),
            "head": jax.random.normal(ks[3], (D, V)) / np.sqrt(D)}


def forward(p, ids, compute_dtype=jnp.float32):
    h = p["embed"][ids]

    def layer(h, w):
        h, w1, w2 = (x.astype(compute_dtype) for x in (h, *w))  # the policy's cast_to_compute
        return h + jax.nn.gelu(h @ w1) @ w2, None

    h, _ = jax.lax.scan(layer, h, (p["w1"], p["w2"]))
    return h.astype(jnp.float32) @ p["head"]


def loss_fn(p, ids, compute_dtype=jnp.float32):
    logits = forward(p, ids[:, :-1], compute_dtype)
    lp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()


def clip_by_global_norm(grads, max_norm):
    """Shared utility from the data team's repo (written for host-side numpy arrays)."""
    leaves = jax.tree_util.tree_leaves(grads)
    norm = np.sqrt(sum(np.sum(np.square(g)) for g in leaves))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return jax.tree_util.tree_map(lambda g: g * scale, grads), norm


def sgd_step(p, ids, lr, clip):
    loss, g = jax.value_and_grad(loss_fn)(p, ids)
    gnorm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
    if clip:
        g, gnorm = clip_by_global_norm(g, 1.0)
    return jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g), loss, gnorm


alog.info("JAX %s, jaxlib backend %s, devices: %s", jax.__version__, jax.default_backend(), jax.devices())
key = jax.random.PRNGKey(0)
params = init(key)
alog.info("model: %d layers, d_model=%d, vocab=%d, %.1fM parameters", L, D, V,
          sum(x.size for x in jax.tree_util.tree_leaves(params)) / 1e6)
data_key = jax.random.PRNGKey(1)

if args.scenario == "clip_numpy":
    alog.info("config: batch=%d seq=%d lr=3e-3 warmup_steps=100 grad_clip=1.0 (after warmup)", B, T)
    step_fn = jax.jit(lambda p, ids, lr: sgd_step(p, ids, lr, clip=False))
    t0 = time.time()
    for step in range(1, 300):
        if step == 101:
            alog.info("warm-up done at step 100: enabling gradient clipping (max_norm=1.0)")
            step_fn = jax.jit(lambda p, ids, lr: sgd_step(p, ids, lr, clip=True))
        data_key, k = jax.random.split(data_key)
        ids = jax.random.randint(k, (B, T + 1), 0, V)
        lr = 3e-3 * min(1.0, step / 100)
        params, loss, gnorm = step_fn(params, ids, lr)
        if step % 20 == 0:
            alog.info("step %d: loss=%.4f grad_norm=%.3f lr=%.2e (%.1f steps/s)", step, float(loss), float(gnorm), lr,
                      step / (time.time() - t0))

elif args.scenario == "scan_bf16":
    alog.info("config: batch=%d seq=%d mixed_precision: params=float32 compute=bfloat16 output=float32", B, T)
    step_fn = jax.jit(lambda p, ids: jax.value_and_grad(loss_fn)(p, ids, jnp.bfloat16))
    alog.info("compiling train step")
    t0 = time.time()
    for step in range(1, 200):
        data_key, k = jax.random.split(data_key)
        ids = jax.random.randint(k, (B, T + 1), 0, V)
        loss, g = step_fn(params, ids)
        params = jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, params, g)
        if step % 20 == 0:
            alog.info("step %d: loss=%.4f (%.1f steps/s)", step, float(loss), step / (time.time() - t0))

elif args.scenario == "pallas_oob":
    from jax.experimental import pallas as pl
    PAGE, HD, PHYS_PAGES, LOGICAL_PAGES, SHARDS = 16, 128, 4096, 1048576, 8
    if jax.default_backend() == "cpu":
        PHYS_PAGES = 256

    def gather_pages_kernel(table_ref, kv_ref, o_ref):
        page = table_ref[pl.program_id(0)]
        o_ref[...] = kv_ref[pl.ds(page * PAGE, PAGE), :]

    @jax.jit
    def gather_pages(table, kv):
        n = table.shape[0]
        return pl.pallas_call(gather_pages_kernel, out_shape=jax.ShapeDtypeStruct((n * PAGE, HD), kv.dtype),
                              grid=(n,), in_specs=[pl.BlockSpec(table.shape, lambda i: (0,)),
                                                   pl.BlockSpec(kv.shape, lambda i: (0, 0))],
                              out_specs=pl.BlockSpec((PAGE, HD), lambda i: (i, 0)),
                              interpret=jax.default_backend() == "cpu")(table, kv)

    @jax.jit
    def attend(q, k, v):
        s = (q @ k.T) / np.sqrt(HD)
        return jax.nn.softmax(s, -1) @ v

    alog.info("paged KV cache: page_size=%d head_dim=%d num_pages=%d (config) physical_pages=%d "
              "(kv_cache_memory_fraction=0.05)", PAGE, HD, LOGICAL_PAGES, PHYS_PAGES)
    kv_k = jax.random.normal(key, (PHYS_PAGES * PAGE, HD), jnp.float32)
    kv_v = jax.random.normal(data_key, (PHYS_PAGES * PAGE, HD), jnp.float32)
    per_shard = LOGICAL_PAGES // SHARDS
    rng = np.random.default_rng(0)
    t0 = time.time()
    n_tok = 0
    for rid in range(1, 200):
        shard = 0 if rid < 40 else rid % SHARDS  # the allocator moves on to the other shards once shard 0 is warm
        table = jnp.asarray(shard * per_shard + rng.integers(0, PHYS_PAGES, 64), jnp.int32)
        q = jax.random.normal(jax.random.PRNGKey(rid), (8, HD))
        k = gather_pages(table, kv_k)
        v = gather_pages(table, kv_v)
        out = attend(q, k, v).block_until_ready()
        n_tok += 8
        if rid % 10 == 0:
            alog.info("request %d: decoded 8 tokens over %d cached tokens (pages from shard %d); %.1f tok/s", rid,
                      k.shape[0], shard, n_tok / (time.time() - t0))
