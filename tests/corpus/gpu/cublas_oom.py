import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
hold, chunk = [], 1 << 30
while chunk >= 1 << 20:  # take the GPU's memory before cuBLAS makes its handle
    try:
        hold.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        chunk //= 2
torch.cuda.empty_cache()
print(f"held {sum(h.numel() for h in hold) / 2**30:.1f} GiB; first matmul", flush=True)
c = a @ b
torch.cuda.synchronize()
print(c.float().abs().mean().item())
