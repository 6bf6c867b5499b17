# torchrun-launched (or Slurm-task-launched) training scenarios for round 21; two ranks share the one GPU, gloo for
# the collectives; one real fault (or none) per --scenario:
# restart_recover: rank 0 reads the dataset index that the data-prep job is still writing (it streams the JSON out
#   as it tokenizes, straight to the final path): the partial file does not parse; torchrun --max-restarts 1
#   restarts the worker group (by then the index is whole). Meant to recover; on the H100 run of 2026-12-06 the
#   restarted ranks could not form the gloo mesh (connection refused to the first attempt's peer address) and the
#   job failed;
# determinism: the reproducibility flag turns on torch.use_deterministic_algorithms(True) and the job's environment
#   has no CUBLAS_WORKSPACE_CONFIG; meant to make the first cuBLAS GEMM refuse, but PyTorch 2.11 did not: the run
#   is healthy;
# fsdp_flat: FSDP (use_orig_params=False) over a model whose embeddings are frozen (freeze_embeddings=true): the
#   root FlatParameter would mix frozen and trainable tensors (both ranks);
# inplace_noise: DDP; from step 30 the "gate noise" augmentation adds noise in place to the sigmoid gate, whose
#   output autograd saved for the backward (both ranks);
# master_addr: started by an sbatch script with srun (one task per GPU, SLURM_* variables mapped to RANK /
#   WORLD_SIZE / LOCAL_RANK by the script) that never exports MASTER_ADDR / MASTER_PORT.
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r21_common import ROOT  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--write-index", action="store_true", help="the data-prep job (restart_recover)")
args = ap.parse_args()
INDEX = f"{ROOT}/data/fineweb-edu-10BT/index.json"
if "SLURM_PROCID" in os.environ:  # the job script's own mapping
    os.environ["RANK"] = os.environ["SLURM_PROCID"]
    os.environ["WORLD_SIZE"] = os.environ["SLURM_NTASKS"]
    os.environ["LOCAL_RANK"] = os.environ["SLURM_LOCALID"]
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
DEV = "cpu" if os.environ.get("SHAPES_DRY") == "1" else "cuda"


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}]: {msg}", flush=True)


class Block(nn.Module):
    def __init__(self, d, gate_noise=False):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up, self.gate, self.down = nn.Linear(d, 4 * d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gate_noise = 0.0

    def forward(self, x):
        h = self.norm(x)
        g = torch.sigmoid(self.gate(h))
        if self.training and self.gate_noise > 0:
            g.add_(torch.randn_like(g) * self.gate_noise)  # regularizing noise on the gate
        return x + self.down(self.up(h) * g)


class LM(nn.Module):
    def __init__(self, vocab=32000, d=512, n=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def train_steps(model, opt, steps, bs=8, seq=512, every=10, on_step=None):
    t0 = time.perf_counter()
    if DEV == "cpu":  # the local dry run
        bs, seq = 2, 16
    for step in range(1, steps + 1):
        if on_step:
            on_step(step)
        ids = torch.randint(0, 32000, (bs, seq + 1), device=DEV)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % every == 0:
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            if rank == 0:
                log(f"step {step:5d} | loss {lv.item() / world:.4f} | "
                    f"{(time.perf_counter() - t0) / step * 1000:.0f} ms/step")


def write_index():
    """The data-prep job: tokenizes shard after shard and streams the index out to its final path."""
    import random
    os.makedirs(os.path.dirname(INDEX), exist_ok=True)
    rnd = random.Random(0)
    with open(INDEX, "w") as f:
        f.write('{"version": 2, "tokenizer": "meta-llama/Llama-3.1-8B", "docs": [')
        first = True
        for shard in range(64):
            rows = []
            off = 0
            for _ in range(4000):
                n = rnd.randint(64, 8192)
                rows.append(f'{{"shard": "shard-{shard:05d}.bin", "offset": {off}, "length": {n}}}')
                off += n
            f.write(("" if first else ", ") + ", ".join(rows))
            first = False
            f.flush()
            time.sleep(0.5 if shard == 0 else 0.01)  # tokenizing the next shard
        f.write("]}\n")
    print(f"index written: {INDEX}", flush=True)


@record
def main():
    sc = args.scenario
    if DEV == "cuda":
        torch.cuda.set_device(0)
    if sc == "determinism":
        torch.manual_seed(1234)
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    log(f"initialized process group: backend=gloo world_size={world} device={DEV}:0"
        + (f" ({torch.cuda.get_device_name()})" if DEV == "cuda" else ""))

    if sc == "restart_recover":
        attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
        torch.manual_seed(0)
        model = LM().to(DEV)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        if rank == 0:
            log(f"attempt {attempt}: loading dataset index {INDEX}")
            while not os.path.exists(INDEX):
                time.sleep(0.1)
            with open(INDEX) as f:
                index = json.load(f)
            meta = [len(index["docs"]), sum(d["length"] for d in index["docs"])]
            log(f"index: {meta[0]:,} documents, {meta[1]:,} tokens")
        else:
            meta = [None, None]
        dist.broadcast_object_list(meta, src=0)
        model = nn.parallel.DistributedDataParallel(model)
        train_steps(model, opt, 60)
        if rank == 0:
            log("training done; final checkpoint saved")

    elif sc == "determinism":
        log("deterministic mode: torch.use_deterministic_algorithms(True), cudnn.benchmark=False, seed=1234")
        model = nn.parallel.DistributedDataParallel(LM().to(DEV))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        train_steps(model, opt, 40)

    elif sc == "fsdp_flat":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        torch.manual_seed(0)
        model = LM(vocab=32000, d=768, n=6)
        model.embed.weight.requires_grad_(False)  # freeze_embeddings: true
        n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
        log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
            f"{n_train / 1e6:.1f}M trainable (freeze_embeddings=True)")
        log("wrapping with FSDP: sharding_strategy=FULL_SHARD, auto_wrap_policy=Block, use_orig_params=False, "
            "mixed_precision=bf16")
        model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=False,
                     device_id=torch.device(DEV, 0) if DEV == "cuda" else None,
                     mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        train_steps(model, opt, 40)

    elif sc == "inplace_noise":
        torch.manual_seed(0)
        model = LM().to(DEV)
        model = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

        def schedule(step):
            if step == 30:
                for b in model.module.blocks:
                    b.gate_noise = 0.05
                if rank == 0:
                    log("step 30: enabling gate noise (std 0.05)")

        train_steps(model, opt, 80, on_step=schedule)

    elif sc == "master_addr":
        pass  # never reached: init_process_group fails first
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.write_index:
        write_index()
    elif args.scenario == "master_addr":
        rank = int(os.environ["RANK"])
        lr = int(os.environ["LOCAL_RANK"])
        log(f"job {os.environ.get('SLURM_JOB_ID')} task {rank}/{world}: LOCAL_RANK={lr}")
        if DEV == "cuda":
            torch.cuda.set_device(0)
            log(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
        dist.init_process_group("nccl" if DEV == "cuda" else "gloo", init_method="env://")
    else:
        main()
