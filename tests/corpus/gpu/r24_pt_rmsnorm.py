# tests/test_rmsnorm.py of the round-24 kernels repository: the Triton RMSNorm against an eager reference (all
# pass); the reference still uses deprecated torch APIs, which pytest lists under "warnings summary".
# ruff: noqa: E501
import pytest
import torch

from llm_kernels.rmsnorm import rmsnorm


def ref_rmsnorm(x, w, eps=1e-6):
    with torch.cuda.amp.autocast(enabled=False):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("hidden", [1024, 4096, 5120])
def test_rmsnorm(hidden, dtype):
    x = torch.randn(256, hidden, device="cuda", dtype=dtype)
    w = torch.rand(hidden, device="cuda", dtype=dtype) + 0.5
    torch.testing.assert_close(rmsnorm(x, w), ref_rmsnorm(x, w), rtol=2e-2, atol=2e-2)


def test_rmsnorm_grad_scaler_roundtrip():
    scaler = torch.cuda.amp.GradScaler(init_scale=2.0**14)
    w = torch.nn.Parameter(torch.ones(1024, device="cuda"))
    loss = rmsnorm(torch.randn(8, 1024, device="cuda"), w.detach()).sum() * w.sum()
    scaler.scale(loss).backward()
    assert torch.isfinite(w.grad).all()
