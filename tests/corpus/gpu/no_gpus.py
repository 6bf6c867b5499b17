import torch
print("Initializing model on cuda", flush=True)
x = torch.zeros(4, device="cuda")
