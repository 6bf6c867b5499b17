import torch, triton, triton.language as tl
@triton.jit
def guard(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise("trap;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(x_ptr + offs, y, mask=offs < n)
x = torch.zeros(256, device="cuda", dtype=torch.int32)
print("launching guard kernel", flush=True)
guard[(2,)](x, 256, BLOCK=128)
torch.cuda.synchronize()
print("done")
