# A JAX training job for round 24 (absl-style log lines), --scenario:
# orbax_resume: the job resumes from the latest step of its Orbax CheckpointManager folder; the config was since
#   changed (8 layers instead of 6, as the run's new recipe says), so the abstract train state it restores into
#   no longer has the checkpoint's tree structure: Orbax refuses the restore.
# `python3 r24_jax.py --prep` (CPU, run once by r24_run.sh) trains the old 6-layer config for a few steps and saves
# its checkpoint at step 2000.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_common import ROOT  # noqa: E402

CKPT_DIR = f"{ROOT}/ckpt/jax-lm-125m"
ap = argparse.ArgumentParser()
ap.add_argument("--scenario", default="orbax_resume")
ap.add_argument("--prep", action="store_true")
args = ap.parse_args()


class AbslFormatter(logging.Formatter):
    def format(self, record):
        t = time.localtime(record.created)
        us = int((record.created % 1) * 1e6)
        head = f"{record.levelname[0]}{time.strftime('%m%d %H:%M:%S', t)}.{us:06d} {record.thread % 1000000:6d} {record.filename}:{record.lineno}]"
        return f"{head} {record.getMessage()}"


h = logging.StreamHandler(sys.stdout)
h.setFormatter(AbslFormatter())
logging.getLogger().handlers[:] = [h]
logging.getLogger().setLevel(logging.INFO)
log = logging.getLogger("train")
for noisy in ("absl", "jax", "orbax", "jax._src"):
    logging.getLogger(noisy).setLevel(logging.WARNING)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402

VOCAB, D, HEADS = 32000, 768, 12


def init_params(key, n_layers):
    ks = jax.random.split(key, 2 + n_layers)
    p = {"embed": jax.random.normal(ks[0], (VOCAB, D)) * 0.02, "final_norm": jnp.ones((D,)),
         "layers": {}}
    for i in range(n_layers):
        k = jax.random.split(ks[2 + i], 4)
        p["layers"][f"layer_{i}"] = {"attn_norm": jnp.ones((D,)), "qkv": jax.random.normal(k[0], (D, 3 * D)) * 0.02,
                                     "out": jax.random.normal(k[1], (D, D)) * 0.02, "mlp_norm": jnp.ones((D,)),
                                     "up": jax.random.normal(k[2], (D, 4 * D)) * 0.02,
                                     "down": jax.random.normal(k[3], (4 * D, D)) * 0.02}
    return p


def rms(x, w):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def forward(p, ids):
    h = p["embed"][ids]
    t = ids.shape[1]
    mask = jnp.tril(jnp.ones((t, t), bool))
    for name in sorted(p["layers"]):
        L = p["layers"][name]
        q, k, v = jnp.split(rms(h, L["attn_norm"]) @ L["qkv"], 3, -1)
        q, k, v = (a.reshape(a.shape[0], t, HEADS, -1) for a in (q, k, v))
        s = jnp.einsum("bthd,bshd->bhts", q, k) / 8.0
        a = jax.nn.softmax(jnp.where(mask, s, -1e9), -1)
        h = h + jnp.einsum("bhts,bshd->bthd", a, v).reshape(h.shape) @ L["out"]
        h = h + jax.nn.gelu(rms(h, L["mlp_norm"]) @ L["up"]) @ L["down"]
    return rms(h, p["final_norm"]) @ p["embed"].T


def loss_fn(p, ids):
    logits = forward(p, ids[:, :-1])
    return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()


def make_state(n_layers, lr=3e-4):
    params = init_params(jax.random.PRNGKey(0), n_layers)
    tx = optax.adamw(lr)
    return {"params": params, "opt_state": tx.init(params), "step": jnp.array(0, jnp.int32)}, tx


def train_steps(state, tx, n, start):
    @jax.jit
    def step_fn(state, ids):
        loss, g = jax.value_and_grad(loss_fn)(state["params"], ids)
        upd, opt_state = tx.update(g, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], upd), "opt_state": opt_state, "step": state["step"] + 1}, loss

    key = jax.random.PRNGKey(start)
    for i in range(n):
        key, sub = jax.random.split(key)
        state, loss = step_fn(state, jax.random.randint(sub, (8, 129), 0, VOCAB))
        if (i + 1) % 10 == 0:
            log.info("step %d: loss=%.4f", start + i + 1, float(loss))
    return state


def prep():
    state, tx = make_state(6)
    state = train_steps(state, tx, 4, 0)
    state["step"] = jnp.array(2000, jnp.int32)
    mngr = ocp.CheckpointManager(CKPT_DIR, options=ocp.CheckpointManagerOptions(max_to_keep=3))
    mngr.save(2000, args=ocp.args.StandardSave(state))
    mngr.wait_until_finished()
    print(f"saved step 2000 to {CKPT_DIR}: {mngr.all_steps()}")


def orbax_resume():
    cfg = {"model": "lm-125m", "n_layers": 8, "d_model": D, "n_heads": HEADS, "vocab": VOCAB, "seq_len": 128,
           "batch": 8, "lr": 3e-4, "checkpoint_dir": CKPT_DIR, "save_every": 500}
    log.info("JAX %s, devices: %s", jax.__version__, jax.devices())
    log.info("config: %s", cfg)
    state, tx = make_state(cfg["n_layers"])
    n = sum(x.size for x in jax.tree_util.tree_leaves(state["params"]))
    log.info("model: %.1fM parameters", n / 1e6)
    mngr = ocp.CheckpointManager(CKPT_DIR, options=ocp.CheckpointManagerOptions(max_to_keep=3, save_interval_steps=500))
    latest = mngr.latest_step()
    log.info("found checkpoints at steps %s in %s", mngr.all_steps(), CKPT_DIR)
    if latest is not None:
        log.info("restoring step %d", latest)
        abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, state)
        state = mngr.restore(latest, args=ocp.args.StandardRestore(abstract))
        log.info("restored step %d", int(state["step"]))
    state = train_steps(state, tx, 200, int(state["step"]))


if __name__ == "__main__":
    if args.prep:
        prep()
    else:
        orbax_resume()
