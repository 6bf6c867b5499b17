# An OpenAI-compatible chat server of its own (round 11): uvicorn-style logs, a small fp16 model on the
# GPU, requests served; one client sends temperature=0 and the sampler divides by it (inf/NaN
# probabilities, multinomial refuses): that request gets a 500, the server goes on; operator's SIGTERM.
import logging
import os
import argparse
import random
import signal
import sys
import time
import traceback

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--bad", choices=["temperature0", "logit_bias"], default="temperature0")
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
log = logging.getLogger("uvicorn.error")
acc = logging.getLogger("uvicorn.access")


class Model:
    def __init__(self, vocab=128256, d=2048):
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.float16)
        self.emb = torch.randn(vocab, d, **kw)
        self.w = [torch.randn(d, d, **kw) / d ** 0.5 for _ in range(4)]
        self.head = torch.randn(vocab, d, **kw) * 0.02
        self.vocab = vocab

    @torch.inference_mode()
    def generate(self, n_in, max_tokens, temperature, logit_bias=None):
        ids = torch.randint(0, self.vocab, (1, n_in), device="cuda")
        for _ in range(max_tokens):
            h = self.emb[ids[:, -32:]]
            for w in self.w:
                h = torch.nn.functional.silu(h @ w) + h
            logits = h[:, -1] @ self.head.T
            for tok, bias in (logit_bias or {}).items():
                logits[:, int(tok)] += bias
            probs = torch.softmax(logits / temperature, dim=-1)
            nxt = torch.multinomial(probs, 1)
            ids = torch.cat([ids, nxt], 1)
        return ids.shape[1] - n_in


def handle(body):
    return model.generate(body["n_in"], body["max_tokens"], body["temperature"], body.get("logit_bias"))


def shutdown(signum, frame):
    log.info("Shutting down")
    log.info("Waiting for application shutdown.")
    log.info("Application shutdown complete.")
    log.info(f"Finished server process [{os.getpid()}]")
    sys.exit(0)


signal.signal(signal.SIGTERM, shutdown)
log.info(f"Started server process [{os.getpid()}]")
log.info("Waiting for application startup.")
print(f"loading meta-llama/Llama-3.2-3B-Instruct (fp16) on {torch.cuda.get_device_name()}", flush=True)
model = Model()
model.generate(8, 4, 1.0)
log.info("Application startup complete.")
log.info("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")
random.seed(3)
for rid in range(12):
    time.sleep(0.3)
    body = {"n_in": random.randint(20, 300), "max_tokens": 32, "temperature": random.choice([0.2, 0.7, 1.0])}
    if rid == 5 and args.bad == "temperature0":
        body["temperature"] = 0.0
    if rid == 5 and args.bad == "logit_bias":  # a client using another model's tokenizer ids
        body["logit_bias"] = {"151643": -100.0, "151645": -100.0}
    port = 50210 + rid
    try:
        t0 = time.perf_counter()
        n = handle(body)
        print(f"chat completion {rid}: {body['n_in']} prompt + {n} completion tokens in {time.perf_counter() - t0:.2f}s", flush=True)
        acc.info(f'10.0.3.17:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    except Exception:
        log.error("Exception in ASGI application\n" + traceback.format_exc().rstrip("\n"))
        acc.info(f'10.0.3.17:{port} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    if rid % 4 == 0:
        acc.info(f'10.0.3.1:{port + 100} - "GET /health HTTP/1.1" 200 OK')
while True:
    time.sleep(1)
