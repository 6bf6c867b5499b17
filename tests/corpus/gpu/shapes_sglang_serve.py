# sglang-shaped server that stays up: ready, requests served, one oversized request's real GPU OOM caught, then an operator's SIGTERM.
import argparse
import multiprocessing as mp
import os
import random
import signal
import sys
import time
import traceback

from shapes_common import TinyModel, free_gb, sglang_logger, uvicorn_log, warm_gpu


def scheduler(req_q, resp_q):
    logger = sglang_logger(0)
    logger.info("Init torch distributed begin.")
    avail = warm_gpu()
    logger.info(f"Load weight begin. avail mem={avail:.2f} GB")
    model = TinyModel()
    logger.info(f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={free_gb():.2f} GB, mem usage=0.55 GB.")
    logger.info(f"KV Cache is allocated. #tokens: 415036, K size: 25.33 GB, V size: 25.33 GB")
    logger.info(f"Memory pool end. avail mem={free_gb():.2f} GB")
    logger.info("max_total_num_tokens=415036, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072")
    resp_q.put(("ready", None))
    while True:
        item = req_q.get()
        if item is None:
            logger.info("Scheduler received the exit signal, exiting.")
            return
        rid, n_in, n_out = item
        try:
            logger.info(f"Prefill batch. #new-seq: 1, #new-token: {n_in}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0")
            model.forward(n_in)
            for step in range(1, n_out + 1):
                model.forward(1)
                if step % 16 == 0:
                    logger.info(f"Decode batch. #running-req: 1, #token: {n_in + step}, token usage: 0.00, #queue-req: 0")
            resp_q.put((rid, 200))
        except Exception:
            logger.error(f"Request {rid} failed, aborting it: {traceback.format_exc()}")
            if not os.environ.get("SHAPES_DRY"):
                import torch
                torch.cuda.empty_cache()
            resp_q.put((rid, 400))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["request_oom_then_sigterm", "clean_sigterm"], required=True)
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--requests", type=int, default=8)
    args = ap.parse_args()
    logger = sglang_logger()
    logger.info(f"server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct', tp_size=1, host='127.0.0.1', "
                f"port={args.port}, mem_fraction_static=0.88, log_level='info', scenario='{args.scenario}')")
    ctx = mp.get_context("spawn")
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=scheduler, args=(req_q, resp_q), name="sglang::scheduler")
    child.start()

    def sigterm_handler(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        req_q.put(None)
        child.join(timeout=10)
        sys.exit(0)

    signal.signal(signal.SIGTERM, sigterm_handler)
    assert resp_q.get(timeout=180)[0] == "ready"
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:40512 - "GET /get_model_info HTTP/1.1" 200 OK')
    reqs = [(0, 6, 8)] + [(i, random.randint(20, 400), 32) for i in range(1, args.requests + 1)]
    if args.scenario == "request_oom_then_sigterm":
        reqs[4] = (4, 4_000_000, 32)  # one client sends a 4M-token prompt: logits need about 238 GiB
    for rid, n_in, n_out in reqs:
        time.sleep(0.3)
        req_q.put((rid, n_in, n_out))
        _, code = resp_q.get(timeout=120)
        status = "200 OK" if code == 200 else "400 Bad Request"
        uvicorn_log(f'127.0.0.1:{40512 + rid} - "POST /generate HTTP/1.1" {status}')
        if rid == 0:
            logger.info("The server is fired up and ready to roll!")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
