# An IPython session for round 24: each cell is echoed as IPython's terminal shows typed input (`In [N]: ` and
# `   ...: ` continuation lines), then run by IPython's InteractiveShell, which prints its outputs, `Out[N]:`
# results and IPython-style tracebacks. --scenario:
# held_after_oom: building a 405B-shaped model (126 layers, 16384 wide) layer by layer into a global list runs the card out of
#   memory part way; the half-built list stays referenced, so emptying the cache frees nothing and the next cell,
#   which builds an 8B-shaped model instead (without deleting the first), runs out of memory at once;
# caught_then_fp8: flash-attn is not installed (the cell catches the ImportError and falls back to SDPA); a later
#   cell casts the weights and the input to float8_e4m3fn "to save memory" and runs the forward pass: the plain
#   matmul has no float8 kernel.
# Needs IPython (r24_run.sh installs wheels from build/r24_whl when the machine lacks it). held_after_oom must
# run alone on the card.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--colors", default="Neutral")
args = ap.parse_args()

CELLS = {
    "held_after_oom": [
        """import torch, torch.nn as nn, torch.nn.functional as F
print(torch.__version__, torch.cuda.get_device_name(0))
free, total = torch.cuda.mem_get_info()
print(f"free {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB")""",
        """cfg = dict(n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8, d_ff=53248, vocab=128256)  # Llama-3.1-405B
per_layer = 2 * cfg["d_model"] ** 2 + 2 * cfg["d_model"] * (cfg["d_model"] // cfg["n_heads"] * cfg["n_kv_heads"]) + 3 * cfg["d_model"] * cfg["d_ff"]
print(f"{cfg['n_layers'] * per_layer / 1e9:.1f}B params in the blocks, {cfg['n_layers'] * per_layer * 2 / 2**30:.1f} GiB in bf16")""",
        """class Block(nn.Module):
    def __init__(self, c, device="cuda", dtype=torch.bfloat16):
        super().__init__()
        d, kv = c["d_model"], c["d_model"] // c["n_heads"] * c["n_kv_heads"]
        kw = dict(bias=False, device=device, dtype=dtype)
        self.q, self.k, self.v, self.o = nn.Linear(d, d, **kw), nn.Linear(d, kv, **kw), nn.Linear(d, kv, **kw), nn.Linear(d, d, **kw)
        self.gate, self.up, self.down = nn.Linear(d, c["d_ff"], **kw), nn.Linear(d, c["d_ff"], **kw), nn.Linear(c["d_ff"], d, **kw)

    def forward(self, x):
        return x + self.down(F.silu(self.gate(x)) * self.up(x))

layers = nn.ModuleList()
for i in range(cfg["n_layers"]):
    layers.append(Block(cfg))
    if i % 4 == 3:
        print(f"layer {i + 1}: {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated")""",
        """torch.cuda.empty_cache()
print(f"{len(layers)} layers built; allocated {torch.cuda.memory_allocated() / 2**30:.1f} GiB, reserved {torch.cuda.memory_reserved() / 2**30:.1f} GiB")""",
        """# too big for one card: try the 8B shape first
cfg_small = dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab=128256)
small = nn.ModuleList([Block(cfg_small) for _ in range(cfg_small["n_layers"])])
print(f"small model: {sum(p.numel() for p in small.parameters()) / 1e9:.1f}B params")""",
        """torch.cuda.memory_allocated() / 2**30""",
    ],
    "caught_then_fp8": [
        """import math, time
import torch, torch.nn as nn, torch.nn.functional as F
try:
    from flash_attn import flash_attn_func
    ATTN = "flash_attn"
except ImportError as e:
    print(f"flash-attn not available ({e}); falling back to SDPA")
    ATTN = "sdpa"
print(torch.__version__, torch.cuda.get_device_name(0), ATTN)""",
        """class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, d))

class Layer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.attn = Attn(d, h)
        self.up, self.down = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.down(F.gelu(self.up(self.n2(x))))

torch.manual_seed(0)
model = nn.Sequential(*[Layer(2048, 16) for _ in range(8)]).cuda().to(torch.bfloat16).eval()
print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.0f}M params, {torch.cuda.memory_allocated() / 2**20:.0f} MiB")""",
        """x = torch.randn(4, 1024, 2048, device="cuda", dtype=torch.bfloat16)
with torch.no_grad():
    t0 = time.perf_counter()
    for _ in range(10):
        y = model(x)
    torch.cuda.synchronize()
print(f"bf16 forward: {(time.perf_counter() - t0) / 10 * 1000:.1f} ms, out std {y.float().std().item():.3f}")""",
        """# weights to fp8 (e4m3) to halve the memory again
before = torch.cuda.memory_allocated()
for m in model.modules():
    if isinstance(m, nn.Linear):
        m.weight.data = m.weight.data.to(torch.float8_e4m3fn)
torch.cuda.empty_cache()
print(f"weights: {before / 2**20:.0f} MiB -> {torch.cuda.memory_allocated() / 2**20:.0f} MiB")""",
        """with torch.no_grad():
    y8 = model(x.to(torch.float8_e4m3fn))
(y8.float() - y.float()).abs().max()""",
    ],
}


def echo(n, cell):
    lines = cell.split("\n")
    out = [f"In [{n}]: {lines[0]}"] + [f"   ...: {ln}" if ln else "   ...:" for ln in lines[1:]]
    print("\n".join(out) + "\n   ...:" * (len(lines) > 1), flush=True)


def main():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance(colors=args.colors)
    for i, cell in enumerate(CELLS[args.scenario], 1):
        echo(sh.execution_count, cell)
        sh.run_cell(cell, store_history=True)
        sys.stdout.flush()
        sys.stderr.flush()
        print(flush=True)
    print(f"In [{sh.execution_count}]: exit", flush=True)


if __name__ == "__main__":
    main()
