import torch
print("Init embedding table: vocab=32000", flush=True)
emb = torch.nn.Embedding(32000, 1024).cuda()
ids = torch.tensor([1, 5, 32005, 7], device="cuda")
out = emb(ids)
print(out.sum().item())
