# torchrun-launched training jobs (round 16), one real fault per --scenario:
# cholesky: two ranks (gloo, one GPU); a Shampoo-style preconditioner keeps its statistics in bf16 and inverts
#   them with a Cholesky factorization every 10 steps; the statistics of the wide layers (3072 inputs, rank at
#   most 768) are singular and the bf16 rounding makes them indefinite: linalg.cholesky fails on both ranks;
# nccl_net_ib: the job's environment (copied from the InfiniBand cluster) forces NCCL_NET=IB on a node
#   without InfiniBand; the eager NCCL communicator cannot be created.
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--steps", type=int, default=60)
args = ap.parse_args()
rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


class Encoder(nn.Module):
    """A small text encoder with a contrastive projection head (768 -> 256)."""

    def __init__(self, vocab=32000, d=768, layers=4, proj=256):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, proj, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = x + b(x)
        return nn.functional.normalize(self.proj(self.norm(x).mean(1)), dim=-1)


class ShampooLite(torch.optim.Optimizer):
    """Right-preconditioned SGD for 2-D weights: R = EMA(G^T G) kept in bf16, R^-1/2 via Cholesky every k steps."""

    def __init__(self, params, lr=1e-3, beta=0.95, eps=1e-12, every=10):
        super().__init__(params, dict(lr=lr, beta=beta, eps=eps, every=every))
        self.n = 0

    @torch.no_grad()
    def step(self):
        self.n += 1
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                G = p.grad
                if G.ndim != 2:
                    p.add_(G, alpha=-g["lr"])
                    continue
                st = self.state[p]
                if "R" not in st:
                    st["R"] = torch.zeros(G.shape[1], G.shape[1], device=G.device, dtype=torch.bfloat16)
                    st["P"] = torch.eye(G.shape[1], device=G.device)
                st["R"].mul_(g["beta"]).add_((G.T @ G).to(torch.bfloat16), alpha=1 - g["beta"])
                if self.n % g["every"] == 0:
                    R = st["R"].float() + g["eps"] * torch.eye(G.shape[1], device=G.device)
                    Lc = torch.linalg.cholesky(R)
                    st["P"] = torch.cholesky_inverse(Lc)
                    st["P"] /= st["P"].norm()
                p.add_(G @ st["P"], alpha=-g["lr"])


sc = args.scenario
if sc == "cholesky":
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}")
    torch.manual_seed(1234)
    model = Encoder().cuda()
    model = nn.parallel.DistributedDataParallel(model, device_ids=[0])
    opt = ShampooLite(model.parameters(), lr=2e-3)
    log.info(f"optimizer: ShampooLite(lr=2e-3, beta=0.95, eps=1e-12, precondition_every=10, stats_dtype=bfloat16); "
             f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
    torch.manual_seed(rank)
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        a = torch.randint(0, 32000, (32, 128), device="cuda")
        b = (a + torch.randint(0, 3, a.shape, device="cuda")) % 32000
        za, zb = model(a), model(b)
        logits = za @ zb.T / 0.05
        loss = nn.functional.cross_entropy(logits, torch.arange(32, device="cuda"))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 5 == 0 and rank == 0:
            dt = time.perf_counter() - t0
            log.info(f"step {step:>4}/{args.steps} loss {loss.item():.4f} "
                     f"samples/s {5 * 32 * world / dt:,.0f}")
            t0 = time.perf_counter()
    dist.destroy_process_group()

elif sc == "nccl_net_ib":
    log.info(f"NCCL_NET={os.environ.get('NCCL_NET')} NCCL_IB_HCA={os.environ.get('NCCL_IB_HCA')} "
             f"NCCL_DEBUG={os.environ.get('NCCL_DEBUG')}")
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank), timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=nccl, rank={rank}, world_size={world}")
    model = nn.parallel.DistributedDataParallel(Encoder().cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    for step in range(1, 21):
        a = torch.randint(0, 32000, (32, 128), device="cuda")
        z = model(a)
        loss = (z @ z.T).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 5 == 0 and rank == 0:
            log.info(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()
