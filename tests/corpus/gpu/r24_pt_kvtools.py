# tests/test_kvtools.py of the round-24 kernels repository (r24_common.py copies it there): the host-side token
# histogram, fed from CPU and from CUDA batches. The CUDA case hands the C routine the device pointer of the
# batch (data_ptr() of a CUDA tensor): the host reads an address it has not mapped (SIGSEGV in the worker).
# ruff: noqa: E501
import pytest
import torch

from llm_kernels.kvtools import token_histogram

VOCAB = 32000


@pytest.mark.parametrize("n", [1, 127, 4096])
def test_histogram_counts(n):
    ids = torch.randint(0, VOCAB, (n,), dtype=torch.int32)
    hist = token_histogram(ids, VOCAB)
    assert hist.sum() == n
    assert (hist == torch.bincount(ids.long(), minlength=VOCAB).numpy()).all()


def test_histogram_empty():
    assert token_histogram(torch.empty(0, dtype=torch.int32), VOCAB).sum() == 0


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_histogram_batch(device):
    batch = torch.randint(0, VOCAB, (8, 2048), dtype=torch.int32, device=device)
    hist = token_histogram(batch.view(-1), VOCAB)
    assert hist.sum() == batch.numel()
