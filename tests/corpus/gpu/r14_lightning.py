# PyTorch Lightning runs (round 14), --scenario:
# devices2: a DDP config for two GPUs launched on a one-GPU machine;
# ckpt_truncated: resume from last.ckpt that was cut short (the node was preempted while saving);
# --prep: one short run that writes /tmp/r14_ckpt/last.ckpt, then cuts it to 55 % of its size.
import argparse
import os

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

CKPT_DIR = "/tmp/r14_ckpt"


class ResNetLite(pl.LightningModule):
    def __init__(self, d_in=512, d=1024, classes=100):
        super().__init__()
        self.save_hyperparameters()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                     for _ in range(6)])
        self.out = nn.Linear(d, classes)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        return self.out(h)

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        acc = (self(x).argmax(-1) == y).float().mean()
        self.log("val_acc", acc, prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)}


def loaders():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32768, 512, generator=g)
    y = x[:, :100].argmax(1)
    return (DataLoader(TensorDataset(x[:28672], y[:28672]), batch_size=256, shuffle=True, num_workers=2),
            DataLoader(TensorDataset(x[28672:], y[28672:]), batch_size=512, num_workers=2))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="ckpt_truncated")
    ap.add_argument("--prep", action="store_true")
    args = ap.parse_args()
    pl.seed_everything(1234)
    torch.set_float32_matmul_precision("high")
    train_dl, val_dl = loaders()
    if args.prep:
        ck = pl.callbacks.ModelCheckpoint(dirpath=CKPT_DIR, save_last=True, every_n_epochs=1)
        trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=2, callbacks=[ck], logger=False,
                             enable_progress_bar=False)
        trainer.fit(ResNetLite(), train_dl, val_dl)
        last = os.path.join(CKPT_DIR, "last.ckpt")
        data = open(last, "rb").read()
        with open(last, "wb") as f:
            f.write(data[: int(len(data) * 0.55)])
        print(f"prep: {last} cut to {int(len(data) * 0.55)} of {len(data)} bytes")
    elif args.scenario == "devices2":
        print("config: configs/resnetlite_ddp_2gpu.yaml (strategy=ddp, devices=2, precision=bf16-mixed)", flush=True)
        trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", precision="bf16-mixed", max_epochs=20,
                             logger=False)
        trainer.fit(ResNetLite(), train_dl, val_dl)
    else:
        trainer = pl.Trainer(accelerator="gpu", devices=1, precision="bf16-mixed", max_epochs=20,
                             logger=pl.loggers.CSVLogger("/tmp/r14_logs"),
                             callbacks=[pl.callbacks.ModelCheckpoint(dirpath=CKPT_DIR, save_last=True)])
        trainer.fit(ResNetLite(), train_dl, val_dl, ckpt_path=os.path.join(CKPT_DIR, "last.ckpt"))
