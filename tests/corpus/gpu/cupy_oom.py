import cupy as cp
print("allocating buffers", flush=True)
a = cp.empty((200 * 1024**3,), dtype=cp.uint8)
