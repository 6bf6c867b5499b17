# HuggingFace / accelerate-shaped fine-tuning scripts (round 14), one real fault per --scenario:
# fft_fp16: HF Trainer on an FNet-style (Fourier token mixing) encoder loaded in fp16 with 384-token
#   inputs: cuFFT's half-precision transforms need power-of-two sizes;
# lock_deadlock: accelerate loop whose metrics logger holds a non-reentrant Lock and calls the
#   checkpoint hook that takes the same Lock; faulthandler's hang timer dumps the stacks and exits;
# pack_memerror: dataset packing (tokenize, then one dense int64 array) under the job's address-space
#   ulimit: numpy cannot allocate the packed array.
import argparse
import faulthandler
import os
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def fnet_trainer():
    import torch
    import torch.nn as nn
    from transformers import Trainer, TrainingArguments

    class FNetBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = self.ln1(x + torch.fft.fft2(x, dim=(-2, -1)).real)  # Fourier token mixing
            return self.ln2(x + self.ff(x))

    class FNetForSequenceClassification(nn.Module):
        def __init__(self, vocab=30522, d=512, layers=4, labels=3, max_len=512):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(max_len, d)
            self.blocks = nn.ModuleList([FNetBlock(d) for _ in range(layers)])
            self.cls = nn.Linear(d, labels)

        def forward(self, input_ids, labels=None):
            pos = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.emb(input_ids) + self.pos(pos)
            for b in self.blocks:
                x = b(x)
            logits = self.cls(x[:, 0])
            loss = nn.functional.cross_entropy(logits.float(), labels) if labels is not None else None
            return {"loss": loss, "logits": logits}

    class NLIData(torch.utils.data.Dataset):
        def __len__(self):
            return 4096

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            return {"input_ids": torch.randint(0, 30522, (384,), generator=g), "labels": torch.tensor(i % 3)}

    torch.manual_seed(0)
    model = FNetForSequenceClassification().to(torch.float16)  # checkpoint loaded with torch_dtype=torch.float16
    print(f"FNet-base (fp16) {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params; max_seq_length=384", flush=True)
    targs = TrainingArguments(output_dir="/tmp/r14_fnet", per_device_train_batch_size=32, num_train_epochs=1,
                              logging_steps=10, learning_rate=3e-5, report_to="none", save_strategy="no",
                              seed=0, disable_tqdm=False, dataloader_num_workers=0)
    Trainer(model=model, args=targs, train_dataset=NLIData()).train()


class MetricsLogger:
    def __init__(self, save_every):
        self.lock = threading.Lock()
        self.history = []
        self.save_every = save_every
        self.step = 0

    def log_metrics(self, step, loss, lr):
        with self.lock:
            self.step = step
            self.history.append((step, loss, lr))
            if step % self.save_every == 0:
                self.maybe_save()

    def maybe_save(self):
        with self.lock:  # the checkpoint hook snapshots history under the same (non-reentrant) lock
            snapshot = list(self.history)
        return snapshot


def accelerate_loop():
    import torch
    import torch.nn as nn
    from accelerate import Accelerator
    from tqdm.auto import tqdm
    faulthandler.dump_traceback_later(15, exit=True)  # hang watchdog, re-armed every step
    acc = Accelerator(mixed_precision="bf16")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(32000, 768), nn.Linear(768, 3072), nn.GELU(), nn.Linear(3072, 768),
                          nn.Linear(768, 32000))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.utils.data.TensorDataset(torch.randint(0, 32000, (8192, 256)))
    dl = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True, num_workers=2, pin_memory=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"***** Running training *****\n  Num examples = {len(data)}\n  Num Epochs = 1\n"
              f"  Instantaneous batch size per device = 16\n  Total optimization steps = {len(dl)}\n"
              f"  Mixed precision = {acc.mixed_precision}")
    metrics = MetricsLogger(save_every=100)
    bar = tqdm(dl, desc="Training", disable=not acc.is_local_main_process)
    for step, (ids,) in enumerate(bar, start=1):
        faulthandler.dump_traceback_later(15, exit=True)
        with acc.autocast():
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits.float().view(-1, 32000), ids.view(-1))
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            l = loss.item()
            bar.set_postfix(loss=f"{l:.4f}")
            metrics.log_metrics(step, l, 1e-4)
    faulthandler.cancel_dump_traceback_later()
    acc.print("training done")


def pack_dataset():
    import numpy as np
    from tqdm import tqdm
    from transformers import AutoTokenizer
    from r14_common import TOK_GOOD
    tok = AutoTokenizer.from_pretrained(TOK_GOOD)
    rng = np.random.default_rng(0)
    print(f"Loading dataset json files from /data/pile-dedup/train/*.jsonl.zst (750 shards, showing shard 0)", flush=True)
    docs = [" ".join(f"tok{j}" for j in rng.integers(5, 6000, size=int(n))) for n in rng.integers(50, 800, size=20000)]
    lens = []
    for i in tqdm(range(0, len(docs), 1000), desc="Running tokenizer on dataset", unit="ba"):
        enc = tok(docs[i:i + 1000])["input_ids"]
        lens.extend(len(e) for e in enc)
    per_shard = int(np.sum(lens))
    total = per_shard * 750  # 750 shards like this one
    seq_len = 4096
    n_rows = total // seq_len
    print(f"Grouping texts in chunks of {seq_len}: {total:,} tokens -> {n_rows:,} sequences", flush=True)
    packed = np.zeros((n_rows, seq_len), dtype=np.int64)
    print(packed.shape)


{"fft_fp16": fnet_trainer, "lock_deadlock": accelerate_loop, "pack_memerror": pack_dataset}[args.scenario]()
