"""`campaign-dash demo` at high speed: the seed campaign replayed through the real tailer,
by the installed command in a subprocess."""

import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from app import repo
from app.db import make_engine, session_scope
from app.demo import STORY, Replay
from app.migrate import upgrade
from tests.cli import clean_env
from tests.conftest import OWNER_TOKEN
from tests.helpers import wait_for
from tests.mcp_agent import agent
from tests.sshd import free_port

EXPECTED = [
    # title, final status, metric (None: none measured), root cause, error class
    ("Baseline: sglang TP8, NCCL Ring", "adopted", 82.0, None, None),
    ("EAGLE-3 speculative decoding", "eliminated", 54.0, None, None),
    ("FlashInfer allreduce fusion", "eliminated", None, "not supported on sm_120",
     "unsupported_arch"),
    ("Custom allreduce on PCIe", "eliminated", 38.0, None, None),
    ("NCCL Tree algorithm", "eliminated", None, "not permitted when stream is capturing",
     "cuda_graph"),
    ("NCCL reduced channels", "eliminated", None, "CUDA out of memory", "oom_gpu"),
    ("Torch symmetric memory", "eliminated", None, "KeyError: 12", "unsupported_arch"),
    ("CUDA graph max batch 128", "adopted", 89.5, None, None),
    ("CUDA 13 upgrade", "adopted", 92.6, None, None),
    ("FlashInfer allreduce fusion (CUDA 13)", "measured", 92.7, None, None),
    ("Torch symmetric memory (CUDA 13)", "crashed", None, "KeyError: 12", "unsupported_arch"),
]  # fmt: skip
LOG_NAMES = [
    "01-baseline-sglang-tp8-nccl-ring.log", "02-eagle-3-speculative-decoding.log",
    "03-flashinfer-allreduce-fusion.log", "04-custom-allreduce-on-pcie.log",
    "05-nccl-tree-algorithm.log", "06-nccl-reduced-channels.log",
    "07-torch-symmetric-memory.log", "08-cuda-graph-max-batch-128.log",
    "09-cuda-13-upgrade.log", "10-flashinfer-allreduce-fusion-cuda-13.log",
    "11-torch-symmetric-memory-cuda-13.log",
]  # fmt: skip
FINISHED = "Demo replay finished: 11 attempts played."
INSTALLED = Path(sys.executable).with_name("campaign-dash")


@dataclass
class Demo:
    url: str
    process: subprocess.Popen[str]
    tmp: Path  # its TMPDIR: the demo's own directory is made in here
    output: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.output)

    def workdirs(self) -> list[Path]:
        return sorted(self.tmp.glob("campaign-dash-demo-*"))

    def stop(self, signum: int) -> int:
        self.process.send_signal(signum)
        code = self.process.wait(20)
        self.reader.join(10)  # the whole output is in
        return code


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    assert INSTALLED.exists(), "campaign-dash is not installed: pip install -e '.[test]'"
    port = free_port()
    env = {**os.environ, "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        [str(INSTALLED), "demo", "--no-browser", "--speed", "12", "--port", str(port)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    running = Demo(f"http://127.0.0.1:{port}", process, tmp_path)

    def up() -> bool:
        try:
            return httpx.get(f"{running.url}/login", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=30, what="demo up")
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


def campaign(url: str) -> dict:
    auth = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    campaigns = httpx.get(f"{url}/api/campaigns", headers=auth).json()
    if not campaigns:
        return {"attempts": []}
    return httpx.get(f"{url}/api/campaigns/{campaigns[0]['id']}", headers=auth).json()


def _written(attempt: dict) -> int | None:
    """The log's size on disk; None before the replay has created it (an attempt is
    registered with its source first, its log written after)."""
    path = Path(attempt["source"].removeprefix("file://"))
    return path.stat().st_size if path.exists() else None


def finished(url: str) -> dict | None:
    detail = campaign(url)
    attempts = detail["attempts"]
    # Each log read to its end: under load the tailer trails the replay's writes, and a
    # crash's status comes with its first error line, its root cause with a later one. The
    # end is the file's size on disk: the tail's own `size` is as of its last look, and a log
    # still being written can be behind it (a sigquit read, the KeyError under it not yet).
    caught_up = all(
        a["tail"] is None or ((size := _written(a)) is not None and a["tail"]["bytes_read"] >= size)
        for a in attempts
    )
    if len(attempts) == len(EXPECTED) and attempts[-1]["status"] == "crashed" and caught_up:
        notes = httpx.get(f"{url}/api/attempts/{attempts[-1]['id']}/notes",
                          headers={"Authorization": f"Bearer {OWNER_TOKEN}"}).json()  # fmt: skip
        return detail if notes else None
    return None


def test_the_demo_replays_the_seed_campaign_through_the_tailer(demo: Demo) -> None:
    url = demo.url
    # The replay over first: every log is then whole on disk, and the story is read once the
    # tailer has read each to its end (a snapshot taken before could hold a log half-written).
    wait_for(lambda: demo.said(FINISHED), timeout=150, what="the finished line")
    detail = wait_for(lambda: finished(url), timeout=60, what="the whole story")
    auth = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    attempts = detail["attempts"]
    [workdir] = demo.workdirs()
    for attempt, (title, status, metric, cause, error_class), name in zip(
        attempts, EXPECTED, LOG_NAMES, strict=True
    ):
        assert attempt["title"] == title
        assert attempt["status"] == status, title
        if metric is None:
            assert attempt["metric_value"] is None, title
        else:
            assert attempt["metric_value"] == pytest.approx(metric, abs=0.05), title
        diagnosis = attempt["diagnosis"] or {}
        if cause:
            assert cause in (diagnosis.get("root_cause") or ""), title
            assert diagnosis["error_class"] == error_class, title
        else:
            assert not diagnosis.get("crashed"), title
        # Every finding came through the tailer: the stored log is the file written,
        # named after its attempt.
        path = Path(attempt["source"].removeprefix("file://"))
        assert path == workdir / name, title
        stored = httpx.get(f"{url}/api/attempts/{attempt['id']}/log", headers=auth).content
        assert stored == path.read_bytes(), title
    # Each card says what its attempt changed against the baseline in force, as the story
    # has it: the graph batch size adopted at #8 is kept by every later launch.
    diffs = [(a["flag_diff"] or {}).get("summary") for a in attempts]
    assert diffs[7] == "only change: cuda_graph_max_bs: 80 → 128"
    assert diffs[8] == "no flag differs from the baseline"
    assert diffs[9] == "only change: +enable_flashinfer_allreduce_fusion"
    assert all("--cuda-graph-max-bs 128" in a["command"] for a in attempts[7:])
    # Commands read as typed at a shell: the environment before the program.
    assert attempts[4]["command"].startswith("NCCL_ALGO=Tree python3 -m sglang")
    assert {a["flags"]["command"]["host"] for a in attempts} == {"0.0.0.0"}
    assert attempts[2]["blocked_by"] == attempts[6]["blocked_by"] == attempts[8]["id"]
    torch, retest = attempts[6], attempts[10]
    assert torch["diagnosis"]["fingerprint"] == retest["diagnosis"]["fingerprint"]
    assert retest["same_root_cause_as"] == [torch["id"]] and retest["retest_of"] == torch["id"]
    # The pivot's offer was taken: both retests made at once, before either log was played.
    assert [attempts[9]["retest_of"], attempts[10]["retest_of"]] == [
        attempts[2]["id"],
        attempts[6]["id"],
    ]
    assert attempts[9]["started_at"] and attempts[10]["created_at"] < attempts[9]["started_at"]
    unblocks = f"{url}/api/attempts/{attempts[8]['id']}/unblocks"
    assert httpx.get(unblocks, headers=auth).json() == []
    assert [b["value"] for b in detail["baseline_history"]] == [82.0, 89.5, pytest.approx(92.6)]
    assert attempts[8]["delta_pct"] == pytest.approx(3.46, abs=0.05)
    assert attempts[9]["delta_within_noise"] is True
    # Its runs against the CUDA 13 baseline's own: Welch, the same within the noise.
    fusion = attempts[9]["stats"]
    assert fusion["call"] == "same" and fusion["baseline"]["attempt_id"] == attempts[8]["id"]
    assert fusion["delta_ci95_pct"][0] < 0 < fusion["delta_ci95_pct"][1]
    # What changed underneath at the pivot, read from each run's start-up lines.
    pivot = attempts[8]["env_diff"]
    assert pivot["baseline_attempt_id"] == attempts[7]["id"]
    assert pivot["summary"].startswith("driver 575.57.08 → 580.95.05, CUDA 12.8 → 13.0, ")
    assert (
        "torch 2.10.0 → 2.9.1" in pivot["summary"]
        and "flashinfer 0.3.1 → 0.6.4" in pivot["summary"]
    )
    assert attempts[9]["env_diff"]["changed"] == {}  # fusion ran on the pivot's stack
    # The pivot's gain spans two stacks: said beside its call, which stands.
    assert attempts[8]["stats"]["warnings"] == ["the baseline ran on another stack (env, below)"]
    assert attempts[9]["stats"]["warnings"] == []
    assert attempts[8]["environment"]["gpu_count"] == 8
    # The fusion retest's note puts it beside the new baseline, one click away.
    compare = f"/compare?ids={attempts[8]['id']},{attempts[9]['id']}"
    fusion_notes = httpx.get(f"{url}/api/attempts/{attempts[9]['id']}/notes", headers=auth).json()
    assert any(f"({compare})" in note["body"] for note in fusion_notes)
    shown = httpx.get(f"{url}/attempts/{attempts[9]['id']}", headers=auth).text
    assert f'href="{compare}"' in shown.replace("&amp;", "&")
    side_by_side = httpx.get(f"{url}{compare}", headers=auth)
    assert side_by_side.status_code == 200 and "same (n=4)" in side_by_side.text
    notes = httpx.get(f"{url}/api/campaigns/{detail['id']}/notes", headers=auth).json()
    assert "The demo's replay has finished" in notes[-1]["body"]
    assert "3 adopted, 1 crashed, 6 eliminated, 1 measured" in notes[-1]["body"]

    assert demo.stop(signal.SIGINT) == 0  # Ctrl-C stops it cleanly
    output = "".join(demo.output)
    assert "Traceback" not in output
    assert f"Demo stopped; removed {workdir}." in output
    assert not workdir.exists() and demo.workdirs() == []


def test_the_demo_link_opens_the_replayed_campaigns_live_page_and_connects_an_agent(
    demo: Demo,
) -> None:
    """The campaign list sums a campaign up; the replay is seen on the campaign's page."""
    line = wait_for(
        lambda: next((line for line in demo.output if line.startswith("Open: ")), None),
        timeout=30, what="the printed link",
    )  # fmt: skip
    link = line.removeprefix("Open: ").strip()
    auth = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    [replayed] = httpx.get(f"{demo.url}/api/campaigns", headers=auth).json()
    assert link == f"{demo.url}/login?token={OWNER_TOKEN}&next=/campaigns/{replayed['id']}"
    with httpx.Client(headers={"Accept": "text/html"}) as browser:
        page = browser.get(link, follow_redirects=True)
    assert page.status_code == 200 and page.url.path == f"/campaigns/{replayed['id']}"
    assert "EAGLE-3 speculative decoding on 8x RTX PRO 6000" in page.text
    assert f"/api/campaigns/{replayed['id']}/events?view=campaign" in page.text  # live

    # Beside the link, the line that connects an agent; started as an agent's host starts
    # it, with no token given (the demo's runtime file has one), it reads the demo.
    prefix = "Connect a coding agent (MCP over stdio): "
    said = wait_for(
        lambda: next((line for line in demo.output if line.startswith(prefix)), None),
        timeout=30, what="the agent's line",
    )  # fmt: skip
    command = shlex.split(said.removeprefix(prefix))
    assert command == ["campaign-dash", "mcp", "--url", demo.url]
    with agent(clean_env(), demo.tmp, *command[2:]) as mcp:
        [listed] = mcp.ok("list_campaigns")
        assert listed["id"] == replayed["id"] and listed["name"] == replayed["name"]


def test_sigterm_mid_replay_stops_the_demo_and_removes_its_directory(demo: Demo) -> None:
    wait_for(lambda: len(campaign(demo.url)["attempts"]) >= 2, timeout=60, what="two attempts")
    [workdir] = demo.workdirs()
    assert (workdir / LOG_NAMES[0]).is_file()
    assert demo.stop(signal.SIGTERM) == 0
    output = "".join(demo.output)
    assert "Traceback" not in output and not demo.said(FINISHED)
    assert f"Demo stopped; removed {workdir}." in output
    assert demo.workdirs() == []


def test_the_demo_page_mid_replay_and_at_the_end(
    demo: Demo,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    url = demo.url
    wait_for(lambda: campaign(url)["attempts"], timeout=30, what="the first attempt")
    page = open_page(f"/campaigns/{campaign(url)['id']}", base=url)
    page.wait_for_selector("#live-status.on", timeout=15_000)
    page.evaluate("window.__marker = 'no reload'")
    page.locator(".card").nth(3).wait_for(state="attached", timeout=60_000)
    Path("test-artifacts").mkdir(exist_ok=True)
    page.screenshot(path="test-artifacts/demo-mid-replay.png", full_page=True)
    wait_for(lambda: finished(url), timeout=120, what="the end of the story")
    page.locator(".card").nth(len(EXPECTED) - 1).wait_for(state="attached", timeout=15_000)
    page.locator(".card.status-crashed .badge.same-cause").wait_for(timeout=15_000)
    # The end is said where the engineer looks: the campaign's notes, live.
    page.locator("#notes .note", has_text="The demo's replay has finished").wait_for(timeout=15_000)
    page.screenshot(path="test-artifacts/demo-end.png", full_page=True)
    assert page.evaluate("window.__marker") == "no reload"
    assert page.locator(".card.lane-eliminated").count() == 6
    assert page.locator(".card.lane-adopted").count() == 3


def test_a_demo_on_a_port_in_use_is_one_clear_line_and_prints_no_link(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        env = {**os.environ, "TMPDIR": str(tmp_path)}
        result = subprocess.run(
            [str(INSTALLED), "demo", "--no-browser", "--port", str(taken)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        busy.close()
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        result.stderr.strip()
        == f"Error: cannot listen on 127.0.0.1:{taken}: Address already in use"
    )
    # No login link to whatever holds the port, and nothing left behind.
    assert "token=" not in result.stdout and not list(tmp_path.glob("campaign-dash-demo-*"))


def test_a_stop_mid_step_leaves_no_verdict_and_blames_no_tailer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    upgrade(url)
    engine = make_engine(url)
    stop = threading.Event()
    replay = Replay(SimpleNamespace(engine=engine), tmp_path, speed=1000.0, stop=stop)
    replay.create_campaign()
    stop.set()  # Ctrl-C while the first step's server is starting
    with caplog.at_level(logging.WARNING, logger="app.demo"):
        replay._play(1, STORY[0])
    assert "did not report" not in caplog.text
    with session_scope(engine) as session:
        [attempt] = repo.list_attempts(session, campaign_id=replay.campaign_id)
        assert attempt.verdict in (None, "")
    engine.dispose()
