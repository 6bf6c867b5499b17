# PyTorch Lightning run (round 15), --scenario anomaly_nan: a contrastive retriever normalizes embeddings
# with h / h.norm(); the last shard of the dataset carries padding rows (mask 0, zero vectors): 0/0 in the
# forward, Trainer(detect_anomaly=True) stops in the backward.
import argparse

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Retriever(pl.LightningModule):
    def __init__(self, d_in=256, d=512, classes=64):
        super().__init__()
        self.save_hyperparameters()
        self.enc = nn.Sequential(nn.Linear(d_in, d), nn.GELU(), nn.Linear(d, d_in))
        self.proto = nn.Parameter(torch.randn(classes, d_in))

    def training_step(self, batch, i):
        x, mask, y = batch
        h = self.enc(x) * mask[:, None]
        z = h / h.norm(dim=-1, keepdim=True)
        p = self.proto / self.proto.norm(dim=-1, keepdim=True)
        loss = nn.functional.cross_entropy(20.0 * z @ p.T, y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="anomaly_nan")
    args = ap.parse_args()
    pl.seed_everything(7)
    torch.set_float32_matmul_precision("high")
    g = torch.Generator().manual_seed(0)
    n = 28672
    x = torch.randn(n, 256, generator=g)
    y = x[:, :64].argmax(1)
    mask = torch.ones(n)
    mask[25700::97] = 0.0  # the last shard was padded to the full batch size
    dl = DataLoader(TensorDataset(x, mask, y), batch_size=256, shuffle=False, num_workers=2)
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=3, detect_anomaly=True, logger=False,
                         enable_checkpointing=False, log_every_n_steps=10)
    trainer.fit(Retriever(), dl)
