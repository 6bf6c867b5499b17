# torchrun-launched scenarios for round 29 (two ranks share the one GPU; gloo for the host-side collectives):
# pin_cuda: the dataset was "sped up" by moving every sample to the GPU once at start-up, while the DataLoader still
#   has pin_memory=True: pinning a CUDA tensor fails in both ranks at the first batch; @record and the elastic agent's
#   ChildFailedError table follow;
# sigint: a healthy two-rank run that the operator stops with Ctrl-C (SIGINT to every process of the job): the ranks'
#   KeyboardInterrupt and the agent's SignalException (no crash; an operator's stop).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import datetime
import logging
import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
DEV = os.environ.get("R29_DEV", "cuda")  # cpu: a local check of the shape
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"[rank{rank}]:%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
log = logging.getLogger("finetune_cls")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def build(num_classes=20, d=512):
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(256, d)
            layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 4)
            self.head = nn.Linear(d, num_classes)

        def forward(self, x):
            return self.head(self.enc(self.proj(x)).mean(1))

    return Encoder()


class FeatureDataset:
    """Precomputed audio features (n, 64 frames, 256 dims) with labels, held in memory."""

    def __init__(self, n, device):
        import torch

        g = torch.Generator().manual_seed(rank)
        self.x = torch.randn(n, 64, 256, generator=g).to(device)
        self.y = torch.randint(0, 20, (n,), generator=g).to(device)

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        return self.x[i], self.y[i]


@record
def main():
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    if DEV == "cuda":
        torch.cuda.set_device(0)
    log.info(f"process group ready: backend=gloo world_size={world} local_rank={os.environ.get('LOCAL_RANK')} device=cuda:0")
    torch.manual_seed(7)
    model = build().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    n = torch.tensor([sum(p.numel() for p in model.parameters())])
    dist.all_reduce(n)
    log.info(f"model params={int(n) // world / 1e6:.2f}M")
    if a.scenario == "pin_cuda":
        ds = FeatureDataset(2048, DEV)
        log.info(f"dataset: {len(ds)} clips of {tuple(ds.x.shape[1:])} features preloaded to {ds.x.device} ({ds.x.numel() * 4 / 2**20:.0f} MiB)")
    else:
        ds = FeatureDataset(2048, "cpu")
        log.info(f"dataset: {len(ds)} clips of {tuple(ds.x.shape[1:])} features")
    dl = DataLoader(ds, batch_size=32, shuffle=True, pin_memory=DEV == "cuda", num_workers=0, drop_last=True)
    log.info(f"starting epoch 0: {len(dl)} steps/epoch, batch_size=32 per rank")
    step = 0
    for epoch in range(100):
        for x, y in dl:
            x, y = x.to(DEV, non_blocking=True), y.to(DEV, non_blocking=True)
            with torch.autocast(DEV, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x).float(), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            if step % 10 == 0:
                t = loss.detach().cpu().reshape(1)
                dist.all_reduce(t)
                log.info(f"epoch {epoch} step {step} loss {t.item() / world:.4f}")
            time.sleep(0.02)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
