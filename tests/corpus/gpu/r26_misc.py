# Round 26, single-process scenarios (one real fault, or none, per --scenario):
# hf_embed_vocab: an HF/accelerate-style SFT loop; the tokenizer got two added chat tokens (ids 32000, 32001) but
#   the model's embedding was not resized (32000 rows): the first batch holding them fires the embedding's bounds
#   assert on the GPU;
# hf_resume_corrupt: the same loop resumed from a checkpoint whose optimizer.pt was cut short (a copy that ran out
#   of disk, r26_run.sh prepares it): torch.load fails on the zip archive;
# triton_oor: a Triton matmul benchmark sweeping tile sizes; the largest config (256x256x128, 4 stages) needs more
#   shared memory than the GPU has;
# jax_nan: a JAX/optax training loop run with jax_debug_nans; a log of a negative variance at step 30 produces NaN;
# oai_logit_bias: an OpenAI-style server answering requests; one request's logit_bias names a token id beyond the
#   vocabulary: that request fails (500), the server serves on until the operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import os
import signal
import sys
import time
import traceback

_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S"))
log = logging.getLogger("__main__")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False
CKPT = "/tmp/r26_files/output/sft-llama2-7b-chat/checkpoint-200"


def tiny_lm():
    import torch.nn as nn

    class TinyLM(nn.Module):
        def __init__(self, vocab=32000, d=1024, n=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(n)])
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            h = self.embed(ids)
            for b in self.blocks:
                h = h + b(h)
            return self.head(h)

    return TinyLM().cuda()


def sft(resume):
    import torch
    import torch.nn.functional as F
    from tqdm.auto import tqdm

    torch.manual_seed(0)
    log.info("Distributed environment: NO\nNum processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda\n\nMixed precision type: bf16\n")
    log.info("Added 2 special tokens to the tokenizer: ['<|im_start|>', '<|im_end|>'] (vocab size 32002)")
    model = tiny_lm()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    log.info("***** Running training *****")
    log.info("  Num examples = 52002")
    log.info("  Num Epochs = 1")
    log.info("  Instantaneous batch size per device = 8")
    log.info("  Total optimization steps = 6500")
    start = 0
    if resume:
        log.info(f"Resuming training from {CKPT}")
        model.load_state_dict(torch.load(f"{CKPT}/model.pt", map_location="cuda"))
        log.info("  Loaded model weights")
        opt.load_state_dict(torch.load(f"{CKPT}/optimizer.pt", map_location="cuda"))
        start = 200
    bar = tqdm(total=6500, initial=start, desc="Training", ncols=100)
    for step in range(start + 1, 6501):
        g = torch.Generator().manual_seed(step)
        ids = torch.randint(0, 32000, (8, 513), generator=g)
        if step >= 23:  # chat-formatted samples from here on: the added <|im_start|> / <|im_end|> ids
            ids[:, 0], ids[:, 64] = 32000, 32001
        ids = ids.cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, 32000), ids[:, 1:].reshape(-1).clamp(max=31999))
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
        if step % 10 == 0:
            bar.write(f"{{'loss': {loss.item():.4f}, 'grad_norm': 1.{step % 97:02d}, 'learning_rate': {2e-5 * step / 6500:.3e}, 'epoch': {step / 6500:.2f}}}")
        if step == start + 30 and resume:
            break


def prep():
    import torch

    os.makedirs(CKPT, exist_ok=True)
    model = tiny_lm()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model(torch.zeros(1, 4, dtype=torch.long, device="cuda")).sum().backward()
    opt.step()
    torch.save(model.state_dict(), f"{CKPT}/model.pt")
    torch.save(opt.state_dict(), f"{CKPT}/optimizer.pt")
    size = os.path.getsize(f"{CKPT}/optimizer.pt")
    os.truncate(f"{CKPT}/optimizer.pt", int(size * 0.7))
    print("prep ok", flush=True)


def triton_oor():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

    M = N = K = 8192
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ref = triton.testing.do_bench(lambda: a @ b)
    print(f"torch.matmul (cuBLAS) {M}x{N}x{K} fp16: {ref:.3f} ms, {2 * M * N * K / ref / 1e9:.1f} TFLOP/s", flush=True)
    print(f"{'BM':>5}{'BN':>5}{'BK':>5}{'warps':>7}{'stages':>8}{'ms':>10}{'TFLOP/s':>10}", flush=True)
    for bm, bn, bk, w, s in [(64, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (256, 256, 128, 8, 4)]:
        fn = lambda: matmul_kernel[(M // bm, N // bn)](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=s)  # noqa: E731
        ms = triton.testing.do_bench(fn)
        print(f"{bm:>5}{bn:>5}{bk:>5}{w:>7}{s:>8}{ms:>10.3f}{2 * M * N * K / ms / 1e9:>10.1f}", flush=True)


def jax_nan():
    import jax
    import jax.numpy as jnp
    import optax

    jax.config.update("jax_debug_nans", True)
    print(f"JAX {jax.__version__} devices: {jax.devices()}", flush=True)
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"w": jax.random.normal(k1, (256, 256)) * 0.05, "log_sigma": jnp.zeros((256,))}

    def loss_fn(p, x, y):
        mu = x @ p["w"]
        var = jnp.exp(p["log_sigma"]) - 0.9  # the variance head's offset (meant to be + 0.1)
        return jnp.mean(0.5 * jnp.log(var) + (y - mu) ** 2 / (2 * var))

    opt = optax.adam(3e-2)
    st = opt.init(params)

    @jax.jit
    def step(p, s, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, l

    for i in range(1, 201):
        x = jax.random.normal(jax.random.PRNGKey(i), (512, 256))
        y = x @ (jnp.eye(256) * 0.3)
        params, st, l = step(params, st, x, y)
        if i % 5 == 0:
            print(f"step {i:4d} | loss {float(l):.5f}", flush=True)


def oai_logit_bias():
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from r25_common import Decoder

    ulog = logging.getLogger("uvicorn.error")
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
    ulog.handlers[:] = [h]
    ulog.setLevel(logging.INFO)
    ulog.propagate = False
    slog = logging.getLogger("llm_server.generate")
    h2 = logging.StreamHandler(sys.stdout)
    h2.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s"))
    slog.handlers[:] = [h2]
    slog.setLevel(logging.INFO)
    slog.propagate = False
    pid = os.getpid()
    slog.info("loading /models/Mistral-7B-Instruct-v0.2 (bfloat16) on cuda:0")
    dec = Decoder()
    slog.info(f"model ready, {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated")
    ulog.info(f"Started server process [{pid}]")
    ulog.info("Waiting for application startup.")
    ulog.info("Application startup complete.")
    ulog.info("Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)")

    def on_term(signum, frame):
        ulog.info("Shutting down")
        ulog.info("Waiting for application shutdown.")
        ulog.info("Application shutdown complete.")
        ulog.info(f"Finished server process [{pid}]")
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    port = 53100
    for r in range(1, 100000):
        port += 3
        bias = {"28705": 2.0} if r % 7 else {"2": -100.0, "40123": 5.0}
        try:
            lb = torch.zeros(32000)
            for k, v in bias.items():
                lb[int(k)] = v
            lb = lb.cuda()
            n = dec.forward(200 + r % 50, seed=r)
            slog.info(f"request chatcmpl-{r:06x}: prompt_tokens={200 + r % 50} completion_tokens={32 + r % 11} first_token={n}")
            print(f'INFO:     10.1.4.17:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        except Exception:
            ulog.error("Exception in ASGI application\n" + traceback.format_exc().rstrip())
            print(f'INFO:     10.1.4.17:{port} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error', flush=True)
        time.sleep(0.3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"hf_embed_vocab": lambda: sft(False), "hf_resume_corrupt": lambda: sft(True), "prep": prep, "triton_oor": triton_oor,
     "jax_nan": jax_nan, "oai_logit_bias": oai_logit_bias}[a.scenario]()
