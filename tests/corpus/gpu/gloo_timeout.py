import datetime, time, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
r = dist.get_rank()
if r == 1:
    print("[rank1] stuck in data loading", flush=True); time.sleep(40)
t = torch.ones(16)
print(f"[rank{r}] all_reduce", flush=True)
dist.all_reduce(t)
