# JAX jobs (round 17), --scenario:
# xla_flags: a ViT pre-training launcher exports the XLA_FLAGS of an older recipe, one of which this XLA no
#   longer has: XLA's flag parser stops the process when the GPU client starts (r17_run.sh sets the flags
#   and PYTHONFAULTHANDLER=1, as the cluster's job template does);
# debug_nans: a SimCLR-style train step with jax_debug_nans on; the InfoNCE loss is written as
#   log(sum(exp(logits))) instead of logsumexp, and the logit scale (a static argument: one compile per
#   stage) is ramped 10 -> 100 in stages; once scale x cosine
#   passes ~88.7, exp overflows float32, the gradient is inf/inf = nan and the checker stops the step.
import argparse
import os
import time
from functools import partial

from absl import logging as alog

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
alog.set_verbosity(alog.INFO)
alog.use_absl_handler()

if args.scenario == "xla_flags":
    alog.info("main.py --config=configs/vit_l16_i21k.py:batch=1024 --workdir=/ckpt/vit_l16_i21k/run-1102")
    for line in ("config.model = ViT-L/16 (patch 16, width 1024, depth 24, heads 16, mlp 4096)",
                 "config.dataset = imagenet21k, 224px, mixup 0.2, randaug(2, 15)",
                 "config.batch_size = 1024, config.total_epochs = 90, config.lr = 1e-3 (cosine, 10k warmup)",
                 "config.mesh = [('data', -1)], config.param_dtype = float32, config.compute_dtype = bfloat16"):
        alog.info(line)
    alog.info("XLA_FLAGS=%s", os.environ.get("XLA_FLAGS"))
    import jax
    import jax.numpy as jnp
    alog.info("JAX version %s", jax.__version__)
    alog.info("JAX process: %d / %d", jax.process_index(), jax.process_count())
    alog.info("JAX local devices: %r", jax.local_devices())
    x = jnp.ones((2048, 2048), dtype=jnp.bfloat16)
    alog.info("warmup matmul: %s", float((x @ x).astype(jnp.float32).sum()))

elif args.scenario == "debug_nans":
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_debug_nans", True)
    alog.info("JAX version %s, devices %s, jax_debug_nans=True", jax.__version__, jax.devices())
    D_IN, D, B, STEPS = 768, 256, 256, 400
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    params = {"w": jax.random.normal(k[0], (D_IN, D)) * 0.02, "b": jnp.zeros((D,))}

    def info_nce(p, a, b, scale):
        za = a @ p["w"] + p["b"]
        zb = b @ p["w"] + p["b"]
        za = za / jnp.linalg.norm(za, axis=-1, keepdims=True)
        zb = zb / jnp.linalg.norm(zb, axis=-1, keepdims=True)
        logits = scale * za @ zb.T
        # hand-written InfoNCE: log(sum(exp(.))) instead of logsumexp
        lse = jnp.log(jnp.sum(jnp.exp(logits), axis=1))
        return jnp.mean(lse - jnp.diagonal(logits))

    @partial(jax.jit, static_argnums=(3,))
    def train_step(p, a, b, scale, lr):
        loss, g = jax.value_and_grad(info_nce)(p, a, b, scale)
        return jax.tree_util.tree_map(lambda x, gx: x - lr * gx, p, g), loss

    alog.info("SimCLR-style pretraining: batch %d, two augmented views, logit scale 10 -> 100 in steps of 5 "
              "every 20 steps, lr 0.1", B)
    key = jax.random.PRNGKey(1)
    t0 = time.perf_counter()
    for step in range(1, STEPS + 1):
        key, kx, k1, k2 = jax.random.split(key, 4)
        x = jax.random.normal(kx, (B, D_IN))
        a = x + 0.05 * jax.random.normal(k1, (B, D_IN))
        b = x + 0.05 * jax.random.normal(k2, (B, D_IN))
        scale = min(100.0, 10.0 + 5.0 * (step // 20))
        params, loss = train_step(params, a, b, scale, 0.1)
        if step % 20 == 0:
            alog.info("step %d: loss=%.4f, logit_scale=%.1f, %.1f steps/s", step, float(loss), scale,
                      20 / (time.perf_counter() - t0))
            t0 = time.perf_counter()
