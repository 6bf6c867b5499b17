# torchrun-launched training scenarios for round 19 (two ranks share the one GPU; gloo for the default group),
# one real fault per --scenario:
# nccl_watchdog: each rank reduces its gradient-norm statistics in its own one-rank NCCL group (timeout 10 s);
#   rank 1's stream is held by a long-running kernel (a stand-in for a stalled data-dependent kernel), so its
#   all-reduce never completes and the ProcessGroupNCCL watchdog aborts the process; rank 0 waits in gloo;
# int32_offsets: a byte-level LM whose 2.3 GB pre-tokenized corpus sits on the GPU; sample offsets are built in
#   int32 and overflow past 2**31 on rank 1's shard; the gather's bounds check fires on the device.
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}] {msg}", flush=True)


def model_small(vocab=256, d=512):
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(4)]
    return nn.ModuleDict({"embed": nn.Embedding(vocab, d), "blocks": nn.ModuleList(blocks),
                          "head": nn.Linear(d, vocab, bias=False)}).cuda()


def lm_forward(m, ids):
    h = m["embed"](ids)
    for b in m["blocks"]:
        h = h + b(h)
    return m["head"](h)


@record
def main():
    torch.cuda.set_device(0)
    sc = args.scenario
    dist.init_process_group("gloo")
    log(f"initialized gloo process group: world_size={world}, device=cuda:0 ({torch.cuda.get_device_name()})")

    if sc == "nccl_watchdog":
        groups = [dist.new_group([r], backend="nccl", timeout=datetime.timedelta(seconds=10)) for r in range(world)]
        stats_pg = groups[rank]
        log("created grad-stats NCCL group (timeout=10s)")
        m = model_small()
        opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
        for step in range(6):
            t0 = time.perf_counter()
            ids = torch.randint(0, 256, (8, 512), device="cuda")
            loss = nn.functional.cross_entropy(lm_forward(m, ids).float().view(-1, 256), ids.view(-1))
            loss.backward()
            gn = torch.stack([p.grad.norm() for p in m.parameters()]).norm().reshape(1)
            if rank == 1 and step == 3:
                torch.cuda._sleep(int(1.98e9 * 45))  # ~45 s of GPU time on this rank's stream
            dist.all_reduce(gn, group=stats_pg)
            opt.step()
            opt.zero_grad(set_to_none=True)
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            log(f"step {step} | loss {lv.item() / world:.4f} | grad_norm {gn.item():.3f} | "
                f"{8 * 512 / (time.perf_counter() - t0):.0f} tok/s")

    elif sc == "int32_offsets":
        n_bytes = 2_300_000_000
        corpus = torch.empty(n_bytes, dtype=torch.uint8, device="cuda")
        corpus.random_(0, 256)
        log(f"loaded corpus shard map: {n_bytes:,} byte tokens on GPU ({n_bytes / 2**30:.2f} GiB)")
        seq, bs = 2048, 8
        base = torch.tensor([0, 2_147_400_000][rank], dtype=torch.int32, device="cuda")
        ar = torch.arange(seq, dtype=torch.int32, device="cuda")
        m = model_small()
        opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
        for step in range(12):
            t0 = time.perf_counter()
            starts = base + step * bs * seq + torch.arange(bs, dtype=torch.int32, device="cuda") * seq
            idx = (starts[:, None] + ar[None, :]).reshape(-1)
            ids = torch.gather(corpus, 0, idx.long()).view(bs, seq).long()
            loss = nn.functional.cross_entropy(lm_forward(m, ids[:, :-1]).float().reshape(-1, 256),
                                               ids[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            log(f"step {step} | loss {lv.item() / world:.4f} | {bs * seq / (time.perf_counter() - t0):.0f} tok/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
