"""Every verb of the CLI against a real `campaign-dash serve`, found by its runtime file as
the same user on the same machine finds it: plain lines, --json, exit statuses, a wrong id,
no dashboard running, two dashboards side by side, and the stale file of a dead one."""

import csv
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app import demo_logs, runtime
from tests.cli import clean_env, free_port, run_cli, serving
from tests.conftest import OWNER_TOKEN, owner_client
from tests.helpers import attempt_of, make_campaign, wait_for


def user_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's shell on this machine: no token typed, dashboards found in one folder."""
    return {**clean_env(), "CAMPAIGN_DASH_RUNTIME_DIR": str(tmp_path / "runtime"), **extra}


def served(tmp_path: Path, name: str) -> dict[str, str]:
    return user_env(tmp_path, CAMPAIGN_DASH_DATABASE_URL=f"sqlite:///{tmp_path / name}",
                    CAMPAIGN_DASH_TOKEN=OWNER_TOKEN)  # fmt: skip


def cli(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=user_env(tmp_path, **extra), cwd=tmp_path)


def as_json(tmp_path: Path, *args: str) -> Any:
    done = cli(tmp_path, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


WRONG = [["show", "999"], ["eliminate", "999", "--because", "x"], ["adopt", "999"],
         ["note", "999", "x"], ["attempts", "999"], ["attempts", "no such campaign"],
         ["show", "first"], ["compare", "999", "998"]]  # fmt: skip


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[str, httpx.Client]]:
    port = free_port()
    with serving(served(tmp_path, "dash.db"), tmp_path, port):
        url = f"http://127.0.0.1:{port}"
        with owner_client(url) as api:
            yield url, api


def crashed_attempt(api: httpx.Client, campaign_id: int, log: Path, title: str) -> int:
    """An attempt following a log where torch's symmetric memory died of `KeyError: 12`."""
    log.write_text("\n".join(demo_logs.crash_torch_symm_mem()) + "\n")
    command = "python -m sglang.launch_server --enable-torch-symm-mem"
    body = {"title": title, "source": f"file://{log}", "command": command}
    made = api.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    assert made.status_code == 201, made.text

    def diagnosed() -> dict[str, Any] | None:
        attempt = attempt_of(api, made.json()["id"])
        return attempt if (attempt["diagnosis"] or {}).get("root_cause") else None

    wait_for(diagnosed, timeout=30, what="the crash's diagnosis")
    return int(made.json()["id"])


def measured_attempt(api: httpx.Client, campaign_id: int, title: str, values: list[float]) -> int:
    made = api.post(f"/api/campaigns/{campaign_id}/attempts", json={"title": title})
    assert made.status_code == 201, made.text
    for value in values:
        response = api.post(
            f"/api/attempts/{made.json()['id']}/measurements", json={"value": value}
        )
        assert response.status_code == 201, response.text
    return int(made.json()["id"])


def test_every_verb_reads_and_writes_the_running_dashboard_plain_json_and_wrong_ids(
    dashboard: tuple[str, httpx.Client], tmp_path: Path
) -> None:
    _, api = dashboard
    campaign = make_campaign(api, name="EAGLE-3", baseline=82.0)
    cid = campaign["id"]
    crash = crashed_attempt(api, cid, tmp_path / "symm.log", "Torch symmetric memory")
    graphs = measured_attempt(api, cid, "CUDA graph max bs 128", [90.0, 90.5, 91.0])
    same = measured_attempt(api, cid, "Overlap schedule", [82.1, 81.9, 82.0])

    # A campaign started from the terminal, as an agent at the keyboard would
    started = cli(tmp_path, "new", "TTFT", "--metric", "ms", "--lower-is-better",
                  "--baseline", "120", "--target", "90")  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert re.fullmatch(r"Campaign #\d+ TTFT \(ms, baseline 120\.0\)\.\n", started.stdout)
    ttft = as_json(tmp_path, "attempts", "TTFT")
    assert ttft == []
    refused = cli(tmp_path, "new", "Worse", "--baseline", "100", "--target", "90")
    assert refused.returncode == 2 and "target" in refused.stderr, refused.stderr
    # bad usage, said in one line: never a traceback (each option, each kind of non-number)
    for option, number in (("--baseline", "nan"), ("--target", "inf"), ("--noise-pct", "1e400")):
        bad = cli(tmp_path, "new", "Odd", option, number)
        assert bad.returncode == 2 and "not a finite number" in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
    twice = cli(tmp_path, "new", "TTFT")  # a name two campaigns share stands for neither
    assert twice.returncode == 2 and "is named 'TTFT' already" in twice.stderr, twice.stderr
    api.delete(f"/api/campaigns/{as_json(tmp_path, 'campaigns')[0]['id']}")

    listed = cli(tmp_path, "campaigns")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split() == ["ID", "NAME", "METRIC", "BASELINE", "ATTEMPTS"]
    assert "EAGLE-3" in listed.stdout and listed.stderr == ""  # one dashboard: nothing to say
    assert [c["name"] for c in as_json(tmp_path, "campaigns")] == ["EAGLE-3"]

    lines = cli(tmp_path, "attempts", "EAGLE-3").stdout.splitlines()
    assert lines[0] == f"EAGLE-3 (campaign #{cid}): 3 attempts"
    assert f"#{crash}" in lines[1] and "KeyError: 12" in lines[1]
    assert f"#{graphs}" in lines[2] and "better" in lines[2] and "n=3" in lines[2]
    by_id = as_json(tmp_path, "attempts", str(cid))
    assert [a["id"] for a in by_id] == [crash, graphs, same]
    measured = as_json(tmp_path, "attempts", "EAGLE-3", "--status", "measured")
    assert {a["id"] for a in measured} == {graphs, same}
    bad_status = cli(tmp_path, "attempts", "EAGLE-3", "--status", "great")
    assert bad_status.returncode == 2 and "'great' is not a status" in bad_status.stderr
    crashed = cli(tmp_path, "attempts", "EAGLE-3", "--status", "crashed").stdout.splitlines()
    assert crashed[0] == f"EAGLE-3 (campaign #{cid}): 1 attempt"

    shown = cli(tmp_path, "show", str(crash))
    assert shown.returncode == 0, shown.stderr
    assert "Root cause [" in shown.stdout and "KeyError: 12" in shown.stdout
    detail = as_json(tmp_path, "show", f"#{graphs}")
    assert detail["stats"]["call"] == "better" and detail["notes"] == []

    # No reason, or only spaces: refused, and the attempt is left as it was.
    for empty in ("", "   "):
        refused = cli(tmp_path, "eliminate", str(crash), "--because", empty)
        assert refused.returncode != 0 and "eliminating needs a verdict" in refused.stderr
        assert attempt_of(api, crash)["status"] == "crashed"
    out = cli(tmp_path, "eliminate", str(crash), "--because", "no table entry for sm_120")
    assert out.returncode == 0 and out.stdout.strip().endswith(
        "eliminated: no table entry for sm_120"
    )
    assert attempt_of(api, crash)["status"] == "eliminated"
    adopted = as_json(tmp_path, "adopt", str(graphs), "--as-baseline")
    assert adopted["status"] == "adopted"
    assert api.get(f"/api/campaigns/{cid}").json()["baseline"] == pytest.approx(90.5)

    assert cli(tmp_path, "note", str(crash), "needs", "CUDA", "13").returncode == 0
    noted = as_json(tmp_path, "note", "--campaign", "EAGLE-3", "next: the CUDA 13 pivot")
    assert noted["attempt_id"] is None and noted["body"] == "next: the CUDA 13 pivot"
    assert "Note: needs CUDA 13" in cli(tmp_path, "show", str(crash)).stdout
    no_text = cli(tmp_path, "note", str(crash))
    assert no_text.returncode == 2 and "give ATTEMPT and TEXT" in no_text.stderr
    empty = cli(tmp_path, "note", str(crash), " ")
    assert empty.returncode == 2 and "the note is empty" in empty.stderr, empty.stderr
    # An attempt and --campaign both: refused, not stored as "N text" on the campaign.
    notes_before = api.get(f"/api/campaigns/{cid}/notes").json()
    both = cli(tmp_path, "note", str(crash), "--campaign", "EAGLE-3", "both")
    assert both.returncode == 2 and "not both" in both.stderr, both.stderr
    assert api.get(f"/api/campaigns/{cid}/notes").json() == notes_before
    # Bytes that are no UTF-8, as an argument or on standard input: one line, nothing sent.
    for words, piped in (([b"bad\xffutf8"], None), ([b"-"], b"\xff\xfe bad utf8")):
        raw = subprocess.run(
            [sys.executable, "-m", "app", "note", str(crash), *words], input=piped,
            env=user_env(tmp_path), cwd=tmp_path, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        assert raw.returncode == 2 and b"not UTF-8: nothing was sent" in raw.stderr, raw.stderr
        assert b"Traceback" not in raw.stderr
    assert "utf8" not in cli(tmp_path, "show", str(crash)).stdout

    found = cli(tmp_path, "search", "sm_120")
    assert found.returncode == 0 and f"attempt #{crash}" in found.stdout
    assert as_json(tmp_path, "search", "Overlap")[0]["attempt_id"] == same
    missing = cli(tmp_path, "search", "no such words anywhere")
    assert missing.returncode == 1 and "Nothing matches" in missing.stdout

    seen = cli(tmp_path, "seen", "KeyError: 12")
    assert seen.returncode == 0, seen.stderr
    assert f"#{crash} Torch symmetric memory" in seen.stdout and "no table entry" in seen.stdout
    assert "Seen before in 1 attempt:" in seen.stdout
    log = tmp_path / "again.log"
    log.write_text("\n".join(demo_logs.crash_torch_symm_mem()) + "\n")
    from_log = json.loads(cli(tmp_path, "seen", "--log", str(log), "--json").stdout)
    assert [m["attempt_id"] for m in from_log["matches"]] == [crash]
    assert from_log["matches"][0]["verdict"] == "no table entry for sm_120"
    # The same words raised in another file (a kernel's config table) are another failure.
    elsewhere = tmp_path / "moe.log"
    elsewhere.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/sglang/srt/layers/moe/fused_moe.py", line 88, in get_config\n'
        "    return table[key]\n"
        "KeyError: 12\n"
    )
    other = cli(tmp_path, "seen", "--log", str(elsewhere))
    assert other.returncode == 1 and "Never seen before" in other.stdout, other.stdout
    never = cli(tmp_path, "seen", "RuntimeError: something nobody met")
    assert never.returncode == 1 and "Never seen before" in never.stdout
    both = cli(tmp_path, "seen", "x", "--log", str(log))
    assert both.returncode == 2 and "give TEXT or --log FILE" in both.stderr
    blank = cli(tmp_path, "seen", "  ")  # nothing asked is not "never seen before"
    assert blank.returncode == 2 and "TEXT is empty" in blank.stderr, blank.stderr
    # A binary file is said to be one, as diagnose says it, not "shows no failure".
    packed = tmp_path / "rotated.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    binary = cli(tmp_path, "seen", "--log", str(packed))
    assert binary.returncode == 2 and "is not a text log" in binary.stderr, binary.stderr

    compared = cli(tmp_path, "compare", str(graphs), str(same))
    assert compared.returncode == 0 and compared.stdout.splitlines()[0].split() == [
        f"#{graphs}", f"#{same}"]  # fmt: skip
    assert [a["id"] for a in as_json(tmp_path, "compare", str(same), str(crash))["attempts"]] == [
        same, crash]  # fmt: skip

    markdown = cli(tmp_path, "export", "EAGLE-3").stdout
    # Markdown's own characters are escaped there: sm\_120.
    assert markdown.startswith("# EAGLE-3") and "Verdict: no table entry for sm\\_120" in markdown
    exported = as_json(tmp_path, "export", "EAGLE-3")
    clash = cli(tmp_path, "export", "EAGLE-3", "--format", "md", "--json")
    assert clash.returncode == 2 and "not with --format md" in clash.stderr, clash.stderr
    assert exported == json.loads(cli(tmp_path, "export", str(cid), "--format", "json").stdout)
    rows = list(csv.DictReader(io.StringIO(cli(tmp_path, "export", "1", "--format", "csv").stdout)))
    assert sorted(float(r["value"]) for r in rows if r["title"] == "Overlap schedule") == [
        81.9, 82.0, 82.1]  # fmt: skip

    # A wrong id, for each verb that takes one: one line, exit 2.
    for verb in WRONG:
        done = cli(tmp_path, *verb)
        assert done.returncode == 2 and done.stdout == "", verb
        said = done.stderr.strip().splitlines()
        assert len(said) == 1 and said[0].startswith("Error: "), done.stderr
        assert any(word in said[0] for word in ("999 not found", "no campaign named",
                                                 "not an attempt")), said  # fmt: skip

    # A campaign by the start of its name, as the README's examples type the demo's.
    longer = make_campaign(api, name="EAGLE-3 speculative decoding on 8x RTX PRO 6000 (PCIe)")
    heading = cli(tmp_path, "attempts", "eagle-3 spec").stdout.splitlines()[0]
    assert heading == f"{longer['name']} (campaign #{longer['id']}): 0 attempts"
    assert cli(tmp_path, "attempts", "EAGLE-3").stdout.startswith("EAGLE-3 (campaign #")  # exact
    both = cli(tmp_path, "attempts", "EAGLE")
    assert both.returncode == 2 and f"2 campaigns start with 'EAGLE' (#{cid}, #{longer['id']})" in (
        both.stderr
    )


def test_no_dashboard_running_is_one_line_naming_what_to_do(tmp_path: Path) -> None:
    for verb in (["campaigns"], ["seen", "KeyError: 12"], ["try", "c", "t", "--host", "local",
                                                            "--", "true"]):  # fmt: skip
        done = cli(tmp_path, *verb)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [
            "Error: no dashboard is running here (none has a runtime file in "
            f"{tmp_path / 'runtime'}): start one with `campaign-dash serve`, or give --url URL "
            "with CAMPAIGN_DASH_TOKEN set"
        ]
    gone = cli(tmp_path, "campaigns", "--url", f"http://127.0.0.1:{free_port()}",
               CAMPAIGN_DASH_TOKEN=OWNER_TOKEN)  # fmt: skip
    assert gone.returncode == 2 and len(gone.stderr.strip().splitlines()) == 1
    assert "cannot reach the dashboard" in gone.stderr and "campaign-dash serve" in gone.stderr
    # No token, and nothing there either: that is said first (a token would not help).
    nothing = cli(tmp_path, "campaigns", "--url", f"http://127.0.0.1:{free_port()}")
    assert nothing.returncode == 2 and "no dashboard answers at" in nothing.stderr
    assert "campaign-dash serve" in nothing.stderr and "TOKEN" not in nothing.stderr


def test_a_dashboard_elsewhere_without_its_token_asks_for_it(
    tmp_path: Path, dashboard: tuple[str, httpx.Client]
) -> None:
    url, _ = dashboard
    elsewhere = tmp_path / "another-user"  # no runtime file of that dashboard there
    elsewhere.mkdir()
    no_token = cli(elsewhere, "campaigns", "--url", url)
    assert no_token.returncode == 2 and "set CAMPAIGN_DASH_TOKEN" in no_token.stderr


def test_two_dashboards_the_cli_says_which_it_uses_and_a_stale_file_is_ignored(
    tmp_path: Path,
) -> None:
    first_port, second_port = free_port(), free_port()
    with serving(served(tmp_path, "first.db"), tmp_path, first_port):
        with owner_client(f"http://127.0.0.1:{first_port}") as api:
            make_campaign(api, name="on the first")
        alone = cli(tmp_path, "campaigns")
        assert "on the first" in alone.stdout and alone.stderr == ""
        with serving(served(tmp_path, "second.db"), tmp_path, second_port):
            with owner_client(f"http://127.0.0.1:{second_port}") as api:
                make_campaign(api, name="on the second")
            latest = cli(tmp_path, "campaigns")
            assert "on the second" in latest.stdout
            assert latest.stderr.strip() == (
                f"2 dashboards run here: using http://127.0.0.1:{second_port} (pid "
                f"{_pid(tmp_path, second_port)}, database sqlite:///{tmp_path / 'second.db'}), "
                f"as it started last (also http://127.0.0.1:{first_port}; --url picks one)"
            )
            # Run where the first one's database is this directory's: that one.
            ours = cli(tmp_path, "campaigns",
                       CAMPAIGN_DASH_DATABASE_URL=f"sqlite:///{tmp_path / 'first.db'}")  # fmt: skip
            assert "on the first" in ours.stdout and "on the second" not in ours.stdout
            assert "as it serves this directory's database" in ours.stderr
            # --url picks; the token is the one of that dashboard's runtime file.
            picked = cli(tmp_path, "campaigns", "--url", f"http://127.0.0.1:{first_port}")
            assert "on the first" in picked.stdout and picked.stderr == ""

            # A dashboard killed outright leaves its file: its process is gone, so it is
            # removed and passed over; a live pid whose port nobody answers is passed over.
            dead = subprocess.Popen([sys.executable, "-c", "pass"])
            dead.wait()
            folder = tmp_path / "runtime"
            _fake(folder / f"dashboard-{dead.pid}.json", dead.pid, free_port(), started=2e9)
            _fake(folder / f"dashboard-{os.getpid()}.json", os.getpid(), free_port(), started=2e9)
            after = cli(tmp_path, "campaigns")
            assert "on the second" in after.stdout and "2 dashboards run here" in after.stderr
            assert not (folder / f"dashboard-{dead.pid}.json").exists()
            assert (folder / f"dashboard-{os.getpid()}.json").exists()
        assert "1 dashboards" not in cli(tmp_path, "campaigns").stderr


def _fake(path: Path, pid: int, port: int, *, started: float) -> None:
    fields = {"url": f"http://127.0.0.1:{port}", "token": "stale", "pid": pid,
              "database": "sqlite:////gone.db", "started_at": started}  # fmt: skip
    path.write_text(json.dumps(fields))


def _pid(tmp_path: Path, port: int) -> int:
    for path in (tmp_path / "runtime").glob("dashboard-*.json"):
        data = json.loads(path.read_text())
        if data["url"].endswith(f":{port}"):
            return int(data["pid"])
    raise AssertionError(f"no runtime file for port {port}")


def test_the_runtime_file_is_the_users_alone_its_token_dies_with_its_dashboard(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = served(tmp_path, "dash.db")
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port) as process:
        folder = tmp_path / "runtime"
        path = folder / f"dashboard-{process.pid}.json"
        assert folder.stat().st_mode & 0o777 == 0o700
        assert path.stat().st_mode & 0o777 == 0o600
        written = json.loads(path.read_text())
        assert written["url"] == url and written["token"] != OWNER_TOKEN
        assert written["database"] == runtime.database_identity(f"sqlite:///{tmp_path / 'dash.db'}")
        token = written["token"]
        assert httpx.get(f"{url}/api/campaigns", headers={"Authorization": f"Bearer {token}"}
                         ).status_code == 200  # fmt: skip
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert not path.exists()
    with serving(env, tmp_path, port):
        refused = httpx.get(f"{url}/api/campaigns", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401  # a restarted dashboard has a token of its own


def test_the_status_option_s_help_names_every_status_and_no_other() -> None:
    from click.testing import CliRunner

    from app.models import Status
    from app.verbs import attempts

    shown = " ".join(CliRunner().invoke(attempts, ["--help"]).output.split())
    listed = re.search(r"Only the attempts with this status: ([a-z, ]+)", shown)
    assert listed is not None, shown
    named = set(re.split(r", | or ", listed.group(1).strip()))
    assert named == {status.value for status in Status}


@pytest.mark.parametrize("columns", [80, 250])
def test_compare_wraps_a_long_change_instead_of_cutting_it(columns: int) -> None:
    from app.verbs import side_by_side

    flags = "only change: +enable_flashinfer_allreduce_fusion, +disable_custom_all_reduce"
    env = "driver 575.57.08 → 580.95.05, CUDA 12.8 → 13.0, sglang 0.5.2 → 0.5.3"
    found = [
        {"id": 9, "title": "CUDA 13 baseline", "status": "adopted", "metric_value": 92.6},
        {"id": 10, "title": "FlashInfer allreduce fusion (retest)", "status": "measured",
         "metric_value": 104.5, "flag_diff": {"summary": flags}, "env_diff": {"summary": env}},
    ]  # fmt: skip
    lines = side_by_side(found, columns)
    assert all(len(line) <= max(columns, 80) for line in lines), lines
    assert lines[0].split() == ["#9", "#10"] and "…" not in "\n".join(lines)
    # #10's column read down, whatever its lines broke at
    column = lines[0].index("#10")
    read = "".join(line[column:].replace(" ", "") for line in lines)
    for text in (flags, env, "FlashInfer allreduce fusion (retest)", "104.5"):
        assert text.replace(" ", "") in read, (text, lines)


def test_an_attempt_s_line_says_its_run_failed_where_its_status_does_not() -> None:
    from app.verbs import attempt_line

    def line(status: str, outcome: str | None) -> str:
        return attempt_line({"id": 3, "status": status, "title": "Tree spec",
                             "run": {"outcome": outcome} if outcome else None})[1]  # fmt: skip

    assert line("ready", "bench_failed") == "ready, its benchmark failed"
    assert line("running", "ready_timeout") == "running, not ready in time"
    assert line("ready", "ready") == line("ready", None) == "ready"
    assert line("crashed", "crashed") == "crashed"  # its status says it already
    assert line("measured", "stopped") == "measured"
    assert line("ready", "a newer dashboard's outcome") == "ready"
