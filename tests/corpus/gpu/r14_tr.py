# torchrun-launched training jobs (round 14), one real fault (or none) per --scenario:
# monitored_barrier: rank 0 tokenizes and waits in a gloo monitored_barrier; rank 1 spins on a lock file
#   left by a killed run and never arrives;
# stale_ext: the fused LayerNorm extension in site-packages was built against an older libtorch
#   (undefined symbol at import, on both ranks);
# sigterm: healthy training until the cluster scheduler's SIGTERM reaches the elastic agent;
# dynamic_guard: torch.compile with the sequence dim marked dynamic over a model that views the
#   sequence into a fixed number of blocks (the dim is specialized: constraint violation).
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r14_common import EXT_DIR, LOCK  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--steps", type=int, default=100)
args = ap.parse_args()
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - rank{rank} - %(levelname)s - %(message)s")
log = logging.getLogger("pretrain")


class BlockLM(nn.Module):
    """Blockwise-local attention LM: the sequence is viewed as n_blocks x block."""

    def __init__(self, vocab=16384, d=512, heads=8, max_len=1024, block=128, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.block, self.n_blocks, self.heads, self.hd = block, max_len // block, heads, d // heads
        self.layers = nn.ModuleList([nn.ModuleDict({"qkv": nn.Linear(d, 3 * d), "o": nn.Linear(d, d),
                                                    "ln": nn.LayerNorm(d),
                                                    "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))})
                                     for _ in range(layers)])
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        B, T = ids.shape
        x = self.emb(ids)
        for L in self.layers:
            h = L["ln"](x)
            q, k, v = L["qkv"](h).view(B, self.n_blocks, self.block, 3, self.heads, self.hd).permute(3, 0, 1, 4, 2, 5)
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + L["o"](a.permute(0, 1, 3, 2, 4).reshape(B, T, -1))
            x = x + L["mlp"](x)
        return self.head(x)


def setup():
    torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    log.info(f"Initialized process group: backend={dist.get_backend()}, rank={rank}, world_size={world}, "
             f"device={torch.cuda.get_device_name(0)}")


def train(model, steps, seq=1024, bs=8, log_every=10, mark_dynamic=False):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        ids = torch.randint(0, 16384, (bs, seq), device="cuda")
        if mark_dynamic:
            torch._dynamo.mark_dynamic(ids, 1)  # packed batches: sequence length varies
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % log_every == 0:
            l = loss.detach()
            dist.all_reduce(l)
            dt = time.perf_counter() - t0
            if rank == 0:
                log.info(f"step {step}/{steps} | loss {l.item() / world:.4f} | {log_every * bs * seq * world / dt:,.0f} tok/s "
                         f"| mem {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
            t0 = time.perf_counter()


sc = args.scenario
if sc == "monitored_barrier":
    setup()
    if rank == 0:
        log.info("Tokenizing c4/en shard 00017 (main process first) ...")
        ids = torch.randint(0, 16384, (4096, 4096))
        os.makedirs("/tmp/r14_cache", exist_ok=True)
        torch.save(ids, "/tmp/r14_cache/tokenized_c4_en_4096.pt")
        log.info("Wrote /tmp/r14_cache/tokenized_c4_en_4096.pt (16.78M tokens); waiting for the other ranks")
        dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)
    else:
        waited = 0.0
        while os.path.exists(LOCK):  # a FileLock another process holds
            if waited % 5 == 0:
                log.info(f"Lock {LOCK} not acquired, waiting 5 seconds ...")
            time.sleep(0.5)
            waited += 0.5
        dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)
    train(BlockLM().cuda(), args.steps)

elif sc == "stale_ext":
    setup()
    sys.path.insert(0, EXT_DIR)
    log.info("Building model: 2 layers, d_model=512, fused LayerNorm (apex-style extension)")
    import fused_layer_norm_cuda  # noqa: F401
    train(BlockLM().cuda(), args.steps)

elif sc == "sigterm":
    setup()
    model = nn.parallel.DistributedDataParallel(BlockLM().cuda(), device_ids=[0])
    train(model, 100000, log_every=10)

elif sc == "dynamic_guard":
    setup()
    model = BlockLM().cuda()
    log.info("torch.compile(model, dynamic=None) with the sequence dim marked dynamic (packed variable-length batches)")
    cmodel = nn.parallel.DistributedDataParallel(torch.compile(model), device_ids=[0])
    train(cmodel, args.steps, mark_dynamic=True)

log.info("done")
dist.destroy_process_group()
