# Training / evaluation scripts in the HF-accelerate and fairseq shapes for round 21, one real fault (or none) per
# --scenario:
# oom_skip: a fairseq-style trainer over length-bucketed batches with an eager attention that materializes fp32
#   scores; one bucket holds a 64k-token document that was never truncated: the forward runs out of GPU memory,
#   the trainer's OOM handler logs the memory summary, skips the batch and trains on to the end (no crash);
# rope_inference: an accelerate SFT loop whose rotary-embedding cache grows by reallocation; the sample-generation
#   callback runs under torch.inference_mode() with prompts longer than the training length, so the cache is
#   rebuilt there as inference tensors; the next training step saves them for backward;
# flash_attn: an SFT script loads the model with attn_implementation="flash_attention_2" where flash-attn is not
#   installed;
# fsdp_eval: the eval script points from_pretrained at the checkpoint folder of an FSDP run saved with
#   SHARDED_STATE_DICT: config.json and a pytorch_model_fsdp_0/ DCP folder, no consolidated weights file;
# rnn_eval: keyword-spotting training (conv front end + cuDNN LSTM) with FGSM adversarial examples from step 40;
#   the attack puts the model in eval() (to freeze dropout) and backpropagates to the input through the LSTM;
# shared_save: a small GPT-style SFT with tied input/output embeddings trains to the end; the script's own save
#   writes the state dict with safetensors' save_file.
# SHAPES_DRY=1: on the CPU (a local check; the GPU-only faults do not happen there).
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r21_common import DRY, FSDP_OUT, ROOT, TINY_LLAMA  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
DEV = "cpu" if DRY else "cuda"


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- oom_skip (fairseq-style)
def oom_skip():
    import logging

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", datefmt="%Y-%m-%d %H:%M:%S",
                        level=logging.INFO, stream=sys.stdout)
    log = logging.getLogger("fairseq.trainer")
    tlog = logging.getLogger("fairseq_cli.train")
    d, heads, layers, vocab = 1024, 16, 4, 50000

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.o = nn.Linear(d, d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).view(B, T, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(d // heads)  # fp32 scores
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            a = (F.softmax(s, -1).to(v.dtype) @ v).transpose(1, 2).reshape(B, T, d)
            x = x + self.o(a)
            return x + self.ff(self.n2(x))

    torch.manual_seed(0)
    model = nn.ModuleDict({"emb": nn.Embedding(vocab, d), "layers": nn.ModuleList([Layer() for _ in range(layers)]),
                           "out": nn.Linear(d, vocab)}).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98))
    n_params = sum(p.numel() for p in model.parameters())
    tlog.info(f"model: transformer_lm_long, criterion: CrossEntropyCriterion")
    tlog.info(f"num. shared model params: {n_params:,} (num. trained: {n_params:,})")
    tlog.info("training on 1 devices (GPUs/TPUs)")
    tlog.info("max tokens per device = 16384 and max sentences per device = None")
    log.info("No existing checkpoint found checkpoints/transformer_lm_long/checkpoint_last.pt")
    # token-bucketed batches (B x T); bucket 37 holds one document of 65536 tokens (max_positions was raised to
    # 1048576 to "stop dropping long documents")
    buckets = [(16, 1024), (8, 2048), (4, 4096), (32, 512)] * 10
    buckets[37] = (1, 65536)
    if DRY:
        buckets = [(2, 64)] * 12
    t0 = time.time()
    skipped = 0
    for epoch in (1, 2):
        log.info(f"begin training epoch {epoch}")
        losses, gns, wps_tok, t_ep = [], [], 0, time.time()
        for i, (B, T) in enumerate(buckets, 1):
            ids = torch.randint(0, vocab, (B, T + 1), device=DEV)
            try:
                x = model["emb"](ids[:, :-1])
                for L in model["layers"]:
                    x = L(x)
                loss = F.cross_entropy(model["out"](x).float().view(-1, vocab), ids[:, 1:].reshape(-1))
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
                opt.step()
                opt.zero_grad(set_to_none=True)
                losses.append(loss.item() / math.log(2))
                gns.append(gn)
                wps_tok += B * T
            except torch.OutOfMemoryError as e:
                log.warning("OOM: Ran out of memory with exception: " + str(e))
                log.warning(torch.cuda.memory_summary(device=0))
                log.warning("attempting to recover from OOM in forward/backward pass")
                opt.zero_grad(set_to_none=True)
                del e
                torch.cuda.empty_cache()
                skipped += 1
                continue
            if i % 10 == 0:
                el = time.time() - t_ep
                print(f"{now()} | INFO | train_inner | epoch {epoch:03d}:     {i} / {len(buckets)} "
                      f"loss={sum(losses[-10:]) / len(losses[-10:]):.3f}, ppl={2 ** (sum(losses[-10:]) / len(losses[-10:])):.2f}, "
                      f"wps={wps_tok / el:.0f}, ups={i / el:.2f}, wpb={wps_tok / i:.0f}, bsz={B}, num_updates={i + (epoch - 1) * len(buckets) - skipped}, "
                      f"lr=0.0005, gnorm={sum(gns[-10:]) / len(gns[-10:]):.3f}, loss_scale=None, train_wall={el:.0f}, gb_free="
                      f"{(torch.cuda.mem_get_info()[0] / 2**30) if not DRY else 0:.1f}, wall={time.time() - t0:.0f}",
                      flush=True)
        print(f"{now()} | INFO | train | epoch {epoch:03d} | loss {sum(losses) / len(losses):.3f} | "
              f"ppl {2 ** (sum(losses) / len(losses)):.2f} | wps {wps_tok / (time.time() - t_ep):.0f} | "
              f"num_updates {epoch * len(buckets) - skipped} | train_wall {time.time() - t_ep:.0f} | "
              f"wall {time.time() - t0:.0f}", flush=True)
        log.info(f"end of epoch {epoch} (average epoch stats below)")
    tlog.info(f"done training in {time.time() - t0:.1f} seconds")


# ---------------------------------------------------------------- rope_inference
def rope_inference():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from tqdm import tqdm

    class Rotary(nn.Module):
        """cos/sin cache that grows by reallocation (capacity doubles past the longest sequence seen)."""

        def __init__(self, dim, base=10000.0):
            super().__init__()
            self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim), persistent=False)
            self.cos_cached = self.sin_cached = None

        def _build(self, n):
            t = torch.arange(n, device=self.inv_freq.device).float()
            f = torch.outer(t, self.inv_freq)
            emb = torch.cat([f, f], -1)
            self.cos_cached, self.sin_cached = emb.cos(), emb.sin()

        def forward(self, T):
            if self.cos_cached is None or T > self.cos_cached.shape[0]:
                self._build(2 * T)
            return self.cos_cached[:T], self.sin_cached[:T]

    def rot_half(x):
        a, b = x.chunk(2, -1)
        return torch.cat([-b, a], -1)

    class Attn(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h, self.qkv, self.o = h, nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            self.rope = Rotary(d // h)

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).transpose(1, 3).unbind(2)
            cos, sin = self.rope(T)
            q, k = q * cos + rot_half(q) * sin, k * cos + rot_half(k) * sin
            return self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D))

    class LM(nn.Module):
        def __init__(self, vocab=32000, d=768, h=12, n=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([nn.ModuleDict({"n1": nn.LayerNorm(d), "attn": Attn(d, h), "n2": nn.LayerNorm(d),
                                                        "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                                                             nn.Linear(4 * d, d))}) for _ in range(n)])
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for b in self.blocks:
                x = x + b["attn"](b["n1"](x))
                x = x + b["mlp"](b["n2"](x))
            return self.head(self.norm(x))

    @torch.inference_mode()
    def generate_samples(model, prompts, max_new=32):
        outs = []
        for p in prompts:
            ids = p[None]
            for _ in range(max_new):
                nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
                ids = torch.cat([ids, nxt], 1)
            outs.append(ids)
        return outs

    print(f"[{now()}] accelerate: distributed_type=NO, num_processes=1, device={DEV}, mixed_precision=bf16", flush=True)
    torch.manual_seed(0)
    model = LM().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    seq, bs, steps, sample_every = (1024, 8, 400, 50) if not DRY else (64, 2, 12, 5)
    print(f"[{now()}] model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, seq_len={seq}, "
          f"batch_size={bs}, max_steps={steps}, sample_every={sample_every}", flush=True)
    bar = tqdm(total=steps, desc="train", dynamic_ncols=False, ncols=100)
    for step in range(1, steps + 1):
        ids = torch.randint(0, 32000, (bs, seq + 1), device=DEV)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 10 == 0:
            bar.write(str({"loss": round(loss.item(), 4), "grad_norm": round(gn.item(), 4), "learning_rate": 3e-4,
                           "step": step}))
        if step % sample_every == 0:
            model.eval()
            plen = 5 * seq // 2 if step >= 2 * sample_every else seq // 2  # the long-document eval set from step 100
            prompts = [torch.randint(0, 32000, (plen,), device=DEV) for _ in range(2)]
            with torch.autocast(DEV, dtype=torch.bfloat16):
                outs = generate_samples(model, prompts, max_new=8 if not DRY else 2)
            bar.write(f"[{now()}] samples at step {step}: {len(outs)} prompts x {plen} tokens -> "
                      f"{outs[0].shape[1]} tokens")
            model.train()
    bar.close()


# ---------------------------------------------------------------- flash_attn / fsdp_eval
def flash_attn():
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoConfig
    transformers.logging.set_verbosity_info()
    print(f"[{now()}] sft: model_name_or_path={TINY_LLAMA} attn_implementation=flash_attention_2 "
          f"torch_dtype=bfloat16 packing=True max_seq_length=8192 per_device_train_batch_size=4", flush=True)
    AutoConfig.from_pretrained(TINY_LLAMA)
    model = AutoModelForCausalLM.from_pretrained(TINY_LLAMA, dtype=torch.bfloat16,
                                                 attn_implementation="flash_attention_2", device_map=DEV)
    print(f"[{now()}] loaded {type(model).__name__}", flush=True)


def fsdp_eval():
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    transformers.logging.set_verbosity_info()
    print(f"[{now()}] eval: checkpoint={FSDP_OUT} tasks=['mmlu', 'gsm8k'] batch_size=32 dtype=bfloat16", flush=True)
    for f in sorted(os.listdir(FSDP_OUT)):
        print(f"[{now()}]   {f}", flush=True)
    model = AutoModelForCausalLM.from_pretrained(FSDP_OUT, dtype=torch.bfloat16, device_map=DEV)
    print(f"[{now()}] loaded {type(model).__name__}", flush=True)


# ---------------------------------------------------------------- rnn_eval
def rnn_eval():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class KWS(nn.Module):
        def __init__(self, n_mels=40, hidden=256, n_cls=35):
            super().__init__()
            self.front = nn.Sequential(nn.Conv1d(n_mels, 128, 5, padding=2), nn.BatchNorm1d(128), nn.ReLU(),
                                       nn.Dropout(0.1))
            self.rnn = nn.LSTM(128, hidden, num_layers=2, batch_first=True, bidirectional=True, dropout=0.2)
            self.cls = nn.Linear(2 * hidden, n_cls)

        def forward(self, x):  # x: B x mels x frames
            h = self.front(x).transpose(1, 2)
            out, _ = self.rnn(h)
            return self.cls(out.mean(1))

    def fgsm(model, x, y, eps=0.002):
        model.eval()  # freeze dropout and batch-norm statistics while crafting the perturbation
        x = x.clone().requires_grad_(True)
        loss = F.cross_entropy(model(x), y)
        g, = torch.autograd.grad(loss, x)
        model.train()
        return (x + eps * g.sign()).detach()

    torch.manual_seed(0)
    model = KWS().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"[{now()}] speech_commands_v2: 84843 train / 9981 val utterances, 35 classes, 40 log-mel bins, "
          f"101 frames", flush=True)
    print(f"[{now()}] config: batch_size=128 lr=0.001 epochs=30 adv_training=fgsm adv_eps=0.002 adv_start_step=40",
          flush=True)
    t0 = time.time()
    for step in range(1, 200):
        x = torch.randn(128, 40, 101, device=DEV)
        y = torch.randint(0, 35, (128,), device=DEV)
        if step >= 40:
            x = torch.cat([x, fgsm(model, x, y)])
            y = torch.cat([y, y])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[{now()}] epoch 1 step {step:4d}/663 loss {loss.item():.4f} "
                  f"({(time.time() - t0) / step * 1000:.0f} ms/step)", flush=True)


# ---------------------------------------------------------------- shared_save
def shared_save():
    import json

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from safetensors.torch import save_file
    from tqdm import tqdm

    class GPT(nn.Module):
        def __init__(self, vocab=50257, d=768, n=6, ctx=1024):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            layer = nn.TransformerEncoderLayer(d, 12, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.h = nn.TransformerEncoder(layer, n, enable_nested_tensor=False)
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying

        def forward(self, ids):
            T = ids.shape[1]
            x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))
            mask = torch.ones(T, T, dtype=torch.bool, device=ids.device).triu(1)
            return self.lm_head(self.ln_f(self.h(x, mask=mask, is_causal=True)))

    out_dir = f"{ROOT}/out/gpt2-small-sft-alpaca"
    torch.manual_seed(0)
    model = GPT().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-5)
    steps = 60 if not DRY else 4
    print(f"[{now()}] output_dir={out_dir} max_steps={steps} per_device_train_batch_size=8 block_size=512", flush=True)
    for step in tqdm(range(1, steps + 1), desc="Training", ncols=100):
        ids = torch.randint(0, 50257, (8, 513 if not DRY else 33), device=DEV)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 50257), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 20 == 0:
            tqdm.write(str({"loss": round(loss.item(), 4), "learning_rate": 6e-5, "epoch": round(step / 600, 3)}))
    print(f"[{now()}] training finished; saving to {out_dir}", flush=True)
    os.makedirs(out_dir, exist_ok=True)
    with open(f"{out_dir}/config.json", "w") as f:
        json.dump({"model_type": "gpt2", "n_embd": 768, "n_layer": 6, "vocab_size": 50257,
                   "tie_word_embeddings": True}, f, indent=2)
    save_file(model.state_dict(), f"{out_dir}/model.safetensors", metadata={"format": "pt"})
    print(f"[{now()}] saved", flush=True)


{"oom_skip": oom_skip, "rope_inference": rope_inference, "flash_attn": flash_attn, "fsdp_eval": fsdp_eval,
 "rnn_eval": rnn_eval, "shared_save": shared_save}[args.scenario]()
