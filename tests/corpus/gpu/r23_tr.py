# Distributed training scenarios for round 23 (torchrun, a second node's launch, or two ranks started by a shell
# script); ranks share the one GPU, gloo for the collectives; one real fault (or none) per --scenario:
# store_timeout: node 1 of a two-node job started by hand (NODE_RANK=1) on a node whose environment never got
#   MASTER_ADDR: the script falls back to localhost, where no rank 0 listens; the TCPStore client gives up;
# shard_missing: two ranks started by a launch script (no torchrun); rank 1's data shard was never copied to the
#   node (FileNotFoundError) and rank 1 exits; rank 0 is already in its first gradient all-reduce: gloo sees the
#   peer's connection close;
# world_mismatch: torchrun starts 2 ranks while the job's config (copied from the 4-GPU recipe) still says
#   world_size 4, which the script passes to init_process_group: the ranks wait for 2 that never come;
# sigterm: a healthy torchrun job stopped by the operator's SIGTERM to torchrun (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r23_common import DATA  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
DEV = "cpu" if os.environ.get("SHAPES_DRY") == "1" else "cuda"
RECIPE = {"model": "llama-350m", "world_size": 4, "micro_batch_size": 8, "grad_accum": 4, "lr": 3e-4,
          "warmup_steps": 2000, "max_steps": 60000, "seq_len": 1024, "backend": "gloo", "timeout_s": 30}


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}]: {msg}", flush=True)


class LM(nn.Module):
    def __init__(self, vocab=32000, d=512, n=4):
        super().__init__()
        if DEV == "cpu":
            d, n = 64, 1
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
                                     for _ in range(n)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
        h = self.embed(ids)
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        return self.head(self.norm(h))


def train(model, opt, steps, data=None, bs=8, seq=256, every=10):
    t0 = time.perf_counter()
    if DEV == "cpu":
        bs, seq = 2, 16
    for step in range(1, steps + 1):
        if data is not None:
            i = (step * bs) % (data.shape[0] - bs)
            ids = torch.from_numpy(data[i:i + bs, :seq + 1].astype("int64")).to(DEV)
        else:
            ids = torch.randint(0, 32000, (bs, seq + 1), device=DEV)
        loss = F.cross_entropy(model(ids[:, :-1]).float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % every == 0:
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            if rank == 0:
                dt = (time.perf_counter() - t0) / step
                log(f"step {step:5d} | loss {lv.item() / world:.4f} | lr {3e-4 * min(1, step / 2000):.2e} | "
                    f"{dt * 1000:.0f} ms/step | {bs * seq * world / dt:,.0f} tok/s")


def open_shard(r):
    import numpy as np

    path = f"{DATA}/train-{r:05d}-of-00002.bin"
    arr = np.memmap(path, dtype=np.int32, mode="r").reshape(-1, 513)
    log(f"opened {path}: {arr.shape[0]:,} sequences")
    return arr


@record
def main():
    sc = args.scenario
    if DEV == "cuda":
        torch.cuda.set_device(0)
    torch.manual_seed(0)

    if sc == "store_timeout":
        node_rank, nnodes = int(os.environ.get("NODE_RANK", 0)), int(os.environ.get("NNODES", 1))
        addr = os.environ.get("MASTER_ADDR", "localhost")
        port = int(os.environ.get("MASTER_PORT", 29500))
        log(f"node {node_rank}/{nnodes}: init_process_group(backend=nccl, init_method=tcp://{addr}:{port}, "
            f"rank={node_rank}, world_size={nnodes}, timeout=25s)")
        dist.init_process_group("nccl" if DEV == "cuda" else "gloo", init_method=f"tcp://{addr}:{port}",
                                rank=node_rank, world_size=nnodes, timeout=datetime.timedelta(seconds=25))
        log("process group ready")
        return

    if sc == "world_mismatch":
        cfg = dict(RECIPE)
        if rank == 0:
            log(f"config: {json.dumps(cfg)}")
        dist.init_process_group(cfg["backend"], rank=rank, world_size=cfg["world_size"],
                                timeout=datetime.timedelta(seconds=cfg["timeout_s"]))
        log(f"initialized process group: world_size={dist.get_world_size()}")
        return

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    log(f"initialized process group: backend=gloo world_size={world} device={DEV}:0"
        + (f" ({torch.cuda.get_device_name()})" if DEV == "cuda" else ""))
    model = nn.parallel.DistributedDataParallel(LM().to(DEV))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    if sc == "shard_missing":
        if rank == 0:
            log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, DDP over {world} ranks")
        data = open_shard(rank)
        train(model, opt, 200, data=data)
    elif sc == "sigterm":
        if rank == 0:
            log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, DDP over {world} ranks")
        train(model, opt, 100000)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
