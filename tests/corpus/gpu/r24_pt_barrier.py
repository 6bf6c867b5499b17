# tests/test_barrier.py of the round-24 kernels repository: the flag barrier of the custom all-reduce, tested in
# one process. test_barrier_single passes (world=1); test_barrier_two_arrivals launches the barrier twice on one
# stream, expecting two arrivals, but the second launch queues behind the first, which spins forever waiting
# for it: a real GPU hang; pytest-timeout (method thread) dumps the stacks and ends the run.
# ruff: noqa: E501
import torch

from llm_kernels.barrier import flag_barrier


def test_barrier_single():
    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    flag_barrier(flag, 1)
    torch.cuda.synchronize()
    assert flag.item() == 1


def test_barrier_two_arrivals():
    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    for _ in range(2):  # both "ranks" of a 2-GPU all-reduce, simulated on one device
        flag_barrier(flag, 2)
    torch.cuda.synchronize()
    assert flag.item() == 2
