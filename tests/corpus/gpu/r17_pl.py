# PyTorch Lightning run (round 17), --scenario monitor_key: a speech-command classifier logs its validation
# loss as "val/loss" (namespaced for the dashboard) while the config's ModelCheckpoint and EarlyStopping still
# monitor "val_loss": after the first training epoch and its validation, the checkpoint callback cannot
# find the monitored key.
import argparse
import os

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()


class KWS(pl.LightningModule):
    def __init__(self, n_mels=40, frames=101, classes=35, d=256):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Conv1d(n_mels, d, 5, padding=2), nn.GELU(), nn.Conv1d(d, d, 5, padding=2),
                                 nn.GELU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(d, classes))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        self.log("val/loss", nn.functional.cross_entropy(logits, y), prog_bar=True)
        self.log("val/acc", (logits.argmax(-1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def loaders():
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(6400, 40, 101, generator=g)
    ys = torch.randint(0, 35, (6400,), generator=g)
    tr = TensorDataset(xs[:5120], ys[:5120])
    va = TensorDataset(xs[5120:], ys[5120:])
    return DataLoader(tr, batch_size=128, shuffle=True), DataLoader(va, batch_size=256)


if __name__ == "__main__":
    pl.seed_everything(42)
    os.makedirs("/tmp/r17_pl", exist_ok=True)
    ckpt = pl.callbacks.ModelCheckpoint(dirpath="/tmp/r17_pl/ckpt", monitor="val_loss", mode="min", save_top_k=3,
                                        filename="kws-{epoch:02d}-{val_loss:.3f}")
    early = pl.callbacks.EarlyStopping(monitor="val_loss", mode="min", patience=5)
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=20, precision="bf16-mixed",
                         callbacks=[ckpt, early], default_root_dir="/tmp/r17_pl", log_every_n_steps=10,
                         enable_model_summary=True)
    tr, va = loaders()
    trainer.fit(KWS(), tr, va)
