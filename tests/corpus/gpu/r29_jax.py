# JAX scenarios for round 29 (one real fault per --scenario):
# eigh_bf16: a Shampoo-style optimizer keeps its Kronecker-factor statistics in bfloat16 (the "memory-saving" option);
#   every 10 steps it computes inverse 4th roots with jnp.linalg.eigh on those statistics: the GPU eigh (cuSOLVER
#   syevd) has no bfloat16 kernel, so the first preconditioner update fails;
# coord_port: the training script always calls jax.distributed.initialize(); its coordinator port is still held by a
#   process left from an earlier run (r29_run.sh keeps a listener on it): gRPC cannot bind the coordination service
#   port and jax.distributed.initialize fails (a launch script around it).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import faulthandler
import os
import sys
import time


def ts():
    return time.strftime("%Y-%m-%d %H:%M:%S")


def mlp_init(key, sizes):
    import jax
    import jax.numpy as jnp

    params = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        k = jax.random.fold_in(key, i)
        params.append({"w": jax.random.normal(k, (a, b)) / jnp.sqrt(a), "b": jnp.zeros((b,))})
    return params


def mlp_apply(params, x):
    import jax

    for p in params[:-1]:
        x = jax.nn.gelu(x @ p["w"] + p["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def eigh_bf16():
    import jax
    import jax.numpy as jnp

    print(f"{ts()} jax {jax.__version__} devices={jax.devices()}", flush=True)
    cfg = {"lr": 3e-3, "beta2": 0.99, "eps": 1e-6, "precond_every": 10, "stats_dtype": "bfloat16", "max_steps": 2000}
    print(f"{ts()} shampoo config: {cfg}", flush=True)
    key = jax.random.PRNGKey(0)
    sizes = [512, 1024, 1024, 10]
    params = mlp_init(key, sizes)
    sdt = jnp.dtype(cfg["stats_dtype"])
    stats = [{"L": jnp.eye(p["w"].shape[0], dtype=sdt) * cfg["eps"], "R": jnp.eye(p["w"].shape[1], dtype=sdt) * cfg["eps"]} for p in params]
    pre = [{"L": jnp.eye(p["w"].shape[0]), "R": jnp.eye(p["w"].shape[1])} for p in params]

    def loss_fn(params, x, y):
        logits = mlp_apply(params, x)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 10), -1))

    @jax.jit
    def train_step(params, stats, pre, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        new_params, new_stats = [], []
        for p, s, pc, gp in zip(params, stats, pre, g):
            gw = gp["w"]
            L = (cfg["beta2"] * s["L"] + (1 - cfg["beta2"]) * (gw @ gw.T).astype(sdt)).astype(sdt)
            R = (cfg["beta2"] * s["R"] + (1 - cfg["beta2"]) * (gw.T @ gw).astype(sdt)).astype(sdt)
            upd = pc["L"] @ gw @ pc["R"]
            new_params.append({"w": p["w"] - cfg["lr"] * upd, "b": p["b"] - cfg["lr"] * gp["b"]})
            new_stats.append({"L": L, "R": R})
        return new_params, new_stats, loss

    @jax.jit
    def inv_root(m):
        w, v = jnp.linalg.eigh(m)
        w = jnp.maximum(w, cfg["eps"])
        return ((v * w[None, :] ** -0.25) @ v.T).astype(jnp.float32)

    def compute_preconditioners(stats):
        return [{"L": inv_root(s["L"]), "R": inv_root(s["R"])} for s in stats]

    dkey = jax.random.PRNGKey(1)
    proj = jax.random.normal(dkey, (512, 10))
    t0 = time.time()
    for step in range(1, cfg["max_steps"] + 1):
        kx = jax.random.fold_in(dkey, step)
        x = jax.random.normal(kx, (256, 512))
        y = jnp.argmax(x @ proj, -1)
        params, stats, loss = train_step(params, stats, pre, x, y)
        if step % 5 == 0:
            print(f"{ts()} step {step:5d} loss {float(loss):.4f} ({(time.time() - t0) / 5 * 1000:.1f} ms/step)", flush=True)
            t0 = time.time()
        if step % cfg["precond_every"] == 0:
            print(f"{ts()} step {step:5d} updating preconditioners (inverse 4th roots of {2 * len(stats)} statistics)", flush=True)
            pre = compute_preconditioners(stats)


def coord_port():
    faulthandler.enable()
    import jax

    addr = os.environ.get("COORDINATOR_ADDRESS", "127.0.0.1:8476")
    nproc = int(os.environ.get("NUM_PROCESSES", "1"))
    pid = int(os.environ.get("PROCESS_ID", "0"))
    print(f"{ts()} [train_vit] jax {jax.__version__}: initializing distributed runtime coordinator={addr} num_processes={nproc} process_id={pid}", flush=True)
    jax.distributed.initialize(coordinator_address=addr, num_processes=nproc, process_id=pid, initialization_timeout=60)
    print(f"{ts()} [train_vit] process {jax.process_index()}/{jax.process_count()} local devices {jax.local_devices()}", flush=True)
    import jax.numpy as jnp

    x = jnp.ones((1024, 1024))
    for step in range(100):
        x = jnp.tanh(x @ x / 1024)
        if step % 20 == 0:
            print(f"{ts()} [train_vit] step {step} {float(x.mean()):.4f}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["eigh_bf16", "coord_port"], required=True)
    {"eigh_bf16": eigh_bf16, "coord_port": coord_port}[ap.parse_args().scenario]()
