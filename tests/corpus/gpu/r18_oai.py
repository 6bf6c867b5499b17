# An OpenAI-style completions server (uvicorn-shaped access lines) for round 18: requests with n > 1 and a
# top_k smaller than n ask torch.multinomial for more distinct samples than the top-k set holds; that request
# fails (500, the ASGI app's traceback), the server goes on serving; then the operator's SIGTERM.
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import DRY, Decoder, uvicorn_log  # noqa: E402

import torch  # noqa: E402

model = Decoder()


def on_term(signum, frame):
    uvicorn_log("Shutting down")
    uvicorn_log("Waiting for application shutdown.")
    uvicorn_log("Application shutdown complete.")
    uvicorn_log(f"Finished server process [{os.getpid()}]")
    sys.exit(0)


def complete(prompt_len, n, top_k, max_tokens=16, seed=0):
    torch.manual_seed(seed)
    out = []
    for _ in range(max_tokens):
        model.forward(prompt_len)
        logits = torch.randn(32000, device="cuda")
        vals, idx = logits.topk(top_k)
        probs = torch.softmax(vals, -1)
        out.append(idx[torch.multinomial(probs, n, replacement=False)])
    return torch.stack(out).tolist()


signal.signal(signal.SIGTERM, on_term)
uvicorn_log(f"Started server process [{os.getpid()}]")
uvicorn_log("Waiting for application startup.")
print(f"model loaded: tiny-decoder-1b (bf16) on {torch.cuda.get_device_name()}, "
      f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB", flush=True)
uvicorn_log("Application startup complete.")
uvicorn_log("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")
reqs = [(120, 1, 50), (64, 2, 40), (300, 1, 50), (88, 4, 20), (512, 8, 5), (40, 1, 50), (230, 2, 40),
        (77, 1, 50), (150, 3, 30), (61, 1, 50)]
i = 0
while True:
    pl, n, k = reqs[i % len(reqs)]
    port = 51200 + i
    t0 = time.perf_counter()
    try:
        complete(pl, n, k, seed=i)
        uvicorn_log(f'10.0.3.17:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
    except Exception:
        print("ERROR:    Exception in ASGI application", flush=True)
        print(traceback.format_exc(), end="", flush=True)
        uvicorn_log(f'10.0.3.17:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
    i += 1
    time.sleep(0.25)
