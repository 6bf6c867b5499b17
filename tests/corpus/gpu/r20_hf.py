# Hugging Face / accelerate-shaped scripts for round 20, one real fault (or none) per --scenario:
# html_weights: an eval script loads a model folder whose model.safetensors is the HTML login page the gated hub
#   answered with (transformers' own INFO logging on);
# fused_ce_oor: an SFT loop whose loss is a fused linear + cross-entropy Triton kernel (Liger-style), autotuned
#   over tile configs copied from a bigger-shared-memory part: every config needs more shared memory than this
#   GPU gives a block; the autotuner cannot run any of them;
# memmap_killed: pre-tokenized corpus loaded with np.load(mmap_mode="r") and torch.from_numpy (the read-only
#   warning), then widened to int64 in one piece; the job runs in a cgroup with a memory limit (r20_run.sh puts
#   it there): the kernel's OOM killer ends it, bash reports "Killed";
# loader_timeout: a streaming pretraining loop with DataLoader(num_workers=2, timeout=20); one shard sits on a
#   network mount that stopped answering (a FIFO with no writer: the worker's open() blocks): the main process's
#   wait for that batch times out;
# healthy_newinit: a classifier fine-tune started from a causal-LM checkpoint (transformers warns that the score
#   head is newly initialized, which is expected) trains, evaluates and saves (no crash).
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r20_common import CORPUS, HTML_CKPT, SEQCLS_BASE, SHARDS  # noqa: E402

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


# ---------------------------------------------------------------- html_weights
def html_weights():
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    transformers.logging.set_verbosity_info()
    print(f"lm-eval: model=hf, pretrained={HTML_CKPT}, dtype=bfloat16, device=cuda:0, batch_size=16, "
          f"tasks=['gsm8k', 'arc_challenge']", flush=True)
    AutoConfig.from_pretrained(HTML_CKPT)
    model = AutoModelForCausalLM.from_pretrained(HTML_CKPT, dtype=torch.bfloat16, device_map="cuda:0")
    print(f"loaded {type(model).__name__}", flush=True)


# ---------------------------------------------------------------- fused_ce_oor
def fused_ce_oor():
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl
    from tqdm import tqdm

    # tile configs tuned on a 228 KiB-smem part with 4 pipeline stages, kept when the kernel was ported
    configs = [triton.Config({"BLOCK_T": bt, "BLOCK_V": bv, "BLOCK_H": bh}, num_warps=w, num_stages=s)
               for bt, bv, bh, w, s in [(128, 256, 128, 8, 4), (256, 128, 128, 8, 4), (128, 256, 64, 8, 6)]]

    @triton.autotune(configs=configs, key=["H", "V"])
    @triton.jit
    def fused_linear_ce_fwd(x_ptr, w_ptr, tgt_ptr, m_ptr, s_ptr, t_ptr, T, H, V,
                            BLOCK_T: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_H: tl.constexpr):
        """Per (token block, vocab block): logits = x @ w.T, running max / sum-exp and the target logit."""
        pid_t = tl.program_id(0)
        pid_v = tl.program_id(1)
        rt = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
        rv = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
        rh = tl.arange(0, BLOCK_H)
        acc = tl.zeros((BLOCK_T, BLOCK_V), dtype=tl.float32)
        for h0 in range(0, H, BLOCK_H):
            x = tl.load(x_ptr + rt[:, None] * H + (h0 + rh)[None, :], mask=rt[:, None] < T, other=0.0)
            w = tl.load(w_ptr + rv[:, None] * H + (h0 + rh)[None, :], mask=rv[:, None] < V, other=0.0)
            acc = tl.dot(x, tl.trans(w), acc)
        acc = tl.where(rv[None, :] < V, acc, float("-inf"))
        m = tl.max(acc, 1)
        s = tl.sum(tl.exp(acc - m[:, None]), 1)
        tgt = tl.load(tgt_ptr + rt, mask=rt < T, other=-1)
        tl_hit = tl.sum(tl.where(rv[None, :] == tgt[:, None], acc, 0.0), 1)
        n_vb = tl.num_programs(1)
        tl.store(m_ptr + rt * n_vb + pid_v, m, mask=rt < T)
        tl.store(s_ptr + rt * n_vb + pid_v, s, mask=rt < T)
        tl.atomic_add(t_ptr + rt, tl_hit, mask=rt < T)

    def fused_linear_cross_entropy(h, w, tgt):
        T, H = h.shape
        V = w.shape[0]
        n_vb = triton.cdiv(V, 128)
        m = torch.full((T, n_vb * 2), float("-inf"), device=h.device)
        s = torch.zeros((T, n_vb * 2), device=h.device)
        t = torch.zeros(T, device=h.device)
        grid = lambda meta: (triton.cdiv(T, meta["BLOCK_T"]), triton.cdiv(V, meta["BLOCK_V"]))
        fused_linear_ce_fwd[grid](h, w, tgt, m, s, t, T, H, V)
        mx = m.max(1).values
        lse = mx + torch.log((s * torch.exp(m - mx[:, None])).nan_to_num(0.0).sum(1))
        return (lse - t).mean()

    torch.manual_seed(0)
    info("modeling_utils.py:4512", "loading weights file /data/ckpt/qwen2.5-1.5b/model.safetensors")
    d, vocab = 1536, 151936
    body = nn.Sequential(nn.Embedding(vocab, d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d)).cuda().to(torch.bfloat16)
    lm_head = nn.Linear(d, vocab, bias=False).cuda().to(torch.bfloat16)
    print("Applied Liger-style kernels to Qwen2: rope=True, rms_norm=True, swiglu=True, "
          "fused_linear_cross_entropy=True", flush=True)
    steps = 1200
    header(38_400, 1, 8, 4, steps, sum(p.numel() for p in body.parameters()) + lm_head.weight.numel())
    bar = tqdm(total=steps)
    ids = torch.randint(0, vocab, (8, 1024), device="cuda")
    h = body(ids[:, :-1]).reshape(-1, d).contiguous()
    loss = fused_linear_cross_entropy(h, lm_head.weight, ids[:, 1:].reshape(-1).contiguous())
    bar.update(1)
    print({"loss": loss.item()})


# ---------------------------------------------------------------- memmap_killed
def memmap_killed():
    import numpy as np
    import torch
    torch.cuda.init()
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] device: {torch.cuda.get_device_name()}; building training "
          f"index from {CORPUS}", flush=True)
    arr = np.load(CORPUS, mmap_mode="r")
    tokens = torch.from_numpy(arr)
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] corpus: {tokens.numel():,} tokens ({tokens.dtype})", flush=True)
    tokens = tokens.to(torch.int64)  # embedding lookups want int64
    seq = 4096
    n = tokens.numel() // (seq + 1)
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {n:,} samples of {seq} tokens", flush=True)


# ---------------------------------------------------------------- loader_timeout
class ShardStream:
    """Fixed-size samples read shard by shard from the corpus mount."""

    def __init__(self, root, per_shard=16):
        self.files = sorted(os.listdir(root))
        self.root, self.per_shard = root, per_shard

    def __len__(self):
        return len(self.files) * self.per_shard

    def __getitem__(self, i):
        import numpy as np
        import torch
        f = self.files[i // self.per_shard]
        with open(os.path.join(self.root, f), "rb") as fh:
            buf = np.frombuffer(fh.read(), dtype=np.int32)
        j = (i % self.per_shard) * 1025
        return torch.from_numpy(buf[j:j + 1025].copy()).long()


def loader_timeout():
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    torch.manual_seed(0)
    ds = ShardStream(SHARDS)
    dl = DataLoader(ds, batch_size=8, num_workers=2, timeout=20, pin_memory=True, prefetch_factor=2)
    print(f"dataset: {len(ds.files)} shards under {SHARDS} ({len(ds)} samples); workers=2, timeout=20s",
          flush=True)
    d, vocab = 768, 32000
    model = nn.Sequential(nn.Embedding(vocab, d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                          nn.Linear(d, vocab)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    bar = tqdm(total=len(dl), desc="train")
    for step, batch in enumerate(dl):
        batch = batch.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 4 == 3:
            bar.write(str({"loss": round(loss.item(), 4), "step": step + 1}))
    bar.close()


# ---------------------------------------------------------------- healthy_newinit
def healthy_newinit():
    import torch
    import transformers
    from tqdm import tqdm
    from transformers import AutoModelForSequenceClassification
    transformers.logging.set_verbosity_warning()
    torch.manual_seed(0)
    info("trainer.py:748", "Using auto half precision backend")
    model = AutoModelForSequenceClassification.from_pretrained(SEQCLS_BASE, num_labels=3, dtype=torch.bfloat16)
    model = model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    steps = 40
    header(2_560, 1, 16, 4, steps, sum(p.numel() for p in model.parameters()))
    bar = tqdm(total=steps)
    g = torch.Generator().manual_seed(0)
    for step in range(steps):
        for _ in range(4):
            ids = torch.randint(3, 32000, (16, 128), generator=g).cuda()
            labels = (ids[:, 0] % 3).cuda()
            out = model(input_ids=ids, labels=labels)
            (out.loss / 4).backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 10 == 9:
            tqdm.write(str({"loss": round(out.loss.item(), 4), "grad_norm": round(gn.item(), 4),
                            "learning_rate": 2e-5 * (1 - step / steps), "epoch": round((step + 1) / steps, 2)}))
    bar.close()
    info("trainer.py:3993", "***** Running Evaluation *****")
    info("trainer.py:3995", "  Num examples = 320")
    correct = 0
    with torch.no_grad():
        for _ in range(20):
            ids = torch.randint(3, 32000, (16, 128), generator=g).cuda()
            pred = model(input_ids=ids).logits.argmax(-1)
            correct += (pred == (ids[:, 0] % 3)).sum().item()
    print(str({"eval_loss": round(out.loss.item(), 4), "eval_accuracy": round(correct / 320, 4),
               "eval_runtime": 0.88, "eval_samples_per_second": 363.6, "epoch": 1.0}), flush=True)
    out_dir = "/tmp/r20_files/seqcls-run/checkpoint-40"
    model.save_pretrained(out_dir)
    info("trainer.py:3705", f"Saving model checkpoint to {out_dir}")
    print(str({"train_runtime": 14.2, "train_samples_per_second": 180.3, "train_steps_per_second": 2.82,
               "train_loss": round(out.loss.item(), 4), "epoch": 1.0}), flush=True)


{"html_weights": html_weights, "fused_ce_oor": fused_ce_oor, "memmap_killed": memmap_killed,
 "loader_timeout": loader_timeout, "healthy_newinit": healthy_newinit}[args.scenario]()
