# torchrun-launched training scenarios for round 20 (two ranks share the one GPU; gloo for the collectives),
# one real fault per --scenario:
# dcp_resume: resume a pretraining run from its torch.distributed.checkpoint (DCP) folder; this run's tokenizer
#   gained five special tokens and the vocabulary was padded to a multiple of 128 (32128 rows) while the
#   checkpoint has 32000: DCP's load planner rejects the embedding on both ranks, the error is gathered and
#   raised on every rank;
# nan_gradnorm: a Megatron-style loop that averages the loss per sequence (sum of masked token losses over the
#   sequence's own token count); rank 1's data shard ends with a row that packing left as all padding (loss mask
#   all zero): 0/0, the loss and the gradients are NaN; the loop's own check of the local grad norm before the
#   gradient all-reduce stops rank 1, rank 0 is left in the all-reduce;
# store_port: a healthy script; torchrun is started with a --master-port that a stale job still holds.
import argparse
import datetime
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r20_common import DCP_CKPT, build_model  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}]: {msg}", flush=True)


def lm_forward(m, ids):
    h = m["embed"](ids)
    for b in m["blocks"]:
        h = h + b(h)
    return m["head"](m["final_norm"](h))


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = RMSNorm(d)
        self.fc1 = nn.Linear(d, 4 * d, bias=False)
        self.fc2 = nn.Linear(4 * d, d, bias=False)

    def forward(self, h):
        return h + self.fc2(nn.functional.gelu(self.fc1(self.norm(h))))


class GPT(nn.Module):
    def __init__(self, vocab=32000, d=768, layers=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def packed_batch(step, bs=8, seq=1024):
    """Documents packed into fixed-length rows; padding id 0 fills what is left (loss-masked)."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    ids = torch.randint(1, 32000, (bs, seq), generator=g)
    mask = torch.ones(bs, seq)
    cut = torch.randint(seq // 2, seq, (bs,), generator=g)
    for i in range(bs):
        ids[i, cut[i]:] = 0
        mask[i, cut[i]:] = 0
    if rank == 1 and step == 23:  # the shard's last packed row: nothing left to pack into it
        ids[5] = 0
        mask[5] = 0
    return ids.cuda(), mask.cuda()


@record
def main():
    torch.cuda.set_device(0)
    sc = args.scenario
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    log(f"initialized process group: backend=gloo world_size={world} device=cuda:0 "
        f"({torch.cuda.get_device_name()})")

    if sc == "dcp_resume":
        import torch.distributed.checkpoint as dcp
        vocab = math.ceil((32000 + 5) / 128) * 128
        log(f"tokenizer: 32005 tokens (added 5 special tokens), padded vocab size {vocab} (divisible by 128)")
        torch.manual_seed(0)
        m = build_model(vocab=vocab).cuda()
        opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
        log(f"model: {sum(p.numel() for p in m.parameters()) / 1e6:.1f}M parameters")
        log(f"resuming from {DCP_CKPT}")
        state = {"model": m.state_dict(), "step": 0}
        t0 = time.perf_counter()
        dcp.load(state, checkpoint_id=DCP_CKPT)
        m.load_state_dict(state["model"])
        log(f"loaded checkpoint at step {state['step']} in {time.perf_counter() - t0:.2f} s")
        for step in range(state["step"], state["step"] + 20):
            ids = torch.randint(0, vocab, (8, 512), device="cuda")
            loss = nn.functional.cross_entropy(lm_forward(m, ids).float().view(-1, vocab), ids.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            log(f"step {step} | loss {loss.item():.4f}")

    elif sc == "nan_gradnorm":
        torch.manual_seed(0)
        m = GPT().cuda()
        opt = torch.optim.AdamW(m.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
        n_params = sum(p.numel() for p in m.parameters())
        if rank == 0:
            log(f"> number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n_params}")
            log("> training with global batch size 16, micro batch size 8, data-parallel size 2")
        t_last = time.perf_counter()
        for it in range(1, 60):
            ids, mask = packed_batch(it)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = m(ids[:, :-1])
            tok_loss = nn.functional.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1),
                                                   reduction="none")
            m_ = mask[:, 1:]
            per_seq = (tok_loss.view(m_.shape) * m_).sum(1) / m_.sum(1)  # each document weighs the same
            loss = per_seq.mean()
            loss.backward()
            local_norm = torch.norm(torch.stack([p.grad.detach().norm() for p in m.parameters()]))
            if torch.isnan(local_norm).item():
                raise RuntimeError(f"Rank {rank}, device {torch.cuda.current_device()}, iteration {it}: Unexpected "
                                   f"result nan (message='found NaN in local grad norm for bucket #0 in backward "
                                   f"pass before data-parallel communication collective')")
            for p in m.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
            gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            if rank == 0 and it % 5 == 0:
                el = (time.perf_counter() - t_last) * 1000 / 5
                t_last = time.perf_counter()
                print(f" [{time.strftime('%Y-%m-%d %H:%M:%S')}] iteration {it:8d}/   50000 | consumed samples: "
                      f"{it * 16:12d} | elapsed time per iteration (ms): {el:.1f} | learning rate: "
                      f"{6e-4 * min(1.0, it / 2000):.6E} | global batch size:    16 | lm loss: "
                      f"{lv.item() / world:.6E} | loss scale: 1.0 | grad norm: {gn.item():.3f} | "
                      f"number of skipped iterations:   0 | number of nan iterations:   0 |", flush=True)

    elif sc == "store_port":
        m = build_model(vocab=32000).cuda()
        for step in range(5):
            ids = torch.randint(0, 32000, (8, 256), device="cuda")
            loss = nn.functional.cross_entropy(lm_forward(m, ids).float().view(-1, 32000), ids.view(-1))
            loss.backward()
            log(f"step {step} | loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
