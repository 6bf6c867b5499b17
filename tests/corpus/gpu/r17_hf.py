# Fine-tuning / generation scripts in the HuggingFace-accelerate shape (round 17), one real fault (or none)
# per --scenario:
# fd_limit: a vision-language SFT whose collate keeps every image tile as its own tensor (no stacking);
#   4 DataLoader workers pass them through shared memory, one file descriptor each; a hard-example replay
#   buffer keeps the tiles of every batch above the running loss alive (and so their descriptors); the job
#   runs with `ulimit -n 1024` (r17_run.sh sets it): the main process runs out of descriptors;
# disk_full: Trainer-style loop saving checkpoint-N (model.safetensors + optimizer.pt) every 20 steps to a
#   scratch filesystem that holds one and a half checkpoints (r17_run.sh mounts a 320 MiB tmpfs);
# device_mismatch: an accelerate loop that switches to class-balanced loss weights at step 25; the weights
#   are built from numpy counts on the CPU;
# sigint: a healthy Trainer-style run; the operator's Ctrl-C (SIGINT from r17_run.sh) stops it (no crash);
# reduce_overhead: a speculative-decoding style generation loop whose draft step is compiled with
#   torch.compile(mode="reduce-overhead") (CUDA graphs); the contrastive penalty reads the previous step's
#   logits, which the next graph replay has overwritten.
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--out", default="/tmp/r17_scratch/sft-qwen2.5-0.5b")
args = ap.parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def tiny_lm(vocab=32000, d=512, layers=4):
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            return x + self.ff(self.ln(x))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for b in self.blocks:
                x = b(x)
            return self.head(self.norm(x))

    return LM()


def banner(n_examples, epochs, bs, steps, extra=""):
    print(f"***** Running training *****\n  Num examples = {n_examples:,}\n  Num Epochs = {epochs}\n"
          f"  Instantaneous batch size per device = {bs}\n  Gradient Accumulation steps = 1\n"
          f"  Total optimization steps = {steps:,}{extra}", flush=True)


# ---------------------------------------------------------------- fd_limit
class TiledVQA:
    """Each sample: 512 token ids + 6 image tiles (3x112x112) + the tile positions."""

    def __init__(self, n=20000):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        g = torch.Generator().manual_seed(i)
        n_tiles = 6
        return {"input_ids": torch.randint(0, 32000, (512,), generator=g),
                "tiles": [torch.rand(3, 112, 112, generator=g) for _ in range(n_tiles)],
                "tile_pos": torch.tensor([[t // 4, t % 4] for t in range(n_tiles)])}


def keep_tiles_collate(samples):
    import torch
    return {"input_ids": torch.stack([s["input_ids"] for s in samples]),
            "tiles": [t for s in samples for t in s["tiles"]],
            "tile_pos": [s["tile_pos"] for s in samples]}


def fd_limit():
    import resource

    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"[accelerate] num_processes=1, mixed_precision=bf16, device=cuda:0 ({torch.cuda.get_device_name()})",
          flush=True)
    torch.manual_seed(0)
    lm = tiny_lm().cuda()
    vision = nn.Sequential(nn.Conv2d(3, 64, 14, 14), nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                           nn.Linear(64, 512)).cuda()
    opt = torch.optim.AdamW(list(lm.parameters()) + list(vision.parameters()), lr=1e-4)
    ds = TiledVQA()
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=4, prefetch_factor=2,
                                     collate_fn=keep_tiles_collate, persistent_workers=True)
    banner(len(ds), 1, 16, len(dl), f"\n  dataloader: num_workers=4, prefetch_factor=2 (RLIMIT_NOFILE soft={soft})"
           "\n  hard-example replay: tiles of batches above the running loss, up to 4096 tiles")
    replay, run_loss = [], None
    bar = tqdm(total=len(dl), desc="Training")
    for step, batch in enumerate(dl, start=1):
        ids = batch["input_ids"].cuda(non_blocking=True)
        tiles = torch.stack(batch["tiles"]).cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            img = vision(tiles).view(ids.shape[0], -1, 512).mean(1, keepdim=True)
            x = torch.cat([img, lm.emb(ids[:, :-1])], dim=1)
            for b in lm.blocks:
                x = b(x)
            logits = lm.head(lm.norm(x))[:, 1:]
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        lv = loss.item()
        if run_loss is None or lv >= run_loss:  # keep the hard batch's tiles for replay (the CPU tensors)
            replay.extend(batch["tiles"])
            replay = replay[-4096:]
        run_loss = lv if run_loss is None else 0.9 * run_loss + 0.1 * lv
        bar.update(1)
        bar.set_postfix(loss=f"{lv:.4f}", replay=len(replay))
    bar.close()


# ---------------------------------------------------------------- disk_full
def disk_full():
    import json

    import torch
    import torch.nn as nn
    from safetensors.torch import save_file
    from tqdm.auto import tqdm
    torch.manual_seed(0)
    model = tiny_lm(vocab=32000, d=256, layers=2).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    steps, save_steps = 100, 20
    n_params = sum(p.numel() for p in model.parameters())
    print(f"output_dir={args.out} save_steps={save_steps} save_total_limit=None  "
          f"(trainable params: {n_params:,})", flush=True)
    banner(3200, 1, 32, steps)
    bar = tqdm(range(1, steps + 1), desc="Training")
    for step in bar:
        ids = torch.randint(0, 32000, (32, 256), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "grad_norm": 1.2071, "learning_rate": 2e-4,
                           "epoch": round(step / steps, 2)}))
        if step % save_steps == 0:
            out = f"{args.out}/checkpoint-{step}"
            bar.write(f"Saving model checkpoint to {out}")
            os.makedirs(out, exist_ok=True)
            with open(f"{out}/config.json", "w") as f:
                json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "vocab_size": 32000}, f)
            bar.write(f"Configuration saved in {out}/config.json")
            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, f"{out}/model.safetensors",
                      metadata={"format": "pt"})
            bar.write(f"Model weights saved in {out}/model.safetensors")
            torch.save(opt.state_dict(), f"{out}/optimizer.pt")
            torch.save({"step": step}, f"{out}/scheduler.pt")


# ---------------------------------------------------------------- device_mismatch
def device_mismatch():
    import numpy as np
    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm
    torch.manual_seed(0)
    n_cls = 12
    enc = nn.Sequential(nn.Embedding(30522, 384), nn.Flatten(1), nn.LazyLinear(768), nn.GELU(),
                        nn.Linear(768, n_cls)).cuda()
    enc(torch.zeros(1, 128, dtype=torch.long, device="cuda"))
    opt = torch.optim.AdamW(enc.parameters(), lr=5e-5)
    print("[accelerate] Distributed environment: NO, num_processes: 1, device: cuda, mixed precision: bf16",
          flush=True)
    banner(24000, 2, 64, 750, "\n  Loss: cross-entropy (class-balanced weights from step 25)")
    counts = np.zeros(n_cls)
    bar = tqdm(range(1, 751), desc="Epoch 1")
    rng = np.random.default_rng(0)
    weight = None
    for step in bar:
        y_np = rng.choice(n_cls, 64, p=np.array([30, 20, 12, 9, 7, 6, 5, 4, 3, 2, 1, 1]) / 100)
        counts += np.bincount(y_np, minlength=n_cls)
        x = torch.randint(0, 30522, (64, 128), device="cuda")
        y = torch.from_numpy(y_np).cuda()
        if step == 25:
            w = counts.sum() / (n_cls * np.maximum(counts, 1))
            weight = torch.tensor(w / w.mean(), dtype=torch.float32)
            bar.write(f"step 25: switching to class-balanced weights {np.round(w / w.mean(), 3).tolist()}")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = enc(x)
        loss = nn.functional.cross_entropy(logits.float(), y, weight=weight)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 5 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")


# ---------------------------------------------------------------- sigint
def sigint():
    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm
    torch.manual_seed(0)
    model = tiny_lm(d=512, layers=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    steps = 2000
    banner(64000, 1, 32, steps)
    bar = tqdm(range(1, steps + 1), desc="Training")
    t0 = time.perf_counter()
    for step in bar:
        ids = torch.randint(0, 32000, (32, 256), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 25 == 0:
            dt = time.perf_counter() - t0
            bar.write(str({"loss": round(loss.item(), 4), "grad_norm": 0.8813, "learning_rate": 2e-4,
                           "epoch": round(step / steps, 3), "step_time_s": round(dt / 25, 4)}))
            t0 = time.perf_counter()
        time.sleep(0.02)


# ---------------------------------------------------------------- reduce_overhead
def reduce_overhead():
    import torch
    torch.manual_seed(0)
    vocab, d = 32000, 512
    draft = tiny_lm(vocab=vocab, d=d, layers=2).cuda().eval().to(torch.bfloat16)
    print(f"draft model: {sum(p.numel() for p in draft.parameters()) / 1e6:.1f}M params (bf16); "
          f"torch.compile(mode='reduce-overhead')", flush=True)

    @torch.compile(mode="reduce-overhead", fullgraph=True)
    def draft_step(tok):
        return draft(tok)[:, -1].float()

    B, alpha = 8, 0.1
    with torch.no_grad():
        for prompt in range(3):
            tok = torch.randint(0, vocab, (B, 1), device="cuda")
            prev = None
            out = []
            t0 = time.perf_counter()
            for t in range(48):
                logits = draft_step(tok)
                scores = logits if prev is None else logits - alpha * prev.log_softmax(-1)  # contrastive penalty
                prev = logits
                tok = scores.argmax(-1, keepdim=True)
                out.append(tok)
            torch.cuda.synchronize()
            print(f"prompt {prompt}: {B} x 48 draft tokens in {time.perf_counter() - t0:.3f}s", flush=True)


if __name__ == "__main__":
    {"fd_limit": fd_limit, "disk_full": disk_full, "device_mismatch": device_mismatch, "sigint": sigint,
     "reduce_overhead": reduce_overhead}[args.scenario]()
