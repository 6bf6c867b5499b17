# JAX jobs (round 16), --scenario:
# bad_cvd: a launcher maps the node-local rank to CUDA_VISIBLE_DEVICES (=1 for the second task) on a one-GPU
#   node, with JAX_PLATFORMS=cuda: the CUDA backend finds no visible device;
# serve_oom: a JAX model behind an OpenAI-style server (uvicorn-style logs); one client asks for prompt
#   logprobs over a batch of long prompts: full-vocabulary logits do not fit (XLA RESOURCE_EXHAUSTED), that
#   request gets a 500, the server goes on, then the operator's SIGTERM.
import argparse
import logging
import os
import signal
import time
import traceback

from absl import logging as alog

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
alog.set_verbosity(alog.INFO)
alog.use_absl_handler()

if args.scenario == "bad_cvd":
    alog.info("train.py --config=configs/vit_b16_i1k.py --workdir=/ckpt/vit_b16_i1k/run-0412")
    alog.info("SLURM_PROCID=%s SLURM_LOCALID=%s CUDA_VISIBLE_DEVICES=%s JAX_PLATFORMS=%s",
              os.environ.get("SLURM_PROCID"), os.environ.get("SLURM_LOCALID"),
              os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("JAX_PLATFORMS"))
    import jax
    import jax.numpy as jnp
    import jaxlib
    alog.info("JAX %s, jaxlib %s", jax.__version__, jaxlib.__version__)
    devices = jax.devices()
    alog.info("devices: %s", devices)
    x = jnp.ones((1024, 1024))
    alog.info("warmup matmul: %s", float((x @ x).sum()))

elif args.scenario == "serve_oom":
    import jax
    import jax.numpy as jnp
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s", force=True)
    log = logging.getLogger("uvicorn.error")
    acc = logging.getLogger("uvicorn.access")
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda s, f: stop.__setitem__("flag", True))
    log.info(f"Started server process [{os.getpid()}]")
    log.info("Waiting for application startup.")
    print(f"loading gemma-2-2b-it (flax, bfloat16) on {jax.devices()}", flush=True)
    V, D = 256000, 1024
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {"emb": (jax.random.normal(k[0], (V, D)) * 0.02).astype(jnp.bfloat16),
              "w1": (jax.random.normal(k[1], (D, 4 * D)) * 0.02).astype(jnp.bfloat16),
              "w2": (jax.random.normal(k[2], (4 * D, D)) * 0.02).astype(jnp.bfloat16)}

    @jax.jit
    def hidden(p, ids):
        h = p["emb"][ids]
        return h + jax.nn.gelu(h @ p["w1"]) @ p["w2"]

    @jax.jit
    def next_token(p, ids):
        return jnp.argmax(hidden(p, ids)[:, -1] @ p["emb"].T, axis=-1)

    @jax.jit
    def prompt_logprobs(p, ids):
        logits = (hidden(p, ids) @ p["emb"].T).astype(jnp.float32)
        lp = jax.nn.log_softmax(logits, axis=-1)
        return jnp.take_along_axis(lp[:, :-1], ids[:, 1:, None], axis=-1)[..., 0]

    def complete(n_in, max_tokens, bs=1, echo=False):
        ids = jax.random.randint(jax.random.PRNGKey(n_in), (bs, n_in), 0, V)
        out = None
        if echo:
            out = prompt_logprobs(params, ids).block_until_ready()
        win = ids[:, -64:]
        for _ in range(max_tokens):
            nxt = next_token(params, win)
            win = jnp.roll(win, -1, axis=1).at[:, -1].set(nxt)
        win.block_until_ready()
        return out

    complete(64, 2)
    log.info("Application startup complete.")
    log.info("Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)")
    reqs = [(64 + 53 * i % 700, 16, 1, False) for i in range(30)]
    reqs[6] = (32768, 1, 16, True)  # eval harness: logprobs of 16 long documents in one request
    for rid, (n_in, mt, bs, echo) in enumerate(reqs):
        if stop["flag"]:
            break
        time.sleep(0.25)
        port = 38400 + rid
        try:
            t0 = time.perf_counter()
            complete(n_in, mt, bs, echo)
            print(f"completion {rid}: {bs} x {n_in} prompt + {mt} completion tokens in "
                  f"{time.perf_counter() - t0:.3f}s", flush=True)
            acc.info(f'10.0.2.15:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        except Exception:
            log.error("Exception in ASGI application\n" + traceback.format_exc().rstrip("\n"))
            acc.info(f'10.0.2.15:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
        if rid % 5 == 0:
            acc.info(f'10.0.2.1:{port + 100} - "GET /health HTTP/1.1" 200 OK')
    while not stop["flag"]:
        time.sleep(0.2)
    log.info("Shutting down")
    log.info("Waiting for application shutdown.")
    log.info("Application shutdown complete.")
    log.info(f"Finished server process [{os.getpid()}]")
