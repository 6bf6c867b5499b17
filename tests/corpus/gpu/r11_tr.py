# torchrun-launched training jobs (round 11), one real fault each (--scenario):
# nccl_watchdog: a kernel that never ends on the compute stream ahead of an NCCL all_reduce; the
#   ProcessGroupNCCL watchdog times the collective out and aborts the process;
# ddp_unused: DDP (gloo) over a model with a branch unused in some steps, no find_unused_parameters;
# weights_only: resume from a checkpoint that pickled an argparse.Namespace (torch.load weights_only default);
# healthy: two ranks train to the end with deprecation/ordering warnings.
# --make-ckpt PATH writes the checkpoint the weights_only scenario resumes from.
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
ap.add_argument("--scenario", default="healthy")
ap.add_argument("--make-ckpt", default=None)
ap.add_argument("--resume", default="/tmp/r11_ckpt/step_1200.pt")
ap.add_argument("--steps", type=int, default=60)
args = ap.parse_args()


class Net(nn.Module):
    def __init__(self, d=1024, vocab=8192):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.body = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, vocab)
        self.aux_head = nn.Linear(d, 1)  # only used on "aux" batches

    def forward(self, ids, aux=False):
        h = self.body(self.emb(ids))
        out = self.head(h)
        if aux:
            out = out + self.aux_head(h)
        return out


if args.make_ckpt:
    m = Net()
    os.makedirs(os.path.dirname(args.make_ckpt), exist_ok=True)
    torch.save({"model": m.state_dict(), "step": 1200,
                "args": argparse.Namespace(lr=3e-4, batch_size=16, seq_len=512, warmup=200)}, args.make_ckpt)
    sys.exit(0)

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"[%(asctime)s][rank{rank}][%(levelname)s] %(message)s")
log = logging.getLogger("train")
torch.cuda.set_device(0)
if args.scenario == "nccl_watchdog":
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0), timeout=timedelta(seconds=10))
else:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
log.info(f"initialized process group: backend={dist.get_backend()} world_size={world}")
model = Net().cuda()
if args.scenario == "weights_only":
    log.info(f"resuming from {args.resume}")
    ckpt = torch.load(args.resume, map_location="cuda:0")
    model.load_state_dict(ckpt["model"])
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
if args.scenario == "healthy":
    try:
        scaler = torch.cuda.amp.GradScaler()
    except AttributeError:
        scaler = torch.amp.GradScaler("cuda")
    sched.step()  # warm-up schedule advanced once before the loop
ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0]) if args.scenario != "nccl_watchdog" else model
bs, seq = 16, 256
log.info(f"training: {args.steps} steps, batch {bs}x{seq} per rank, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
t0 = time.perf_counter()
for step in range(1, args.steps + 1):
    ids = torch.randint(0, 8192, (bs, seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = ddp(ids, aux=(args.scenario == "ddp_unused" and step % 2 == 0))
        loss = nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), ids.view(-1))
    if args.scenario == "healthy":
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
    opt.zero_grad(set_to_none=True)
    sched.step()
    avg = loss.detach().clone()
    if args.scenario == "nccl_watchdog" and step == 37:
        torch.cuda._sleep(int(2e11))  # a kernel that never returns on this rank's compute stream
    if world > 1 or args.scenario == "nccl_watchdog":
        dist.all_reduce(avg)
    if step % 20 == 0 and rank == 0:
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        log.info(f"step {step}/{args.steps} loss {avg.item() / world:.4f} lr {sched.get_last_lr()[0]:.2e} "
                 f"tokens/s {20 * bs * seq * world / dt:,.0f}")
        t0 = time.perf_counter()
torch.cuda.synchronize()
log.info("training finished")
if args.scenario == "healthy":
    dist.destroy_process_group()
