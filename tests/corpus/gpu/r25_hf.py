# HF/accelerate-style single-GPU training loops for round 25 (tqdm bars, the trainer's own log lines), one real
# fault (or none) per --scenario:
# async_gather: a custom token loss picks each label's log-probability with gather(); the collator pads labels
#   with -100 but the loss does not mask them before the gather: the first padded batch (step 7) fires the
#   gather's bounds assert on the GPU; nothing syncs until the loss is logged at step 10 (CUDA_LAUNCH_BLOCKING
#   unset), so the traceback points at the logging line; the kernel's own assertion text reaches the log after;
# shampoo_bf16: a Shampoo-style optimizer configured with preconditioner_dtype=bfloat16 computes the
#   preconditioner's eigendecomposition (torch.linalg.eigh) in bf16 at its first update (step 20);
# fp16_scaler: fp16 mixed precision with GradScaler(init_scale=2**28): the first steps overflow and are skipped
#   while the scale drops, then training and evaluation finish (no crash);
# dl_timeout: DataLoader(num_workers=2, timeout=15) over shards on a network mount; one shard's read stalls in a
#   worker: the main process gives up after 15 s.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S"))
log = logging.getLogger("__main__")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


class TinyLM(nn.Module):
    def __init__(self, vocab=32000, d=1024, n=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(n)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for b in self.blocks:
            h = h + b(h)
        return self.head(self.norm(h))


def batch(step, bs=8, seq=512, vocab=32000, pad_from=None):
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(0, vocab, (bs, seq + 1), generator=g)
    labels = ids[:, 1:].clone()
    if pad_from is not None and step >= pad_from:  # the collator pads the short samples' labels with -100
        lens = torch.randint(seq // 2, seq, (bs,), generator=g)
        for i, n in enumerate(lens.tolist()):
            labels[i, n:] = -100
    return ids[:, :-1].cuda(non_blocking=True), labels.cuda(non_blocking=True)


def token_loss(logits, labels):
    logp = F.log_softmax(logits.float(), dim=-1)
    picked = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)  # log-prob of each label
    mask = (labels != -100).float()
    return -(picked * mask).sum() / mask.sum()


def header(args, total):
    log.info(f"Training/evaluation parameters {args}")
    log.info("***** Running training *****")
    log.info("  Num examples = 24,000")
    log.info("  Num Epochs = 1")
    log.info("  Instantaneous batch size per device = 8")
    log.info(f"  Total optimization steps = {total}")
    log.info(f"  Number of trainable parameters = {sum(p.numel() for p in MODEL.parameters()):,}")


def async_gather():
    opt = torch.optim.AdamW(MODEL.parameters(), lr=2e-4)
    header({"output_dir": "out/tinylm-sft", "logging_steps": 10, "bf16": True, "loss": "token_ce_custom"}, 3000)
    bar = tqdm(total=3000, desc="Training", ncols=100)
    for step in range(1, 3001):
        ids, labels = batch(step, pad_from=7)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = MODEL(ids)
        loss = token_loss(logits, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 10 == 0:
            bar.write(f"{{'loss': {loss.item():.4f}, 'grad_norm': 1.02, 'learning_rate': 0.0002, 'epoch': {step / 3000:.3f}}}")


class Shampoo(torch.optim.Optimizer):
    """Shampoo-style preconditioned SGD (one Kronecker factor per side of each matrix)."""

    def __init__(self, params, lr=1e-3, precondition_frequency=20, preconditioner_dtype=torch.float32, eps=1e-12):
        super().__init__(params, dict(lr=lr, precondition_frequency=precondition_frequency,
                                      preconditioner_dtype=preconditioner_dtype, eps=eps))

    @torch.no_grad()
    def step(self):
        for grp in self.param_groups:
            for p in grp["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    if g.dim() == 2:
                        st["L"] = torch.zeros(g.shape[0], g.shape[0], device=g.device, dtype=grp["preconditioner_dtype"])
                        st["R"] = torch.zeros(g.shape[1], g.shape[1], device=g.device, dtype=grp["preconditioner_dtype"])
                st["step"] += 1
                if g.dim() != 2:
                    p.add_(g, alpha=-grp["lr"])
                    continue
                gd = g.to(grp["preconditioner_dtype"])
                st["L"].add_(gd @ gd.T)
                st["R"].add_(gd.T @ gd)
                if st["step"] % grp["precondition_frequency"] == 0:
                    for side in ("L", "R"):
                        evals, evecs = torch.linalg.eigh(st[side])
                        st[side + "_inv4"] = evecs @ torch.diag(evals.clamp_min(grp["eps"]) ** -0.25) @ evecs.T
                if "L_inv4" in st:
                    g = (st["L_inv4"] @ gd @ st["R_inv4"]).to(p.dtype)
                p.add_(g, alpha=-grp["lr"])


def shampoo_bf16():
    global MODEL
    MODEL = MODEL.to(torch.bfloat16)
    opt = Shampoo([p for p in MODEL.parameters() if p.dim() == 2 and max(p.shape) <= 4096], lr=3e-4,
                  precondition_frequency=20, preconditioner_dtype=torch.bfloat16)
    log.info(f"optimizer: Shampoo(lr=3e-4, precondition_frequency=20, preconditioner_dtype={torch.bfloat16}, eps=1e-12)")
    header({"output_dir": "out/tinylm-shampoo", "logging_steps": 5, "bf16": True}, 2000)
    bar = tqdm(total=2000, desc="Training", ncols=100)
    for step in range(1, 2001):
        ids, labels = batch(step, bs=4, seq=256)
        loss = F.cross_entropy(MODEL(ids).float().view(-1, 32000), labels.view(-1))
        loss.backward()
        opt.step()
        MODEL.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 5 == 0:
            bar.write(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.0003, 'epoch': {step / 2000:.4f}}}")


def fp16_scaler():
    opt = torch.optim.AdamW(MODEL.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 28)
    total = 120
    header({"output_dir": "out/tinylm-fp16", "logging_steps": 20, "fp16": True}, total)
    bar = tqdm(total=total, desc="Training", ncols=100)
    t0 = time.time()
    for step in range(1, total + 1):
        ids, labels = batch(step, seq=256)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(MODEL(ids).float().view(-1, 32000), labels.view(-1))
        scaler.scale(loss).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        after = scaler.get_scale()
        if after < before:
            log.warning(f"step {step}: gradient overflow (inf/nan in fp16 grads), skipping optimizer step; loss scale {before:.0f} -> {after:.0f}")
        bar.update(1)
        if step % 20 == 0:
            bar.write(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.0001, 'loss_scale': {after:.0f}, 'epoch': {step / total:.2f}}}")
    bar.close()
    rt = time.time() - t0
    print(f"{{'train_runtime': {rt:.4f}, 'train_samples_per_second': {total * 8 / rt:.3f}, 'train_steps_per_second': {total / rt:.3f}, 'train_loss': {loss.item():.4f}, 'epoch': 1.0}}", flush=True)
    log.info("***** Running Evaluation *****")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        losses = [F.cross_entropy(MODEL(batch(10000 + i, seq=256)[0]).float().view(-1, 32000), batch(10000 + i, seq=256)[1].view(-1)).item() for i in tqdm(range(20), desc="Evaluating", ncols=100)]
    ev = sum(losses) / len(losses)
    print(f"{{'eval_loss': {ev:.4f}, 'eval_perplexity': {math.exp(ev):.2f}, 'epoch': 1.0}}", flush=True)
    log.info("Saving model checkpoint to out/tinylm-fp16/checkpoint-120")


class ShardDataset(torch.utils.data.Dataset):
    """token blocks read from shards on the cluster's NFS mount (/mnt/datasets/fineweb-edu/tok)"""

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        shard = i // 512
        if shard == 3:  # this shard's file sits on an NFS server that stopped answering: read() blocks
            time.sleep(600)
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, 32000, (513,), generator=g)


def dl_timeout():
    dl = torch.utils.data.DataLoader(ShardDataset(), batch_size=64, num_workers=2, timeout=15, pin_memory=True)
    opt = torch.optim.AdamW(MODEL.parameters(), lr=2e-4)
    header({"output_dir": "out/tinylm-pt", "logging_steps": 4, "bf16": True, "dataloader_num_workers": 2}, 1562)
    bar = tqdm(total=1562, desc="Training", ncols=100)
    for step, blk in enumerate(dl, 1):
        blk = blk.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(MODEL(blk[:, :-1]).float().view(-1, 32000), blk[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 4 == 0:
            bar.write(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.0002, 'epoch': {step / 1562:.4f}}}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    MODEL = TinyLM().cuda()
    log.info(f"Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: False, 16-bits training: {a.scenario != 'shampoo_bf16'}")
    {"async_gather": async_gather, "shampoo_bf16": shampoo_bf16, "fp16_scaler": fp16_scaler, "dl_timeout": dl_timeout}[a.scenario]()
