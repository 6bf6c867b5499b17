# JAX training scripts for round 25, one real fault per --scenario:
# oom_bfc: a jitted MLP step over a batch far too large for the card (the eval batch size set for a pod slice):
#   XLA's BFC allocator cannot allocate the activations; its summary and the RESOURCE_EXHAUSTED error follow;
# donated: the train step donates its parameter buffers (donate_argnums=0); the EMA update afterwards still reads
#   the old parameters, whose buffers were donated: the array has been deleted.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import sys
import time

import jax
import jax.numpy as jnp

_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter("I%(asctime)s %(name)s] %(message)s", datefmt="%m%d %H:%M:%S"))
log = logging.getLogger("train")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def init(key, sizes):
    params = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        k = jax.random.fold_in(key, i)
        params.append({"w": jax.random.normal(k, (a, b), jnp.float32) * (1.0 / a) ** 0.5, "b": jnp.zeros((b,), jnp.float32)})
    return params


def mlp(params, x):
    for p in params[:-1]:
        x = jax.nn.gelu(x @ p["w"] + p["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def oom_bfc():
    log.info(f"devices: {jax.devices()}")
    params = init(jax.random.PRNGKey(0), [4096, 16384, 16384, 4096])
    eval_bs = 1 << 21  # per-host eval batch of the v5p-256 config
    log.info(f"eval batch size per device: {eval_bs}")

    @jax.jit
    def eval_step(params, key):
        x = jax.random.normal(key, (eval_bs, 4096), jnp.bfloat16).astype(jnp.float32)
        return loss_fn(params, x, x)

    for step in range(3):
        t0 = time.time()
        v = eval_step(params, jax.random.PRNGKey(step))
        log.info(f"eval step {step}: loss={float(v):.5f} ({time.time() - t0:.2f}s)")


def donated():
    import optax

    log.info(f"devices: {jax.devices()}")
    params = init(jax.random.PRNGKey(0), [512, 2048, 2048, 512])
    ema = jax.tree.map(jnp.copy, params)
    opt = optax.adamw(3e-4)
    opt_state = opt.init(params)

    def train_step(params, opt_state, x):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, x)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    ema_update = jax.jit(lambda e, p: jax.tree.map(lambda a, b: 0.999 * a + 0.001 * b, e, p))
    for step in range(1, 201):
        x = jax.random.normal(jax.random.PRNGKey(step), (256, 512))
        new_params, opt_state, loss = train_step(params, opt_state, x)
        if step % 10 == 0:
            log.info(f"step {step}: loss={float(loss):.5f}")
        if step >= 50:  # EMA of the weights from step 50 on
            ema = ema_update(ema, params)
        params = new_params


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"oom_bfc": oom_bfc, "donated": donated}[a.scenario]()
