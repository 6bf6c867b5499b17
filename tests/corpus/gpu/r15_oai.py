# An OpenAI-compatible completion server of its own (round 15): uvicorn-style logs, a small fp16 model on
# the GPU, sampling with temperature/top-p; the operator's SIGTERM ends it. --scenario nan_request: one
# client asks for temperature=1e-6 (near-greedy): logits / temperature overflow fp16, softmax gives NaN,
# torch.multinomial refuses; that request gets a 500, the server goes on.
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
MODEL = "mistralai/Mistral-7B-Instruct-v0.3"


class Model:
    def __init__(self, vocab=32768, d=2048):
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.float16)
        self.emb = torch.randn(vocab, d, **kw) * 0.02
        self.w = [torch.randn(d, d, **kw) / d ** 0.5 for _ in range(4)]
        self.head = torch.randn(vocab, d, **kw) * 0.05
        self.vocab = vocab

    @torch.inference_mode()
    def complete(self, n_in, max_tokens, temperature, top_p):
        ids = torch.randint(0, self.vocab, (n_in,), device="cuda")
        h = self.emb[ids] * 40.0
        for w in self.w:
            h = torch.nn.functional.silu(h @ w) + h
        out = []
        x = h[-1:]
        for _ in range(max_tokens):
            logits = x @ self.head.T
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                ps, pi = probs.sort(dim=-1, descending=True)
                ps[(ps.cumsum(-1) - ps) > top_p] = 0.0
                nxt = pi.gather(-1, torch.multinomial(ps, 1)).view(-1)
            out.append(nxt)
            x = self.emb[nxt] * 40.0
        torch.cuda.synchronize()
        return len(out)


async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    log.info(f"Started server process [{os.getpid()}]")
    log.info("Waiting for application startup.")
    print(f"loading {MODEL} (torch_dtype=float16) on {torch.cuda.get_device_name()}", flush=True)
    model = Model()
    model.complete(16, 4, 0.7, 0.9)
    log.info("Application startup complete.")
    log.info("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")
    random.seed(11)
    for rid in range(40):
        if stop.is_set():
            break
        await asyncio.sleep(0.3)
        body = {"n_in": random.randint(30, 1500), "max_tokens": random.choice([16, 32, 64]),
                "temperature": random.choice([0.0, 0.7, 1.0]), "top_p": 0.95}
        if rid == 8:
            body = {"n_in": 412, "max_tokens": 64, "temperature": 1e-06, "top_p": 1.0}
        port = 51200 + rid
        try:
            t0 = time.perf_counter()
            n = model.complete(body["n_in"], body["max_tokens"], body["temperature"], body["top_p"])
            dt = time.perf_counter() - t0
            print(f"completion {rid}: {body['n_in']} prompt + {n} completion tokens in {dt:.3f}s "
                  f"(temperature={body['temperature']})", flush=True)
            acc.info(f'10.0.3.17:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        except Exception:
            log.error("Exception in ASGI application\n" + traceback.format_exc().rstrip("\n"))
            acc.info(f'10.0.3.17:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
        if rid % 5 == 0:
            acc.info(f'10.0.3.1:{port + 100} - "GET /health HTTP/1.1" 200 OK')
    await stop.wait()
    log.info("Shutting down")
    log.info("Waiting for application shutdown.")
    log.info("Application shutdown complete.")
    log.info(f"Finished server process [{os.getpid()}]")


asyncio.run(main())
