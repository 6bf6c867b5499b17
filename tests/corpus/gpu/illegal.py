import torch, triton, triton.language as tl
@triton.jit
def scatter(x_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    idx = tl.load(idx_ptr + offs, mask=m)
    tl.store(x_ptr + idx, tl.full((BLOCK,), 1.0, tl.float32), mask=m)
x = torch.zeros(1024, device="cuda")
idx = torch.full((1024,), 1 << 40, device="cuda", dtype=torch.int64)
print("launching scatter kernel", flush=True)
scatter[(8,)](x, idx, 1024, BLOCK=128)
torch.cuda.synchronize()
print("done")
