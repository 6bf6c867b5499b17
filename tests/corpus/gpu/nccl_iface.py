import os, torch, torch.distributed as dist
os.environ.setdefault("NCCL_DEBUG", "WARN")
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531", rank=0, world_size=1)
t = torch.ones(1024, device="cuda")
dist.all_reduce(t)
print(f"sum={t[0].item()}", flush=True)
