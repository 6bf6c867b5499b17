"""How the runner says things, one way for `try`, the pages and the run's reasons: a GPU
check that could not run, and benchmark runs counted with the warm-ups apart from the
measured runs ("warm-up 1 of 1", then "run 1 of 3")."""

from typing import Any


def where(host: str) -> str:
    return "this machine (local)" if host == "local" else host


def gpu_note(host: str, gpu: dict[str, Any] | None) -> str | None:
    """What a person must know of the host's GPU check: that it did not run (no nvidia-smi:
    neither the busy-GPU refusal nor the stop's GPU memory proof), or what it could not
    read. None when it ran whole, or was not asked yet."""
    if not gpu:
        return None
    if gpu.get("present") is False:
        return f"GPUs not checked: no nvidia-smi on {where(host)}"
    note = gpu.get("note")
    return str(note) if note else None


def bench_label(index: int, warmup: int) -> str:
    """Benchmark run `index` (1-based over warm-ups and measured runs) as a person counts it."""
    return f"warm-up {index}" if index <= warmup else f"run {index - warmup}"


def bench_progress(done: int, warmup: int, repeat: int) -> str:
    """The benchmark run under way after `done` finished ones."""
    if done < warmup:
        return f"warm-up {done + 1} of {warmup}, not recorded"
    return f"run {min(done - warmup + 1, repeat)} of {repeat}"
