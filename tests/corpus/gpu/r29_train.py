# Round 29, training/eval-loop scenarios (one real fault, or none, per --scenario):
# lt_slogdet_half: a Lightning Glow-style flow trained with precision="16-true": the invertible 1x1 convolution's
#   log-determinant (torch.linalg.slogdet) refuses float16 on the first training step;
# inductor_nocc: an accelerate training loop with torch.compile, started through `accelerate launch` from a job script
#   that exports CC=/usr/bin/gcc-11 (left from an older image; that compiler is not installed): Triton cannot build its
#   launcher, Inductor fails at the first compiled step; accelerate's CalledProcessError follows;
# cudagraph_overwrite: a generation eval loop with its decode step compiled in mode="reduce-overhead" keeps the previous
#   step's logits to compute a repetition score: that tensor was overwritten by the next CUDA-graph replay;
# rl_temp_zero: a GRPO-style job: the rollout worker (a child process) samples with logits / temperature; the eval
#   rollout pass uses temperature 0.0 from the config: inf/nan probabilities, torch.multinomial refuses them; the
#   supervisor reports the worker's exit first and then prints its captured stderr;
# det_upsample: a segmentation fine-tune (timm backbone, bilinear upsampling head) with
#   torch.use_deterministic_algorithms(True): the CUDA backward of bilinear interpolation has no deterministic kernel;
# healthy_warnings: an fp16 fine-tune with deprecated AMP APIs, too many DataLoader workers, activation checkpointing
#   without use_reentrant and GradScaler's skipped first steps (scheduler-order warning): it finishes (no crash);
# pbs_train: a training loop under a PBS job script (r29_run.sh) that hits its walltime: SIGTERM, checkpoint saved,
#   exit 0 (no crash).
# R29_DEV=cpu runs what it can on the CPU (a local check of the shapes).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import logging
import os
import signal
import subprocess
import sys
import time

ROOT = os.environ.get("R29_ROOT", "/tmp/r29_files")
DEV = os.environ.get("R29_DEV", "cuda")


def ts():
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- lt_slogdet_half
def lt_slogdet_half():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    try:
        import lightning as L
    except ImportError:
        import pytorch_lightning as L

    class ActNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.loc = nn.Parameter(torch.zeros(1, c, 1, 1))
            self.logs = nn.Parameter(torch.zeros(1, c, 1, 1))

        def forward(self, x):
            return (x + self.loc) * torch.exp(self.logs), self.logs.sum() * x.shape[2] * x.shape[3]

    class InvConv2d(nn.Module):
        def __init__(self, c):
            super().__init__()
            w = torch.linalg.qr(torch.randn(c, c))[0]
            self.weight = nn.Parameter(w)

        def forward(self, x):
            logdet = x.shape[2] * x.shape[3] * torch.linalg.slogdet(self.weight)[1]
            return F.conv2d(x, self.weight.view(*self.weight.shape, 1, 1)), logdet

    class AffineCoupling(nn.Module):
        def __init__(self, c, hidden=256):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(c // 2, hidden, 3, padding=1), nn.ReLU(), nn.Conv2d(hidden, hidden, 1), nn.ReLU(),
                                     nn.Conv2d(hidden, c, 3, padding=1))

        def forward(self, x):
            a, b = x.chunk(2, 1)
            log_s, t = self.net(a).chunk(2, 1)
            s = torch.sigmoid(log_s + 2)
            return torch.cat([a, (b + t) * s], 1), torch.log(s).flatten(1).sum(1)

    class GlowLit(L.LightningModule):
        def __init__(self, c=12, steps=8):
            super().__init__()
            self.flows = nn.ModuleList()
            for _ in range(steps):
                self.flows.extend([ActNorm(c), InvConv2d(c), AffineCoupling(c)])

        def forward(self, x):
            x = F.pixel_unshuffle(x, 2)
            logdet = 0
            for f in self.flows:
                x, ld = f(x)
                logdet = logdet + ld
            prior = -0.5 * (x ** 2 + torch.log(torch.tensor(2 * torch.pi, device=x.device))).flatten(1).sum(1)
            return -(prior + logdet).mean() / (x[0].numel() * torch.log(torch.tensor(2.0)))

        def training_step(self, batch, idx):
            (x,) = batch
            loss = self(x)
            self.log("train_bpd", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.rand(4096, 3, 32, 32) - 0.5)
    dl = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=2)
    L.seed_everything(42)
    trainer = L.Trainer(accelerator="gpu" if DEV == "cuda" else "cpu", devices=1, precision="16-true", max_epochs=20,
                        log_every_n_steps=10, enable_checkpointing=False, logger=False)
    trainer.fit(GlowLit(), dl)


# ---------------------------------------------------------------- accelerate loops (inductor_nocc, healthy_warnings)
def small_lm(vocab=16384, d=768, n=6):
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, d // 64, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False, is_causal=False)[0]
            return x + self.mlp(self.ln2(x))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList(Block() for _ in range(n))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids, ckpt=False):
            import torch.utils.checkpoint as cp

            x = self.emb(ids)
            for b in self.blocks:
                x = cp.checkpoint(b, x) if ckpt else b(x)
            return self.head(self.ln(x))

    return LM()


def inductor_nocc():
    import torch
    from accelerate import Accelerator
    from accelerate.logging import get_logger
    from tqdm.auto import tqdm

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    logger = get_logger("run_clm_no_trainer")
    acc = Accelerator(gradient_accumulation_steps=2)
    logger.info(acc.state, main_process_only=False)
    torch.manual_seed(0)
    model = small_lm()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    ds = torch.utils.data.TensorDataset(torch.randint(0, 16384, (2048, 513)))
    dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    model = torch.compile(model)
    logger.info("***** Running training *****")
    logger.info(f"  Num examples = {len(ds)}")
    logger.info("  Num Epochs = 3")
    logger.info("  Instantaneous batch size per device = 8")
    logger.info("  Gradient Accumulation steps = 2")
    logger.info(f"  Total optimization steps = {3 * len(dl) // 2}")
    bar = tqdm(range(3 * len(dl) // 2), disable=not acc.is_local_main_process)
    for epoch in range(3):
        model.train()
        for (ids,) in dl:
            with acc.accumulate(model):
                logits = model(ids[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
                acc.backward(loss)
                opt.step()
                opt.zero_grad()
            if acc.sync_gradients:
                bar.update(1)


def healthy_warnings():
    import warnings

    import torch

    warnings.simplefilter("default")
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    log = logging.getLogger("sft")
    from tqdm import tqdm

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    model = small_lm(vocab=8192, d=512, n=4).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    total = 120
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-4, total_steps=total, pct_start=0.1)
    scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 24)
    ds = torch.utils.data.TensorDataset(torch.randint(0, 8192, (total * 16, 257)))
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=20, persistent_workers=True)
    log.info(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, fp16 autocast, activation checkpointing on")
    step = 0
    bar = tqdm(total=total, desc="train", dynamic_ncols=False, ncols=100)
    for (ids,) in dl:
        ids = ids.to(DEV, non_blocking=True)
        with torch.cuda.amp.autocast(dtype=torch.float16):
            logits = model(ids[:, :-1], ckpt=True)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        sched.step()
        step += 1
        bar.update(1)
        if step % 20 == 0:
            bar.write(f"{ts()} - INFO - sft - step {step}: loss={loss.item():.4f} grad_norm={gn.item():.3f} scale={scaler.get_scale():.0f} lr={sched.get_last_lr()[0]:.2e}")
        if step >= total:
            break
    bar.close()
    os.makedirs(f"{ROOT}/sft-out", exist_ok=True)
    torch.save(model.state_dict(), f"{ROOT}/sft-out/model.pt")
    log.info(f"training finished: {step} steps, final loss {loss.item():.4f}; saved {ROOT}/sft-out/model.pt")


# ---------------------------------------------------------------- cudagraph_overwrite
def cudagraph_overwrite():
    import torch
    from tqdm import tqdm

    logging.basicConfig(format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    log = logging.getLogger("eval_gen")
    torch.manual_seed(0)
    model = small_lm(vocab=32000, d=1024, n=4).to(DEV, torch.bfloat16).eval()

    @torch.compile(mode="reduce-overhead", dynamic=False)
    def decode_step(ids):
        return model(ids)[:, -1, :].float()

    prompts = torch.randint(0, 32000, (48, 8, 64))
    log.info(f"eval set: {prompts.shape[0]} batches x {prompts.shape[1]} prompts, max_new_tokens=32, decode_step compiled (mode=reduce-overhead)")
    rep_scores = []
    with torch.no_grad():
        for b in tqdm(range(prompts.shape[0]), desc="generate"):
            window = prompts[b].to(DEV)
            prev = None
            score = 0.0
            for t in range(32):
                logits = decode_step(window)
                if prev is not None:
                    score += torch.nn.functional.cosine_similarity(logits, prev, dim=-1).mean().item()
                prev = logits
                nxt = logits.argmax(-1, keepdim=True)
                window = torch.cat([window[:, 1:], nxt], 1)
            rep_scores.append(score / 31)
    log.info(f"mean repetition score {sum(rep_scores) / len(rep_scores):.4f}")


# ---------------------------------------------------------------- rl_temp_zero
def rollout_worker():
    import torch
    from tqdm import tqdm

    cfg = {"rollout": {"n": 8, "max_new_tokens": 48, "temperature": 1.0, "top_k": 0},
           "eval_rollout": {"n": 1, "max_new_tokens": 48, "temperature": 0.0, "top_k": 0}}
    torch.manual_seed(3)
    policy = small_lm(vocab=32000, d=768, n=4).to(DEV, torch.bfloat16).eval()
    prompts = torch.randint(0, 32000, (256, 96))

    def sample(logits, temperature):
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        return torch.multinomial(probs, 1)

    @torch.no_grad()
    def generate(batch, c):
        ids = batch.repeat_interleave(c["n"], 0).to(DEV)
        for _ in range(c["max_new_tokens"]):
            logits = policy(ids[:, -128:])[:, -1]
            ids = torch.cat([ids, sample(logits, c["temperature"])], 1)
        return ids

    for it in range(1, 1000):
        for i in tqdm(range(0, 64, 16), desc=f"[iter {it}] rollout", file=sys.stderr):
            generate(prompts[i:i + 16], cfg["rollout"])
        print(f"[rollout-worker] iter {it}: 512 samples, mean reward {0.21 + 0.013 * it:.3f}, mean len 48.0", flush=True)
        if it % 3 == 0:
            print(f"[rollout-worker] iter {it}: eval rollouts on 128 held-out prompts ({cfg['eval_rollout']})", flush=True)
            for i in tqdm(range(128, 256, 32), desc=f"[iter {it}] eval", file=sys.stderr):
                generate(prompts[i:i + 32], cfg["eval_rollout"])


def rl_temp_zero():
    print(f"{ts()} [grpo] launching rollout worker 0 on cuda:0", flush=True)
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--scenario", "rl_rollout_worker"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    import threading

    err = []
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()
    for line in p.stdout:
        print(f"{ts()} [grpo] worker0: {line.rstrip()}", flush=True)
        if "mean reward" in line:
            print(f"{ts()} [grpo] policy update: kl=0.0{len(line) % 7 + 1}2 clip_frac=0.0{len(line) % 5 + 3} grad_norm=0.8{len(line) % 9}", flush=True)
    rc = p.wait()
    time.sleep(0.5)
    print(f"{ts()} [grpo] ERROR rollout worker 0 exited with code {rc}; stopping job. Worker stderr (last 60 lines):", flush=True)
    for line in "".join(err).replace("\r", "\n").splitlines()[-60:]:
        if line.strip():
            print(f"    {line}", flush=True)
    sys.exit(1)


# ---------------------------------------------------------------- det_upsample
def det_upsample():
    import random

    import numpy as np
    import timm
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    logging.basicConfig(format="%(asctime)s - %(name)s - %(levelname)s - %(message)s", level=logging.INFO)
    log = logging.getLogger("segtrain")
    seed = 1234
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    log.info(f"reproducibility: seed={seed}, deterministic algorithms on, cudnn.benchmark off")

    class SegNet(nn.Module):
        def __init__(self, n_cls=19):
            super().__init__()
            self.backbone = timm.create_model("resnet34", pretrained=False, features_only=True, out_indices=(1, 2, 3, 4))
            chs = self.backbone.feature_info.channels()
            self.lat = nn.ModuleList(nn.Conv2d(c, 128, 1) for c in chs)
            self.cls = nn.Conv2d(128, n_cls, 1)

        def forward(self, x):
            feats = self.backbone(x)
            y = self.lat[-1](feats[-1])
            for f, lat in zip(reversed(feats[:-1]), reversed(self.lat[:-1])):
                y = F.interpolate(y, size=f.shape[-2:], mode="bilinear", align_corners=False) + lat(f)
            return F.interpolate(self.cls(y), size=x.shape[-2:], mode="bilinear", align_corners=False)

    model = SegNet().to(DEV)
    log.info(f"model: SegNet(resnet34 FPN) {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    log.info("dataset: cityscapes-fine train 2975 images, crop 512x1024, batch 4, loss: OHEM cross-entropy (top 1/8 pixels)")
    for it in range(1, 200):
        x = torch.randn(4, 3, 512, 1024, device=DEV)
        y = torch.randint(0, 19, (4, 512, 1024), device=DEV)
        pix = F.cross_entropy(model(x), y, ignore_index=255, reduction="none").flatten()
        loss = pix.topk(pix.numel() // 8).values.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            log.info(f"iter {it}/40000 loss {loss.item():.4f}")


# ---------------------------------------------------------------- pbs_train
def pbs_train():
    import torch

    job = os.environ.get("PBS_JOBID", "8812345.pbs01")
    ckdir = f"{ROOT}/runs/{job.split('.')[0]}"
    state = {"stop": False}
    signal.signal(signal.SIGTERM, lambda s, f: state.update(stop=True))
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(1536, 1536), torch.nn.SiLU()) for _ in range(8)]).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    print(f"{ts()} | rank 0 | resumed from {ckdir}/epoch_41.pt (epoch 41, global step 96180)", flush=True)
    step, t0 = 96180, time.time()
    while True:
        x = torch.randn(512, 1536, device=DEV)
        loss = (model(x) - x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        step += 1
        if step % 100 == 0:
            print(f"{ts()} | rank 0 | epoch 42 | step {step} | loss {loss.item():.5f} | {100 / (time.time() - t0):.1f} it/s", flush=True)
            t0 = time.time()
        if state["stop"]:
            print(f"{ts()} | rank 0 | SIGTERM received at step {step}: writing emergency checkpoint", flush=True)
            os.makedirs(ckdir, exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, f"{ckdir}/emergency_{step}.pt")
            print(f"{ts()} | rank 0 | checkpoint written to {ckdir}/emergency_{step}.pt; exiting", flush=True)
            sys.exit(0)


SCEN = {"lt_slogdet_half": lt_slogdet_half, "inductor_nocc": inductor_nocc, "cudagraph_overwrite": cudagraph_overwrite,
        "rl_temp_zero": rl_temp_zero, "rl_rollout_worker": rollout_worker, "det_upsample": det_upsample,
        "healthy_warnings": healthy_warnings, "pbs_train": pbs_train}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(SCEN), required=True)
    SCEN[ap.parse_args().scenario]()
