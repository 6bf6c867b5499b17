# torchrun-launched scenarios for round 27 (ranks share the one GPU; gloo for the host-side collectives):
# restart: `--max-restarts 1`; the dataset index names two shards but only the first was copied: rank 1 cannot
#   open its shard; the elastic agent restarts the worker group once, the same happens, then ChildFailedError
#   (main is wrapped in @record, so the table holds the rank's traceback);
# monitored_barrier: before saving, rank 1 consolidates the optimizer state on the host (slow, 25 s); rank 0 waits
#   in dist.monitored_barrier with a 5 s timeout and fails naming rank 1;
# nccl_net: one rank, NCCL forced onto the InfiniBand transport (NCCL_NET=IB, set by r27_run.sh) on a machine
#   with no IB device: the first all-reduce initialises the communicator.
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import datetime
import json
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402

from r27_common import DATA  # noqa: E402

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"%(asctime)s [rank {rank}] %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"))
log = logging.getLogger("pretrain")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def model_and_opt():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    m = nn.Sequential(nn.Embedding(32000, 512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512), nn.Linear(512, 32000)).cuda()
    return m, torch.optim.AdamW(m.parameters(), lr=3e-4)


def restart():
    import numpy as np
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    torch.cuda.set_device(0)
    restart_n = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    log.info(f"world_size={world} restart_count={restart_n} data={DATA}")
    idx = json.load(open(f"{DATA}/index.json"))
    shard = idx["shards"][rank]
    log.info(f"memory-mapping shard {shard}")
    data = np.memmap(f"{DATA}/{shard}", dtype=np.uint16, mode="r").reshape(-1, idx["seq_len"])
    m, opt = model_and_opt()
    for step in range(1, 200):
        batch = torch.from_numpy(data[step * 4:(step + 1) * 4].astype(np.int64)).cuda()
        logits = m(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 32000), batch[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        dist.barrier()
        log.info(f"step {step} loss {loss.item():.4f}")


def monitored_barrier():
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    torch.cuda.set_device(0)
    m, opt = model_and_opt()
    for step in range(1, 11):
        ids = torch.randint(0, 32000, (8, 257), device="cuda")
        loss = torch.nn.functional.cross_entropy(m(ids[:, :-1]).view(-1, 32000), ids[:, 1:].reshape(-1))
        loss.backward()
        for p in m.parameters():
            g = p.grad.cpu()
            dist.all_reduce(g)
            p.grad.copy_(g / world)
        opt.step()
        opt.zero_grad()
        log.info(f"step {step}/10 loss {loss.item():.4f}")
    log.info("saving checkpoint step-10")
    if rank == 1:
        log.info("consolidating optimizer state on host (offload)")
        t0 = time.time()
        sd = {k: {kk: vv.cpu() if torch.is_tensor(vv) else vv for kk, vv in v.items()} for k, v in opt.state_dict()["state"].items()}
        while time.time() - t0 < 25:
            sum(float(v["exp_avg"].abs().sum()) for v in sd.values())
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=5))
    log.info("checkpoint saved")


def nccl_net():
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0), timeout=datetime.timedelta(seconds=60))
    log.info(f"NCCL version {torch.cuda.nccl.version()}, NCCL_NET={os.environ.get('NCCL_NET')}, NCCL_IB_HCA={os.environ.get('NCCL_IB_HCA')}")
    x = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    log.info(f"all_reduce ok: {x[0].item()}")


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    a = ap.parse_args()
    {"restart": restart, "monitored_barrier": monitored_barrier, "nccl_net": nccl_net}[a.scenario]()


if __name__ == "__main__":
    main()
