"""A launched attempt's benchmark runs read back over the test sshd: the result file the
stand-in bench writes (sglang's `--output-file` JSONL, vLLM's `--save-result` JSON) gives
each run's figures, not the printed block (made to disagree); a missing file falls back to
the block and says why; the campaign's own pattern gives the metric."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.benchparse import BenchResult, parse_output
from app.config import Settings
from tests.conftest import OWNER_TOKEN, running
from tests.helpers import make_campaign
from tests.runner_helpers import bench_command, free_port, server_command
from tests.sshd import Sshd
from tests.test_pages import HX, has_root
from tests.test_runner_flow import assert_clean, ended, launch

HALF = ("--printed-scale", "0.5")  # the printed block says half of what the file says


@pytest.fixture
def dash(ssh_settings: Settings, database_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    settings = ssh_settings.model_copy(
        update={"runs_root": str(tmp_path / "runs"), "database_url": database_url}
    )
    with running(settings) as (_, client):
        yield client


def printed(run: dict[str, Any], index: int) -> BenchResult:
    """What benchmark run `index` printed (its log on the host: this machine)."""
    result = parse_output(Path(run["bench_runs"][index]["log_path"]).read_text())
    assert isinstance(result, BenchResult), result
    return result


def measured(api: httpx.Client, attempt: dict[str, Any], port: int) -> dict[str, Any]:
    final = ended(api, attempt["id"])
    run = final["run"]
    assert (run["state"], run["outcome"]) == ("done", "measured"), run
    assert_clean(run, port)
    return final


def test_sglangs_output_file_gives_each_run_its_own_line(
    dash: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    results = tmp_path / "bench" / "sglang.jsonl"
    results.parent.mkdir()
    results.write_text(json.dumps({"completed": 1, "output_throughput": 1.5}) + "\n")  # before
    # A relative path, resolved where the command's `cd` leads.
    bench = f"cd {results.parent} && " + bench_command(
        port, "--num-prompts", "4", "--output-file", "sglang.jsonl", *HALF
    )
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port), bench=bench,
                     repeat=2, warmup=1)  # fmt: skip
    final = measured(dash, attempt, port)
    run = final["run"]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(lines) == 4  # the earlier line, the warm-up's, the two counted runs'
    for index, (entry, line) in enumerate(zip(run["bench_runs"], lines[1:], strict=True)):
        assert (entry["source"], entry["result_file"]) == ("jsonl", str(results)), entry
        assert entry["result_file_note"] is None
        assert entry["figures"]["output_tok_s"] == line["output_throughput"]
        assert entry["figures"]["ttft_ms"] == line["mean_ttft_ms"]
        assert printed(run, index).output_tok_s == round(line["output_throughput"] * 0.5, 2)
    assert final["metric"]["samples"] == [line["output_throughput"] for line in lines[2:]]


def test_vllms_save_result_file_is_found_under_the_name_vllm_gives_it(
    dash: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    folder = tmp_path / "res"
    folder.mkdir()
    earlier = folder / "vllm-infqps-standin-8b-20260101-000000.json"
    earlier.write_text(json.dumps({"completed": 1, "output_throughput": 1.5}))
    bench = f"cd {tmp_path} && " + bench_command(
        port, "--num-prompts", "4", "--save-result", "--result-dir", "res", *HALF
    )
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port), bench=bench,
                     repeat=1, warmup=0)  # fmt: skip
    run = measured(dash, attempt, port)["run"]
    [written] = [path for path in folder.iterdir() if path != earlier]
    assert written.name.startswith("vllm-infqps-standin-8b-")
    saved = json.loads(written.read_text())
    [entry] = run["bench_runs"]
    assert (entry["source"], entry["result_file"]) == ("json", str(written))
    assert entry["metric_recorded"] == saved["output_throughput"]
    assert entry["figures"]["total_tok_s"] == saved["total_token_throughput"]
    assert entry["failed_requests"] == 0
    assert printed(run, 0).output_tok_s == round(saved["output_throughput"] * 0.5, 2)


def test_a_missing_result_file_falls_back_to_the_printed_block_and_says_why(
    dash: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    campaign = make_campaign(dash)
    port = free_port()
    bench = f"cd {tmp_path} && " + bench_command(
        port, "--num-prompts", "4", "--output-file", "out.jsonl", "--no-result-file"
    )
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port), bench=bench,
                     repeat=1, warmup=0)  # fmt: skip
    run = measured(dash, attempt, port)["run"]
    [entry] = run["bench_runs"]
    note = f"no file at {tmp_path / 'out.jsonl'}: figures from the printed result"
    assert (entry["source"], entry["result_file"], entry["result_file_note"]) == (
        "block", None, note,
    )  # fmt: skip
    assert entry["metric_recorded"] == printed(run, 0).output_tok_s

    with httpx.Client(base_url=str(dash.base_url), timeout=30) as page:
        assert page.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        for headers in ({}, HX):
            html = page.get(f"/attempts/{attempt['id']}", headers=headers).text
            assert has_root(html, f"bench-runs-{attempt['id']}")
            assert note in html


def test_the_campaigns_pattern_gives_the_figure_and_an_update_reaches_the_next_launch(
    dash: httpx.Client, sshd: Sshd
) -> None:
    pattern = r"Total token throughput \(tok/s\):\s+([\d.]+)"
    campaign = make_campaign(dash, bench_pattern=pattern)
    port = free_port()
    bench = bench_command(port, "--num-prompts", "4")
    attempt = launch(dash, campaign["id"], sshd.alias, server_command(port), bench=bench,
                     repeat=2, warmup=0)  # fmt: skip
    final = measured(dash, attempt, port)
    run = final["run"]
    for entry in run["bench_runs"]:
        figures = entry["figures"]
        assert entry["metric_from"] == "pattern"
        assert entry["metric_recorded"] == figures["value"] == figures["total_tok_s"]
        assert figures["value"] != figures["output_tok_s"]
    assert final["metric"]["samples"] == [e["metric_recorded"] for e in run["bench_runs"]]

    patched = dash.patch(
        f"/api/campaigns/{campaign['id']}", json={"bench_pattern": r"goodput ([\d.]+)"}
    )
    assert patched.status_code == 200 and patched.json()["bench_pattern"] == r"goodput ([\d.]+)"
    retest = dash.post(f"/api/attempts/{attempt['id']}/retest", json={})
    assert retest.status_code == 201, retest.text
    failed = ended(dash, retest.json()["id"])["run"]
    assert (failed["state"], failed["outcome"]) == ("failed", "bench_failed")
    assert failed["reason"].startswith(
        "benchmark run 1 failed: the campaign's pattern matched nothing in the output"
    )
    assert_clean(failed, port)
    # Its server was ready, then stopped: the story says its benchmark failed, not "ready".
    retested = dash.get(f"/api/attempts/{retest.json()['id']}").json()
    assert retested["status"] == "ready"
    token = dash.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    with httpx.Client(base_url=str(dash.base_url)) as visitor:
        summary, page = visitor.get(f"/s/{token}.md").text, visitor.get(f"/s/{token}").text
    assert "— ready, its benchmark failed\n" in summary.split(f"### #{retested['id']} ", 1)[1]
    assert '<span class="chip run-failed">its benchmark failed</span>' in page
