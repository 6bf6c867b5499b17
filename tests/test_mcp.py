"""`campaign-dash mcp` through the official SDK's client over stdio, against a real `serve`
found by its runtime file: the tools an agent sees, their errors, and the seeds' loop driven
through them alone over the test sshd, live on the campaign page in Chromium."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import agent_story
from tests.cli import clean_env, free_port, serving
from tests.conftest import owner_client
from tests.helpers import UI_WAIT_MS, make_campaign
from tests.mcp_agent import agent
from tests.runner_helpers import served_env
from tests.sshd import Sshd

TOOLS = {"list_campaigns", "create_campaign", "get_campaign", "get_attempt", "seen_before",
         "search", "diagnose_log", "try_attempt", "wait_for_attempt", "record_verdict",
         "add_note", "compare_attempts"}  # fmt: skip


def agent_env(tmp_path: Path) -> dict[str, str]:
    """The agent host's environment: no token, the user's runtime files."""
    return {**clean_env(), "CAMPAIGN_DASH_RUNTIME_DIR": str(tmp_path / "runtime")}


@pytest.fixture
def dashboard(sshd: Sshd, tmp_path: Path) -> Iterator[tuple[str, httpx.Client]]:
    env = served_env(sshd, f"sqlite:///{tmp_path / 'dash.db'}", tmp_path / "runs")
    env["CAMPAIGN_DASH_RUNTIME_DIR"] = str(tmp_path / "runtime")
    port = free_port()
    with serving(env, tmp_path, port):
        url = f"http://127.0.0.1:{port}"
        with owner_client(url) as api:
            yield url, api


def test_the_tools_an_agent_sees_and_their_errors(
    dashboard: tuple[str, httpx.Client], tmp_path: Path
) -> None:
    _, api = dashboard
    campaign = make_campaign(api, name="EAGLE-3")
    made = api.post(f"/api/campaigns/{campaign['id']}/attempts", json={"title": "Baseline"})
    attempt = made.json()["id"]
    with agent(agent_env(tmp_path), tmp_path) as mcp:
        tools = {tool.name: tool for tool in mcp.tools()}
        assert set(tools) == TOOLS  # no tool deletes anything
        for tool in tools.values():
            assert tool.description and len(tool.description) > 80, tool.name
        assert tools["record_verdict"].input_schema["properties"]["verdict"]["enum"] == [
            "eliminated", "adopted"]  # fmt: skip
        assert tools["get_attempt"].annotations.read_only_hint  # type: ignore[union-attr]
        assert not tools["record_verdict"].annotations.destructive_hint  # type: ignore[union-attr]

        assert [c["name"] for c in mcp.ok("list_campaigns")] == ["EAGLE-3"]
        # An agent starts its own campaign, then finds it by name
        latency = mcp.ok("create_campaign", name="TTFT", metric="ms", baseline=120.0,
                         higher_is_better=False)  # fmt: skip
        assert (latency["name"], latency["baseline"], latency["higher_is_better"]) == (
            "TTFT", 120.0, False)  # fmt: skip
        assert mcp.ok("get_campaign", campaign="TTFT")["id"] == latency["id"]
        assert mcp.ok("get_campaign", campaign="EAGLE-3")["attempts"][0]["id"] == attempt
        assert mcp.ok("get_campaign", campaign=campaign["id"])["name"] == "EAGLE-3"

        # Bad arguments and refusals are tool errors saying why, never a stack trace.
        for tool, arguments, said in [
            ("record_verdict", {"attempt": attempt, "verdict": "maybe", "reason": "x"},
             "'eliminated' or 'adopted'"),
            ("get_attempt", {"attempt": 999}, "attempt 999 not found"),
            ("get_campaign", {"campaign": "no such campaign"}, "no campaign named"),
            ("create_campaign", {"name": "x", "baseline": -1}, "greater than or equal"),
            ("create_campaign", {"name": "x", "baseline": "NaN"}, "finite number"),
            ("create_campaign", {"name": "x", "baseline": "Infinity"}, "finite number"),
            ("create_campaign", {"name": "EAGLE-3"}, "is named 'EAGLE-3' already"),
            ("add_note", {"body": "x"}, "give attempt or campaign"),
            ("compare_attempts", {"attempts": [attempt]}, "at least 2"),
            ("wait_for_attempt", {"attempt": attempt, "timeout_s": 1},
             "was not launched by the dashboard"),
            ("wait_for_attempt", {"attempt": attempt, "timeout_s": 3600}, "less than or equal"),
            ("record_verdict", {"attempt": attempt, "verdict": "eliminated", "reason": "x",
                                "as_baseline": True}, "`adopted` only"),
            ("try_attempt", {"campaign": "EAGLE-3", "title": "x", "host": "-oProxyCommand=x",
                             "command": "true"}, "host"),
        ]:  # fmt: skip
            called = mcp.call(tool, **arguments)
            assert called.error, (tool, arguments, called.data)
            assert said in called.data and "Traceback" not in called.data, called.data

        noted = mcp.ok("add_note", body="a *lead*", campaign="EAGLE-3")
        assert noted["attempt_id"] is None and noted["html"] == "<p>a <em>lead</em></p>\n"
        # The notes an agent writes are the notes it reads back: on the attempt and the ledger.
        dead_end = mcp.ok("add_note", body="draft 3 tokens: no gain", attempt=attempt)
        read_back = mcp.ok("get_attempt", attempt=attempt)["notes"]
        assert [n["body"] for n in read_back] == ["draft 3 tokens: no gain"]
        assert read_back[0]["id"] == dead_end["id"] and "html" not in read_back[0]
        ledger = mcp.ok("get_campaign", campaign="EAGLE-3")
        assert [n["body"] for n in ledger["notes"]] == ["a *lead*"]
        assert [n["body"] for n in ledger["attempts"][0]["notes"]] == ["draft 3 tokens: no gain"]
        diagnosed = mcp.ok("diagnose_log", text="Traceback (most recent call last):\n"
                           '  File "x.py", line 1, in f\nKeyError: 12\n')  # fmt: skip
        assert diagnosed["root_cause"] == "KeyError: 12" and diagnosed["crashed"] is True
        summary = mcp.read("campaign://EAGLE-3/summary.md")
        assert summary.startswith("# EAGLE-3") and "a *lead*" in summary.replace("\\", "")
    # Started before any dashboard, or after it stopped: each call says what to do.
    with agent({**clean_env(), "CAMPAIGN_DASH_RUNTIME_DIR": str(tmp_path / "none")},
               tmp_path) as mcp:  # fmt: skip
        refused = mcp.call("list_campaigns")
        assert refused.error and "start one with `campaign-dash serve`" in refused.data


@pytest.mark.browser
def test_the_seeds_loop_through_mcp_tools_alone_live_on_the_campaign_page(
    dashboard: tuple[str, httpx.Client],
    sshd: Sshd,
    tmp_path: Path,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    url, api = dashboard
    make_campaign(api, name=agent_story.FIRST)
    second = make_campaign(api, name=agent_story.SECOND, baseline=None)
    page = open_page(f"/campaigns/{second['id']}", base=url)
    page.evaluate("window.notReloaded = true")

    def watched(overlap: int) -> None:
        # The page the person watches shows the measured card before the verdict.
        page.wait_for_selector(f"#attempt-{overlap}.status-measured", timeout=UI_WAIT_MS)

    with agent(agent_env(tmp_path), tmp_path) as mcp:
        story = agent_story.run(mcp, sshd.alias, tmp_path, before_last_verdict=watched)
        page.wait_for_selector(f"#attempt-{story.overlap}.status-eliminated", timeout=UI_WAIT_MS)
        assert page.evaluate("window.notReloaded") is True  # live, not reloaded
        card = page.locator(f"#attempt-{story.overlap}")
        assert "within the noise of the baseline" in card.inner_text()

        assert story.seen["matches"][0]["campaign"] in (agent_story.FIRST, agent_story.SECOND)
        firsts = [m for m in story.seen["matches"] if m["attempt_id"] == story.crashed_first]
        assert firsts and firsts[0]["status"] == "eliminated"
        ledger = mcp.ok("get_campaign", campaign=agent_story.SECOND)
        statuses = {a["id"]: a["status"] for a in ledger["attempts"]}
        assert statuses == {story.baseline: "adopted", story.symm: "eliminated",
                            story.graphs: "adopted", story.overlap: "eliminated"}  # fmt: skip
        assert [d["attempt_id"] for d in ledger["dead_ends"]] == [story.symm, story.overlap]
        assert ledger["dead_ends"][0]["verdict"].startswith(f"seen before: #{story.crashed_first}")
        assert ledger["dead_ends"][0]["root_cause"] == "KeyError: 12"
        graphs = next(a for a in ledger["attempts"] if a["id"] == story.graphs)
        assert graphs["stats"]["call"] == "better" and graphs["stats"]["n"] == 3
