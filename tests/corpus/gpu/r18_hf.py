# HF-Trainer-style loops (tqdm bars, dict logs) for round 18, one real fault per --scenario:
# optim_resume: resume_from_checkpoint of a LoRA run whose optimizer.pt was saved with LoRA on q_proj,v_proj;
#   this run targets q_proj,k_proj,v_proj (the param group sizes differ);
# shm_bus: a vision fine-tune with 4 DataLoader workers in a container whose /dev/shm is 64 MB
#   (the runner mounts it so in a private mount namespace): the workers cannot place a batch in shm.
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import HF_CKPT  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()


def info(src, msg):
    print(f"[INFO|{src}] {time.strftime('%Y-%m-%d %H:%M:%S')},{int(time.time() * 1000) % 1000:03d} >> {msg}",
          flush=True)


def header(n_examples, epochs, bs, accum, steps, trainable):
    info("trainer.py:2519", "***** Running training *****")
    info("trainer.py:2520", f"  Num examples = {n_examples:,}")
    info("trainer.py:2521", f"  Num Epochs = {epochs}")
    info("trainer.py:2522", f"  Instantaneous batch size per device = {bs}")
    info("trainer.py:2525", f"  Total train batch size (w. parallel, distributed & accumulation) = {bs * accum}")
    info("trainer.py:2526", f"  Gradient Accumulation steps = {accum}")
    info("trainer.py:2527", f"  Total optimization steps = {steps:,}")
    info("trainer.py:2528", f"  Number of trainable parameters = {trainable:,}")


if args.scenario == "optim_resume":
    torch.manual_seed(0)
    layers, r, d = 4, 16, 256
    targets = ["q_proj", "k_proj", "v_proj"]
    print(f"trainable params: {layers * len(targets) * 2 * r * d:,} || all params: 7,615,616,512 || "
          f"trainable%: 0.0024", flush=True)
    base = [nn.Linear(d, d, bias=False).cuda().to(torch.bfloat16) for _ in range(layers * len(targets))]
    lora = []
    for _ in base:
        lora += [nn.Parameter(torch.randn(r, d, device="cuda") * 0.01), nn.Parameter(torch.zeros(d, r, device="cuda"))]
    opt = torch.optim.AdamW([{"params": lora, "weight_decay": 0.0}], lr=2e-4)
    info("trainer.py:2362", f"Loading model from {HF_CKPT}.")
    header(52002, 3, 4, 8, 4875, sum(p.numel() for p in lora))
    info("trainer.py:2549", "  Continuing training from checkpoint, will skip to saved global_step")
    info("trainer.py:2550", "  Continuing training from epoch 0")
    info("trainer.py:2551", "  Continuing training from global step 500")
    info("trainer.py:2553", "  Will skip the first 0 epochs then the first 4000 batches in the first epoch.")
    bar = tqdm(total=4875)
    bar.update(500)
    state = torch.load(f"{HF_CKPT}/optimizer.pt", map_location="cuda", weights_only=True)
    opt.load_state_dict(state)
    for step in range(500, 520):
        x = torch.randn(16, d, device="cuda", dtype=torch.bfloat16)
        loss = sum(((x.float() @ a.T) @ b.T).square().mean() for a, b in zip(lora[::2], lora[1::2]))
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
    bar.close()

elif args.scenario == "shm_bus":
    from torch.utils.data import DataLoader, Dataset
    import shutil

    class Frames(Dataset):
        def __len__(self):
            return 9469

        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            return torch.rand(3, 768, 768, generator=g), i % 10

    print(f"/dev/shm: {shutil.disk_usage('/dev/shm').total / 2**20:.0f} MiB", flush=True)
    model = nn.Sequential(nn.Conv2d(3, 64, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dl = DataLoader(Frames(), batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
    header(9469, 5, 32, 1, 1480, sum(p.numel() for p in model.parameters()))
    bar = tqdm(total=1480)
    for step, (x, y) in enumerate(dl):
        out = model(x.cuda(non_blocking=True))
        loss = nn.functional.cross_entropy(out, y.cuda())
        loss.backward()
        opt.step()
        opt.zero_grad()
        bar.update(1)
        if step % 5 == 4:
            tqdm.write(str({"loss": round(loss.item(), 4), "grad_norm": 0.4121, "learning_rate": 0.01,
                            "epoch": round(step / 296, 2)}))
    bar.close()
