"""The seeds' turning point, end to end over the test sshd with the runner: two attempts die
on the old stack (CUDA 12.8: FlashInfer's fusion has no sm_120 build, torch symmetric memory
has no table entry for capability 12), a CUDA 13 pivot is adopted, and one action retests
both with their own commands, one host at a time. Fusion now measures; symmetric memory
crashes again the same way, and each attempt page says so beside the original."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app import demo_logs
from app.config import Settings
from tests.conftest import running
from tests.helpers import UI_WAIT_MS, attempt_of, make_campaign, wait_for
from tests.runner_helpers import bench_command, free_port, server_command
from tests.sshd import Sshd

SHOTS = Path("test-artifacts/pivot-story")


@pytest.fixture
def dash(ssh_settings: Settings, tmp_path: Path) -> Iterator[tuple[str, httpx.Client]]:
    settings = ssh_settings.model_copy(update={"runs_root": str(tmp_path / "runs")})
    with running(settings) as (live, client):
        yield live.url, client


def launched(api: httpx.Client, campaign_id: int, title: str, host: str, port: int,
             *server_options: str) -> dict[str, Any]:  # fmt: skip
    body = {
        "title": title,
        "launch": {"host": host, "command": server_command(port, *server_options),
                   "bench": bench_command(port), "repeat": 3},
    }  # fmt: skip
    response = api.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def ended(api: httpx.Client, attempt_id: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        attempt = attempt_of(api, attempt_id)
        done = attempt["run"]["state"] in ("done", "failed")
        # A crash's diagnosis is read from the whole log, not the run's end alone.
        read = attempt["tail"] is None or attempt["tail"]["bytes_read"] >= (
            attempt["tail"].get("size") or 0
        )
        return attempt if done and read else None

    return wait_for(probe, timeout=90, what=f"the run of attempt {attempt_id} to end")


@pytest.mark.browser
def test_a_cuda_pivot_retests_what_the_old_stack_blocked_over_ssh(
    dash: tuple[str, httpx.Client],
    sshd: Sshd,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    url, api = dash
    SHOTS.mkdir(parents=True, exist_ok=True)
    stack = tmp_path / "cuda-version"
    stack.write_text("12.8\n")
    fusion_lines, symm_lines = tmp_path / "fusion.txt", tmp_path / "symm.txt"
    fusion_lines.write_text("\n".join(demo_logs.crash_flashinfer_fusion()) + "\n")
    symm_lines.write_text("\n".join(demo_logs.crash_torch_symm_mem()) + "\n")
    campaign = make_campaign(api, baseline=89.5)
    cid, host = campaign["id"], sshd.alias

    fusion = launched(api, cid, "FlashInfer allreduce fusion", host, free_port(),
                      "--stack", str(stack), "--crash-below-cuda", "13",
                      "--crash-lines", str(fusion_lines))  # fmt: skip
    # Symmetric memory's table lacks capability 12 on any CUDA: it crashes on 13 as well.
    symm = launched(api, cid, "Torch symmetric memory", host, free_port(),
                    "--stack", str(stack), "--crash-below-cuda", "99",
                    "--crash-lines", str(symm_lines))  # fmt: skip
    fusion, symm = ended(api, fusion["id"]), ended(api, symm["id"])
    for crashed, cause in ((fusion, "sm_120"), (symm, "KeyError: 12")):
        assert crashed["status"] == "crashed" and crashed["run"]["outcome"] == "crashed"
        assert crashed["diagnosis"]["error_class"] == "unsupported_arch", crashed["diagnosis"]
        assert cause in crashed["diagnosis"]["root_cause"]

    # The pivot: the host's CUDA upgraded, measured, adopted as the new baseline.
    stack.write_text("13.0\n")
    pivot = ended(api, launched(api, cid, "CUDA 13", host, free_port(), "--stack",
                                str(stack))["id"])  # fmt: skip
    assert pivot["status"] == "measured", pivot["run"]
    adopted = api.patch(f"/api/attempts/{pivot['id']}",
                        json={"status": "adopted", "set_baseline": True})  # fmt: skip
    assert adopted.status_code == 200, adopted.text
    offered = api.get(f"/api/attempts/{pivot['id']}/unblocks").json()
    assert [a["id"] for a in offered] == [fusion["id"], symm["id"]]

    page = open_page(f"/campaigns/{cid}", base=url)
    page.locator("#pivot-offer-form button", has_text="Retest these 2").click()
    page.wait_for_url(f"**/campaigns/{cid}", timeout=UI_WAIT_MS)

    def retests() -> list[dict[str, Any]] | None:
        attempts = api.get(f"/api/campaigns/{cid}").json()["attempts"]
        made = [a for a in attempts if a["retest_of"]]
        return made if len(made) == 2 else None

    by_original = {r["retest_of"]: r for r in wait_for(retests, what="two retests")}
    fusion_again = ended(api, by_original[fusion["id"]]["id"])
    symm_again = ended(api, by_original[symm["id"]]["id"])
    # The same commands, one host at a time.
    assert fusion_again["run"]["command"] == fusion["run"]["command"]
    assert symm_again["run"]["command"] == symm["run"]["command"]
    first, second = sorted((fusion_again["run"], symm_again["run"]), key=lambda r: r["id"])
    assert second["launched_at"] >= first["ended_at"]

    assert fusion_again["status"] == "measured" and fusion_again["stats"]["n"] == 3
    assert symm_again["status"] == "crashed"
    assert symm_again["diagnosis"]["fingerprint"] == symm["diagnosis"]["fingerprint"]

    for original, retest, said in (
        (fusion, fusion_again, "→ measured"),
        (symm, symm_again, "→ crashed again, same root cause"),
    ):
        page = open_page(f"/attempts/{original['id']}", base=url)
        line = page.locator(f"#retests-{original['id']} li")
        assert said in line.inner_text() and f"#{retest['id']}" in line.inner_text()
        page.screenshot(path=str(SHOTS / f"retest-of-{original['id']}.png"), full_page=True)
    # Nothing left to offer once both are retested.
    assert api.get(f"/api/attempts/{pivot['id']}/unblocks").json() == []
