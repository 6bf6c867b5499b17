"""The runner end to end through the API, over the test sshd: a launched attempt reaches
`measured` with N measurements; each way a server fails ends with its own outcome, no
process of its session left and its port free; two launches on one host never overlap."""

import csv
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, create_engine

from app.config import Settings
from app.models import Run, RunState
from app.runner.views import run_view
from tests.conftest import running
from tests.helpers import attempt_of, make_campaign, wait_for
from tests.runner_helpers import (
    STANDIN,
    StandInGPUs,
    bench_command,
    free_port,
    port_listening,
    server_command,
    session_processes,
    standin_interpreter,
)
from tests.sshd import Sshd


@pytest.fixture
def runner_settings(ssh_settings: Settings, tmp_path: Path) -> Settings:
    # GPU memory not back within 1 s is not coming back in these tests: a stand-in's is
    # freed as its process ends.
    return ssh_settings.model_copy(
        update={"runs_root": str(tmp_path / "runs"), "gpu_release_seconds": 1.0}
    )


@pytest.fixture
def gpus(sshd: Sshd, tmp_path: Path) -> StandInGPUs:
    """One stand-in H200 on the host: its nvidia-smi on the PATH of the sshd's sessions."""
    gpus = StandInGPUs(tmp_path / "gpus")
    gpus.install(sshd.bin)
    return gpus


@pytest.fixture
def dash(runner_settings: Settings) -> Iterator[httpx.Client]:
    with running(runner_settings) as (_, client):
        yield client


def launch(
    api: httpx.Client, campaign_id: int, host: str, command: str, **launch: Any
) -> dict[str, Any]:
    body = {"title": launch.pop("title", "Torch symmetric memory"),
            "launch": {"host": host, "command": command, **launch}}  # fmt: skip
    response = api.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def ended(api: httpx.Client, attempt_id: int, timeout: float = 60) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        attempt = attempt_of(api, attempt_id)
        return attempt if attempt["run"]["state"] in ("done", "failed") else None

    return wait_for(probe, timeout=timeout, what=f"the run of attempt {attempt_id} to end")


def assert_clean(run: dict[str, Any], port: int) -> None:
    assert run["pgid"]
    wait_for(lambda: not session_processes(run["pgid"]), timeout=10, what="an empty session")
    assert not port_listening(port)


def test_a_launched_attempt_is_measured_n_times_then_stopped(
    dash: httpx.Client, sshd: Sshd
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    attempt = launch(
        dash, campaign["id"], sshd.alias, server_command(port, "--enable-torch-symm-mem"),
        bench=bench_command(port, "--num-prompts", "4"), repeat=3, warmup=1,
    )  # fmt: skip
    assert attempt["run"]["state"] == "launching"  # 201 at once, before the host is asked
    assert attempt["command"].endswith("--enable-torch-symm-mem")
    final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("done", "measured"), run
    assert final["status"] == "measured"
    assert final["metric"]["n"] == 3
    assert [r["warmup"] for r in run["bench_runs"]] == [True, False, False, False]
    recorded = [r["metric_recorded"] for r in run["bench_runs"][1:]]
    assert final["metric"]["samples"] == recorded
    figures = run["bench_runs"][1]["figures"]
    assert {"ttft_ms", "itl_ms", "request_throughput", "output_tok_s"} <= set(figures)
    assert figures["output_tok_s"] == run["bench_runs"][1]["metric_recorded"]
    # Each figure over the three counted runs: its mean, its interval, its unit.
    ttft = [r["figures"]["ttft_ms"] for r in run["bench_runs"][1:]]
    summary = final["figures"]["ttft_ms"]
    assert (summary["unit"], summary["n"]) == ("ms", 3)
    assert summary["mean"] == pytest.approx(sum(ttft) / 3)
    assert summary["ci95"][0] <= summary["mean"] <= summary["ci95"][1]
    assert final["figures"]["output_tok_s"]["mean"] == pytest.approx(final["metric_value"])
    # The export: a row per run, the warm-up marked, every figure a column.
    answer = dash.get(f"/api/campaigns/{campaign['id']}/runs.csv")
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    # (numbered as the page counts: warm-up 1, then runs 1 to 3, each at its own start)
    assert [(r["run"], r["warmup"], r["counted"]) for r in rows] == [
        ("1", "yes", "no"), ("1", "no", "yes"), ("2", "no", "yes"), ("3", "no", "yes")
    ]  # fmt: skip
    starts = [datetime.fromisoformat(r["started"]) for r in rows]
    assert starts == sorted(starts) and len(set(starts)) == 4, starts
    assert [float(r["value"]) for r in rows[1:]] == recorded
    assert [float(r["ttft_ms"]) for r in rows[1:]] == ttft
    assert {r["host"] for r in rows} == {sshd.alias} and rows[0]["attempt_id"] == str(final["id"])
    assert run["port"] == port and run["health_url"] == f"http://127.0.0.1:{port}/health"
    assert final["source"] == f"ssh://{sshd.alias}{run['log_path']}"
    assert final["diagnosis"]["ready"] is True
    assert run["stop_report"]["signal"] == "SIGTERM" and run["stop_report"]["port_free"]
    assert run["gpu_note"] == f"GPUs not checked: no nvidia-smi on {sshd.alias}"
    # the exit status the dashboard's own stop gave the server (143) reads as that stop
    page = dash.get(f"/attempts/{final['id']}", headers={"Accept": "text/html"}).text
    assert run["exit_code"] == 143 and "ended by the stop's SIGTERM" in page
    assert "exit 143" not in page
    assert_clean(run, port)


def test_a_crash_during_start_up_is_crashed_with_its_root_cause_and_exit_status(
    dash: httpx.Client, sshd: Sshd
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port, "--mode", "crash"),
                     bench=bench_command(port))  # fmt: skip
    final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("failed", "crashed")
    assert final["status"] == "crashed"
    assert final["diagnosis"]["root_cause"] == "KeyError: 12"
    assert run["exit_code"] == 3
    assert "KeyError: 12" in run["reason"] and "exit status 3" in run["reason"]
    assert run["bench_runs"] == []
    assert_clean(run, port)


def test_a_server_that_never_gets_ready_times_out(dash: httpx.Client, sshd: Sshd) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port, "--mode", "hang"),
                     ready_timeout_s=2, grace_s=5)  # fmt: skip
    final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("failed", "ready_timeout")
    assert run["reason"].startswith("not ready after 2 s")
    assert final["status"] == "crashed"
    assert_clean(run, port)


def test_a_server_that_ignores_sigterm_is_killed(dash: httpx.Client, sshd: Sshd) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    attempt = launch(dash, campaign["id"], sshd.alias,
                     server_command(port, "--mode", "ignore-term"), grace_s=1)  # fmt: skip
    final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("done", "ready")
    assert run["stop_report"]["signal"] == "SIGKILL"
    assert "stopped by SIGKILL" in run["reason"]
    assert_clean(run, port)


def test_a_server_that_dies_during_the_benchmark_is_recorded_so(
    dash: httpx.Client, sshd: Sshd
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    # The warm-up's 4 requests and 2 of the first counted run's pass; then it dies.
    attempt = launch(
        dash, campaign["id"], sshd.alias,
        server_command(port, "--mode", "die-on-request", "--die-after", "6"),
        bench=bench_command(port, "--num-prompts", "4"), repeat=2, warmup=1,
    )  # fmt: skip
    final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("failed", "server_died"), run
    assert "illegal memory access" in run["reason"]
    assert final["status"] == "crashed"
    assert final["metric"] is None
    assert_clean(run, port)


def test_a_busy_port_is_refused_before_anything_is_launched(dash: httpx.Client, sshd: Sshd) -> None:
    import socket

    campaign = make_campaign(dash)
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        attempt = launch(dash, campaign["id"], sshd.alias, server_command(port))
        final = ended(dash, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("failed", "refused")
    assert f"port {port} is already in use" in run["reason"]
    assert run["pid"] is None and final["status"] == "proposed"
    # Nothing was tested: out of the story (lanes, counts, chart, share) until kept.
    assert final["lane"] == "refused"
    page = dash.get(f"/campaigns/{campaign['id']}").text
    fold = page.split('id="refused-fold"', 1)[1].split("</details>", 1)[0]
    assert f'id="attempt-{attempt["id"]}"' in fold and "0 in play" in page
    assert f"#{attempt['id']}" not in page.split('id="chart"', 1)[1].split("</figure>", 1)[0]
    token = dash.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    with httpx.Client(base_url=dash.base_url) as anonymous:
        assert anonymous.get(f"/s/{token}.json").json()["attempts"] == []
        assert "Hypotheses:** 0" in anonymous.get(f"/s/{token}.md").text
        # The owner keeps it by giving it a status: then it is part of the story.
        kept = dash.patch(
            f"/api/attempts/{attempt['id']}",
            json={"status": "eliminated", "verdict": "the port is held by another service"},
        )
        assert kept.is_success and kept.json()["lane"] == "eliminated"
        assert [a["id"] for a in anonymous.get(f"/s/{token}.json").json()["attempts"]] == [
            attempt["id"]
        ]


def test_two_launches_on_one_host_never_overlap(dash: httpx.Client, sshd: Sshd) -> None:
    campaign = make_campaign(dash)
    first_port, second_port = free_port(), free_port()
    first = launch(dash, campaign["id"], sshd.alias, server_command(first_port),
                   bench=bench_command(first_port), repeat=2)  # fmt: skip
    second = launch(dash, campaign["id"], sshd.alias, server_command(second_port),
                    bench=bench_command(second_port), repeat=1)  # fmt: skip
    queued = wait_for(
        lambda: (r := attempt_of(dash, second["id"])["run"])["reason"] and r,
        what="the second run to say why it waits",
    )
    assert queued["state"] == "launching"
    assert queued["reason"] == f"waiting for attempt #{first['id']} on {sshd.alias}"
    one, two = ended(dash, first["id"])["run"], ended(dash, second["id"])["run"]
    assert one["outcome"] == two["outcome"] == "measured"
    # The second launched only after the first was stopped and proven stopped.
    assert two["launched_at"] >= one["ended_at"]


def test_stop_ends_a_kept_server_and_retest_launches_the_same_command(
    dash: httpx.Client, sshd: Sshd
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port), keep=True)
    run = ended(dash, attempt["id"])["run"]
    assert (run["state"], run["outcome"], run["stoppable"]) == ("done", "ready", True)
    assert session_processes(run["pgid"]) and port_listening(port)
    asked_at = time.time()
    stopped = dash.post(f"/api/attempts/{attempt['id']}/stop")
    assert stopped.status_code == 200, stopped.text
    final = wait_for(
        lambda: (r := attempt_of(dash, attempt["id"])["run"])["stop_report"] and r,
        what="the kept server stopped",
    )
    assert final["stop_report"]["stopped"] is True
    # a kept server's time runs until it is stopped, not until it was ready
    launched = datetime.fromisoformat(final["launched_at"])
    launched_s = launched.replace(tzinfo=launched.tzinfo or UTC).timestamp()
    assert final["elapsed_s"] >= asked_at - launched_s, (final["elapsed_s"], asked_at - launched_s)
    assert_clean(final, port)
    again = dash.post(f"/api/attempts/{attempt['id']}/stop")
    assert again.status_code == 409 and "has ended" in again.json()["detail"]

    retest = dash.post(f"/api/attempts/{attempt['id']}/retest", json={})
    assert retest.status_code == 201, retest.text
    body = retest.json()
    assert body["retest_of"] == attempt["id"] and body["command"] == attempt["command"]
    assert body["run"]["command"] == run["command"] and body["run"]["keep"] is True
    rerun = ended(dash, body["id"])["run"]
    assert rerun["outcome"] == "ready"
    assert dash.post(f"/api/attempts/{body['id']}/stop").status_code == 200
    wait_for(lambda: attempt_of(dash, body["id"])["run"]["stop_report"], what="stopped")
    assert_clean(rerun, port)


def test_stop_ends_a_launch_waiting_for_an_unreachable_host_at_once(
    dash: httpx.Client, sshd: Sshd
) -> None:
    # A host alias whose port nobody listens on: the launch retries, saying so, for minutes.
    with sshd.ssh_config.open("a") as config:
        config.write(f"Host gone-box\n  HostName 127.0.0.1\n  Port {free_port()}\n")
    campaign = make_campaign(dash)
    attempt = launch(dash, campaign["id"], "gone-box", server_command(free_port()))
    wait_for(
        lambda: "retrying" in (attempt_of(dash, attempt["id"])["run"]["reason"] or ""),
        what="the launch retrying the host",
    )
    assert dash.post(f"/api/attempts/{attempt['id']}/stop").status_code == 200
    # Nothing was launched: nothing to wait for on the host before the stop is done.
    run = ended(dash, attempt["id"], timeout=15)["run"]
    assert (run["state"], run["outcome"]) == ("failed", "stopped"), run
    assert run["pid"] is None


def test_bad_launches_are_refused_with_a_clear_error(dash: httpx.Client, tmp_path: Path) -> None:
    campaign = make_campaign(dash)
    url = f"/api/campaigns/{campaign['id']}/attempts"
    bad = [
        {"host": "gpu;rm", "command": "x"},
        {"host": "local", "command": ""},
        {"host": "local", "command": "x", "repeat": 0},
        {"host": "local", "command": "x", "health_url": "file:///etc/passwd"},
    ]
    for spec in bad:
        response = dash.post(url, json={"title": "t", "launch": spec})
        assert response.status_code == 422, (spec, response.text)
    both = dash.post(url, json={"title": "t", "source": f"file://{tmp_path}/x.log",
                                "launch": {"host": "local", "command": "x"}})  # fmt: skip
    assert both.status_code == 422
    plain = dash.post(url, json={"title": "t"}).json()
    assert dash.post(f"/api/attempts/{plain['id']}/stop").status_code == 409
    stranger = httpx.post(
        f"{dash.base_url}{url}", json={"title": "t", "launch": {"host": "local", "command": "x"}}
    )
    assert stranger.status_code == 401


def test_a_launch_is_refused_while_a_compute_process_holds_the_gpu(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    holder = subprocess.Popen(["sleep", "60"])
    try:
        gpus.hold(holder.pid, 10758)
        attempt = launch(dash, campaign["id"], sshd.alias, server_command(port))
        final = ended(dash, attempt["id"])
    finally:
        holder.kill()
        holder.wait()
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("failed", "refused")
    assert run["reason"] == (
        f"refused: GPUs busy: pid {holder.pid} sleep holds 10758 MiB on GPU 0; "
        "GPU 0 has 10758 of 143771 MiB in use"
    )
    assert run["pid"] is None and final["status"] == "proposed"
    assert not port_listening(port)


def test_a_launch_onto_other_gpus_than_a_busy_one_goes_ahead(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs
) -> None:
    gpus.gpus = [{"index": i, "memory_total": 143771, "memory_used": 0} for i in (0, 1)]
    StandInGPUs.__init__(gpus, gpus.directory, *gpus.gpus)
    campaign = make_campaign(dash)
    holder = subprocess.Popen(["sleep", "60"])
    try:
        gpus.hold(holder.pid, 10758, gpu=1)  # another job's, on GPU 1
        runs = {}
        for visible in ("0", "1"):
            command = f"CUDA_VISIBLE_DEVICES={visible} {server_command(free_port())}"
            attempt = launch(dash, campaign["id"], sshd.alias, command)
            runs[visible] = ended(dash, attempt["id"])["run"]
    finally:
        holder.kill()
        holder.wait()
    assert (runs["0"]["state"], runs["0"]["outcome"]) == ("done", "ready"), runs["0"]["reason"]
    assert (runs["1"]["state"], runs["1"]["outcome"]) == ("failed", "refused")
    assert runs["1"]["reason"].startswith(f"refused: GPUs busy: pid {holder.pid} sleep holds")


def test_a_stop_proves_the_gpu_memory_is_back(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    command = server_command(port, *gpus.gpu_state_args(40000))
    attempt = launch(dash, campaign["id"], sshd.alias, command, keep=True)
    run = ended(dash, attempt["id"])["run"]
    assert (run["state"], run["outcome"]) == ("done", "ready")
    assert run["gpu_note"] is None  # checked: the host has nvidia-smi
    holding = subprocess.run(
        [sshd.bin / "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert holding.stdout == "40000\n"  # the kept server holds its memory
    assert dash.post(f"/api/attempts/{attempt['id']}/stop").status_code == 200
    final = wait_for(
        lambda: (r := attempt_of(dash, attempt["id"])["run"])["stop_report"] and r,
        what="the kept server stopped",
    )
    report = final["stop_report"]
    assert report["stopped"] is True and report["gpu_memory_back"] is True
    assert report["gpu_left"] == [] and report["gpu"]["devices"][0]["used_mib"] == 0
    assert final["state"] == "done" and "NOT proven" not in (final["reason"] or "")
    assert_clean(final, port)


def test_a_stop_whose_gpu_memory_is_not_back_is_not_proven(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs, tmp_path: Path
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    orphan_file = tmp_path / "orphan.pid"
    command = server_command(port, *gpus.gpu_state_args(40000), "--gpu-orphan", str(orphan_file))
    attempt = launch(dash, campaign["id"], sshd.alias, command)
    try:
        final = ended(dash, attempt["id"])
        orphan = int(orphan_file.read_text())
        run = final["run"]
        assert (run["state"], run["outcome"]) == ("failed", "ready")
        assert run["reason"] == (
            "stopped by SIGTERM; NOT proven stopped: GPU memory not back to what it was "
            f"before the launch: pid {orphan} {sys.executable} holds 40000 MiB on GPU 0; "
            "GPU 0 has 40000 MiB in use, 0 before the launch"
        )
        assert run["stop_report"]["stopped"] is True  # its session is empty: not enough
        assert run["stop_report"]["gpu_memory_back"] is False
        assert_clean(run, port)
        # What it left would poison the next launch's figures: refused.
        again = launch(dash, campaign["id"], sshd.alias, server_command(free_port()))
        refused = ended(dash, again["id"])["run"]
        assert refused["outcome"] == "refused"
        assert f"pid {orphan} {sys.executable} holds 40000 MiB on GPU 0" in refused["reason"]
    finally:
        if orphan_file.exists():
            os.kill(int(orphan_file.read_text()), signal.SIGKILL)


CUDA_12_8 = {"torch": "2.10.0+cu128", "sglang": "0.5.6", "flashinfer-python": "0.3.1",
             "sgl-kernel": "0.3.16", "nvidia-nccl-cu12": "2.27.3"}  # fmt: skip
CUDA_13 = {"torch": "2.9.1+cu130", "sglang": "0.5.9", "flashinfer-python": "0.6.4",
           "sgl-kernel": "0.3.21", "nvidia-nccl-cu13": "2.27.7"}  # fmt: skip


def test_the_host_says_what_a_launch_runs_on_and_the_pivot_shows_its_diff(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs, tmp_path: Path
) -> None:
    # The seeds' pivot, launched: the same server on the CUDA 12.8 stack, adopted as the
    # baseline, then on CUDA 13. nvidia-smi and the launch's own interpreter say which.
    eight = [{"index": i, "memory_total": 143771, "memory_used": 0} for i in range(8)]
    StandInGPUs.__init__(gpus, gpus.directory, *eight)
    campaign = make_campaign(dash)
    ended_ones = []
    for name, stack in (("cuda12.8", CUDA_12_8), ("cuda13", CUDA_13)):
        python = standin_interpreter(tmp_path / name, stack)
        port = free_port()
        command = f"{python} {STANDIN / 'server.py'} --port {port}"
        bench = bench_command(port, "--num-prompts", "4")
        attempt = launch(dash, campaign["id"], sshd.alias, command, title=name, bench=bench,
                         repeat=2, warmup=0)  # fmt: skip
        ended_ones.append(ended(dash, attempt["id"]))
        assert ended_ones[-1]["run"]["outcome"] == "measured", ended_ones[-1]["run"]
        if name == "cuda12.8":
            adopted = dash.patch(f"/api/attempts/{attempt['id']}",
                                 json={"status": "adopted", "set_baseline": True})  # fmt: skip
            assert adopted.is_success, adopted.text
    before, after = ended_ones
    assert before["environment"] == {
        "gpu": "NVIDIA H200", "gpu_count": 8, "driver": "580.95.05", "cuda": "12.8",
        "torch": "2.10.0", "engine": "sglang", "engine_version": "0.5.6",
        "python": ".".join(map(str, sys.version_info[:3])),
        "libs": {"flashinfer": "0.3.1", "nccl": "2.27.3", "sgl-kernel": "0.3.16"},
    }  # fmt: skip
    diff = attempt_of(dash, after["id"])["env_diff"]
    assert diff["baseline_attempt_id"] == before["id"]
    assert diff["summary"] == (
        "CUDA 12.8 → 13.0, torch 2.10.0 → 2.9.1, sglang 0.5.6 → 0.5.9, "
        "flashinfer 0.3.1 → 0.6.4, nccl 2.27.3 → 2.27.7, sgl-kernel 0.3.16 → 0.3.21"
    )


def test_an_interpreter_that_cannot_be_asked_leaves_the_environment_to_the_gpus(
    dash: httpx.Client, sshd: Sshd, gpus: StandInGPUs
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    command = f"/nonexistent/python3 {STANDIN / 'server.py'} --port {port}"
    attempt = launch(dash, campaign["id"], sshd.alias, command)
    final = ended(dash, attempt["id"])
    assert final["run"]["state"] == "failed"  # the server could not start either
    environment = final["environment"]
    assert environment["gpu"] == "NVIDIA H200" and environment["gpu_count"] == 1
    assert environment["torch"] is None and environment["libs"] == {}


def test_re_measuring_the_baseline_joins_its_sample_and_a_host_apart_is_said(
    dash: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    campaign = make_campaign(dash, baseline=None)

    def launched(title: str, host: str, mean: str, noise: str) -> dict[str, Any]:
        port = free_port()
        bench = bench_command(port, "--num-prompts", "2", "--fixed-mean", mean, "--noise-pct",
                              noise, "--draws", str(tmp_path / f"draws-{title}"))  # fmt: skip
        attempt = launch(dash, campaign["id"], host, server_command(port), title=title,
                         bench=bench, repeat=3, warmup=0)  # fmt: skip
        final = ended(dash, attempt["id"])
        assert final["run"]["outcome"] == "measured", final["run"]
        return final

    baseline = launched("baseline", "local", "100", "0.2")
    assert dash.patch(f"/api/attempts/{baseline['id']}",
                      json={"status": "adopted", "set_baseline": True}).is_success  # fmt: skip
    tried = launched("tried", sshd.alias, "110", "1")
    judged = attempt_of(dash, tried["id"])["stats"]
    assert judged["baseline"]["n"] == 3 and judged["call"] == "better"
    assert judged["warnings"] == [f"measured on {sshd.alias}, the baseline on local"]

    again = dash.post(f"/api/attempts/{baseline['id']}/remeasure")
    assert again.status_code == 201, again.text
    remeasure = again.json()
    assert remeasure["joins"] == baseline["id"] and remeasure["retest_of"] == baseline["id"]
    assert remeasure["title"] == "Re-measure: baseline" and remeasure["hypothesis"] == ""
    final = ended(dash, remeasure["id"])
    assert final["run"]["outcome"] == "measured" and final["metric"]["n"] == 3
    # Its runs are judged against the original's own: the baseline has not moved.
    assert final["stats"]["baseline"]["n"] == 3 and final["stats"]["call"] == "same"
    # Everyone else is judged against the six runs now.
    assert attempt_of(dash, tried["id"])["stats"]["baseline"]["n"] == 6
    assert dash.post(f"/api/attempts/{remeasure['id']}/remeasure").status_code == 409
    typed = dash.post(f"/api/campaigns/{campaign['id']}/attempts", json={"title": "by hand"})
    refused = dash.post(f"/api/attempts/{typed.json()['id']}/remeasure")
    assert refused.status_code == 409 and "not launched" in refused.json()["detail"]


def test_once_repeat_auto_made_its_call_no_next_run_is_announced() -> None:
    """Between the run that made the call and the stop that follows, the run is still
    benchmarking: what it shows must not be a fourth run under way (a `try` polling then
    printed "run 4 of up to 10" before "stopped after 3 runs")."""
    looking = {"confidence": 0.99, "max_runs": 10}
    run = Run(
        id=1, attempt_id=1, host="gpu-box", command="python -m sglang.launch_server",
        bench="python bench.py", repeat=10, warmup=0, state=RunState.benchmarking,
        bench_done=3, auto_repeat=looking,
    )  # fmt: skip
    with Session(create_engine("sqlite://")) as session:
        assert (
            run_view(session, run, None).bench_progress
            == "run 4 of up to 10, until the call is clear"
        )
        run.auto_repeat = {**looking, "ended_by": "clear", "call": "better", "n": 3}
        view = run_view(session, run, None)
    assert view.state == RunState.benchmarking and view.bench_progress is None
    assert view.auto_said is not None and "stopped after 3 runs" in view.auto_said
