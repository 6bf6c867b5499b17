import os, torch, torch.distributed as dist
os.environ.setdefault("NCCL_DEBUG", "WARN")
r = int(os.environ["RANK"])
torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
t = torch.ones(1024, device="cuda")
dist.all_reduce(t)
print(f"[rank{r}] sum={t[0].item()}", flush=True)
