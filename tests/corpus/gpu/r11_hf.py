# Fine-tuning scripts in the HuggingFace / accelerate / plain-PyTorch shape (round 11), one real fault each:
# trainer_vocab: HF Trainer on a tiny Llama; the data carries 4 added special tokens but the embedding
#   was never resized (ids 32000..32003 into a 32000-row table): device-side assert;
# fp16_unscale: accelerate fp16 mixed precision over a model already cast to fp16 (GradScaler refuses);
# dataloader_fork: a Dataset that builds CUDA tensors inside forked DataLoader workers;
# sdpa_flash_fp32: attention pinned to the flash backend while the model runs in fp32;
# compile_fullgraph: torch.compile(fullgraph=True) over a forward that calls .item() for logging.
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
torch.manual_seed(0)
PIN_FLASH = args.scenario == "sdpa_flash_fp32"  # the run config pins attn_backend=flash


def llama(vocab=32000):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512)
    return LlamaForCausalLM(cfg)


class ChatData(torch.utils.data.Dataset):
    def __init__(self, n=2048, seq=128, vocab=32000, added=0, on_gpu=False):
        self.n, self.seq, self.vocab, self.added, self.on_gpu = n, seq, vocab, added, on_gpu

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, self.vocab, (self.seq,), generator=g)
        if self.added and i % 61 == 17:  # conversations with tool calls carry the added tokens
            ids[3] = self.vocab
            ids[40] = self.vocab + 2
        if self.on_gpu:
            ids = ids.to("cuda")
        return {"input_ids": ids, "labels": ids.clone()}


class Block(nn.Module):
    def __init__(self, d=512, h=8):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        if PIN_FLASH:
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.n2(x))


class MoELM(nn.Module):
    def __init__(self, vocab=32000, d=512, experts=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.router = nn.Linear(d, experts)
        self.head = nn.Linear(d, vocab)
        self.last_aux = 0.0

    def forward(self, ids, labels=None):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        probs = self.router(x).softmax(-1)
        aux = (probs.mean((0, 1)) ** 2).sum() * probs.size(-1)
        self.last_aux = aux.item()  # kept for the progress bar
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1)) + 0.01 * aux


def run_trainer_vocab():
    from transformers import Trainer, TrainingArguments
    model = llama()
    print("Added 4 special tokens to the tokenizer: ['<|im_start|>', '<|im_end|>', '<tool_call>', '</tool_call>'] "
          "(vocab 32000 -> 32004)", flush=True)
    targs = TrainingArguments(output_dir="/tmp/r11_trainer", per_device_train_batch_size=8, max_steps=120,
                              logging_steps=10, learning_rate=5e-4, bf16=True, report_to="none",
                              save_strategy="no", seed=0, disable_tqdm=False)
    Trainer(model=model, args=targs, train_dataset=ChatData(added=4)).train()


def run_fp16_unscale():
    from accelerate import Accelerator
    from tqdm.auto import tqdm
    acc = Accelerator(mixed_precision="fp16")
    model = llama().to(torch.float16)  # loaded with torch_dtype=torch.float16 to save memory
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    dl = torch.utils.data.DataLoader(ChatData(n=512), batch_size=8, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"***** Running training *****  num examples = 512, epochs = 1, batch size = 8, "
              f"mixed precision = {acc.mixed_precision}, device = {acc.device}")
    model.train()
    for batch in tqdm(dl, desc="Epoch 1", disable=not acc.is_local_main_process):
        loss = model(**batch).loss
        acc.backward(loss)
        acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()


def plain_loop(model, dl, epochs=1, desc="train"):
    from tqdm import tqdm
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for ep in range(epochs):
        bar = tqdm(dl, desc=f"{desc} epoch {ep + 1}/{epochs}")
        for batch in bar:
            ids = batch["input_ids"].cuda(non_blocking=True)
            loss = model(ids, labels=ids)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            bar.set_postfix(loss=f"{loss.item():.3f}")


def run_dataloader_fork():
    model = MoELM().cuda().to(torch.bfloat16)
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params on {torch.cuda.get_device_name()}", flush=True)
    dl = torch.utils.data.DataLoader(ChatData(on_gpu=True), batch_size=16, shuffle=True, num_workers=2)
    plain_loop(model, dl, desc="sft")


def run_sdpa_flash_fp32():
    model = MoELM().cuda()  # fp32: the --bf16 flag was left out
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, dtype {next(model.parameters()).dtype}", flush=True)
    dl = torch.utils.data.DataLoader(ChatData(), batch_size=16, shuffle=True, num_workers=0)
    plain_loop(model, dl, desc="pretrain")


def run_compile_fullgraph():
    model = MoELM().cuda().to(torch.bfloat16)
    print("compiling model with torch.compile(mode='max-autotune-no-cudagraphs', fullgraph=True)", flush=True)
    cmodel = torch.compile(model, mode="max-autotune-no-cudagraphs", fullgraph=True)
    dl = torch.utils.data.DataLoader(ChatData(), batch_size=16, shuffle=True, num_workers=0)
    plain_loop(cmodel, dl, desc="pretrain")


{"trainer_vocab": run_trainer_vocab, "fp16_unscale": run_fp16_unscale, "dataloader_fork": run_dataloader_fork,
 "sdpa_flash_fp32": run_sdpa_flash_fp32, "compile_fullgraph": run_compile_fullgraph}[args.scenario]()
