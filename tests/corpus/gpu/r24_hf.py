# HF/accelerate-style training and a diffusers-style pipeline for round 24 (tqdm bars, the libraries' own kinds of
# log lines), one real fault per --scenario:
# gc_no_grad: LoRA fine-tuning of a frozen base with activation checkpointing (use_reentrant=True); the embeddings
#   are frozen, so no input of a checkpointed block requires grad: torch warns, the loss has no grad_fn and
#   backward() refuses it at the first step;
# worker_stack_smash: DataLoader(num_workers=2) whose collate packs documents through a C helper (libtokpack.so)
#   with a 4096-token stack buffer; the corpus filter let a longer document through: glibc detects the smashed
#   stack in the worker (SIGABRT) and the main process reports the dead worker;
# vae_conv3d: a video pipeline: 30 denoising steps of a small 3-D conv net on latents, then the VAE decoder
#   upsamples the latents to 720x1280 and runs a Conv3d on a tensor of more than 2**31 elements; on the H100 run of
#   2026-12-06 (PyTorch 2.11) the upsample and the Conv3d both handled it: the decode succeeded (log not kept);
# eval_ulimit: an evaluation job whose site profile sets a virtual-memory limit (r24_run.sh: ulimit -v 16 GiB):
#   moving the model to the GPU initializes CUDA, which cannot reserve its address space under that limit.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_common import DRY, TOKPACK  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
DEV = "cpu" if DRY else "cuda"
DT = torch.float32 if DRY else torch.bfloat16


def info(name, msg):
    print(f"{time.strftime('%m/%d/%Y %H:%M:%S')} - INFO - {name} - {msg}", flush=True)


# ---------------------------------------------------------------- gc_no_grad
class LoRALinear(nn.Module):
    def __init__(self, base, r=16, alpha=32):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(r, base.in_features, device=base.weight.device) * 0.01)
        self.b = nn.Parameter(torch.zeros(base.out_features, r, device=base.weight.device))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x.to(self.a.dtype) @ self.a.T @ self.b.T).to(x.dtype) * self.scale


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.up, self.down = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        y = self.n1(x)
        q, k, v = (m(y).view(b, t, self.h, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        x = x + self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.n2(x))))


class CausalLM(nn.Module):
    def __init__(self, vocab=32000, d=1024, n=8, h=16):
        super().__init__()
        if DRY:
            d, n, h = 64, 2, 4
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Block(d, h) for _ in range(n)])
        self.norm = nn.RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.gradient_checkpointing = False

    def forward(self, ids):
        h = self.embed(ids)
        for blk in self.layers:
            if self.gradient_checkpointing and self.training:
                h = torch.utils.checkpoint.checkpoint(blk, h, use_reentrant=True)
            else:
                h = blk(h)
        return self.lm_head(self.norm(h))


def gc_no_grad():
    info("__main__", "Loading base model from /models/tinyllama-1.1b-chat (torch_dtype=bfloat16)")
    torch.manual_seed(0)
    model = CausalLM().to(DEV, DT)
    for p in model.parameters():
        p.requires_grad_(False)
    for blk in model.layers:
        blk.q, blk.v = LoRALinear(blk.q), LoRALinear(blk.v)
    model.gradient_checkpointing = True
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"trainable params: {trainable:,} || all params: {total:,} || trainable%: {100 * trainable / total:.4f}", flush=True)
    info("__main__", "gradient checkpointing enabled (use_reentrant=True)")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-4)
    info("__main__", "***** Running training *****")
    info("__main__", "  Num examples = 52,002")
    info("__main__", "  Num Epochs = 3")
    info("__main__", "  Instantaneous batch size per device = 8")
    info("__main__", "  Gradient Accumulation steps = 4")
    info("__main__", "  Total optimization steps = 4,875")
    info("__main__", f"  Number of trainable parameters = {trainable:,}")
    model.train()
    bar = tqdm(total=4875, desc="Training", dynamic_ncols=False, ncols=100)
    for step in range(4875):
        for micro in range(4):
            ids = torch.randint(0, 32000, (8, 512 if not DRY else 16), device=DEV)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1)) / 4
            loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)


# ---------------------------------------------------------------- worker_stack_smash
class PackedDocs(torch.utils.data.Dataset):
    def __init__(self, n=20000, seq=8192):
        self.n, self.seq = n, seq

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np

        rng = np.random.default_rng(i)
        lens = rng.integers(200, 3800, size=6)
        if i == 1337:
            lens[2] = 6150  # a long document the corpus filter's token count missed (counted before re-tokenizing)
        return [rng.integers(0, 32000, size=int(n), dtype=np.int32) for n in lens]


class PackCollate:
    def __init__(self, seq=8192, eos=2):
        self.seq, self.eos, self.lib = seq, eos, None

    def __call__(self, samples):
        import ctypes

        import numpy as np

        if self.lib is None:
            self.lib = ctypes.CDLL(TOKPACK)
        out = np.zeros((len(samples), self.seq), dtype=np.int32)
        for r, docs in enumerate(samples):
            pos = 0
            for d in docs:
                room = self.seq - pos
                if room <= 0:
                    break
                pos += self.lib.pack_doc(ctypes.c_void_p(d.ctypes.data), len(d), self.eos,
                                         ctypes.c_void_p(out[r, pos:].ctypes.data), room)
        return torch.from_numpy(out)


def worker_stack_smash():
    info("__main__", "Loading dataset: /data/pretrain/fineweb-edu-sample (20,000 packed samples of 8,192 tokens)")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(32000, 512), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 32000)).to(DEV, DT)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    dl = torch.utils.data.DataLoader(PackedDocs(), batch_size=8, shuffle=False, num_workers=2, collate_fn=PackCollate(),
                                     pin_memory=not DRY)
    info("__main__", "***** Running training *****")
    info("__main__", "  Num examples = 20,000")
    info("__main__", "  Instantaneous batch size per device = 8")
    info("__main__", "  Total optimization steps = 2,500")
    bar = tqdm(dl, desc="Epoch 1", ncols=100)
    for step, batch in enumerate(bar):
        ids = batch.to(DEV, non_blocking=True)[:, :1024].long()
        loss = F.cross_entropy(model(ids[:, :-1]).float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")


# ---------------------------------------------------------------- vae_conv3d
class Denoiser(nn.Module):
    def __init__(self, c=16, w=128):
        super().__init__()
        self.inp = nn.Conv3d(c, w, 3, padding=1)
        self.mid = nn.Sequential(*[nn.Sequential(nn.GroupNorm(32, w), nn.SiLU(), nn.Conv3d(w, w, 3, padding=1)) for _ in range(4)])
        self.out = nn.Conv3d(w, c, 3, padding=1)

    def forward(self, x, t):
        return self.out(self.mid(self.inp(x)) * (1 + t))


class VAEDecoder(nn.Module):
    def __init__(self, c=16, w=128):
        super().__init__()
        self.conv_in = nn.Conv3d(c, w, 3, padding=1)
        self.up = nn.Upsample(scale_factor=(1, 8, 8), mode="nearest")
        self.conv_out = nn.Conv3d(w, w, 3, padding=1)
        self.to_rgb = nn.Conv3d(w, 3, 1)

    def forward(self, z):
        h = self.up(self.conv_in(z))  # [1, 128, T, 720, 1280]
        return self.to_rgb(F.silu(self.conv_out(h)))


def vae_conv3d():
    frames, height, width = (33, 720, 1280) if not DRY else (3, 32, 32)
    t_lat = (frames - 1) // 4 + 1 if not DRY else 3
    print(f"Loading pipeline components...: 100%|{'█' * 10}| 5/5 [00:04<00:00,  1.10it/s]", flush=True)
    torch.manual_seed(0)
    den = Denoiser().to(DEV, DT).eval()
    vae = VAEDecoder().to(DEV, DT).eval()
    print(f"pipeline: text-to-video, {frames} frames at {width}x{height}, 30 steps, guidance 6.0", flush=True)
    lat = torch.randn(1, 16, t_lat * 4 if not DRY else t_lat, height // 8, width // 8, device=DEV, dtype=DT)
    with torch.no_grad():
        for i in tqdm(range(30), ncols=100):
            lat = lat - 0.03 * den(lat, torch.tensor(1.0 - i / 30, device=DEV, dtype=DT))
        if not DRY:
            torch.cuda.synchronize()
            print(f"latents {tuple(lat.shape)}, peak memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB; decoding", flush=True)
        video = vae(lat)
        if not DRY:
            torch.cuda.synchronize()
    print(f"decoded video {tuple(video.shape)}", flush=True)


# ---------------------------------------------------------------- eval_ulimit
def eval_ulimit():
    info("lm_eval", "Evaluating /models/llama-3.1-8b-instruct-sft on mmlu (5-shot), batch_size=16")
    info("lm_eval", "Building model: 32 layers, hidden 4096, bfloat16")
    torch.manual_seed(0)
    model = CausalLM(vocab=128256, d=1024, n=4)
    info("lm_eval", f"Model built on CPU ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters in this shard), moving to {DEV}")
    model = model.to(DEV, DT).eval()
    info("lm_eval", "model on GPU")
    with torch.no_grad():
        for i in tqdm(range(57), desc="mmlu subjects", ncols=100):
            model(torch.randint(0, 128256, (16, 512), device=DEV))


{"eval_ulimit": eval_ulimit, "gc_no_grad": gc_no_grad, "worker_stack_smash": worker_stack_smash, "vae_conv3d": vae_conv3d}[args.scenario]()
