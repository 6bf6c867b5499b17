import torch, triton, triton.language as tl
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * K + tl.arange(0, BK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c)
BM, BN, BK = 512, 512, 256
a = torch.randn(BM, BK, device="cuda", dtype=torch.float16)
b = torch.randn(BK, BN, device="cuda", dtype=torch.float16)
c = torch.empty(BM, BN, device="cuda", dtype=torch.float32)
print(f"autotune: trying config BLOCK_M={BM} BLOCK_N={BN} BLOCK_K={BK} num_stages=4", flush=True)
mm[(1,)](a, b, c, BK, BM, BN, BK, num_stages=4)
torch.cuda.synchronize()
