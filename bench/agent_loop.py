"""The seeds' loop driven by a scripted agent through `campaign-dash mcp` alone (the official
SDK's stdio client; tests/agent_story.py, the story tests/test_mcp.py checks), over a real
sshd on loopback and a real `serve`: the time each tool call took, the runs' waits apart.

    python bench/agent_loop.py [--rounds 3]

Reference in the same run: each tool's HTTP request made directly with httpx (what the
tool costs above the API is the MCP hop: JSON-RPC over a pipe, a thread, JSON).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import agent_story
from tests.cli import free_port, serving
from tests.conftest import owner_client
from tests.mcp_agent import agent
from tests.runner_helpers import served_env
from tests.sshd import start_sshd

# The API request each tool makes, asked directly: the reference beside each tool's time.
DIRECT = {
    "list_campaigns": ("GET", "/api/campaigns", None),
    "get_campaign": ("GET", "/api/campaigns/{campaign}", None),
    "seen_before": ("POST", "/api/seen", {"text": "KeyError: 12"}),
    "compare_attempts": ("GET", "/api/compare?ids={baseline},{graphs}", None),
}


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} {max(values) * 1000:7.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="the story, this many times")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    sshd = start_sshd(work / "sshd")
    env = served_env(sshd, f"sqlite:///{work / 'dash.db'}", work / "runs")
    env["CAMPAIGN_DASH_RUNTIME_DIR"] = str(work / "runtime")
    agent_env = {k: v for k, v in env.items() if k != "CAMPAIGN_DASH_TOKEN"}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    direct: dict[str, list[float]] = defaultdict(list)
    try:
        with serving(env, work, port), owner_client(url) as api, agent(agent_env, work) as mcp:
            for round_ in range(args.rounds):
                for name in (agent_story.FIRST, agent_story.SECOND):
                    api.post("/api/campaigns", json={"name": name, "baseline": None})
                # Names are unique per round: the story finds its campaigns by name.
                story = agent_story.run(mcp, sshd.alias, work / f"round-{round_}",
                                        before_last_verdict=lambda _: None)  # fmt: skip
                second = mcp.ok("get_campaign", campaign=agent_story.SECOND)["id"]
                for names in (agent_story.FIRST, agent_story.SECOND):
                    renamed = f"{names} #{round_}"
                    campaign_id = next(c["id"] for c in mcp.ok("list_campaigns")
                                       if c["name"] == names)  # fmt: skip
                    api.patch(f"/api/campaigns/{campaign_id}", json={"name": renamed})
                for tool, (method, path, body) in DIRECT.items():
                    filled = path.format(campaign=second, baseline=story.baseline,
                                         graphs=story.graphs)  # fmt: skip
                    for _ in range(5):
                        started = time.perf_counter()
                        api.request(method, filled, json=body).raise_for_status()
                        direct[tool].append(time.perf_counter() - started)
    finally:
        sshd.stop()
    by_tool: dict[str, list[float]] = defaultdict(list)
    for called in mcp.calls:
        by_tool[called.tool].append(called.seconds)
    print(f"{args.rounds} rounds of the story, {len(mcp.calls)} tool calls "
          f"({os.cpu_count()} cores)")  # fmt: skip
    print(f"{'tool':<20} {'calls':>5} {'p50 ms':>7} {'max ms':>7}   direct HTTP p50/max ms")
    for tool, seconds in sorted(by_tool.items()):
        reference = f"{ms(direct[tool])}" if tool in direct else ""
        print(f"{tool:<20} {len(seconds):>5} {ms(seconds)}   {reference}")
    quick = [c.seconds for c in mcp.calls if c.tool not in ("wait_for_attempt",)]
    print(f"every call but the runs' waits: max {max(quick) * 1000:.1f} ms "
          f"({sum(s > 0.2 for s in quick)} over 200 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
