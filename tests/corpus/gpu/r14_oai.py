# An OpenAI-compatible completion server of its own (round 14): uvicorn-style logs, a small model on the
# GPU, an asyncio loop; the operator's SIGTERM ends it. --scenario:
# fraction_oom: the server caps itself with set_per_process_memory_fraction(0.10); one client asks for
#   prompt logprobs (echo) over a 48k-token prompt: full-sequence logits do not fit, that request gets a
#   500, the server goes on;
# asyncio_task: the background latency-metrics task computes quantiles over an empty window after the
#   clients pause; the task dies ("Task exception was never retrieved"), the server goes on.
import argparse
import asyncio
import logging
import os
import random
import signal
import time
import traceback

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
log = logging.getLogger("uvicorn.error")
acc = logging.getLogger("uvicorn.access")
MODEL = "microsoft/Phi-3.5-mini-instruct"


class Model:
    def __init__(self, vocab=128256, d=2048):
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.emb = torch.randn(vocab, d, **kw) * 0.02
        self.w = [torch.randn(d, d, **kw) / d ** 0.5 for _ in range(4)]
        self.head = torch.randn(vocab, d, **kw) * 0.02
        self.vocab = vocab

    @torch.inference_mode()
    def complete(self, n_in, max_tokens, echo_logprobs=False):
        ids = torch.randint(0, self.vocab, (n_in,), device="cuda")
        h = self.emb[ids]
        for w in self.w:
            h = torch.nn.functional.silu(h @ w) + h
        if echo_logprobs:  # logprobs of every prompt token
            lp = torch.log_softmax((h @ self.head.T).float(), dim=-1)
            _ = lp.gather(1, ids[:, None]).sum().item()
        out = []
        x = h[-1:]
        for _ in range(max_tokens):
            nxt = (x @ self.head.T).argmax(-1)
            out.append(nxt)
            x = self.emb[nxt]
        torch.cuda.synchronize()
        return len(out)


latencies = []


async def metrics_loop(interval=2.0):
    last = 0
    while True:
        await asyncio.sleep(interval)
        window = torch.tensor(latencies[last:], dtype=torch.float32)
        last = len(latencies)
        p50, p99 = torch.quantile(window, torch.tensor([0.5, 0.99])).tolist()
        print(f"metrics: {window.numel() / interval:.1f} req/s, latency p50 {p50 * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, "
              f"gpu mem {torch.cuda.memory_allocated() / 2**30:.2f} GiB", flush=True)


async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    log.info(f"Started server process [{os.getpid()}]")
    log.info("Waiting for application startup.")
    if args.scenario == "fraction_oom":
        torch.cuda.set_per_process_memory_fraction(0.10)
        total = torch.cuda.get_device_properties(0).total_memory / 2**30
        print(f"GPU memory cap: {0.10 * total:.2f} GiB of {total:.2f} GiB (--gpu-memory-fraction 0.10)", flush=True)
    print(f"loading {MODEL} (bf16) on {torch.cuda.get_device_name()}", flush=True)
    model = Model()
    model.complete(16, 4)
    log.info("Application startup complete.")
    log.info("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")
    random.seed(5)
    for rid in range(40):
        if stop.is_set():
            break
        await asyncio.sleep(5.0 if (args.scenario == "asyncio_task" and rid == 9) else 0.3)
        body = {"n_in": random.randint(30, 2000), "max_tokens": random.choice([16, 32, 64]), "echo": False}
        if args.scenario == "fraction_oom" and rid == 6:
            body = {"n_in": 48000, "max_tokens": 1, "echo": True, "logprobs": 1}
        port = 38400 + rid
        try:
            t0 = time.perf_counter()
            n = model.complete(body["n_in"], body["max_tokens"], body["echo"])
            latencies.append(time.perf_counter() - t0)
            print(f"completion {rid}: {body['n_in']} prompt + {n} completion tokens in {latencies[-1]:.3f}s", flush=True)
            acc.info(f'10.0.7.21:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        except Exception:
            log.error("Exception in ASGI application\n" + traceback.format_exc().rstrip("\n"))
            acc.info(f'10.0.7.21:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
        if rid == 0 and args.scenario == "asyncio_task":
            asyncio.create_task(metrics_loop())
        if rid % 5 == 0:
            acc.info(f'10.0.7.1:{port + 100} - "GET /health HTTP/1.1" 200 OK')
    await stop.wait()
    log.info("Shutting down")
    log.info("Waiting for application shutdown.")
    log.info("Application shutdown complete.")
    log.info(f"Finished server process [{os.getpid()}]")


asyncio.run(main())
