import torch, triton, triton.language as tl
@triton.jit
def rowsum(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)  # N=100 is not a power of 2
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.program_id(0) * N + offs), 0))
x = torch.randn(8, 100, device="cuda")
out = torch.empty(8, device="cuda")
print("compiling rowsum kernel", flush=True)
rowsum[(8,)](x, out, N=100)
print(out.sum().item())
