# JAX jobs for round 22 (absl-style log lines), one per --scenario:
# callback_shape: a seq2seq fine-tune whose jitted eval step scores the decoded batch with a host metric
#   through jax.pure_callback (declared result: one score per example); the metric helper de-duplicates
#   identical references before scoring (np.unique), so a batch with repeated references returns fewer scores
#   than the declared shape;
# custom_vjp: a "gradient clipping in the backward" helper written with jax.custom_vjp whose bwd rule returns
#   the clipped cotangent bare instead of as a one-element tuple; the first jitted train step fails to trace;
# healthy_warnings: a short training run with real JAX warnings on the way (float64 requested without x64,
#   donated buffers that cannot be reused); it completes and saves (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import logging
import os
import time
import warnings

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
warnings.simplefilter("default")

V, D, T, B = 32000, 512, 128, 16
if jax.default_backend() == "cpu":  # a local dry run
    V, T, B = 4000, 16, 4


def init(key, layers=4):
    ks = jax.random.split(key, 3 + layers)
    p = {
        "embed": jax.random.normal(ks[0], (V, D)) * 0.02,
        "head": jax.random.normal(ks[1], (D, V)) / np.sqrt(D),
    }
    for i in range(layers):
        p[f"w{i}"] = jax.random.normal(ks[3 + i], (D, D)) / np.sqrt(D)
    return p


def forward(p, ids, layers=4):
    h = p["embed"][ids]
    for i in range(layers):
        h = h + jax.nn.gelu(h @ p[f"w{i}"])
    return h @ p["head"]


def xent(p, ids):
    lp = jax.nn.log_softmax(forward(p, ids[:, :-1]))
    return -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()


def banner():
    alog.info(
        "JAX version %s, backend %s, devices %s",
        jax.__version__,
        jax.default_backend(),
        jax.devices(),
    )


# ---------------------------------------------------------------- callback_shape
def chrf_scores(hyps, refs):
    """The data team's metric helper (host side): scores unique references only (they repeat across prompts)."""
    refs_u, first = np.unique(refs, axis=0, return_index=True)
    hyps_u = hyps[first]
    return (hyps_u == refs_u).mean(axis=1).astype(np.float32)


def callback_shape():
    banner()
    p = init(jax.random.PRNGKey(0))
    opt_lr = 1e-3

    @jax.jit
    def train_step(p, ids):
        loss, g = jax.value_and_grad(xent)(p, ids)
        return jax.tree_util.tree_map(lambda a, b: a - opt_lr * b, p, g), loss

    @jax.jit
    def eval_step(p, ids, refs):
        hyps = forward(p, ids).argmax(-1).astype(jnp.int32)
        spec = jax.ShapeDtypeStruct((ids.shape[0],), jnp.float32)
        scores = jax.pure_callback(chrf_scores, spec, hyps, refs)
        return scores.mean()

    rng = np.random.default_rng(0)
    t0 = time.time()
    for step in range(1, 401):
        ids = jnp.asarray(rng.integers(0, V, (B, T + 1)), jnp.int32)
        p, loss = train_step(p, ids)
        if step % 50 == 0:
            alog.info(
                "step %d loss %.4f (%.1f steps/s)", step, float(loss), step / (time.time() - t0)
            )
        if step % 100 == 0:
            refs = rng.integers(0, V, (B, T)).astype(np.int32)
            if step >= 200:  # the eval set's second half: several prompts share one reference
                refs[B // 2 :] = refs[0]
            s = eval_step(p, ids[:, :-1], jnp.asarray(refs))
            alog.info("eval at step %d: chrf %.4f", step, float(s))


# ---------------------------------------------------------------- custom_vjp
@jax.custom_vjp
def clip_grad(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return jnp.clip(g, -1.0, 1.0)  # the bwd rule must return a tuple, one entry per primal input


clip_grad.defvjp(_clip_fwd, _clip_bwd)


def custom_vjp():
    banner()
    p = init(jax.random.PRNGKey(0))

    def loss_fn(p, ids):
        h = p["embed"][ids[:, :-1]]
        for i in range(4):
            h = clip_grad(h + jax.nn.gelu(h @ p[f"w{i}"]))
        lp = jax.nn.log_softmax(h @ p["head"])
        return -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()

    @jax.jit
    def train_step(p, ids):
        loss, g = jax.value_and_grad(loss_fn)(p, ids)
        return jax.tree_util.tree_map(lambda a, b: a - 1e-3 * b, p, g), loss

    alog.info("gradient clipping in the backward: clip_grad(|g| <= 1.0) after every block")
    rng = np.random.default_rng(0)
    for step in range(1, 201):
        ids = jnp.asarray(rng.integers(0, V, (B, T + 1)), jnp.int32)
        p, loss = train_step(p, ids)
        if step % 50 == 0:
            alog.info("step %d loss %.4f", step, float(loss))


# ---------------------------------------------------------------- healthy_warnings
def healthy_warnings():
    banner()
    p = init(jax.random.PRNGKey(0))
    mom = jax.tree_util.tree_map(
        lambda a: jnp.zeros(a.shape, dtype=jnp.float64), p
    )  # float64 without x64
    step_count = jnp.zeros((), jnp.int32)

    def update(p, mom, step_count, ids):
        loss, g = jax.value_and_grad(xent)(p, ids)
        mom = jax.tree_util.tree_map(lambda m, gg: 0.9 * m + gg, mom, g)
        p = jax.tree_util.tree_map(lambda a, m: a - 1e-3 * m, p, mom)
        return (
            p,
            mom,
            loss,
            (step_count + 1).astype(jnp.float32),
        )  # the counter changes dtype: no reuse

    train_step = jax.jit(update, donate_argnums=(0, 1, 2))
    rng = np.random.default_rng(0)
    t0 = time.time()
    for step in range(1, 301):
        ids = jnp.asarray(rng.integers(0, V, (B, T + 1)), jnp.int32)
        p, mom, loss, sc = train_step(p, mom, step_count, ids)
        step_count = jnp.asarray(sc, jnp.int32)
        if step % 50 == 0:
            alog.info(
                "step %d loss %.4f (%.1f steps/s)", step, float(loss), step / (time.time() - t0)
            )
    out = os.environ.get("R22_ROOT", "/tmp/r22_files") + "/jax_ckpt"
    os.makedirs(out, exist_ok=True)
    np.savez(f"{out}/params_step300.npz", **{k: np.asarray(v) for k, v in p.items()})
    alog.info("saved %s/params_step300.npz; training done", out)


if __name__ == "__main__":
    {
        "callback_shape": callback_shape,
        "custom_vjp": custom_vjp,
        "healthy_warnings": healthy_warnings,
    }[args.scenario]()
