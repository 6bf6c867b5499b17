import torch
print("classifier head: 10 classes, batch of 4", flush=True)
logits = torch.randn(4, 10, device="cuda", requires_grad=True)
labels = torch.tensor([1, 3, 10, 2], device="cuda")  # 10 is one past the last class
loss = torch.nn.functional.cross_entropy(logits, labels)
loss.backward()
print(f"loss={loss.item():.4f}")
