# Training-loop scenarios for round 30 (HF/accelerate-style loops with tqdm, Lightning, a DataLoader, an eval script):
# ckpt_recompute: a ViT with token dropping (how many patches to keep drawn with Python's `random`, which
#   torch.utils.checkpoint does not restore) under non-reentrant activation checkpointing: the backward's recompute keeps
#   another number of tokens -> CheckpointError "Recomputed values ... have different metadata";
# sparse_adam: a recommender whose nn.Embedding(sparse=True) tables go into torch.optim.Adam -> "Adam does not support
#   sparse gradients" at the first optimizer step;
# resume_noopt: a resumed fine-tune whose checkpoint folder lacks optimizer.pt (saved with save_only_model): the
#   FileNotFoundError is caught, a warning says the optimizer starts fresh, the run finishes (no crash);
# spawn_pickle: a DataLoader with multiprocessing_context="spawn" and a collate_fn defined inside main(): the
#   workers cannot be started (pickling a local function) at the first batch;
# lt_log_vector: Lightning module logging per-class accuracy (a 10-element tensor) with self.log at validation end
#   -> Lightning's "the tensor must have a single element";
# pipe_head: an eval script's output piped through `head -n 30` by its wrapper script: once head exits the script's
#   next print raises BrokenPipeError (and the interpreter's flush at exit too).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import json
import logging
import os
import random
import sys
import time

ROOT = os.environ.get("R30_ROOT", "/tmp/r30_files")
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("__main__")


# ---------------------------------------------------------------- ckpt_recompute
def ckpt_recompute():
    import torch
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint
    from tqdm.auto import tqdm

    class TokenDropBlock(nn.Module):
        def __init__(self, d=512, keep=(0.5, 0.9)):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
            self.keep = keep

        def forward(self, x):
            n = x.shape[1]
            k = max(1, int(n * random.uniform(*self.keep)))  # how many patch tokens survive this layer
            return self.layer(x[:, :k])

    class ViT(nn.Module):
        def __init__(self, d=512, depth=6):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 16, 16)
            self.blocks = nn.ModuleList(TokenDropBlock(d) for _ in range(depth))
            self.head = nn.Linear(d, 100)
            self.gradient_checkpointing = True

        def forward(self, x):
            h = self.patch(x).flatten(2).transpose(1, 2)
            for b in self.blocks:
                h = checkpoint(b, h, use_reentrant=False) if self.gradient_checkpointing and self.training else b(h)
            return self.head(h.mean(1))

    log.info("***** Running training *****")
    log.info("  Num examples = 50000")
    log.info("  Num Epochs = 30")
    log.info("  Instantaneous batch size per device = 64")
    log.info("  Gradient checkpointing = True (use_reentrant=False)")
    torch.manual_seed(0)
    random.seed(0)
    model = ViT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in tqdm(range(23440), desc="Training", dynamic_ncols=False, ncols=100, mininterval=0):
        x = torch.randn(64, 3, 224, 224, device="cuda")
        y = torch.randint(0, 100, (64,), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


# ---------------------------------------------------------------- sparse_adam
def sparse_adam():
    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm

    class TwoTower(nn.Module):
        def __init__(self, n_users=2_000_000, n_items=500_000, d=128):
            super().__init__()
            self.user = nn.Embedding(n_users, d, sparse=True)
            self.item = nn.Embedding(n_items, d, sparse=True)
            self.mlp = nn.Sequential(nn.Linear(2 * d, 256), nn.ReLU(), nn.Linear(256, 1))

        def forward(self, u, i):
            return self.mlp(torch.cat([self.user(u), self.item(i)], -1)).squeeze(-1)

    log.info("building two-tower model: users=2,000,000 items=500,000 dim=128 (sparse embedding gradients)")
    model = TwoTower().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info(f"optimizer: {type(opt).__name__}(lr=1e-3) over {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
    for step in tqdm(range(50000), desc="epoch 0", ncols=100, mininterval=0):
        u = torch.randint(0, 2_000_000, (4096,), device="cuda")
        i = torch.randint(0, 500_000, (4096,), device="cuda")
        y = torch.rand(4096, device="cuda")
        loss = nn.functional.binary_cross_entropy_with_logits(model(u, i), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


# ---------------------------------------------------------------- resume_noopt
def resume_noopt():
    import warnings

    import torch
    import torch.nn as nn
    from tqdm.auto import tqdm

    ck = f"{ROOT}/sft-run-17/checkpoint-1200"
    os.makedirs(ck, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(32000, 512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 32000))
    torch.save(model.state_dict(), f"{ck}/pytorch_model.bin")
    json.dump({"global_step": 1200, "epoch": 0.48, "best_metric": None}, open(f"{ck}/trainer_state.json", "w"))
    log.info(f"Loading model from {ck}.")
    model.load_state_dict(torch.load(f"{ck}/pytorch_model.bin", map_location="cpu", weights_only=True))
    model.cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    try:
        opt.load_state_dict(torch.load(f"{ck}/optimizer.pt", map_location="cuda", weights_only=True))
    except FileNotFoundError as e:
        log.warning(f"Could not load optimizer state ({e}); the checkpoint was probably saved with save_only_model=True. Optimizer and scheduler start from scratch.")
    warnings.warn("Resuming from a checkpoint without RNG state (rng_state.pth not found): data order will differ from an uninterrupted run.", UserWarning, stacklevel=1)
    state = json.load(open(f"{ck}/trainer_state.json"))
    log.info("***** Running training *****")
    log.info("  Continuing training from checkpoint, will skip to saved global_step")
    log.info(f"  Continuing training from global step {state['global_step']}")
    total = 1500
    bar = tqdm(total=total, initial=state["global_step"], desc="Training", ncols=100, mininterval=0)
    for step in range(state["global_step"] + 1, total + 1):
        x = torch.randint(0, 32000, (16, 256), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1).float(), x[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
        if step % 100 == 0:
            tqdm.write(json.dumps({"loss": round(loss.item(), 4), "learning_rate": 2e-5, "epoch": round(step / 2500, 2)}))
    bar.close()
    os.makedirs(f"{ROOT}/sft-run-17/final", exist_ok=True)
    torch.save(model.state_dict(), f"{ROOT}/sft-run-17/final/pytorch_model.bin")
    log.info(f"Saving model checkpoint to {ROOT}/sft-run-17/final")
    print(json.dumps({"train_runtime": 31.2, "train_samples_per_second": 153.1, "train_loss": round(loss.item(), 4), "epoch": 0.6}))


# ---------------------------------------------------------------- spawn_pickle
class Shards:
    """Tokenized pretraining shards (map-style dataset)."""

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        import torch

        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 50000, (int(torch.randint(64, 512, (1,), generator=g)),), generator=g)}


def spawn_pickle():
    import torch
    from torch.utils.data import DataLoader

    pad_id = 0

    def collate(batch):  # pads to the longest sequence of the batch
        n = max(b["input_ids"].shape[0] for b in batch)
        ids = torch.full((len(batch), n), pad_id)
        for j, b in enumerate(batch):
            ids[j, : b["input_ids"].shape[0]] = b["input_ids"]
        return {"input_ids": ids, "attention_mask": ids != pad_id}

    torch.cuda.init()
    log.info(f"CUDA initialized on {torch.cuda.get_device_name(0)}; DataLoader workers use the 'spawn' start method")
    dl = DataLoader(Shards(), batch_size=32, num_workers=4, collate_fn=collate, multiprocessing_context="spawn",
                    persistent_workers=True, pin_memory=True)
    model = torch.nn.Embedding(50000, 256).cuda()
    log.info(f"train dataloader: {len(dl)} batches, 4 workers")
    for step, batch in enumerate(dl):
        model(batch["input_ids"].cuda()).sum().backward()
        if step % 50 == 0:
            log.info(f"step {step}")


# ---------------------------------------------------------------- lt_log_vector
def lt_log_vector():
    import lightning as L
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    class Classifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(), nn.Linear(512, 10))
            self.correct = torch.zeros(10)
            self.count = torch.zeros(10)

        def training_step(self, batch, i):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, i):
            x, y = batch
            pred = self.net(x).argmax(-1)
            for c in range(10):
                m = y == c
                self.correct[c] += (pred[m] == c).sum().item()
                self.count[c] += m.sum().item()

        def on_validation_epoch_end(self):
            per_class = self.correct / self.count.clamp(min=1)
            self.log("val_acc_per_class", per_class)
            self.log("val_acc", per_class.mean(), prog_bar=True)
            self.correct.zero_()
            self.count.zero_()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)

    torch.manual_seed(0)
    x = torch.randn(8192, 3, 32, 32)
    y = torch.randint(0, 10, (8192,))
    tr = DataLoader(TensorDataset(x[:7168], y[:7168]), batch_size=128, shuffle=True)
    va = DataLoader(TensorDataset(x[7168:], y[7168:]), batch_size=256)
    trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=5, num_sanity_val_steps=0, logger=False,
                        enable_checkpointing=False)
    trainer.fit(Classifier(), tr, va)


# ---------------------------------------------------------------- pipe_head
def pipe_head():
    import torch

    print(f"[eval] {time.strftime('%F %T')} device={torch.cuda.get_device_name(0)} model=/ckpt/ppl-eval/step-30000")
    torch.manual_seed(0)
    emb = torch.randn(32000, 1024, device="cuda", dtype=torch.bfloat16) * 0.02
    head = torch.randn(32000, 1024, device="cuda", dtype=torch.bfloat16) * 0.02
    total = 0.0
    for i in range(400):
        ids = torch.randint(0, 32000, (8, 512), device="cuda")
        logits = (emb[ids] @ head.T).float()
        nll = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        total += nll.item()
        print(f"[eval] shard {i:04d}/400 nll={nll.item():.4f} ppl={torch.exp(nll).item():.2f} running_ppl={torch.exp(torch.tensor(total / (i + 1))).item():.2f}")
        time.sleep(0.01)
    print(f"[eval] done: ppl={torch.exp(torch.tensor(total / 400)).item():.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    globals()[a.scenario]()


if __name__ == "__main__":
    main()
