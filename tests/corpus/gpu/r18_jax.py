# JAX training-job scenarios for round 18 (absl-style log lines), one per --scenario:
# ffi_target: the model's fused RMSNorm calls an XLA FFI custom call whose CUDA handler lives in a
#   plug-in library the job never registered (its import was skipped); the jitted step fails to compile;
# mesh_shape: a (data=2, model=4) mesh from the 8-GPU config on a one-GPU host;
# preempt: a healthy run; the scheduler's SIGTERM (preemption) is caught, a checkpoint is written with
#   orbax and the job exits cleanly.
import argparse
import logging
import os
import signal
import sys
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
alog.info("JAX %s, devices: %s", jax.__version__, jax.devices())


def init_params(key, d=1024, layers=4, vocab=32000):
    ks = jax.random.split(key, layers + 1)
    return {"emb": jax.random.normal(ks[0], (vocab, d), jnp.bfloat16) * 0.02,
            "w": [jax.random.normal(k, (d, d), jnp.bfloat16) * 0.02 for k in ks[1:]],
            "g": [jnp.ones((d,), jnp.bfloat16) for _ in ks[1:]]}


def rms_norm_ffi(x, g):
    return jax.ffi.ffi_call("te_rmsnorm_fwd", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, g, eps=np.float32(1e-6))


def rms_norm(x, g):
    return x * jax.lax.rsqrt(jnp.mean(jnp.square(x.astype(jnp.float32)), -1, keepdims=True) + 1e-6).astype(x.dtype) * g


def loss_fn(params, ids, norm):
    h = params["emb"][ids]
    for w, g in zip(params["w"], params["g"]):
        h = h + jax.nn.gelu(norm(h, g) @ w)
    logits = (h @ params["emb"].T).astype(jnp.float32)
    return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])


if args.scenario == "ffi_target":
    alog.info("fused kernels: transformer_engine_jax not importable (No module named 'transformer_engine_jax'), "
              "continuing with use_fused_rmsnorm=True from the config")
    params = init_params(jax.random.key(0))
    eval_step = jax.jit(lambda p, i: loss_fn(p, i, rms_norm_ffi))
    ids = jax.random.randint(jax.random.key(1), (8, 512), 0, 32000)
    alog.info("Compiling eval_step for the initial validation pass ...")
    loss = eval_step(params, ids)
    alog.info("initial validation loss %.4f", float(loss))

elif args.scenario == "mesh_shape":
    from jax.sharding import NamedSharding, PartitionSpec as P
    alog.info("config: mesh_shape=(2, 4) mesh_axes=('data', 'model') per_device_batch=4")
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    params = init_params(jax.random.key(0))
    params = jax.device_put(params, NamedSharding(mesh, P()))

elif args.scenario == "preempt":
    import optax
    import orbax.checkpoint as ocp
    stop = {"sig": None}

    def on_term(signum, frame):
        stop["sig"] = signum

    signal.signal(signal.SIGTERM, on_term)
    params = init_params(jax.random.key(0))
    tx = optax.adamw(3e-4)
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, ids):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(p, ids, rms_norm))(params)
        upd, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, upd), opt_state, loss

    ckdir = "/tmp/r18_files/jax-ckpt"
    mgr = ocp.CheckpointManager(ckdir, options=ocp.CheckpointManagerOptions(max_to_keep=2))
    step = 0
    t0 = time.perf_counter()
    while step < 100000:
        ids = jax.random.randint(jax.random.key(step), (8, 512), 0, 32000)
        params, opt_state, loss = train_step(params, opt_state, ids)
        step += 1
        if step % 10 == 0:
            loss = float(loss)
            dt = time.perf_counter() - t0
            alog.info("step %d loss %.4f (%.1f steps/s, %.0f tokens/s)", step, loss, 10 / dt, 10 * 8 * 512 / dt)
            t0 = time.perf_counter()
        if stop["sig"] is not None:
            alog.warning("Received signal %d (SIGTERM): preemption notice; saving a checkpoint at step %d",
                         stop["sig"], step)
            mgr.save(step, args=ocp.args.StandardSave({"params": params}))
            mgr.wait_until_finished()
            alog.info("Checkpoint saved to %s/%d; exiting for requeue.", ckdir, step)
            sys.exit(0)
