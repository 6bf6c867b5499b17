# torchrun-launched training scenarios for round 18 (two ranks share the one GPU; gloo where a collective
# really runs), one real fault per --scenario:
# ckpt_keys: each rank resumes its own model_rank{r}.pt; rank 1's file is from an older model revision
#   (strict load fails); rank 0 goes on to the barrier and loses its peer;
# cpu_nccl: a metrics all-reduce on a CPU tensor through the NCCL process group (both ranks);
# double_free: rank 0's native packing helper frees its buffer twice at step 4 (glibc aborts);
# mark_ready: DDP(find_unused_parameters=True) over a model whose shared block is applied twice under
#   reentrant activation checkpointing.
import argparse
import ctypes
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import DDP_CKPT  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}] {msg}", flush=True)


def model_new():
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
              for _ in range(4)]
    m = nn.ModuleDict({"embed": nn.Embedding(8192, 512), "blocks": nn.ModuleList(blocks),
                       "head": nn.Linear(512, 8192, bias=False)})
    m["final_norm"] = nn.LayerNorm(512)
    return m


def lm_forward(m, ids):
    h = m["embed"](ids)
    for b in m["blocks"]:
        h = h + b(h)
    return m["head"](m["final_norm"](h))


def train_steps(m, n, start=0, hook=None):
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
    for step in range(start, start + n):
        t0 = time.perf_counter()
        ids = torch.randint(0, 8192, (8, 256), device="cuda")
        logits = lm_forward(m, ids)
        loss = nn.functional.cross_entropy(logits.float().view(-1, 8192), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if hook:
            hook(step)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        log(f"step {step} | loss {loss.item():.4f} | lr 3.00e-04 | {8 * 256 / dt:.0f} tok/s")


@record
def main():
    torch.cuda.set_device(0)
    sc = args.scenario
    backend = "nccl" if sc == "cpu_nccl" else "gloo"
    dist.init_process_group(backend)
    log(f"initialized {backend} process group: world_size={world}, device=cuda:0 ({torch.cuda.get_device_name()})")

    if sc == "ckpt_keys":
        m = model_new().cuda()
        path = f"{DDP_CKPT}/model_rank{rank}.pt"
        log(f"resuming from {path}")
        sd = torch.load(path, map_location="cuda", weights_only=True)
        m.load_state_dict(sd["model"], strict=True)
        log(f"resumed at step {sd['step']}")
        dist.barrier()
        train_steps(m, 5, start=sd["step"])

    elif sc == "cpu_nccl":
        m = model_new().cuda()
        n_tok = 0
        for step in range(3):
            ids = torch.randint(0, 8192, (8, 256), device="cuda")
            loss = nn.functional.cross_entropy(lm_forward(m, ids).float().view(-1, 8192), ids.view(-1))
            loss.backward()
            n_tok += ids.numel()
            log(f"step {step} | loss {loss.item():.4f}")
        stats = torch.tensor([loss.item(), float(n_tok)])  # the epoch's metrics, built on the CPU
        dist.all_reduce(stats)
        log(f"epoch 0 | mean loss {stats[0] / world:.4f} | tokens {int(stats[1])}")

    elif sc == "double_free":
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        m = model_new().cuda()

        def pack_hook(step):
            # the native sequence packer: a scratch buffer per batch, released on every exit path
            buf = libc.malloc(512)
            ctypes.memset(buf, 0, 512)
            libc.free(buf)
            if rank == 0 and step == 4:  # this batch overflowed the bin: the error path frees again
                libc.free(buf)
            dist.barrier()

        train_steps(m, 8, hook=pack_hook)

    elif sc == "mark_ready":
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.checkpoint import checkpoint

        class Albert(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(8192, 512)
                self.shared = nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 2048), nn.GELU(),
                                            nn.Linear(2048, 512))
                self.head = nn.Linear(512, 8192, bias=False)
                self.pooler = nn.Linear(512, 512)  # used only by the classification head

            def forward(self, ids):
                h = self.embed(ids)
                for _ in range(2):
                    h = h + checkpoint(self.shared, h, use_reentrant=True)
                return self.head(h)

        m = DDP(Albert().cuda(), find_unused_parameters=True)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
        for step in range(5):
            ids = torch.randint(0, 8192, (8, 256), device="cuda")
            loss = nn.functional.cross_entropy(m(ids).float().view(-1, 8192), ids.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
            log(f"step {step} | loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
