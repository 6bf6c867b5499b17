"""The seeds' loop as a coding agent runs it, through `campaign-dash mcp`'s tools only: a
first campaign paid for `KeyError: 12` and eliminated it; in the second, a baseline, then
three hypotheses: torch symmetric memory crashes and is recognised as seen before, CUDA
graphs to batch 128 measure better and are adopted, the overlap schedule measures no better
and is eliminated. Shared by tests/test_mcp.py (the story) and bench/agent_loop.py (the
time of each call)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cli import free_port
from tests.mcp_agent import Agent
from tests.runner_helpers import bench_command, server_command

FIRST, SECOND = "EAGLE-3 on H200 (first)", "EAGLE-3 on H200"
SYMM_VERDICT = "torch symmetric memory has no table entry for this GPU's capability"


@dataclass
class Story:
    crashed_first: int
    baseline: int
    symm: int
    graphs: int
    overlap: int
    seen: dict[str, Any]  # seen_before's answer after the second crash


def launched(
    agent: Agent, host: str, draws: Path, campaign: str, title: str, *server: str,
    mean: float | None = None, hypothesis: str = "",
) -> dict[str, Any]:  # fmt: skip
    """try_attempt, then wait_for_attempt until the run ends."""
    port = free_port()
    bench = None
    if mean is not None:  # figures of known noise: 0.5 %, the same draws each time
        bench = bench_command(port, "--num-prompts", "3", "--fixed-mean", str(mean),
                              "--noise-pct", "0.5", "--draws", str(draws))  # fmt: skip
    tried = agent.ok("try_attempt", campaign=campaign, title=title, host=host,
                     command=server_command(port, *server), bench=bench, repeat=3,
                     hypothesis=hypothesis)  # fmt: skip
    ended = agent.ok("wait_for_attempt", attempt=tried["attempt_id"], timeout_s=120)
    assert ended["ended"], ended
    return dict(ended)


def run(
    agent: Agent, host: str, workdir: Path, before_last_verdict: Callable[[int], None] = print
) -> Story:
    workdir.mkdir(parents=True, exist_ok=True)
    draws = workdir / "draws"
    campaigns = {c["name"]: c["id"] for c in agent.ok("list_campaigns")}
    assert set(campaigns) >= {FIRST, SECOND}, campaigns

    # The first campaign: the crash is paid for once, and its verdict written.
    crash = launched(agent, host, draws, FIRST, "Torch symmetric memory", "--mode", "crash",
                     "--enable-torch-symm-mem")  # fmt: skip
    assert crash["outcome"] == "crashed", crash
    agent.ok("record_verdict", attempt=crash["attempt"]["id"], verdict="eliminated",
             reason=SYMM_VERDICT)  # fmt: skip

    # The second: the ledger first, then a baseline.
    ledger = agent.ok("get_campaign", campaign=SECOND)
    assert ledger["dead_ends"] == [] and ledger["attempts"] == []
    baseline = launched(agent, host, draws, SECOND, "Baseline", mean=1000.0)
    assert baseline["outcome"] == "measured", baseline
    agent.ok("record_verdict", attempt=baseline["attempt"]["id"], verdict="adopted",
             reason="what every hypothesis is measured against", as_baseline=True)  # fmt: skip

    # Hypothesis 1 crashes; its root cause is asked about before anything else is tried.
    symm = launched(agent, host, draws, SECOND, "Torch symmetric memory", "--mode", "crash",
                    "--enable-torch-symm-mem", hypothesis="a faster all-reduce")  # fmt: skip
    assert symm["outcome"] == "crashed", symm
    seen = agent.ok("seen_before", text=symm["attempt"]["diagnosis"]["root_cause"])
    earlier = [m for m in seen["matches"] if m["attempt_id"] != symm["attempt"]["id"]]
    assert earlier and earlier[0]["verdict"] == SYMM_VERDICT, seen
    agent.ok("record_verdict", attempt=symm["attempt"]["id"], verdict="eliminated",
             reason=f"seen before: #{earlier[0]['attempt_id']} in {earlier[0]['campaign']!r}: "
             f"{earlier[0]['verdict']}")  # fmt: skip

    # Hypothesis 2 measures better: compared with the baseline, adopted.
    graphs = launched(agent, host, draws, SECOND, "CUDA graph max bs 128", mean=1100.0)
    assert graphs["attempt"]["stats"]["call"] == "better", graphs["attempt"]["stats"]
    compared = agent.ok("compare_attempts",
                        attempts=[baseline["attempt"]["id"], graphs["attempt"]["id"]])  # fmt: skip
    assert [a["id"] for a in compared["attempts"]] == [baseline["attempt"]["id"],
                                                      graphs["attempt"]["id"]]  # fmt: skip
    agent.ok("record_verdict", attempt=graphs["attempt"]["id"], verdict="adopted",
             reason="+10 % output throughput, the interval clear of zero")  # fmt: skip

    # Hypothesis 3 measures no better: eliminated, with a note on why.
    overlap = launched(agent, host, draws, SECOND, "Overlap schedule", mean=1000.0)
    assert overlap["attempt"]["stats"]["call"] != "better", overlap["attempt"]["stats"]
    before_last_verdict(overlap["attempt"]["id"])
    agent.ok("record_verdict", attempt=overlap["attempt"]["id"], verdict="eliminated",
             reason="within the noise of the baseline")  # fmt: skip
    lead = "Worth a retest at **higher concurrency**: the overlap hides CPU time."
    agent.ok("add_note", attempt=overlap["attempt"]["id"], body=lead)
    return Story(
        crashed_first=crash["attempt"]["id"], baseline=baseline["attempt"]["id"],
        symm=symm["attempt"]["id"], graphs=graphs["attempt"]["id"],
        overlap=overlap["attempt"]["id"], seen=seen,
    )  # fmt: skip
