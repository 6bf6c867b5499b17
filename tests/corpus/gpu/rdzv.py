import datetime, torch.distributed as dist
print("[rank1] joining tcp://127.0.0.1:29514 (world_size=2)", flush=True)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29514", rank=1, world_size=2,
                        timeout=datetime.timedelta(seconds=20))
