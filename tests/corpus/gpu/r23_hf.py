# Training / generation scripts in the HF Trainer / accelerate shapes for round 23 (tqdm bars, dict logs), one
# real fault (or none) per --scenario:
# packing_sigfpe: a Trainer-style pre-training run whose dataset packs documents per sample in C (ctypes,
#   libpackops.so from r23_common.py): a sample made of one long document leaves a length bucket empty and the
#   C helper divides by its count (SIGFPE in a DataLoader worker; the main process reports the dead worker);
# fp16_nan: a batch rollout script (sampling, temperature 0.7) that runs a bf16-trained policy in float16; the
#   eval prompts of one batch carry a special token whose (never trained) embedding row is huge: the
#   activations overflow float16, the logits become NaN and torch.multinomial refuses the probabilities (on the
#   H100 run of 2026-12-06, PyTorch 2.11: an asynchronous device-side assert, printed onto the tqdm line, then
#   the next cuBLAS GEMM fails with CUBLAS_STATUS_EXECUTION_FAILED);
# fullgraph_branch: an MoE pre-training loop compiled with torch.compile(fullgraph=True); the router skips the
#   load-balancing loss when no expert is starved, a Python `if` on a tensor: Dynamo cannot trace it as one
#   graph;
# compile_warnings: a healthy fine-tune compiled with torch.compile(dynamic=False) on unpadded batches: each
#   new sequence length recompiles until Dynamo's recompile limit, then the step runs eagerly; Inductor warns
#   about TF32; the run finishes (no crash);
# fd_limit: a vision-language SFT loop whose collator keeps each sample's image crops as a list of tensors
#   (no stacking); with 8 workers and the file_descriptor sharing strategy the tensors in flight exceed the
#   job's open-files limit (r23_run.sh runs it under `ulimit -n 1024`; on the 2026-12-06 run the workers hit
#   EMFILE sharing the tensors and the main process died of a bare EOFError receiving them);
# ema_recursion: an accelerate loop that starts an EMA copy of the model at step 60 with copy.deepcopy; the
#   model sits in a wrapper class whose __getattr__ forwards to self.model: deepcopy's bare new instance has
#   no .model yet, so __getattr__ recurses;
# sdpa_flash_only: an inference script that forces the flash SDPA backend (sdpa_kernel(FLASH_ATTENTION)) for
#   speed on a model with head_dim 320: no kernel is available.
# SHAPES_DRY=1: on the CPU (a local check; the GPU-only faults do not happen there).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import copy
import ctypes
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r23_common import DRY, PACKOPS

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
DEV = "cpu" if DRY else "cuda"


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


def info(name, msg):
    print(f"{now()} - INFO - {name} - {msg}", flush=True)


def warn(name, msg):
    print(f"{now()} - WARNING - {name} - {msg}", flush=True)


def trainer_header(n_examples, bs, steps, n_params, epochs=1, accum=1):
    print("***** Running training *****", flush=True)
    print(f"  Num examples = {n_examples:,}")
    print(f"  Num Epochs = {epochs:,}")
    print(f"  Instantaneous batch size per device = {bs:,}")
    print(f"  Total train batch size (w. parallel, distributed & accumulation) = {bs * accum:,}")
    print(f"  Gradient Accumulation steps = {accum}")
    print(f"  Total optimization steps = {steps:,}")
    print(f"  Number of trainable parameters = {n_params:,}", flush=True)


def tiny_lm(vocab=32000, d=512, n=4):
    import torch.nn as nn

    if DRY:  # the local dry run: a CPU-sized model
        d, n = 64, 1
    layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
    return nn.ModuleDict({"embed": nn.Embedding(vocab, d), "body": nn.TransformerEncoder(layer, n),
                          "head": nn.Linear(d, vocab, bias=False)})


def lm_forward(m, ids):
    import torch.nn as nn

    mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
    return m["head"](m["body"](m["embed"](ids), mask=mask, is_causal=True))


def n_params(m):
    return sum(p.numel() for p in m.parameters() if p.requires_grad)


# ---------------------------------------------------------------- packing_sigfpe
class PackedDataset:
    """Samples of 2048 tokens packed from documents of the shard; the packing itself is C (ctypes)."""

    def __init__(self, n, seq_len=2048, n_buckets=4):
        self.n, self.seq_len, self.n_buckets = n, seq_len, n_buckets
        self.lib = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np
        import torch

        if self.lib is None:
            self.lib = ctypes.CDLL(PACKOPS)
        rng = np.random.default_rng(i)
        if rng.random() < 0.0008:  # a sample that is one long document (a book chapter)
            doc_lens = np.array([rng.integers(1800, 2040)], dtype=np.int32)
        else:
            doc_lens = rng.integers(1, self.seq_len, size=int(rng.integers(24, 40))).astype(np.int32)
        seg = np.zeros(self.seq_len, dtype=np.int32)
        self.lib.pack_sample(doc_lens.ctypes.data_as(ctypes.c_void_p), len(doc_lens), self.seq_len,
                             self.n_buckets, seg.ctypes.data_as(ctypes.c_void_p))
        ids = rng.integers(0, 32000, size=self.seq_len + 1)
        return {"input_ids": torch.from_numpy(ids[:-1]), "labels": torch.from_numpy(ids[1:]),
                "segment_ids": torch.from_numpy(seg)}


def packing_sigfpe():
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
    from tqdm import tqdm

    torch.manual_seed(0)
    bs, seq = 8, 2048
    ds = PackedDataset(200_000)
    model = tiny_lm(n=2).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
    info("__main__", f"Loaded packed dataset: {len(ds):,} samples of {seq} tokens (packing=ctypes libpackops)")
    dl = DataLoader(ds, batch_size=bs, shuffle=True, num_workers=4, pin_memory=True, drop_last=True,
                    generator=torch.Generator().manual_seed(42))
    steps = len(dl)
    trainer_header(len(ds), bs, steps, n_params(model))
    bar = tqdm(total=steps)
    t0 = time.time()
    for step, batch in enumerate(dl, 1):
        ids = batch["input_ids"].to(DEV, non_blocking=True)[:, :512 if not DRY else 32]
        labels = batch["labels"].to(DEV, non_blocking=True)[:, :ids.size(1)]
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = lm_forward(model, ids)
        loss = F.cross_entropy(logits.float().reshape(-1, 32000), labels.reshape(-1))
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 10 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "grad_norm": round(gn.item(), 4),
                           "learning_rate": 6e-4 * min(1.0, step / 2000), "epoch": round(step / steps, 4)}))
        if DRY and step >= 60:
            break
    bar.close()
    print({"train_runtime": round(time.time() - t0, 2)})


# ---------------------------------------------------------------- fp16_nan
def fp16_nan():
    import torch
    from tqdm import tqdm

    torch.manual_seed(0)
    V, D, I, L = 32000, 2048, 5632, 6
    dt = torch.float32 if DRY else torch.float16
    kw = dict(device=DEV, dtype=dt)
    info("__main__", "Loading policy checkpoint /ckpt/policy-7b-sft/step-4000 (torch_dtype=float16, trained in bfloat16)")
    emb = torch.randn(V, D, **kw) * 0.02
    emb[31999] = torch.randn(D, **kw) * 60.0  # <|fim_middle|>: added to the vocabulary, never trained
    layers = [(torch.randn(2 * I, D, **kw) * 0.05, torch.randn(D, I, **kw) * 0.05,
               torch.randn(D, D, **kw) * 0.02) for _ in range(L)]
    head = torch.randn(V, D, **kw) * 0.02

    def forward(ids):
        h = emb[ids]
        pos = torch.arange(1, ids.size(1) + 1, device=DEV, dtype=dt).view(1, -1, 1)
        for gu, down, wo in layers:
            h = h + (torch.cumsum(h, 1) / pos) @ wo.T  # causal mixing
            g, u = (h @ gu.T).chunk(2, -1)
            h = h + (torch.nn.functional.silu(g) * u) @ down.T
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return h[:, -1] @ head.T

    warn("transformers.generation.utils", "Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.")
    info("__main__", "Generating 4 rollouts per prompt for 1,024 prompts (temperature=0.7, top_p=1.0, max_new_tokens=256)")
    batches = 64
    for b in tqdm(range(batches), desc="rollouts", total=batches):
        g = torch.Generator(device=DEV).manual_seed(b)
        ids = torch.randint(0, 31000, (16, 96), device=DEV, generator=g)
        if b == 23:  # the code-infilling prompts of the eval mix
            ids[:5, 40] = 31999
        for _ in range(8 if DRY else 32):
            logits = forward(ids)
            next_token_scores = logits / 0.7
            probs = torch.nn.functional.softmax(next_token_scores, dim=-1)
            next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            ids = torch.cat([ids, next_tokens[:, None]], 1)
    info("__main__", "wrote rollouts to /data/rollouts/iter-0012.jsonl")


# ---------------------------------------------------------------- fullgraph_branch
def moe_model(d=256, n_exp=8):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MoE(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(d, n_exp, bias=False)
            self.w1 = nn.Parameter(torch.randn(n_exp, d, 4 * d) * 0.02)
            self.w2 = nn.Parameter(torch.randn(n_exp, 4 * d, d) * 0.02)

        def forward(self, x):
            probs = F.softmax(self.router(x), -1)
            top = probs.argmax(-1)
            load = torch.bincount(top.flatten(), minlength=n_exp).float() / top.numel()
            if (load < 0.25 / n_exp).any():  # some expert is starved: add the balancing loss
                aux = n_exp * (load * probs.mean((0, 1))).sum()
            else:
                aux = probs.new_zeros(())
            h = torch.einsum("btd,edf->btef", x, self.w1)
            h = torch.einsum("btef,efd->bted", F.gelu(h), self.w2)
            out = (h * F.one_hot(top, n_exp)[..., None]).sum(2)
            return x + out, aux

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32000, d)
            self.blocks = nn.ModuleList([MoE() for _ in range(4)])
            self.head = nn.Linear(d, 32000, bias=False)

        def forward(self, ids):
            h = self.embed(ids)
            aux_total = 0.0
            for b in self.blocks:
                h, aux = b(h)
                aux_total = aux_total + aux
            return self.head(h), aux_total

    return Model()


def fullgraph_branch():
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = moe_model().to(DEV)
    info("__main__", f"model: 4 MoE blocks x 8 experts (top-1), {n_params(model) / 1e6:.1f}M parameters")
    info("__main__", "compiling the model: torch.compile(mode='max-autotune-no-cudagraphs', fullgraph=True)")
    cmodel = torch.compile(model, fullgraph=True, mode="max-autotune-no-cudagraphs")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    trainer_header(1_000_000, 16, 62_500, n_params(model))
    for step in range(1, 101):
        ids = torch.randint(0, 32000, (16, 257), device=DEV)
        logits, aux = cmodel(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1)) + 0.01 * aux
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 10 == 0:
            print(str({"loss": round(loss.item(), 4), "aux_loss": round(float(aux), 4), "step": step}), flush=True)


# ---------------------------------------------------------------- compile_warnings
def compile_warnings():
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    torch.manual_seed(0)
    model = tiny_lm(n=2, d=384).to(DEV)
    info("__main__", "torch.compile enabled (backend=inductor, dynamic=False); batches are not padded (group_by_length=True)")
    cmodel = torch.compile(model["body"], dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    steps = 150 if not DRY else 30
    trainer_header(4_800, 32, steps, n_params(model))
    lengths = [128, 96, 160, 64, 192, 112, 144, 80, 176, 208, 120, 136, 224, 88, 152]
    t0 = time.time()
    tot = 0.0
    bar = tqdm(total=steps)
    for step in range(1, steps + 1):
        T = lengths[step % len(lengths)] if step < 100 else lengths[step % 3]
        ids = torch.randint(0, 32000, (32, T + 1), device=DEV)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(T, device=DEV)
        h = cmodel(model["embed"](ids[:, :-1]), mask=mask, is_causal=True)
        loss = F.cross_entropy(model["head"](h).float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        tot += loss.item()
        bar.update(1)
        if step % 25 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "learning_rate": 1e-4, "epoch": round(step / steps, 2)}))
    bar.close()
    rt = time.time() - t0
    print(str({"train_runtime": round(rt, 4), "train_samples_per_second": round(steps * 32 / rt, 3),
               "train_steps_per_second": round(steps / rt, 3), "train_loss": round(tot / steps, 4), "epoch": 1.0}))
    info("__main__", "Saving model checkpoint to /tmp/r23_files/runs/sft-compile/checkpoint-150")


# ---------------------------------------------------------------- fd_limit
class CropsDataset:
    def __len__(self):
        return 50_000

    def __getitem__(self, i):
        import torch

        g = torch.Generator().manual_seed(i)
        n_crops = 4 + i % 9  # anyres tiling: a different number of crops per image
        return {"input_ids": torch.randint(0, 32000, (256,), generator=g),
                "pixel_values": [torch.randn(3, 28, 28, generator=g) for _ in range(n_crops)]}


def collate_crops(samples):
    import torch

    return {"input_ids": torch.stack([s["input_ids"] for s in samples]),
            "pixel_values": [s["pixel_values"] for s in samples]}


def fd_limit():
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader
    from tqdm import tqdm

    torch.manual_seed(0)
    info("__main__", "image processor: anyres tiling, 28x28 crops, max 12 crops per image")
    model = tiny_lm(n=2).to(DEV)
    vis = torch.nn.Linear(3 * 28 * 28, model["embed"].embedding_dim).to(DEV)
    opt = torch.optim.AdamW(list(model.parameters()) + list(vis.parameters()), lr=2e-5)
    dl = DataLoader(CropsDataset(), batch_size=32, shuffle=True, num_workers=8, prefetch_factor=4,
                    collate_fn=collate_crops, persistent_workers=True)
    trainer_header(50_000, 32, len(dl), n_params(model) + n_params(vis))
    bar = tqdm(total=len(dl))
    for step, batch in enumerate(dl, 1):
        ids = batch["input_ids"].to(DEV)
        crops = [torch.stack(c).to(DEV).flatten(1) for c in batch["pixel_values"]]
        img = torch.stack([vis(c).mean(0) for c in crops])
        h = model["embed"](ids[:, :-1]) + img[:, None]
        loss = F.cross_entropy(model["head"](model["body"](h)).float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 5 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "learning_rate": 2e-5, "epoch": round(step / len(dl), 4)}))
        time.sleep(0.05)
        if step >= 400:
            break
    bar.close()


# ---------------------------------------------------------------- ema_recursion
class CheckpointedModel:
    """Wraps the model for activation checkpointing; attribute access falls through to the wrapped model."""

    def __init__(self, model, checkpoint_every=2):
        self.model = model
        self.checkpoint_every = checkpoint_every

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, ids):
        from torch.utils.checkpoint import checkpoint

        h = self.model["embed"](ids)
        for i, layer in enumerate(self.model["body"].layers):
            h = checkpoint(layer, h, use_reentrant=False) if i % self.checkpoint_every == 0 else layer(h)
        return self.model["head"](h)


def ema_recursion():
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    torch.manual_seed(0)
    model = CheckpointedModel(tiny_lm(n=4).to(DEV))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    print(f"{now()} - INFO - accelerate.accelerator - Mixed precision type: bf16", flush=True)
    info("__main__", "EMA: decay=0.9995, starts at step 60 (ema_start_step)")
    steps = 300
    trainer_header(9_600, 32, steps, n_params(model.model))
    ema = None
    bar = tqdm(total=steps, desc="train")
    for step in range(1, steps + 1):
        ids = torch.randint(0, 32000, (32, 129) if not DRY else (2, 17), device=DEV)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step == 60:
            ema = copy.deepcopy(model)
            info("__main__", "EMA model initialised")
        if ema is not None:
            with torch.no_grad():
                for pe, p in zip(ema.parameters(), model.parameters()):
                    pe.lerp_(p, 1 - 0.9995)
        bar.update(1)
        if step % 20 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "lr": 3e-4, "step": step}))
    bar.close()


# ---------------------------------------------------------------- sdpa_flash_only
def sdpa_flash_only():
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    H, Dh, D = 16, 320, 5120
    dt = torch.float32 if DRY else torch.bfloat16
    kw = dict(device=DEV, dtype=dt)
    info("__main__", f"config: hidden_size={D}, num_attention_heads={H}, head_dim={Dh}, num_hidden_layers=4 (of 48 loaded for the smoke test)")
    info("__main__", "attention: torch sdpa, backend forced to FLASH_ATTENTION (ATTN_BACKEND=flash)")
    wq = [torch.randn(3 * D, D, **kw) * 0.01 for _ in range(4)]
    wo = [torch.randn(D, D, **kw) * 0.01 for _ in range(4)]
    emb = torch.randn(32000, D, **kw) * 0.02
    ids = torch.randint(0, 32000, (4, 1024), device=DEV)
    t0 = time.time()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        h = emb[ids]
        for i in range(4):
            q, k, v = (h @ wq[i].T).view(4, -1, 3, H, Dh).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h + a.transpose(1, 2).reshape(4, -1, D) @ wo[i].T
    info("__main__", f"prefill of 4 x 1024 tokens: {time.time() - t0:.3f} s")


if __name__ == "__main__":
    {"packing_sigfpe": packing_sigfpe, "fp16_nan": fp16_nan, "fullgraph_branch": fullgraph_branch,
     "compile_warnings": compile_warnings, "fd_limit": fd_limit, "ema_recursion": ema_recursion,
     "sdpa_flash_only": sdpa_flash_only}[args.scenario]()
