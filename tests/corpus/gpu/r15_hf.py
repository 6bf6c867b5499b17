# Hugging Face / accelerate-shaped fine-tuning scripts (round 15), one real fault per --scenario:
# vocab_assert: SFT with the HF Trainer on a Llama model after two chat special tokens were added to the
#   tokenizer without resize_token_embeddings: token ids past the embedding (device-side assert);
# sdpa_flash_fp32: an accelerate loop that pins SDPA to the flash backend but trains in float32.
import argparse
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def vocab_assert():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    cfg = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    print("Loaded /ckpt/llama-2-7b-hf-mini (4 layers) with 32000-token vocabulary", flush=True)
    print("Added special tokens ['<|im_start|>', '<|im_end|>'] for the ChatML template; len(tokenizer)=32002", flush=True)

    class ChatData(torch.utils.data.Dataset):
        def __len__(self):
            return 2048

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            ids = torch.randint(3, 32000, (256,), generator=g)
            for start in (0, 40, 120):  # <|im_start|>role ... <|im_end|>
                ids[start] = 32000
                ids[start + 30] = 32001
            return {"input_ids": ids, "labels": ids.clone(), "attention_mask": torch.ones(256, dtype=torch.long)}

    targs = TrainingArguments(output_dir="/tmp/r15_sft", per_device_train_batch_size=8, max_steps=200,
                              logging_steps=10, learning_rate=2e-5, report_to="none", save_strategy="no",
                              bf16=True, seed=0, disable_tqdm=False, dataloader_num_workers=0)
    Trainer(model=model, args=targs, train_dataset=ChatData()).train()


def sdpa_flash_fp32():
    import torch
    import torch.nn as nn
    from accelerate import Accelerator
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from tqdm.auto import tqdm

    class Block(nn.Module):
        def __init__(self, d=768, h=12):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # attn_implementation="flash_attention_2"
                a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=50304, d=768, layers=6):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.blocks = nn.ModuleList([Block(d) for _ in range(layers)])
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for b in self.blocks:
                x = b(x)
            return self.head(x)

    acc = Accelerator(mixed_precision="no")
    torch.manual_seed(0)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    data = torch.utils.data.TensorDataset(torch.randint(0, 50304, (4096, 1024)))
    dl = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, num_workers=2, pin_memory=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"***** Running training *****\n  Num examples = {len(data)}\n  Num Epochs = 1\n"
              f"  Instantaneous batch size per device = 8\n  Total optimization steps = {len(dl)}\n"
              f"  Mixed precision = {acc.mixed_precision}\n  attn_implementation = flash_attention_2")
    bar = tqdm(dl, desc="Training", disable=not acc.is_local_main_process)
    for step, (ids,) in enumerate(bar, start=1):
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), ids.view(-1))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
    acc.print("training done")


{"vocab_assert": vocab_assert, "sdpa_flash_fp32": sdpa_flash_fp32}[args.scenario]()
