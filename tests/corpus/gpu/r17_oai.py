# An OpenAI-compatible completion server of its own (round 17): uvicorn-style logs, a small bf16 model on
# the GPU whose prefill writes rotary-embedded keys into the KV cache with a Triton kernel launched on a
# (heads, tokens) grid; the operator's SIGTERM ends it. --scenario grid_y: one client sends a 70k-token
# document; the token count lands on the grid's y axis, which CUDA caps at 65535: the launch is refused,
# that request gets a 500 and the server goes on serving.
import argparse
import asyncio
import logging
import os
import random
import signal
import time
import traceback

import torch
import triton
import triton.language as tl

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
log = logging.getLogger("uvicorn.error")
acc = logging.getLogger("uvicorn.access")
MODEL = "Qwen/Qwen2.5-7B-Instruct-1M"


@triton.jit
def rope_kv_write_kernel(k_ptr, cos_ptr, sin_ptr, cache_ptr, slot_ptr, HEAD_DIM: tl.constexpr,
                         HALF: tl.constexpr):
    head = tl.program_id(0)
    tok = tl.program_id(1)
    n_heads = tl.num_programs(0)
    offs = tl.arange(0, HALF)
    base = k_ptr + (tok * n_heads + head) * HEAD_DIM
    x1 = tl.load(base + offs).to(tl.float32)
    x2 = tl.load(base + HALF + offs).to(tl.float32)
    c = tl.load(cos_ptr + tok * HALF + offs)
    s = tl.load(sin_ptr + tok * HALF + offs)
    slot = tl.load(slot_ptr + tok)
    out = cache_ptr + (slot * n_heads + head) * HEAD_DIM
    tl.store(out + offs, (x1 * c - x2 * s).to(tl.bfloat16))
    tl.store(out + HALF + offs, (x2 * c + x1 * s).to(tl.bfloat16))


class Model:
    def __init__(self, vocab=152064, d=1024, kv_heads=4, head_dim=128, cache_tokens=1 << 20):
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.vocab, self.kvh, self.hd = vocab, kv_heads, head_dim
        self.emb = torch.randn(vocab, d, **kw) * 0.02
        self.wk = torch.randn(kv_heads * head_dim, d, **kw) * 0.02
        self.w = [torch.randn(d, d, **kw) / d ** 0.5 for _ in range(2)]
        self.cache = torch.zeros(cache_tokens, kv_heads, head_dim, **kw)
        inv = 1.0 / (1e6 ** (torch.arange(0, head_dim, 2, device="cuda").float() / head_dim))
        self.inv_freq = inv
        self.next_slot = 0

    @torch.inference_mode()
    def complete(self, n_in, max_tokens):
        ids = torch.randint(0, self.vocab, (n_in,), device="cuda")
        h = self.emb[ids]
        k = (h @ self.wk.T).view(n_in, self.kvh, self.hd).contiguous()
        pos = torch.arange(n_in, device="cuda").float()
        ang = pos[:, None] * self.inv_freq[None]
        cos, sin = ang.cos().contiguous(), ang.sin().contiguous()
        slots = (self.next_slot + torch.arange(n_in, device="cuda")) % self.cache.shape[0]
        rope_kv_write_kernel[(self.kvh, n_in)](k, cos, sin, self.cache, slots, HEAD_DIM=self.hd,
                                               HALF=self.hd // 2)
        self.next_slot = (self.next_slot + n_in + max_tokens) % self.cache.shape[0]
        for w in self.w:
            h = torch.nn.functional.silu(h @ w) + h
        x = h[-1:]
        for _ in range(max_tokens):
            nxt = (x @ self.emb.T).argmax(-1)
            x = self.emb[nxt]
        torch.cuda.synchronize()
        return max_tokens


async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    log.info(f"Started server process [{os.getpid()}]")
    log.info("Waiting for application startup.")
    print(f"loading {MODEL} (torch_dtype=bfloat16, max_context=1010000) on {torch.cuda.get_device_name()}",
          flush=True)
    model = Model()
    model.complete(16, 4)
    log.info("Application startup complete.")
    log.info("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")
    random.seed(7)
    for rid in range(36):
        if stop.is_set():
            break
        await asyncio.sleep(0.3)
        n_in, mt = random.randint(40, 3000), random.choice([32, 64, 128])
        if rid == 9:
            n_in, mt = 70312, 512  # a long contract for summarization
        port = 50400 + rid
        try:
            t0 = time.perf_counter()
            n = model.complete(n_in, mt)
            print(f"completion {rid}: {n_in} prompt + {n} completion tokens in {time.perf_counter() - t0:.3f}s",
                  flush=True)
            acc.info(f'10.0.6.31:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        except Exception:
            log.error("Exception in ASGI application\n" + traceback.format_exc().rstrip("\n"))
            acc.info(f'10.0.6.31:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
        if rid % 6 == 0:
            acc.info(f'10.0.6.1:{port + 100} - "GET /health HTTP/1.1" 200 OK')
    await stop.wait()
    log.info("Shutting down")
    log.info("Waiting for application shutdown.")
    log.info("Application shutdown complete.")
    log.info(f"Finished server process [{os.getpid()}]")


asyncio.run(main())
