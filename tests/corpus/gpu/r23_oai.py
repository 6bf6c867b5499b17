# An OpenAI-style completions server for round 23 (uvicorn-shaped access lines, a small bf16 decoder on the GPU),
# one client sends temperature=0 (meaning greedy) as request 14, then the operator's SIGTERM:
# nan_served_past: the sampler divides the logits tensor by the temperature: the logits become inf/NaN and
#   torch.multinomial refuses the probabilities. Meant to fail that one request and serve on; on the H100 run of
#   2026-12-06 (PyTorch 2.11) the check is an asynchronous device-side assert: it poisons the CUDA context and
#   every later request fails (500, "device-side assert triggered") until the operator's SIGTERM;
# zero_temp_served_past: the sampler takes the inverse temperature in Python first (1.0 / temperature): that
#   request fails on the host (ZeroDivisionError, 500, the ASGI app's traceback), the server goes on serving,
#   then the operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import os
import signal
import sys
import time
import traceback

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--port", type=int, default=8080)
args = ap.parse_args()

torch.manual_seed(0)
V, D, LAYERS = 32000, 2048, 6
kw = dict(device="cuda", dtype=torch.bfloat16)
W = {"emb": torch.randn(V, D, **kw) * 0.02, "head": torch.randn(V, D, **kw) * 0.02,
     "blocks": [(torch.randn(2 * 5632, D, **kw) * 0.02, torch.randn(D, 5632, **kw) * 0.02) for _ in range(LAYERS)]}


def uvicorn_log(msg):
    print(f"INFO:     {msg}", flush=True)


def forward(ids):
    h = W["emb"][ids]
    for gu, down in W["blocks"]:
        g, u = (h @ gu.T).chunk(2, -1)
        h = h + (torch.nn.functional.silu(g) * u) @ down.T
    return (h[:, -1] @ W["head"].T).float()


def sample(logits, temperature, top_p):
    if args.scenario == "zero_temp_served_past":
        logits = logits * (1.0 / temperature)
    else:
        logits = logits / temperature
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        sp, si = probs.sort(-1, descending=True)
        sp[(sp.cumsum(-1) - sp) > top_p] = 0
        probs = torch.zeros_like(probs).scatter_(-1, si, sp)
    return torch.multinomial(probs, num_samples=1)


def generate(prompt_len, max_tokens, temperature, top_p, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    ids = torch.randint(0, V, (1, prompt_len), device="cuda", generator=g)
    for _ in range(max_tokens):
        nxt = sample(forward(ids[:, -256:]), temperature, top_p)
        ids = torch.cat([ids, nxt], 1)
    return ids[0, prompt_len:].tolist()


async def create_completion(req):
    toks = generate(req["prompt_len"], req["max_tokens"], req.get("temperature", 1.0), req.get("top_p", 1.0), req["seed"])
    return {"object": "text_completion", "usage": {"completion_tokens": len(toks)}}


def on_term(signum, frame):
    uvicorn_log("Shutting down")
    uvicorn_log("Waiting for application shutdown.")
    uvicorn_log("Application shutdown complete.")
    uvicorn_log(f"Finished server process [{os.getpid()}]")
    os._exit(0)


def main():
    import asyncio

    signal.signal(signal.SIGTERM, on_term)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [server] loaded /models/tinyllama-ft-support-v3 (bfloat16, {torch.cuda.get_device_name()})", flush=True)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    port = 52100
    for rid in range(1, 100000):
        port += 1
        req = {"prompt_len": 64 + rid * 37 % 400, "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "seed": rid}
        if rid == 14:
            req["temperature"] = 0.0  # a client that wants greedy decoding
        if rid % 9 == 0:
            uvicorn_log(f'10.0.7.3:{port + 5000} - "GET /health HTTP/1.1" 200 OK')
        try:
            asyncio.run(create_completion(req))
            uvicorn_log(f'10.0.7.21:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        except Exception:
            print("ERROR:    Exception in ASGI application", flush=True)
            print(traceback.format_exc().rstrip(), flush=True)
            uvicorn_log(f'10.0.7.21:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
