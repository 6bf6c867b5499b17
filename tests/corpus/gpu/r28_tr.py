# torchrun-launched scenario for round 28 (two ranks share the one GPU; gloo for the host-side collectives):
# device_mismatch: a hand-written rotary embedding keeps inv_freq as a plain tensor attribute (not a registered
#   buffer), so model.cuda() leaves it on the CPU: both ranks fail at the first forward with the cuda:0/cpu mismatch;
#   main is wrapped in @record, the elastic agent prints ChildFailedError with its root-cause table.
# ruff: noqa: E501  (log lines kept as they print)
import datetime
import logging
import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
log = logging.getLogger("train_lm")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def build():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Rotary(nn.Module):
        def __init__(self, dim, base=10000.0):
            super().__init__()
            self.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))

        def forward(self, x):
            t = torch.arange(x.shape[-2], device=x.device, dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            cos, sin = freqs.cos()[None, None], freqs.sin()[None, None]
            x1, x2 = x[..., ::2], x[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

    class Attn(nn.Module):
        def __init__(self, d=768, h=12):
            super().__init__()
            self.h = h
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.rope = Rotary(d // h)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
            q, k = self.rope(q), self.rope(k)
            return self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))

    class LM(nn.Module):
        def __init__(self, vocab=50304, d=768, n=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Attn(d) for _ in range(n))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for L in self.layers:
                x = x + L(x)
            return self.head(self.norm(x))

    return LM()


@record
def main():
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.cuda.set_device(0)
    log.info(f"initialized process group: backend=gloo world_size={world} local_rank={os.environ.get('LOCAL_RANK')} device=cuda:0")
    torch.manual_seed(1234)
    model = build().cuda()
    n = torch.tensor([sum(p.numel() for p in model.parameters())])
    dist.all_reduce(n)
    log.info(f"model: 6 layers, d_model=768, params={int(n) // world / 1e6:.1f}M (checked across {world} ranks)")
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    time.sleep(0.4 * rank)
    log.info("starting training: micro_batch=8 seq_len=1024 grad_accum=4 max_steps=5000")
    for step in range(1, 5001):
        ids = torch.randint(0, 50304, (8, 1025), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, 50304), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
