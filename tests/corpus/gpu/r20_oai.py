# An OpenAI-style embeddings server (uvicorn-shaped access lines, a small bf16 encoder on the GPU) for round 20:
# clients post /v1/embeddings batches; one client posts an empty "input" list, the batch encoder stacks zero
# tensors and that request fails (500, the ASGI app's traceback); the server goes on serving; then the
# operator's SIGTERM (no crash).
import os
import signal
import sys
import time
import traceback

import torch

torch.manual_seed(0)
D, VOCAB, LAYERS = 1024, 30522, 6
kw = dict(device="cuda", dtype=torch.bfloat16)
W = {"emb": torch.randn(VOCAB, D, **kw) * 0.02,
     "blocks": [(torch.randn(4 * D, D, **kw) * 0.02, torch.randn(D, 4 * D, **kw) * 0.02) for _ in range(LAYERS)]}


def encode_one(ids):
    h = W["emb"][ids]
    for up, down in W["blocks"]:
        h = h + torch.nn.functional.gelu(h @ up.T) @ down.T
    v = h.float().mean(0)
    return v / v.norm()


def embed(inputs):
    """The batch path: tokenize each input, encode, stack the pooled vectors."""
    g = torch.Generator(device="cuda").manual_seed(len(inputs))
    vecs = [encode_one(torch.randint(0, VOCAB, (len(s.split()) * 2 + 2,), device="cuda", generator=g))
            for s in inputs]
    out = torch.stack(vecs)
    return out.cpu().tolist()


def on_term(signum, frame):
    uvicorn_log("Shutting down")
    uvicorn_log("Waiting for application shutdown.")
    uvicorn_log("Application shutdown complete.")
    uvicorn_log(f"Finished server process [{os.getpid()}]")
    sys.exit(0)


def uvicorn_log(msg):
    print(f"INFO:     {msg}", flush=True)


signal.signal(signal.SIGTERM, on_term)
uvicorn_log(f"Started server process [{os.getpid()}]")
uvicorn_log("Waiting for application startup.")
print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} - embed_server - INFO - loaded bge-large-en-v1.5 (bf16) on "
      f"{torch.cuda.get_device_name()}: {torch.cuda.memory_allocated() / 2**30:.2f} GiB, max batch 256", flush=True)
uvicorn_log("Application startup complete.")
uvicorn_log("Uvicorn running on http://0.0.0.0:7997 (Press CTRL+C to quit)")
docs = ["the quick brown fox jumps over the lazy dog"] * 3 + ["GPU memory bandwidth for decode", "hello"]
reqs = [docs * 8, docs, docs * 40, [], docs * 2, docs * 16, docs, docs * 4]
n_ok = n_vec = 0
t_last = time.time()
i = 0
while True:
    inputs = reqs[i % len(reqs)]
    port = 53100 + i
    try:
        embed(inputs)
        n_ok += 1
        n_vec += len(inputs)
        uvicorn_log(f'10.0.4.22:{port} - "POST /v1/embeddings HTTP/1.1" 200 OK')
    except Exception:
        print("ERROR:    Exception in ASGI application", flush=True)
        print(traceback.format_exc(), end="", flush=True)
        uvicorn_log(f'10.0.4.22:{port} - "POST /v1/embeddings HTTP/1.1" 500 Internal Server Error')
    if time.time() - t_last >= 5:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} - embed_server - INFO - last 5s: {n_ok} requests, "
              f"{n_vec / (time.time() - t_last):.1f} embeddings/s", flush=True)
        n_ok = n_vec = 0
        t_last = time.time()
    i += 1
    time.sleep(0.2)
