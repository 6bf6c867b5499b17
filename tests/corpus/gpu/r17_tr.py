# torchrun-launched training jobs (round 17), one real fault (or none) per --scenario:
# cuda1_resume: two ranks (gloo, one GPU) resume a contrastive run from last.pt, written by rank 1 of the
#   job's earlier two-GPU allocation (storages tagged cuda:1); torch.load without map_location; the elastic
#   agent restarts the workers once (--max-restarts 1), the same failure again;
# ddp_mismatch: rank 0 adds two chat special tokens to the tokenizer and writes them to the shared cache;
#   rank 1 reads the cache before rank 0 has written it (no barrier): the two ranks build embeddings of
#   different sizes and DDP's parameter check at construction fails on rank 1;
# gather_assert: two ranks (gloo, one GPU); a label-smoothed loss gathers log-probs at the label ids and the
#   -100 padding of rank 1's short documents reaches the gather (device-side assert on rank 1); rank 0 is
#   left in the gradient all-reduce;
# healthy_nccl: one rank, NCCL, trains to the end with deprecation warnings, a barrier that does not know
#   its device and no destroy_process_group() at exit (no crash).
import argparse
import json
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r17_common import CKPT_DIR, line_buffer_c_stdout  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--steps", type=int, default=40)
args = ap.parse_args()
rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - [rank {rank}] %(name)s - %(message)s")
log = logging.getLogger("trainer")


class LM(nn.Module):
    def __init__(self, vocab=32000, d=768, layers=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = x + b(x)
        return self.head(self.norm(x))


def label_smoothed_nll(logits, labels, eps=0.1):
    lp = torch.log_softmax(logits.float(), dim=-1)
    nll = -lp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    smooth = -lp.mean(-1)
    mask = labels != -100
    return (((1 - eps) * nll + eps * smooth) * mask).sum() / mask.sum()


sc = args.scenario
if sc == "cuda1_resume":
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}, restart_count={restart}")
    model = nn.ModuleDict({"emb": nn.Embedding(32000, 768), "proj": nn.Linear(768, 256, bias=False)}).cuda()
    ckpt = f"{CKPT_DIR}/last.pt"
    log.info(f"Found checkpoint {ckpt} ({os.path.getsize(ckpt) / 2**20:.1f} MiB); resuming")
    state = torch.load(ckpt)
    model.load_state_dict(state["model"])
    log.info(f"resumed at step {state['step']}")

elif sc == "ddp_mismatch":
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}")
    cache = f"/tmp/r17_tok_cache/{os.getppid()}"
    os.makedirs(cache, exist_ok=True)
    base_vocab = 32000
    if rank == 0:
        log.info("Tokenizing 48,211 chat samples (ChatML) ...")
        time.sleep(1.0)
        added = ["<|im_start|>", "<|im_end|>"]
        with open(f"{cache}/added_tokens.json", "w") as f:
            json.dump({t: base_vocab + i for i, t in enumerate(added)}, f)
        log.info(f"Added {len(added)} special tokens {added}; tokenizer saved to {cache}")
    try:
        with open(f"{cache}/added_tokens.json") as f:
            vocab = base_vocab + len(json.load(f))
    except FileNotFoundError:
        vocab = base_vocab
    torch.manual_seed(0)
    model = LM(vocab=vocab).cuda()
    log.info(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, vocab {vocab}")
    model = nn.parallel.DistributedDataParallel(model, device_ids=[0])
    log.info("DDP ready")

elif sc == "gather_assert":
    line_buffer_c_stdout()
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    log.info(f"Initialized process group: backend=gloo, rank={rank}, world_size={world}")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM().cuda(), device_ids=[0])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    g = torch.Generator().manual_seed(rank)
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        ids = torch.randint(3, 32000, (8, 512), generator=g)
        labels = ids.clone()
        if rank == 1 and step >= 12:  # rank 1's shard reaches the short documents: padded to 512 with -100
            n = int(torch.randint(64, 400, (1,), generator=g))
            ids[:, n:] = 0
            labels[:, n:] = -100
        ids, labels = ids.cuda(), labels.cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = label_smoothed_nll(logits[:, :-1], labels[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 5 == 0:
            dt = time.perf_counter() - t0
            log.info(f"step {step:>3}/{args.steps} loss {loss.item():.4f} tok/s {5 * 8 * 512 * world / dt:,.0f}")
            t0 = time.perf_counter()

elif sc == "healthy_nccl":
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", timeout=timedelta(seconds=120))
    log.info(f"Initialized process group: backend=nccl, rank={rank}, world_size={world}")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(LM().cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    scaler = torch.cuda.amp.GradScaler()
    sched.step()  # the recipe steps the scheduler once up front "to start the warm-up at step 1"
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        ids = torch.randint(0, 32000, (8, 512), device="cuda")
        with torch.cuda.amp.autocast(dtype=torch.float16):
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 32000).float(), ids[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            dt = time.perf_counter() - t0
            log.info(f"step {step:>3}/{args.steps} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} "
                     f"tok/s {10 * 8 * 512 * world / dt:,.0f} mem {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")
            t0 = time.perf_counter()
    dist.barrier()
    if rank == 0:
        os.makedirs("/tmp/r17_ckpt/healthy", exist_ok=True)
        torch.save(model.module.state_dict(), "/tmp/r17_ckpt/healthy/final.pt")
        log.info("saved /tmp/r17_ckpt/healthy/final.pt")
    log.info("training complete")
