# HF/accelerate-style fine-tuning loops (tqdm bars, dict logs) for round 19, one per --scenario:
# fp16_unscale: the model is loaded with torch_dtype=float16 and trained with mixed_precision="fp16";
#   accelerate's clip_grad_norm_ unscales through the GradScaler, which refuses fp16 gradients;
# healthy_warnings: a short fp16 run with real warnings on the way (the GradScaler skips the first steps after
#   overflows, so the LR scheduler warns it stepped first; a tokenizer length warning), eval and save; it completes.
import argparse
import json
import os
import time
import warnings

import torch
import torch.nn as nn
import torch.utils.checkpoint
from tqdm import tqdm

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()


def info(src, msg):
    print(f"[INFO|{src}] {time.strftime('%Y-%m-%d %H:%M:%S')},{int(time.time() * 1000) % 1000:03d} >> {msg}",
          flush=True)


def header(n_examples, epochs, bs, accum, steps, trainable):
    info("trainer.py:2519", "***** Running training *****")
    info("trainer.py:2520", f"  Num examples = {n_examples:,}")
    info("trainer.py:2521", f"  Num Epochs = {epochs}")
    info("trainer.py:2522", f"  Instantaneous batch size per device = {bs}")
    info("trainer.py:2525", f"  Total train batch size (w. parallel, distributed & accumulation) = {bs * accum}")
    info("trainer.py:2526", f"  Gradient Accumulation steps = {accum}")
    info("trainer.py:2527", f"  Total optimization steps = {steps:,}")
    info("trainer.py:2528", f"  Number of trainable parameters = {trainable:,}")


class Block(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, h):
        return h + self.down(torch.nn.functional.gelu(self.up(self.norm(h))))


class LM(nn.Module):
    def __init__(self, vocab=32000, d=1024, layers=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, ckpt=False):
        h = self.embed(ids)
        for b in self.blocks:
            h = torch.utils.checkpoint.checkpoint(b, h, use_reentrant=False) if ckpt else b(h)
        return self.head(h)


if args.scenario == "fp16_unscale":
    from accelerate import Accelerator
    acc = Accelerator(mixed_precision="fp16", gradient_accumulation_steps=4)
    torch.manual_seed(0)
    info("modeling_utils.py:4512", "loading weights file /data/ckpt/tinyllama-1.1b-chat/model.safetensors")
    info("modeling_utils.py:1218", "Instantiating LlamaForCausalLM model under default dtype torch.float16.")
    model = LM().to(torch.float16)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model, opt = acc.prepare(model, opt)
    n_params = sum(p.numel() for p in model.parameters())
    header(48_212, 2, 8, 4, 3014, n_params)
    bar = tqdm(total=3014)
    for step in range(40):
        with acc.accumulate(model):
            ids = torch.randint(0, 32000, (8, 512), device=acc.device)
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits.float().view(-1, 32000), ids.view(-1))
            acc.backward(loss)
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
        if acc.sync_gradients:
            bar.update(1)

elif args.scenario == "healthy_warnings":
    torch.manual_seed(0)
    out_dir = "/tmp/r19_files/lm-sft-run"
    os.makedirs(out_dir, exist_ok=True)
    warnings.warn("Token indices sequence length is longer than the specified maximum sequence length for this "
                  "model (9216 > 8192). Running this sequence through the model will result in indexing errors",
                  UserWarning)
    info("trainer.py:748", "Using auto half precision backend")
    model = LM().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    steps = 30
    header(960, 1, 8, 4, steps, sum(p.numel() for p in model.parameters()))
    bar = tqdm(total=steps)
    for step in range(steps):
        for _ in range(4):
            ids = torch.randint(0, 32000, (8, 256), device="cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                logits = model(ids, ckpt=True)
                loss = nn.functional.cross_entropy(logits.float().view(-1, 32000), ids.view(-1)) / 4
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        sched.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 5 == 4:
            tqdm.write(str({"loss": round(loss.item() * 4, 4), "grad_norm": round(gn.item(), 4),
                            "learning_rate": sched.get_last_lr()[0], "epoch": round((step + 1) / steps, 2)}))
    bar.close()
    info("trainer.py:3993", "***** Running Evaluation *****")
    info("trainer.py:3995", "  Num examples = 64")
    with torch.no_grad():
        ids = torch.randint(0, 32000, (8, 256), device="cuda")
        ev = nn.functional.cross_entropy(model(ids).float().view(-1, 32000), ids.view(-1)).item()
    print(str({"eval_loss": round(ev, 4), "eval_runtime": 0.41, "eval_samples_per_second": 156.1, "epoch": 1.0}),
          flush=True)
    torch.save(model.state_dict(), f"{out_dir}/model.pt")
    info("trainer.py:3705", f"Saving model checkpoint to {out_dir}")
    print(str({"train_runtime": 21.7, "train_samples_per_second": 44.2, "train_steps_per_second": 1.38,
               "train_loss": round(ev, 4), "epoch": 1.0}), flush=True)
    info("trainer.py:2733", "Training completed. Do not forget to share your model on huggingface.co/models =)")
    os.remove(f"{out_dir}/model.pt")
