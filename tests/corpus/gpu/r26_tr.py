# torchrun-launched scenarios for round 26 (two ranks on the one GPU), one real fault per --scenario:
# compile_fullgraph: the model is wrapped in torch.compile(fullgraph=True); its MoE router branches on a
#   data-dependent value (.item() of the capacity check): dynamo cannot trace it with fullgraph=True; both ranks
#   fail at their first forward, torchrun reports the failures;
# misaligned: a hand-written vectorised (float4) CuPy kernel packs each rank's gradient shard for the exchange;
#   rank 1's shard starts at an odd element offset of the flat buffer: misaligned address on rank 1 only, after
#   rank 0 logs its steps; rank 0 is stopped by torchrun.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import datetime
import logging
import os
import sys
import time

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"[%(asctime)s][rank{rank}][%(levelname)s][%(name)s] - %(message)s"))
log = logging.getLogger("train")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def compile_fullgraph():
    import torch
    import torch.nn as nn

    torch.cuda.set_device(0)
    torch.manual_seed(0)

    class MoE(nn.Module):
        def __init__(self, d=512, e=8):
            super().__init__()
            self.router = nn.Linear(d, e)
            self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(e)])

        def forward(self, x):
            top = self.router(x).argmax(-1)
            load = torch.bincount(top, minlength=len(self.experts)).max()
            if load.item() > x.shape[0] // 2:  # capacity check
                x = x * 0.5
            return sum(self.experts[i](x) * (top == i).unsqueeze(-1) for i in range(len(self.experts)))

    model = nn.Sequential(nn.Linear(512, 512), MoE(), nn.Linear(512, 512)).cuda()
    log.info(f"model params: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M, compile=True (fullgraph=True, mode=max-autotune-no-cudagraphs)")
    model = torch.compile(model, fullgraph=True, mode="max-autotune-no-cudagraphs")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    log.info("starting training loop")
    for step in range(1, 100):
        x = torch.randn(256, 512, device="cuda")
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        log.info(f"step {step} loss {loss.item():.4f}")


PACK = r'''
extern "C" __global__ void pack_shard_f4(const float* __restrict__ src, float* __restrict__ dst, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(src)[i];
        v.x *= 0.5f; v.y *= 0.5f; v.z *= 0.5f; v.w *= 0.5f;
        reinterpret_cast<float4*>(dst)[i] = v;
    }
}
'''


def misaligned():
    import cupy as cp
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.cuda.set_device(0)
    kern = cp.RawKernel(PACK, "pack_shard_f4")
    numel = 4 * 1024 * 1024 + 2  # flat gradient buffer: 4M + 2 elements (two biases of size 1 at the end)
    shard = numel // world  # rank 1's shard starts at element 2097153
    flat = torch.randn(numel, device="cuda")
    out = torch.empty(shard + 4, device="cuda")
    log.info(f"flat grad buffer {numel} elements, shard {shard} per rank, offset {rank * shard}")
    for step in range(1, 50):
        flat.normal_()
        view = flat[rank * shard: (rank + 1) * shard]
        n4 = shard // 4
        if step >= 6:  # the vectorised pack kernel is turned on after the warm-up steps
            src = cp.asarray(view)
            dst = cp.asarray(out)
            kern(((n4 + 255) // 256,), (256,), (src, dst, cp.int64(n4)))
        else:
            out[:shard].copy_(view * 0.5)
        cp.cuda.Device().synchronize()
        dist.barrier()
        log.info(f"step {step}: packed {shard} grads, norm {out[:shard].norm().item():.3f}")
        time.sleep(0.3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"compile_fullgraph": compile_fullgraph, "misaligned": misaligned}[a.scenario]()
