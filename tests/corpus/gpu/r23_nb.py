# A notebook session for round 23, its cell outputs in order (IPython's InteractiveShell runs the cells, as a
# kernel would, and prints their outputs and IPython-style tracebacks), --scenario:
# oom_then_device: a reward-scoring notebook; the policy (most of the card) is already on the GPU when the
#   reward model is moved to it: CUDA out of memory half way through Module.to(), which leaves the first layers
#   on the GPU and the rest on the CPU; the next cells free the cache and score anyway: the forward pass meets a
#   weight still on the CPU (a device mismatch), the symptom of the earlier OOM. On the H100 run of 2026-12-06
#   the card was still full (the moved layers stay referenced), so the last cell failed earlier, creating its
#   cuBLAS handle (CUBLAS_STATUS_ALLOC_FAILED).
# Needs IPython: r23_run.sh installs wheels from r23_whl/ when the machine lacks it (it did in 2026-12; the wheels,
# `pip download --only-binary=:all: --python-version 3.12 ipython` and its pure-Python dependencies, were not
# committed). Must run alone on the card.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()

CELLS = [
    """import torch, torch.nn as nn
print(torch.__version__, torch.cuda.get_device_name(0))
free, total = torch.cuda.mem_get_info()
print(f"free {free / 2**30:.1f} GiB / total {total / 2**30:.1f} GiB")""",
    """# policy from the previous section (bf16 shards, already on the GPU)
policy = [torch.empty(int(free * 0.93) // 60, dtype=torch.uint8, device="cuda") for _ in range(60)]
print(f"policy on GPU: {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated")""",
    """# reward model: 160 x (8192 x 8192) bf16 blocks
rm = nn.Sequential(*[nn.utils.skip_init(nn.Linear, 8192, 8192, bias=False, dtype=torch.bfloat16) for _ in range(160)])
print(f"reward model: {sum(p.numel() for p in rm.parameters()) / 1e9:.2f}B params")
rm = rm.to("cuda")
rm.eval()""",
    """torch.cuda.empty_cache()
print(f"allocated {torch.cuda.memory_allocated() / 2**30:.1f} GiB, reserved {torch.cuda.memory_reserved() / 2**30:.1f} GiB")""",
    """x = torch.randn(4, 8192, device="cuda", dtype=torch.bfloat16)
with torch.no_grad():
    scores = rm(x).float().mean(-1)
scores""",
]


def main():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    for cell in CELLS:
        res = sh.run_cell(cell, store_history=True)
        sys.stdout.flush()
        del res


if __name__ == "__main__":
    main()
