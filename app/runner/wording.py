"""How the runner says things, one way for `try`, the pages and the run's reasons: a GPU
check that could not run, and benchmark runs counted with the warm-ups apart from the
measured runs ("warm-up 1 of 1", then "run 1 of 3")."""

from typing import Any

from app.stats import AUTO_MIN_RUNS, sequential_confidence


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


def bench_progress(
    done: int, warmup: int, repeat: int, *, auto: bool = False, auto_ended: bool = False
) -> str | None:
    """The benchmark run under way after `done` finished ones; none once `--repeat auto`
    made its call (the runner stops the server next, no run follows)."""
    if auto_ended:
        return None
    if done < warmup:
        return f"warm-up {done + 1} of {warmup}, not recorded"
    if auto:
        return f"run {min(done - warmup + 1, repeat)} of up to {repeat}, until the call is clear"
    return f"run {min(done - warmup + 1, repeat)} of {repeat}"


def looks_said(max_runs: int) -> str:
    looks = max(1, max_runs - AUTO_MIN_RUNS + 1)
    level = sequential_confidence(max_runs) * 100
    return f"each of up to {looks} looks at {level:.2f} %, so that a false call stays within 5 %"


def auto_said(auto: dict[str, Any] | None) -> str | None:
    """What ended a `--repeat auto` run's benchmark runs, as try and the run panel say it."""
    if not auto or not auto.get("ended_by"):
        return None
    n, how = auto.get("n"), looks_said(int(auto["max_runs"]))
    if auto["ended_by"] == "clear":
        return f"repeat auto: stopped after {n} runs, the call clear: {auto['call']} ({how})"
    if auto["ended_by"] == "no baseline":
        return f"repeat auto: no baseline to judge against: stopped after {n} runs"
    return (
        f"repeat auto: the budget of {auto['max_runs']} runs spent, the call still "
        f"{auto['call']} ({how})"
    )
