import ctypes, faulthandler, os
faulthandler.enable()
rank = int(os.environ["RANK"])
print(f"[rank{rank}] loading custom op", flush=True)
if rank == 1:
    ctypes.string_at(0)  # a native extension dereferencing NULL
print(f"[rank{rank}] done", flush=True)
