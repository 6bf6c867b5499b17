# Training-shaped scenarios of round 32, one real fault (or none) per --scenario:
# sub_bincount: a data-prep sweep runs a label-statistics child per shard with subprocess.run(check=True); the third
#   shard's labels keep the -100 ignore index and torch.bincount on the GPU refuses negative values: the child's
#   traceback, then the parent's CalledProcessError traceback after it;
# tr_singular: torchrun, 2 ranks (gloo for the host-side sync): a Shampoo-style preconditioner inverts its statistics
#   with torch.linalg.inv; rank 1's block of a dead embedding row is singular at step 40: _LinAlgError on rank 1,
#   rank 0 waits in its all_reduce and is stopped; ChildFailedError;
# warn_finish: a fine-tune with deprecated AMP calls and its LR scheduler stepped before the optimizer: warnings, then
#   training finishes and saves (no crash);
# recompile_warn: torch.compile over a loss whose Python-int sequence length changes every batch: dynamo recompiles
#   until its recompile limit, warns and runs that frame eagerly; training finishes (no crash).
# ruff: noqa: E501
import argparse
import logging
import os
import subprocess
import sys
import time
import warnings

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("__main__")


# ---------------------------------------------------------------- sub_bincount
def label_stats(shard):
    import torch

    g = torch.Generator().manual_seed(shard)
    labels = torch.randint(0, 32000, (64, 2048), generator=g)
    if shard == 3:  # this shard came from the SFT packer, prompt tokens masked with the ignore index
        labels[:, :700] = -100
    labels = labels.cuda()
    counts = torch.bincount(labels.flatten(), minlength=32000)
    print(f"shard {shard:03d}: {labels.numel()} labels, {int((counts > 0).sum())} distinct, top id {int(counts.argmax())}", flush=True)


def sub_bincount(a):
    if a.shard is not None:
        label_stats(a.shard)
        return
    log.info("label statistics sweep over 6 shards of /data/sft-mix-v3/tokenized (one process per shard)")
    for shard in range(6):
        log.info(f"shard {shard}: starting child")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--scenario", "sub_bincount", "--shard", str(shard)], check=True)
    log.info("all shards done")


# ---------------------------------------------------------------- tr_singular
def tr_singular(a):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    fmt = logging.Formatter(f"[rank{rank}]:%(asctime)s %(levelname)s shampoo: %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    lg = logging.getLogger("shampoo")
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(fmt)
    lg.handlers[:] = [h]
    lg.propagate = False
    dist.init_process_group("gloo")
    torch.cuda.set_device(0)
    torch.manual_seed(rank)
    d = 256
    w = torch.randn(d, d, device="cuda") * 0.05
    stats = torch.eye(d, device="cuda") * 1e-3
    for step in range(1, 200):
        x = torch.randn(512, d, device="cuda")
        if rank == 1 and step >= 40:
            x[:, 17] = 0  # a dead embedding row: its statistics column stays zero
            stats[17, :] = 0
            stats[:, 17] = 0
        g = x.T @ torch.tanh(x @ w) / 512
        stats = 0.9 * stats + 0.1 * (g @ g.T)
        if rank == 1 and step >= 40:
            stats[17, :] = 0
            stats[:, 17] = 0
        if step % 20 == 0:
            precond = torch.linalg.inv(stats)  # root inverse approximated by the inverse of the statistics
            w -= 1e-4 * precond @ g
        t = torch.tensor([float(g.norm())])
        dist.all_reduce(t)
        if step % 10 == 0:
            lg.info(f"step {step} loss {float((x @ w).pow(2).mean()):.4f} grad_norm {t.item() / 2:.4f}")
        time.sleep(0.02)
    dist.destroy_process_group()


# ---------------------------------------------------------------- warn_finish
def warn_finish(a):
    import torch
    from tqdm import tqdm

    warnings.simplefilter("default")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-4, total_steps=400)
    scaler = torch.cuda.amp.GradScaler()
    log.info("***** Running training *****")
    log.info("  Num examples = 25600, Num Epochs = 1, Instantaneous batch size per device = 64, Total optimization steps = 400")
    sched.step()  # warm-start the schedule (a leftover from the resume path)
    bar = tqdm(range(400), desc="train", mininterval=1.0)
    for step in bar:
        x = torch.randn(64, 512, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step < 399:
            sched.step()
        if step % 100 == 99:
            bar.write(f"{{'loss': {loss.item():.4f}, 'learning_rate': {sched.get_last_lr()[0]:.3e}, 'epoch': {step / 400:.2f}}}")
    bar.close()
    os.makedirs("/tmp/r32_out/cls-head", exist_ok=True)
    torch.save(model.state_dict(), "/tmp/r32_out/cls-head/model.pt")
    log.info("Saving model checkpoint to /tmp/r32_out/cls-head")
    log.info("{'train_runtime': 6.1, 'train_samples_per_second': 4196.7, 'train_loss': 2.3051, 'epoch': 1.0}")


# ---------------------------------------------------------------- recompile_warn
def recompile_warn(a):
    import torch
    from tqdm import tqdm

    torch.manual_seed(0)
    emb = torch.nn.Embedding(32000, 256).cuda()
    head = torch.nn.Linear(256, 32000).cuda()
    opt = torch.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=1e-3)

    @torch.compile(dynamic=False)
    def lm_loss(ids, n_real):
        h = emb(ids[:, :n_real])
        logits = head(h)
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 32000), ids[:, 1:n_real].reshape(-1))

    log.info("compiling lm_loss with torch.compile(dynamic=False); sequences are packed to their real length")
    bar = tqdm(range(40), desc="steps", mininterval=1.0)
    for step in bar:
        ids = torch.randint(0, 32000, (8, 512), device="cuda")
        n_real = 120 + 9 * step  # a Python int: one specialization per value
        loss = lm_loss(ids, n_real)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 9:
            bar.write(f"step {step + 1}: loss {loss.item():.4f}")
    bar.close()
    log.info("training done, 40 steps")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--shard", type=int, default=None)
    a = ap.parse_args()
    globals()[a.scenario](a)


if __name__ == "__main__":
    main()
