# torchrun-launched training scenarios for round 25 (two ranks on the one GPU, gloo for the collectives where a
# collective runs), one real fault (or none) per --scenario:
# cvd: the job script exports CUDA_VISIBLE_DEVICES for a node with four GPUs (r25_run.sh: CUDA_VISIBLE_DEVICES=2,3
#   on this one-GPU node): every rank fails when it selects its GPU; torchrun reports the failures;
# allreduce_oom: a hand-written data-parallel loop; each rank holds its replica's parameters and gradients on the
#   (shared) card, then flattens the gradients into one bucket for the all-reduce: with both ranks' replicas on
#   the card the bucket of one rank does not fit (CUDA out of memory, the other process named in the message);
# train: a healthy run stopped by the job's wall-clock limit (r25_run.sh: `timeout -s TERM`): torchrun gets
#   SIGTERM and stops its workers (no crash).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import datetime
import logging
import os
import sys
import time

rank = int(os.environ.get("RANK", 0))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s"))
log = logging.getLogger("trainer")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def cvd():
    import torch
    import torch.distributed as dist

    log.info(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')} local_rank={local_rank} world_size={world}")
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=60))
    log.info("process group initialized (nccl)")
    torch.cuda.set_device(local_rank)
    log.info(f"using {torch.cuda.get_device_name(local_rank)}")


def allreduce_oom():
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    torch.cuda.set_device(0)
    total = torch.cuda.mem_get_info()[1]
    n_params = int(total * 0.22) // 4  # fp32 master parameters: ~22% of the card per replica
    shapes = [(8192, 8192)] * (n_params // (8192 * 8192))
    log.info(f"model: {len(shapes)} blocks, {sum(a * b for a, b in shapes) / 1e9:.2f}B parameters (fp32), world size {world}")
    params = [torch.randn(s, device="cuda") * 0.01 for s in shapes]
    log.info(f"parameters on cuda:0, allocated {torch.cuda.memory_allocated() / 2**30:.2f} GiB")
    for step in range(1, 4):
        grads = [torch.randn_like(p) * 1e-3 for p in params]  # backward
        log.info(f"step {step}: backward done, allocated {torch.cuda.memory_allocated() / 2**30:.2f} GiB")
        dist.barrier()
        bucket = torch.cat([g.view(-1) for g in grads])  # one flat bucket for the all-reduce
        dist.all_reduce(bucket)
        bucket /= world
        off = 0
        for p, g in zip(params, grads):
            p.add_(bucket[off:off + g.numel()].view_as(p), alpha=-1e-2)
            off += g.numel()
        del grads, bucket
        log.info(f"step {step}: all-reduce + update done")
    dist.destroy_process_group()


def train():
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    log.info(f"starting training: 20000 steps, global batch {64 * world}, world size {world}")
    t0 = time.time()
    for step in range(1, 20001):
        x = torch.randn(64, 1024, device="cuda")
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 50 == 0:
            el = time.time() - t0
            if rank == 0:
                log.info(f"step {step}/20000 | loss {loss.item():.4f} | {step * 64 * world / el:.0f} samples/s | lr 3.00e-04")
            time.sleep(0.5)
        if step % 600 == 0 and rank == 0:
            os.makedirs("/tmp/r25_files/ckpt", exist_ok=True)
            torch.save(model.module.state_dict(), f"/tmp/r25_files/ckpt/step_{step}.pt")
            log.info(f"saved checkpoint /tmp/r25_files/ckpt/step_{step}.pt")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"cvd": cvd, "allreduce_oom": allreduce_oom, "train": train}[a.scenario]()
