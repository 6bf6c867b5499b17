import torch
m = torch.nn.Linear(1024, 1024).cuda()
x = torch.randn(8, 1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        m(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
print("Capture cuda graph begin. bs=8", flush=True)
with torch.cuda.graph(g):
    y = m(x)
    if y.sum().item() > 0:
        y = y * 2
print("Capture cuda graph end.")
