# Fine-tuning / RL scripts in the HuggingFace-accelerate shape (round 16), one real fault (or none) per --scenario:
# loader_oomkill: an image fine-tune whose Dataset keeps every decoded image in a per-worker cache; the job
#   runs in a cgroup with a memory limit (r16_run.sh puts it in one): the kernel's OOM killer kills a DataLoader
#   worker;
# fp16_overflow: fp16 mixed precision with GradScaler(init_scale=2**32): the first steps overflow and are
#   skipped while the scale comes down; the embeddings are frozen, so reentrant gradient checkpointing warns
#   that no input requires grad; the run finishes (no crash);
# rl_pickle: a GRPO-style loop sends rollouts to two reward-model worker processes over torch.multiprocessing
#   queues; the per-token logprobs still require grad: the queues' feeder threads cannot pickle them (both at
#   once), the trainer's wait for rewards times out.
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- loader_oomkill
class DecodedImages:
    """Stands in for a JPEG folder: decoding gives a 3000x4000 RGB array, kept in a cache 'for the next epoch'."""

    def __init__(self, n=2000):
        self.n = n
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np
        import torch
        img = self.cache.get(i)
        if img is None:
            img = np.full((3000, 4000, 3), i % 251, dtype=np.uint8)  # decode
            if len(self.cache) < 400:
                self.cache[i] = img
        crop = torch.from_numpy(img[1388:1612:1, 1888:2112:1].copy()).permute(2, 0, 1).float().div_(255)
        return crop, i % 1000


def loader_oomkill():
    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU(), nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ds = DecodedImages()
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, pin_memory=True,
                                     persistent_workers=True, prefetch_factor=4)
    print(f"***** Running training *****\n  Num examples = {len(ds)}\n  Num Epochs = 3\n"
          f"  Instantaneous batch size per device = 16\n  Total optimization steps = {3 * len(dl)}\n"
          f"  dataloader: num_workers=2, prefetch_factor=4, pin_memory=True, persistent_workers=True", flush=True)
    bar = tqdm(total=3 * len(dl), desc="Training")
    for epoch in range(3):
        for x, y in dl:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            bar.update(1)
            if bar.n % 20 == 0:
                bar.set_postfix(loss=f"{loss.item():.4f}", epoch=epoch)
    bar.close()
    print("training done", flush=True)


# ---------------------------------------------------------------- fp16_overflow
def fp16_overflow():
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint
    from tqdm.auto import tqdm

    class Block(nn.Module):
        def __init__(self, d=1024):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            return x + self.ff(self.ln(x))

    class LM(nn.Module):
        def __init__(self, vocab=32000, d=1024, layers=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for b in self.blocks:  # gradient checkpointing (reentrant), as gradient_checkpointing_enable() does
                x = checkpoint(b, x, use_reentrant=True)
            return self.head(x)

    torch.manual_seed(0)
    model = LM().cuda()
    model.emb.weight.requires_grad_(False)
    print("freezing the input embeddings (32000 x 1024); trainable params: "
          f"{sum(p.numel() for p in model.parameters() if p.requires_grad) / 1e6:.1f}M", flush=True)
    steps = 150
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-4, total_steps=steps, pct_start=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 32)  # initial_scale_power 32, from the old DeepSpeed config
    print("***** Running training *****\n  Num examples = 4,800\n  Num Epochs = 1\n"
          "  Instantaneous batch size per device = 32\n  Gradient Accumulation steps = 1\n"
          f"  Total optimization steps = {steps}\n  Mixed precision = fp16 (GradScaler init_scale=4294967296)\n"
          "  Gradient checkpointing = True", flush=True)
    bar = tqdm(range(1, steps + 1), desc="Training")
    t0 = time.perf_counter()
    tot_loss = 0.0
    for step in bar:
        ids = torch.randint(0, 32000, (32, 256), device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits.float().view(-1, 32000), ids.view(-1))
        scale = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        opt.zero_grad(set_to_none=True)
        tot_loss += loss.item()
        if scaler.get_scale() < scale:
            bar.write(f"[step {step}] gradient overflow (inf/nan in fp16 grads), optimizer step skipped; "
                      f"loss scale {scale:.0f} -> {scaler.get_scale():.0f}")
        if step % 25 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "grad_norm": "n/a", "learning_rate": sched.get_last_lr()[0],
                           "epoch": round(step / steps, 2)}))
    rt = time.perf_counter() - t0
    print(str({"train_runtime": round(rt, 4), "train_samples_per_second": round(steps * 32 / rt, 3),
               "train_steps_per_second": round(steps / rt, 3), "train_loss": round(tot_loss / steps, 4),
               "epoch": 1.0}), flush=True)
    print("Saving model checkpoint to /tmp/r16_fp16_run/checkpoint-150", flush=True)


# ---------------------------------------------------------------- rl_pickle
def reward_worker(idx, in_q, out_q):
    import torch
    torch.cuda.set_device(0)
    torch.manual_seed(100 + idx)
    w = torch.randn(4096, 1, device="cuda") * 0.02
    emb = torch.randn(32000, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
    print(f"[reward-{idx}] reward model ready on cuda:0 (Skywork-Reward-Llama-3.1-8B, bf16)", flush=True)
    while True:
        item = in_q.get()
        if item is None:
            return
        ids = item["ids"].cuda()
        scores = (emb[ids].float().mean(1) @ w).squeeze(-1)
        out_q.put({"rollout": item["rollout"], "shard": idx, "scores": scores.cpu()})


def rl_pickle():
    import torch
    import torch.multiprocessing as tmp
    import torch.nn as nn
    ctx = tmp.get_context("spawn")
    in_qs = [ctx.Queue() for _ in range(2)]
    out_q = ctx.Queue()
    workers = [ctx.Process(target=reward_worker, args=(i, in_qs[i], out_q), daemon=True) for i in range(2)]
    for w in workers:
        w.start()
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Embedding(32000, 1024), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 32000)).cuda()
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)
    print("GRPO: policy=Qwen2.5-1.5B-Instruct(stand-in), group_size=8, rollouts/step=64, reward workers=2, "
          "kl_coef=0.04", flush=True)
    for step in range(1, 6):
        t0 = time.perf_counter()
        ids = torch.randint(0, 32000, (64, 256), device="cuda")
        logits = policy(ids)
        logprobs = torch.log_softmax(logits.float(), -1).gather(-1, ids[..., None]).squeeze(-1)
        batch = {"rollout": step, "ids": ids.cpu()}
        if step >= 3:  # from step 3 on the reward workers also get the per-token logprobs (length penalty)
            batch["logprobs"] = logprobs
        for i, q in enumerate(in_qs):
            q.put({k: (v[i * 32:(i + 1) * 32] if torch.is_tensor(v) else v) for k, v in batch.items()})
        scores = []
        for _ in range(2):
            scores.append(out_q.get(timeout=20)["scores"])
        r = torch.cat(scores).cuda()
        adv = (r - r.view(8, 8).mean(1).repeat_interleave(8)) / (r.view(8, 8).std(1).repeat_interleave(8) + 1e-4)
        loss = -(adv[:, None] * logprobs).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step}: reward mean {r.mean().item():+.4f} std {r.std().item():.4f} | loss {loss.item():+.5f} | "
              f"{64 * 256 / (time.perf_counter() - t0):,.0f} tokens/s", flush=True)
    for q in in_qs:
        q.put(None)


if __name__ == "__main__":
    {"loader_oomkill": loader_oomkill, "fp16_overflow": fp16_overflow, "rl_pickle": rl_pickle}[args.scenario]()
