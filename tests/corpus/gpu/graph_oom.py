import torch
x = torch.randn(8, 1024, device="cuda")
g = torch.cuda.CUDAGraph()
print("Capture cuda graph begin. This can take up to several minutes.", flush=True)
hold = torch.empty(int(torch.cuda.mem_get_info()[0] * 0.98) // 4, dtype=torch.float32, device="cuda")
with torch.cuda.graph(g):
    big = [torch.empty(8 * 1024**3, dtype=torch.uint8, device="cuda") for _ in range(4)]
