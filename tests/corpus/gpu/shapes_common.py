# Shared parts of the shapes_* scenarios: sglang/vLLM-style loggers and real GPU faults (SHAPES_DRY=1: no GPU, for a local check).
import logging
import os
import sys
import time

DRY = os.environ.get("SHAPES_DRY") == "1"


# ---------------------------------------------------------------- sglang shape
def sglang_logger(tp=None):
    """sglang's format: `[2026-12-04 01:02:03 TP0] message` (no TP in the launcher)."""
    pre = f" TP{tp}" if tp is not None else ""
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter(f"[%(asctime)s{pre}] %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [h]
    root.setLevel(logging.INFO)
    return logging.getLogger("sglang")


def uvicorn_log(msg):
    print(f"INFO:     {msg}", flush=True)


# ---------------------------------------------------------------- vLLM shape
class VllmFormatter(logging.Formatter):
    """vLLM's NewLineFormatter: every line of a multi-line message gets the header."""

    def format(self, record):
        msg = super().format(record)
        if record.message != "":
            head = msg.split(record.message)[0]
            msg = msg.replace("\n", "\r\n" + head).replace("\r\n", "\n")
        return msg


def vllm_logger(name):
    """`INFO 12-04 01:02:03 [core.py:123] message`: name is the source file vLLM would show."""
    lg = logging.getLogger(name)
    if not lg.handlers:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(VllmFormatter("%(levelname)s %(asctime)s [%(name)s:%(lineno)d] %(message)s",
                                     datefmt="%m-%d %H:%M:%S"))
        lg.addHandler(h)
        lg.setLevel(logging.INFO)
        lg.propagate = False
    return lg


def add_prefix(prefix):
    """vLLM's _add_prefix: `(EngineCore_0 pid=123) ` before every line this process writes."""
    for f in (sys.stdout, sys.stderr):
        orig = f.write
        state = {"new": True}

        def write(s, orig=orig, state=state):
            if not s:
                return
            if state["new"]:
                orig(prefix)
            idx = 0
            while (nxt := s.find("\n", idx)) != -1:
                nxt += 1
                orig(s[idx:nxt])
                if nxt == len(s):
                    state["new"] = True
                    return
                orig(prefix)
                idx = nxt
            orig(s[idx:])
            state["new"] = False

        f.write = write


# ---------------------------------------------------------------- real GPU faults
def fault_oom(tokens=12_000_000, layers=64, heads=8, dim=128):
    """KV-cache pool far larger than the 141 GB card: torch.OutOfMemoryError."""
    if DRY:
        raise MemoryError("dry: CUDA out of memory")
    import torch
    return torch.empty((layers, tokens, heads, dim), dtype=torch.bfloat16, device="cuda")


def fault_illegal():
    """A Triton scatter whose indices point 8 TB past the buffer: illegal memory access."""
    if DRY:
        raise RuntimeError("dry: CUDA error: an illegal memory access was encountered")
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def scatter_kv(x_ptr, idx_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        idx = tl.load(idx_ptr + offs, mask=m)
        tl.store(x_ptr + idx, tl.full((BLOCK,), 1.0, tl.float32), mask=m)

    x = torch.zeros(4096, device="cuda")
    idx = torch.full((4096,), 1 << 41, device="cuda", dtype=torch.int64)
    scatter_kv[(32,)](x, idx, 4096, BLOCK=128)
    torch.cuda.synchronize()


def fault_assert(vocab=32000):
    """Token ids past the vocabulary into an embedding: device-side assert."""
    if DRY:
        raise RuntimeError("dry: CUDA error: device-side assert triggered")
    import torch
    emb = torch.nn.Embedding(vocab, 16, device="cuda", dtype=torch.bfloat16)
    ids = torch.tensor([1, 17, vocab + 5, 9], device="cuda")
    out = emb(ids)
    return out.float().sum().item()


def warm_gpu():
    """Real work before the fault (weights on the card), returns free GB."""
    if DRY:
        time.sleep(0.2)
        return 139.5
    import torch
    torch.cuda.set_device(0)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (w @ w).sum().item()
    return torch.cuda.mem_get_info()[0] / 2**30


def free_gb():
    if DRY:
        return 139.5
    import torch
    return torch.cuda.mem_get_info()[0] / 2**30


class TinyModel:
    """Random-weight decoder stand-in on the GPU: embedding, 4 linear layers, an lm_head."""

    def __init__(self, vocab=32000, hidden=2048):
        self.vocab = vocab
        if DRY:
            return
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = [torch.randn(hidden, hidden, **kw) * 0.02 for _ in range(4)]
        self.head = torch.randn(vocab, hidden, **kw) * 0.02

    def forward(self, n_tokens):
        """Logits for every position of an n_tokens prompt; returns the next token id."""
        if DRY:
            if n_tokens > 1_000_000:
                raise MemoryError("dry: CUDA out of memory")
            time.sleep(0.01)
            return 7
        import torch
        ids = torch.randint(0, self.vocab, (n_tokens,), device="cuda")
        h = self.emb[ids]
        for w in self.layers:
            h = torch.relu(h @ w)
        logits = h @ self.head.T
        return int(logits[-1].argmax().item())
