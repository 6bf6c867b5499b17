# vLLM-shaped server that stays up: API server + EngineCore_0 ready, requests served (one oversized request's real OOM caught), operator's SIGTERM.
import argparse
import multiprocessing as mp
import os
import random
import signal
import sys
import time

from shapes_common import TinyModel, add_prefix, free_gb, uvicorn_log, vllm_logger, warm_gpu


def engine_core(req_q, resp_q):
    add_prefix(f"(EngineCore_0 pid={os.getpid()}) ")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the API server shuts the engine down itself
    log = vllm_logger("core.py")
    log.info("Initializing a V1 LLM engine (v0.10.2) with config: model='/models/Qwen2.5-7B-Instruct', "
             "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, enforce_eager=False")
    wlog = vllm_logger("gpu_model_runner.py")
    avail = warm_gpu()
    wlog.info("Starting to load model /models/Qwen2.5-7B-Instruct...")
    model = TinyModel(vocab=152064)
    wlog.info(f"Model loading took 1.28 GiB and 0.52 seconds (free {avail:.2f} GiB)")
    vllm_logger("kv_cache_utils.py").info(f"GPU KV cache size: 1,958,032 tokens (free {free_gb():.2f} GiB)")
    vllm_logger("kv_cache_utils.py").info("Maximum concurrency for 32,768 tokens per request: 59.75x")
    wlog.info("Graph capturing finished in 4 secs, took 0.41 GiB")
    log.info("init engine (profile, create kv cache, warmup model) took 6.12 seconds")
    resp_q.put(("ready", None))
    while True:
        item = req_q.get()
        if item is None:
            log.info("Shutdown requested, engine core exiting.")
            return
        rid, n_in, n_out = item
        try:
            model.forward(n_in)
            for _ in range(n_out):
                model.forward(1)
            resp_q.put((rid, 200))
        except Exception:
            log.exception(f"Request {rid} failed during model execution; aborting it.")
            if not os.environ.get("SHAPES_DRY"):
                import torch
                torch.cuda.empty_cache()
            resp_q.put((rid, 500))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["request_oom_then_sigterm", "clean_sigterm"], required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--requests", type=int, default=8)
    args = ap.parse_args()
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info("vLLM API server version 0.10.2")
    log.info(f"non-default args: {{'model': '/models/Qwen2.5-7B-Instruct', 'port': {args.port}, 'scenario': '{args.scenario}'}}")
    ctx = mp.get_context("spawn")
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=engine_core, args=(req_q, resp_q), name="EngineCore_0")
    child.start()
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")

    def sigterm_handler(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        req_q.put(None)
        child.join(timeout=10)
        vllm_logger("launcher.py").info("Shutting down FastAPI HTTP server.")
        sys.exit(0)

    signal.signal(signal.SIGTERM, sigterm_handler)
    assert resp_q.get(timeout=180)[0] == "ready"
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    vllm_logger("launcher.py").info("Available routes are:")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    reqs = [(i, random.randint(20, 400), 24) for i in range(args.requests)]
    if args.scenario == "request_oom_then_sigterm":
        reqs[3] = (3, 4_000_000, 24)  # a 4M-token prompt: logits over a 152k vocabulary cannot fit
    for rid, n_in, n_out in reqs:
        time.sleep(0.3)
        req_q.put((rid, n_in, n_out))
        _, code = resp_q.get(timeout=120)
        status = "200 OK" if code == 200 else "500 Internal Server Error"
        uvicorn_log(f'127.0.0.1:{51000 + rid} - "POST /v1/completions HTTP/1.1" {status}')
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
