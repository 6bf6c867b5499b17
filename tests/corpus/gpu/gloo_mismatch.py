import torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
t = torch.ones(4 if r == 0 else 8)
print(f"[rank{r}] all_reduce of {t.numel()} elements", flush=True)
dist.all_reduce(t)
print(t)
