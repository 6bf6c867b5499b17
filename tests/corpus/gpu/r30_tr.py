# torchrun-launched scenarios for round 30 (ranks share the one GPU; gloo for the host-side collectives unless said):
# save_dir: two ranks train; at step 60 rank 0 saves to <ckpt_root>/step_60/model.pt without creating the folder:
#   torch.save's "Parent directory ... does not exist" on rank 0 (@record), rank 1 waits in the barrier after the save
#   until the agent stops it; ChildFailedError with rank 0 as root cause;
# no_destroy: one rank on the NCCL backend trains a short run to the end and exits without destroy_process_group():
#   the process group's leak warning at exit (no crash);
# restart_port: two ranks, --max-restarts 1; each rank serves Prometheus metrics on 9400+LOCAL_RANK, and a
#   metrics exporter left from an earlier job holds port 9401: rank 1 fails with EADDRINUSE, the agent restarts the
#   worker group, the leftover has been cleaned up meanwhile, and the second attempt trains to the end (no crash).
# ruff: noqa: E501  (log lines kept as they print)
import argparse
import datetime
import logging
import os
import socket
import sys
import threading
import time

from torch.distributed.elastic.multiprocessing.errors import record

rank = int(os.environ.get("RANK", 0))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"[rank{rank}]:%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
log = logging.getLogger("pretrain")
log.handlers[:] = [_h]
log.setLevel(logging.INFO)
log.propagate = False


def build(d=768):
    import torch.nn as nn

    layer = nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True, norm_first=True)
    return nn.Sequential(nn.Linear(128, d), nn.TransformerEncoder(layer, 4), nn.Linear(d, 128))


def metrics_server(port):
    """A minimal Prometheus text endpoint (what prometheus_client.start_http_server does)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("0.0.0.0", port))
    s.listen(8)

    def serve():
        while True:
            c, _ = s.accept()
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\ntrain_step 0\n")
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s


@record
def main():
    import torch
    import torch.distributed as dist

    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--ckpt-root", default="/tmp/r30_files/ckpt")
    ap.add_argument("--steps", type=int, default=100000)
    a = ap.parse_args()
    backend = "nccl" if a.scenario == "no_destroy" else "gloo"
    torch.cuda.set_device(0)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=120))
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    log.info(f"process group ready: backend={backend} world_size={world} local_rank={local_rank} restart_count={attempt}")
    if a.scenario == "restart_port":
        port = 9400 + local_rank
        metrics_server(port)
        log.info(f"metrics on :{port}/metrics")
    torch.manual_seed(3)
    model = build().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    log.info(f"model params={sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
    g = torch.Generator(device="cuda").manual_seed(rank)
    t0 = time.time()
    for step in range(1, a.steps + 1):
        x = torch.randn(16, 128, 128, device="cuda", generator=g)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), x.flip(-1))
        loss.backward()
        if backend == "gloo" and step % 10 == 0:
            for p in model.parameters():
                t = p.grad.detach().cpu()
                dist.all_reduce(t)
                p.grad.copy_(t / world)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if backend == "nccl" and step % 10 == 0:
            lt = loss.detach().reshape(1)
            dist.all_reduce(lt)
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f} {(time.time() - t0) / 10 * 1000:.0f} ms/step")
            t0 = time.time()
        if a.scenario == "save_dir" and step % 60 == 0:
            path = f"{a.ckpt_root}/step_{step}/model.pt"
            if rank == 0:
                log.info(f"saving checkpoint to {path}")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            dist.barrier()
    log.info("training done")
    if a.scenario != "no_destroy":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
