# A PyTorch Lightning run (round 11): precision="bf16-true" casts the module to bf16, and the ZCA
# whitening refresh every 25 steps calls torch.linalg.eigh on a bf16 covariance (no bf16 kernel).
import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class WhitenedMLP(pl.LightningModule):
    def __init__(self, d_in=256, d=512, classes=10):
        super().__init__()
        self.proj = nn.Linear(d_in, d)
        self.body = nn.Sequential(nn.GELU(), nn.Linear(d, d), nn.GELU(), nn.Linear(d, classes))
        self.register_buffer("W", torch.eye(d))

    def training_step(self, batch, i):
        x, y = batch
        h = self.proj(x)
        if self.global_step > 0 and self.global_step % 25 == 0:
            hc = h - h.mean(0)
            cov = hc.T @ hc / h.size(0) + 1e-3 * torch.eye(h.size(1), device=h.device, dtype=h.dtype)
            evals, evecs = torch.linalg.eigh(cov)
            self.W = evecs @ torch.diag(evals.rsqrt()) @ evecs.T
        loss = nn.functional.cross_entropy(self.body(h @ self.W), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    pl.seed_everything(7)
    x = torch.randn(16384, 256)
    y = (x[:, :10].argmax(1))
    dl = DataLoader(TensorDataset(x, y), batch_size=128, shuffle=True)
    trainer = pl.Trainer(accelerator="gpu", devices=1, precision="bf16-true", max_epochs=3,
                         log_every_n_steps=10, enable_checkpointing=False, logger=False)
    trainer.fit(WhitenedMLP(), dl)
