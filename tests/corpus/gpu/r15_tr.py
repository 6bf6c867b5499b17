# torchrun-launched training jobs (round 15), one real fault (or none) per --scenario:
# nccl_same_gpu: the job script maps LOCAL_RANK to a GPU with `% device_count()` on a one-GPU node: two ranks
#   share cuda:0; the NCCL communicator is created lazily by DDP's first broadcast (both ranks fail at once);
# watchdog_misaligned: one rank, NCCL; a packed-sequence RoPE kernel (CuPy RawKernel) reads float4 from an
#   odd offset; the fault happens while the main thread is in the data loader: ProcessGroupNCCL's watchdog
#   finds the CUDA error and aborts the process (faulthandler on);
# inductor_cxx: torch.compile of the CPU-side packing function with CXX pointing at a toolset that is not
#   installed (both ranks);
# healthy_warnings: a healthy run with alarming warnings (DDP unused-parameter search, grad strides).
import argparse
import logging
import os
import sys
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
logging.basicConfig(level=logging.INFO, format=f"[%(asctime)s][rank{rank}][%(levelname)s] %(message)s")
log = logging.getLogger("train")


class LM(nn.Module):
    def __init__(self, vocab=32000, d=768, layers=4, transposed_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        if transposed_head:  # weight tied to a transposed view, as loaded from a checkpoint in [d, vocab] layout
            self.head_w = nn.Parameter(torch.randn(d, vocab).mul_(0.02).t())
        else:
            self.head_w = nn.Parameter(torch.randn(vocab, d) * 0.02)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = x + b(x)
        return self.norm(x) @ self.head_w.t()


def train(model, steps, bs=8, seq=512, log_every=10, pack=None):
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        ids = torch.randint(0, 32000, (bs, seq))
        if pack is not None:
            ids = pack(ids)
        ids = ids.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % log_every == 0:
            dt = time.perf_counter() - t0
            if rank == 0:
                log.info(f"step {step:>4}/{steps} loss {loss.item():.4f} lr 2.00e-04 "
                         f"tok/s {log_every * bs * seq * world / dt:,.0f} mem {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")
            t0 = time.perf_counter()


MISALIGNED_SRC = r"""
extern "C" __global__ void rope_packed_f4(const float* __restrict__ x, const float* __restrict__ cs,
                                          float* __restrict__ y, long long n4) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    float4 c = reinterpret_cast<const float4*>(cs)[i];
    reinterpret_cast<float4*>(y)[i] = make_float4(v.x * c.x - v.y * c.y, v.y * c.x + v.x * c.y,
                                                  v.z * c.z - v.w * c.w, v.w * c.z + v.z * c.w);
  }
}
"""

sc = args.scenario
if sc == "nccl_same_gpu":
    ngpu = torch.cuda.device_count()
    torch.cuda.set_device(local_rank % ngpu)
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=nccl, rank={rank}, world_size={world}, "
             f"device=cuda:{torch.cuda.current_device()} ({torch.cuda.get_device_name()})")
    model = LM().cuda()
    log.info(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params; wrapping in DDP")
    model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()])
    train(model, args.steps)

elif sc == "watchdog_misaligned":
    import cupy as cp
    import numpy as np
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    log.info(f"Initialized process group: backend=nccl, rank={rank}, world_size={world}")
    model = nn.parallel.DistributedDataParallel(LM().cuda(), device_ids=[local_rank])
    train(model, 30)
    rope = cp.RawKernel(MISALIGNED_SRC, "rope_packed_f4")
    rope.attributes  # compile it now (NVRTC), not inside the step
    log.info("switching to packed sequences (varlen) with the fused rope_packed_f4 kernel")
    buf = torch.randn(1 << 22, device="cuda")
    cs = torch.randn(1 << 22, device="cuda")
    out = torch.empty_like(buf)
    for step in range(31, 200):
        torch.cuda._sleep(int(1.98e9))  # the step's forward/backward still in flight on the GPU
        # packed batch: the second sequence starts one element into the buffer
        x = buf[1:]
        n4 = (x.numel() - 3) // 4
        rope(((n4 + 255) // 256,), (256,), (np.uint64(x.data_ptr()), np.uint64(cs.data_ptr()),
                                          np.uint64(out.data_ptr()), np.int64(n4)))
        grads = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(grads, async_op=True)
        t0 = time.time()
        while time.time() - t0 < 30:  # next batch from the (CPU) loader
            time.sleep(0.5)
        log.info(f"step {step} loss 9.1234")

elif sc == "inductor_cxx":
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}")

    @torch.compile(dynamic=False)
    def pack(ids):
        # causal doc masking ingredients for packed batches: position ids restart after every EOS
        eos = ids == 2
        seg = torch.cumsum(eos.to(torch.int32), dim=1)
        pos = torch.arange(ids.shape[1]).expand_as(ids) - torch.cummax(torch.where(eos, torch.arange(ids.shape[1]), 0), 1)[0]
        return torch.where(seg % 2 == 0, ids, (ids + pos) % 32000)

    model = nn.parallel.DistributedDataParallel(LM().cuda(), device_ids=[0])
    log.info("compiling the CPU-side packing function (torch.compile, dynamic=False)")
    train(model, args.steps, pack=pack)

elif sc == "healthy_warnings":
    torch.cuda.set_device(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}")
    model = nn.parallel.DistributedDataParallel(LM(transposed_head=True).cuda(), device_ids=[0],
                                                find_unused_parameters=True)
    train(model, args.steps)
    log.info("training finished; saving checkpoint to /tmp/r15_ckpt/step_60.pt")
    if rank == 0:
        os.makedirs("/tmp/r15_ckpt", exist_ok=True)
        torch.save(model.module.state_dict(), "/tmp/r15_ckpt/step_60.pt")
    dist.barrier()
    dist.destroy_process_group()
    log.info("done")
