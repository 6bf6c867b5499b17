"""`campaign-dash try` end to end against a served dashboard and the test sshd, with its
exit statuses; and a dashboard killed with SIGKILL mid-benchmark that, started again,
finds its run and follows it to its end."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.runner.host_gpus import SMI_DIRS
from app.runner.outcomes import RunOutcome
from tests.cli import free_port, launch, serving, wait_until_serving
from tests.conftest import owner_client
from tests.helpers import UI_WAIT_MS, attempt_of, make_campaign, wait_for
from tests.runner_helpers import (
    StandInGPUs,
    bench_command,
    port_listening,
    served_env,
    server_command,
    session_processes,
)
from tests.sshd import SESSION_PATH, Sshd


@pytest.fixture
def env(sshd: Sshd, tmp_path: Path) -> dict[str, str]:
    return served_env(sshd, f"sqlite:///{tmp_path / 'dash.db'}", tmp_path / "runs")


# Each outcome's stored and API value (the contract), try's exit status for it, and whether
# the server or its benchmark failed (a stop picked up halfway then ends the run `failed`).
OUTCOMES = [
    ("measured", 0, False),
    ("ready", 0, False),
    ("crashed", 1, True),
    ("ready_timeout", 1, True),
    ("bench_failed", 1, True),
    ("server_died", 1, True),
    ("stopped", 1, False),
    ("refused", 2, False),
    ("host_rebooted", 2, False),
    ("infrastructure", 2, False),
]


@pytest.mark.parametrize(("value", "exit_code", "failed"), OUTCOMES)
def test_each_run_outcome_keeps_its_value_and_says_its_exit_status(
    value: str, exit_code: int, failed: bool
) -> None:
    outcome = RunOutcome(value)
    assert (outcome.value, outcome.exit_code, outcome.failed) == (value, exit_code, failed)
    assert json.dumps({"outcome": outcome}) == json.dumps({"outcome": value})


def test_every_run_outcome_is_in_the_table_and_an_unknown_one_is_read_as_none() -> None:
    assert sorted(RunOutcome) == sorted(RunOutcome(value) for value, _, _ in OUTCOMES)
    assert RunOutcome.read("measured") is RunOutcome.measured
    assert RunOutcome.read("a newer dashboard's outcome") is None
    assert RunOutcome.read(None) is None


def try_(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "try", *args],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_try_runs_the_loop_and_says_how_it_ended_by_its_exit_status(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port), owner_client(url) as api:
        campaign = make_campaign(api, name="EAGLE-3")
        server_port = free_port()
        server = server_command(server_port, "--enable-torch-symm-mem").split()
        measured = try_(
            env, tmp_path, "EAGLE-3", "Torch symmetric memory", "--host", sshd.alias,
            "--bench", bench_command(server_port, "--num-prompts", "3"), "--repeat", "2",
            "--url", url, "--", *server,
        )  # fmt: skip
        assert measured.returncode == 0, measured.stdout + measured.stderr
        lines = measured.stdout.splitlines()
        assert lines[0].startswith(f"{url}/attempts/")
        attempt_id = int(lines[0].rsplit("/", 1)[1])
        assert "  starting" in lines and any(line.startswith("  benchmarking (") for line in lines)
        assert lines[-1] == "  measured"
        attempt = attempt_of(api, attempt_id)
        assert attempt["metric"]["n"] == 2 and attempt["campaign_id"] == campaign["id"]
        assert attempt["command"] == " ".join(server)
        assert not port_listening(server_port)

        crashed = try_(env, tmp_path, str(campaign["id"]), "Crash", "--host", sshd.alias,
                       "--url", url, "--",
                       *server_command(free_port(), "--mode", "crash").split())  # fmt: skip
        assert crashed.returncode == 1, crashed.stdout + crashed.stderr
        assert "crashed before ready: KeyError: 12" in crashed.stdout
        # --json: the progress on stderr, the attempt as it ended on stdout, same exit status.
        as_json = try_(env, tmp_path, "EAGLE-3", "Crash again", "--host", sshd.alias, "--json",
                       "--url", url, "--",
                       *server_command(free_port(), "--mode", "crash").split())  # fmt: skip
        assert as_json.returncode == 1, as_json.stdout + as_json.stderr
        ended = json.loads(as_json.stdout)
        assert ended["status"] == "crashed" and ended["run"]["outcome"] == "crashed"
        assert ended["diagnosis"]["root_cause"] == "KeyError: 12"
        assert "crashed before ready: KeyError: 12" in as_json.stderr

        import socket

        with socket.socket() as holder:
            # The benchmark's connections to it may still be in TIME_WAIT.
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind(("127.0.0.1", server_port))
            holder.listen()
            refused = try_(env, tmp_path, "EAGLE-3", "Busy", "--host", sshd.alias,
                           "--url", url, "--", *server)  # fmt: skip
        assert refused.returncode == 2
        assert f"port {server_port} is already in use" in refused.stdout
        # Listed apart, as the page folds it: nothing was tested.
        listed = subprocess.run(
            [sys.executable, "-m", "app", "attempts", "EAGLE-3", "--url", url],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert listed.stdout.splitlines()[0].endswith(": 3 attempts and 1 refused launch")
        assert any(
            "refused launch" in line and "Busy" in line for line in listed.stdout.splitlines()[1:]
        )

        unknown = try_(env, tmp_path, "no such campaign", "x", "--host", "local",
                       "--url", url, "--", "true")  # fmt: skip
        assert unknown.returncode == 2 and "no campaign named 'no such campaign'" in unknown.stderr
        # Elsewhere (no dashboard of this user here to take a token from), a token is needed.
        elsewhere = {k: v for k, v in env.items() if k != "CAMPAIGN_DASH_TOKEN"}
        elsewhere["CAMPAIGN_DASH_RUNTIME_DIR"] = str(tmp_path / "no-dashboards-here")
        no_token = try_(elsewhere, tmp_path,
                        "EAGLE-3", "x", "--host", "local", "--url", url, "--", "true")  # fmt: skip
        assert no_token.returncode == 2 and "CAMPAIGN_DASH_TOKEN" in no_token.stderr
    gone = try_(env, tmp_path, "EAGLE-3", "x", "--host", "local", "--url", url, "--", "true")
    assert gone.returncode == 2 and "cannot reach the dashboard" in gone.stderr


def test_try_fails_a_measured_run_whose_stop_was_not_proven(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    gpus = StandInGPUs(tmp_path / "gpus")
    gpus.install(sshd.bin)
    env = {**env, "CAMPAIGN_DASH_GPU_RELEASE_SECONDS": "1"}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    orphan_file = tmp_path / "orphan.pid"
    server_port = free_port()
    # A helper of the server's leaves its session and keeps the GPU memory.
    server = server_command(server_port, *gpus.gpu_state_args(40000),
                            "--gpu-orphan", str(orphan_file)).split()  # fmt: skip
    try:
        with serving(env, tmp_path, port), owner_client(url) as api:
            make_campaign(api, name="EAGLE-3")
            leaky = try_(
                env, tmp_path, "EAGLE-3", "Leaky", "--host", sshd.alias, "--bench",
                bench_command(server_port, "--num-prompts", "3"), "--repeat", "1",
                "--url", url, "--", *server,
            )  # fmt: skip
    finally:
        if orphan_file.exists():
            os.kill(int(orphan_file.read_text()), signal.SIGKILL)
    assert leaky.returncode == 2, leaky.stdout + leaky.stderr
    assert "  measured" in leaky.stdout.splitlines()  # its figures are recorded all the same
    assert "NOT proven stopped: GPU memory not back" in leaky.stderr, leaky.stderr


def _run(api: httpx.Client, attempt_id: int) -> dict[str, Any]:
    run: dict[str, Any] = attempt_of(api, attempt_id)["run"]
    return run


def test_a_dashboard_killed_mid_benchmark_finds_its_run_again_and_completes_it(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_port = free_port()
    first = launch(env, tmp_path, port)
    try:
        wait_until_serving(first, port)
        with owner_client(url) as api:
            campaign = make_campaign(api)
            body = {"title": "Torch symmetric memory", "launch": {
                "host": sshd.alias, "command": server_command(server_port),
                "bench": bench_command(server_port, "--num-prompts", "4", "--pause", "0.2"),
                "repeat": 3, "warmup": 1}}  # fmt: skip
            attempt = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body).json()
            wait_for(lambda: _run(api, attempt["id"])["bench_done"] >= 2, timeout=60,
                     what="two benchmark runs done")  # fmt: skip
    finally:
        first.send_signal(signal.SIGKILL)  # no shutdown of any kind
        first.wait()
    with owner_client(url) as api, pytest.raises(httpx.TransportError):
        api.get("/api/campaigns")
    # Meanwhile the server and its benchmark go on, on the host.
    assert port_listening(server_port)
    with serving(env, tmp_path, port), owner_client(url) as api:
        final = wait_for(
            lambda: (
                (a := attempt_of(api, attempt["id"]))["run"]["state"] in ("done", "failed") and a
            ),
            timeout=90,
            what="the run followed to its end after the restart",
        )
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("done", "measured"), run
    assert [r["index"] for r in run["bench_runs"]] == [1, 2, 3, 4]  # none lost, none twice
    assert final["metric"]["n"] == 3
    wait_for(lambda: not session_processes(run["pgid"]), timeout=10, what="an empty session")
    assert not port_listening(server_port)


def test_a_host_whose_boot_id_changed_marks_the_run_so(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_port = free_port()
    first = launch(env, tmp_path, port)
    try:
        wait_until_serving(first, port)
        with owner_client(url) as api:
            campaign = make_campaign(api)
            body = {"title": "t", "launch": {"host": sshd.alias, "ready_timeout_s": 600,
                    "command": server_command(server_port, "--mode", "hang")}}  # fmt: skip
            attempt = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body).json()
            run = wait_for(lambda: (r := _run(api, attempt["id"]))["state"] == "starting" and r,
                           what="started")  # fmt: skip
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # As after a reboot: the run's record names a boot the host no longer runs (the hung
    # server itself is ended here, as the reboot would have).
    record_path = Path(run["run_dir"]) / "server.json"
    record = json.loads(record_path.read_text())
    os.killpg(record["sid"], signal.SIGKILL)
    record_path.write_text(json.dumps({**record, "boot_id": "0" * 36}))
    with serving(env, tmp_path, port), owner_client(url) as api:
        final = wait_for(
            lambda: (a := attempt_of(api, attempt["id"]))["run"]["state"] == "failed" and a,
            what="the run marked",
        )
    assert final["run"]["outcome"] == "host_rebooted"
    assert "rebooted (its boot id changed) while the run was starting" in final["run"]["reason"]
    assert final["status"] == "crashed"


def test_a_host_without_nvidia_smi_is_said_in_try_on_the_run_panel_and_in_the_preview(
    env: dict[str, str],
    sshd: Sshd,
    tmp_path: Path,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    # Neither the busy-GPU refusal nor the stop's GPU memory proof can run there: the
    # engineer must read it where they look, not in a JSON field.
    places = [*SESSION_PATH.split(":"), *SMI_DIRS]
    if any(os.access(os.path.join(d, "nvidia-smi"), os.X_OK) for d in places):
        pytest.skip("this machine has an nvidia-smi: the host would check its GPUs")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    note = f"GPUs not checked: no nvidia-smi on {sshd.alias}"
    with serving(env, tmp_path, port), owner_client(url) as api:
        make_campaign(api, name="EAGLE-3")
        server = server_command(free_port()).split()
        tried = try_(env, tmp_path, "EAGLE-3", "Unchecked", "--host", sshd.alias,
                     "--url", url, "--", *server)  # fmt: skip
        assert tried.returncode == 0, tried.stdout + tried.stderr
        assert f"  {note}" in tried.stdout.splitlines()
        attempt_id = int(tried.stdout.splitlines()[0].rsplit("/", 1)[1])

        page = open_page(f"/attempts/{attempt_id}", base=url)
        assert page.locator(f"#run-{attempt_id} .gpu-note").inner_text() == note
        campaign_id = attempt_of(api, attempt_id)["campaign_id"]
        page.goto(f"{url}/campaigns/{campaign_id}")
        page.fill("#launch input[name=title]", "Next")
        page.fill("#launch input[name=host]", sshd.alias)
        page.fill("#launch textarea[name=command]", " ".join(server))
        page.click('#launch button[value="preview"]')
        said = page.locator("#host-check .gpu-note")
        said.wait_for(timeout=UI_WAIT_MS)
        assert said.inner_text().startswith(f"{note}: a busy GPU would not refuse the launch")


def test_try_says_the_run_goes_on_when_the_dashboard_dies_under_it(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = server_command(free_port(), "--mode", "hang").split()
    dashboard = launch(env, tmp_path, port)
    printed = tmp_path / "try.out"
    try:
        wait_until_serving(dashboard, port)
        with owner_client(url) as api:
            make_campaign(api, name="EAGLE-3")
        with printed.open("w") as out:
            tried = subprocess.Popen(
                [sys.executable, "-m", "app", "try", "EAGLE-3", "Hangs", "--host", sshd.alias,
                 "--ready-timeout", "600", "--url", url, "--", *server],
                env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        wait_for(lambda: "  starting" in printed.read_text(), timeout=60, what="try following")
        dashboard.send_signal(signal.SIGKILL)
        dashboard.wait()
        assert tried.wait(timeout=30) == 2
    finally:
        if dashboard.poll() is None:
            dashboard.kill()
    said = printed.read_text()
    attempt_url = said.splitlines()[0]
    attempt_id = int(attempt_url.rsplit("/", 1)[1])
    # It does (stopped here, before the checks: a failing one leaves no server behind).
    with serving(env, tmp_path, port), owner_client(url) as api:
        assert _run(api, attempt_id)["state"] == "starting"
        assert api.post(f"/api/attempts/{attempt_id}/stop").status_code == 200
        run = wait_for(lambda: (r := _run(api, attempt_id))["stop_report"] and r, what="stopped")
    assert run["stop_report"]["stopped"]
    assert (
        f"the dashboard at {url} went away" in said
        and f"the run goes on on {sshd.alias} (pid " in said
        and f"a restarted dashboard finishes it: watch it at {attempt_url}" in said
    ), said


def test_progress_says_a_state_once() -> None:
    from app.try_cli import _progress

    assert _progress({"run": {"state": "launching", "reason": "launching"}}) == "launching"
    failed = {"run": {"state": "failed", "reason": "refused: port 30000 is already in use"}}
    assert _progress(failed) == "failed: refused: port 30000 is already in use"


def test_repeat_auto_stops_at_three_for_a_clear_gain_and_says_so(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    # A benchmark of known noise: a 10 % gain at 1 % noise needs no more than three runs.
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port), owner_client(url) as api:
        make_campaign(api, name="EAGLE-3", baseline=100.0)
        server_port = free_port()
        bench = bench_command(server_port, "--num-prompts", "2", "--fixed-mean", "110",
                              "--noise-pct", "1", "--draws", str(tmp_path / "draws"))  # fmt: skip
        done = try_(
            env, tmp_path, "EAGLE-3", "Clear gain", "--host", sshd.alias, "--bench", bench,
            "--repeat", "auto", "--warmup", "0", "--url", url, "--",
            *server_command(server_port).split(),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        attempt = attempt_of(api, int(done.stdout.splitlines()[0].rsplit("/", 1)[1]))
    assert attempt["metric"]["n"] == 3 and attempt["run"]["repeat"] == 10
    assert attempt["run"]["auto_repeat"]["ended_by"] == "clear"
    assert "  repeat auto: stopped after 3 runs, the call clear: better" in done.stdout
    assert "99.38 %" in done.stdout  # each of up to 8 looks at 1 - 5 %/8
    assert attempt["stats"]["call"] == "better"
    assert " better (n=3) against the baseline" in done.stdout
    assert any(
        line.startswith("  benchmarking (run 1 of up to 10") for line in done.stdout.splitlines()
    )
    # The look at the call is written with the run it follows: no fourth run is announced
    assert "(run 4 of up to 10" not in done.stdout, done.stdout


def test_repeat_auto_spends_its_budget_on_a_change_inside_the_noise(
    env: dict[str, str], sshd: Sshd, tmp_path: Path
) -> None:
    # +0.5 % at 3 % noise: no number of runs this budget allows tells it from noise.
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port), owner_client(url) as api:
        campaign = make_campaign(api, name="EAGLE-3", baseline=100.0)
        server_port = free_port()
        bench = bench_command(server_port, "--num-prompts", "2", "--fixed-mean", "100.5",
                              "--noise-pct", "3", "--draws", str(tmp_path / "draws"))  # fmt: skip
        body = {"title": "Inside the noise", "launch": {
            "host": sshd.alias, "command": server_command(server_port), "bench": bench,
            "repeat": "auto", "max_runs": 6, "warmup": 0}}  # fmt: skip
        created = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["run"]["auto_repeat"]["max_runs"] == 6
        attempt = wait_for(
            lambda: (a := attempt_of(api, created.json()["id"]))["run"]["state"] == "done" and a,
            timeout=90, what="the run's end",
        )  # fmt: skip
    run = attempt["run"]
    assert attempt["metric"]["n"] == 6 and run["outcome"] == "measured"
    assert run["auto_repeat"] == {**run["auto_repeat"], "ended_by": "budget", "n": 6,
                                  "call": "inconclusive"}  # fmt: skip
    assert run["auto_said"].startswith("repeat auto: the budget of 6 runs spent, the call still")
    assert attempt["stats"]["call"] == "inconclusive"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "1e400"])
def test_a_ready_timeout_that_is_no_finite_positive_number_is_bad_usage(value: str) -> None:
    # (exit 1 says crashed: a typo must not read as one, nor end in a traceback)
    from click.testing import CliRunner

    from app.cli import main

    result = CliRunner().invoke(
        main, ["try", "c", "t", "--host", "local", "--ready-timeout", value, "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert "--ready-timeout" in result.output and "Traceback" not in result.output
    demo = CliRunner().invoke(main, ["demo", "--no-browser", "--speed", value])
    assert demo.exit_code == 2 and "--speed" in demo.output, demo.output
