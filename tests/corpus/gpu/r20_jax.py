# JAX jobs for round 20 (absl-style log lines), one per --scenario:
# torch_prealloc: an RL loop whose policy runs in JAX and whose reward model runs in PyTorch, in one process;
#   JAX's client preallocates its default 75 % of the GPU memory when it starts (r20_run.sh leaves
#   XLA_PYTHON_CLIENT_PREALLOCATE unset for this one), then the 32B reward model's bf16 weights are loaded
#   with PyTorch layer by layer and do not fit in what is left (they would fit on the card alone);
# cache_dir_file: a small training run with the persistent compilation cache switched on (every entry cached),
#   pointed at a path where a plain file already sits.
import argparse
import logging
import os
import sys
import time

import jax
import jax.numpy as jnp
from absl import logging as alog

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r20_common import JAX_CACHE  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
alog.use_absl_handler()
alog.set_verbosity(alog.INFO)
logging.root.setLevel(logging.INFO)


def init_mlp(key, sizes):
    ks = jax.random.split(key, len(sizes))
    return [(jax.random.normal(k, (a, b), jnp.float32) / jnp.sqrt(a), jnp.zeros((b,), jnp.float32))
            for k, a, b in zip(ks, sizes[:-1], sizes[1:])]


def mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


if args.scenario == "torch_prealloc":
    alog.info("JAX %s; devices: %s", jax.__version__, jax.devices())
    alog.info("Config: policy=mlp-policy-350m rollout_batch=64 reward_model=/models/Skywork-Reward-V2-Qwen2.5-32B "
              "reward_dtype=bfloat16")
    key = jax.random.PRNGKey(0)
    policy = init_mlp(key, [1024, 4096, 4096, 1024])
    obs = jax.random.normal(key, (64, 1024))
    act = jax.jit(mlp)(policy, obs).block_until_ready()
    alog.info("policy initialized: %d parameters; first rollout batch %s", sum(w.size + b.size for w, b in policy),
              act.shape)
    import torch
    from tqdm import tqdm
    torch.cuda.set_device(0)
    alog.info("loading reward model with torch %s on %s", torch.__version__, torch.cuda.get_device_name())
    hidden, inter, kv, layers = 5120, 27648, 1024, 64
    per_layer = hidden * (hidden + 2 * kv) + hidden * hidden + 3 * hidden * inter
    weights = [torch.empty(152064 * hidden, dtype=torch.bfloat16, device="cuda")]
    fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
    for i in tqdm(range(layers), desc="Loading checkpoint shards (reward)", bar_format=fmt):
        w = torch.empty(per_layer, dtype=torch.bfloat16, device="cuda")
        w[:: 1 << 20].normal_()
        weights.append(w)
    alog.info("reward model loaded")

elif args.scenario == "cache_dir_file":
    jax.config.update("jax_compilation_cache_dir", JAX_CACHE)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    alog.info("JAX %s; devices: %s; compilation cache: %s", jax.__version__, jax.devices(), JAX_CACHE)
    key = jax.random.PRNGKey(0)
    params = init_mlp(key, [784, 1024, 1024, 10])
    opt_lr = 1e-3

    def loss_fn(p, x, y):
        logits = mlp(p, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - opt_lr * b, p, g), loss

    t0 = time.perf_counter()
    for it in range(1, 301):
        k1, k2, key = jax.random.split(key, 3)
        x = jax.random.normal(k1, (256, 784))
        y = jax.random.randint(k2, (256,), 0, 10)
        params, loss = step(params, x, y)
        if it % 50 == 0:
            loss.block_until_ready()
            alog.info("step %d loss %.4f (%.1f steps/s)", it, float(loss), 50 / (time.perf_counter() - t0))
            t0 = time.perf_counter()
    acc = jnp.mean(jnp.argmax(jax.jit(mlp)(params, x), -1) == y)
    alog.info("final eval accuracy on the last batch: %.3f", float(acc))
    alog.info("done")
