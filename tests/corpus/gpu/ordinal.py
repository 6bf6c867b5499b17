import torch, argparse
p = argparse.ArgumentParser(); p.add_argument("--device", default="cuda:3"); a = p.parse_args()
print(f"server_args: device={a.device} tp_size=1", flush=True)
t = torch.zeros(1, device=a.device)
