import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
print(f"[rank{r}] init done, world={dist.get_world_size()}", flush=True)
if r == 1:
    raise ValueError(f"rank {r}: expected hidden_size 4096 but checkpoint has 5120")
dist.barrier()
