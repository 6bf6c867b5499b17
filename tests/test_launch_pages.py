"""The page side of launching, over the test sshd with the runner's stand-in server: the
Launch form previews exactly what will run before anything runs, a launch lands on the
attempt page with its run's state, Stop stops it (proved: no process, port free), and
Retest launches the same command again, linked as its retest."""

import contextlib
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from tests.conftest import OWNER_TOKEN, running
from tests.helpers import (
    UI_WAIT_MS,
    attempt_of,
    csrf_of,
    make_attempt,
    make_campaign,
    name_baseline_configuration,
    wait_for,
)
from tests.runner_helpers import (
    bench_command,
    free_port,
    port_listening,
    server_command,
    session_processes,
)
from tests.sshd import Sshd
from tests.test_pages import HX, has_root


@pytest.fixture
def dash(ssh_settings: Settings, tmp_path: Path) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    settings = ssh_settings.model_copy(update={"runs_root": str(tmp_path / "runs")})
    with (
        running(settings) as (live, api),
        httpx.Client(base_url=live.url, timeout=30, headers={"Accept": "text/html"}) as page,
    ):
        assert page.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        yield api, page


def test_preview_then_launch_then_stop_then_retest(
    dash: tuple[httpx.Client, httpx.Client], sshd: Sshd
) -> None:
    api, page = dash
    campaign = make_campaign(api)
    port = free_port()
    baseline = name_baseline_configuration(
        api, make_attempt(api, campaign["id"], title="Baseline", command=server_command(port))
    )
    command = server_command(port, "--enable-torch-symm-mem")
    html = page.get(f"/campaigns/{campaign['id']}").text
    assert has_root(html, "launch")
    form = {"csrf_token": csrf_of(html), "title": "Symm mem", "host": sshd.alias,
            "command": command, "bench": "", "repeat": "2", "keep": "on"}  # fmt: skip

    preview = page.post(f"/campaigns/{campaign['id']}/launch", data={**form, "action": "preview"})
    assert preview.status_code == 200 and has_root(preview.text, "launch-preview")
    shown = re.search(r'<div id="launch-preview".*?</div>', preview.text, re.S)
    assert shown and f'<pre class="mono">{command}</pre>' in shown.group(0)
    assert f"Against #{baseline['id']}: <code>only change: +enable_torch_symm_mem</code>" in (
        shown.group(0)
    )
    assert 'value="launch"' in preview.text and f">{command}</textarea>" in preview.text
    # Kept: the preview says it stays up, not that it is stopped after.
    assert "It is kept running after" in preview.text and "then stopped" not in preview.text
    assert len(api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]) == 1  # nothing ran

    refused = page.post(
        f"/campaigns/{campaign['id']}/launch", data={**form, "repeat": "0", "action": "launch"}
    )
    assert refused.status_code == 422 and 'data-form="launch" data-field="repeat"' in refused.text

    launched = page.post(f"/campaigns/{campaign['id']}/launch", data={**form, "action": "launch"})
    assert launched.status_code == 303, launched.text
    attempt_id = int(launched.headers["location"].rsplit("/", 1)[1])
    ready = wait_for(  # no benchmark, kept: done at ready, its server left running
        lambda: (a := attempt_of(api, attempt_id))["run"]["outcome"] == "ready" and a,
        what="the launched server ready",
    )
    run = ready["run"]
    for headers in ({}, HX):
        html = page.get(f"/attempts/{attempt_id}", headers=headers).text
        assert has_root(html, f"run-{attempt_id}") and has_root(html, f"stop-form-{attempt_id}")
    card = page.get(f"/campaigns/{campaign['id']}").text
    assert re.search(
        rf'id="run-{attempt_id}" data-state="(ready|benchmarking|stopping|done)"', card
    )

    html = page.get(f"/attempts/{attempt_id}").text
    stopped = page.post(f"/attempts/{attempt_id}/stop", data={"csrf_token": csrf_of(html)})
    assert stopped.status_code == 303
    final = wait_for(
        lambda: (r := attempt_of(api, attempt_id)["run"])["stop_report"] and r,
        what="the kept server stopped",
    )
    wait_for(lambda: not session_processes(run["pgid"]), timeout=15, what="an empty session")
    assert not port_listening(port) and final["stop_report"]
    no_csrf = page.post(f"/attempts/{attempt_id}/stop", data={})
    assert no_csrf.status_code == 403

    html = page.get(f"/attempts/{attempt_id}").text
    assert not has_root(html, f"stop-form-{attempt_id}")  # nothing left to stop
    again = page.post(f"/attempts/{attempt_id}/relaunch", data={"csrf_token": csrf_of(html)})
    assert again.status_code == 303
    retest_id = int(again.headers["location"].rsplit("/", 1)[1])
    retest = attempt_of(api, retest_id)
    assert retest["retest_of"] == attempt_id and retest["run"]["command"] == command
    wait_for(lambda: attempt_of(api, retest_id)["run"]["outcome"] == "ready", what="retest up")
    assert api.post(f"/api/attempts/{retest_id}/stop").status_code == 200
    rerun = wait_for(
        lambda: (r := attempt_of(api, retest_id)["run"])["stop_report"] and r,
        what="the retest stopped",
    )
    wait_for(lambda: not session_processes(rerun["pgid"]), timeout=15, what="an empty session")

    # Retest by hand: the form takes the command, not the run's own log (a new run writes
    # another; the old one would show the retest ready before it started).
    prefilled = page.get(f"/campaigns/{campaign['id']}?retest={attempt_id}").text
    new_attempt = re.search(
        r'<section class="panel" id="new-attempt">.*?</section>', prefilled, re.S
    )
    assert new_attempt and f">{command}</textarea>" in new_attempt.group(0)
    source = re.search(r'<input name="source"[^>]*>', new_attempt.group(0))
    assert source and 'value=""' in source.group(0), source


def test_the_launch_form_previews_the_exact_command_in_chromium(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    name_baseline_configuration(
        api,
        make_attempt(
            api, campaign["id"], title="Baseline", command="python -m sglang.launch_server"
        ),
    )
    page = open_page(f"/campaigns/{campaign['id']}")
    command = "NCCL_ALGO=Tree python -m sglang.launch_server --enable-torch-symm-mem --port 30001"
    page.fill("#launch input[name=title]", "Symm mem")
    page.fill("#launch input[name=host]", "local")
    page.fill("#launch textarea[name=command]", command)
    assert page.locator('#launch button[value="launch"]').count() == 0  # a preview first
    page.click('#launch button[value="preview"]')
    preview = page.locator("#launch-preview")
    preview.wait_for(timeout=UI_WAIT_MS)
    assert preview.locator("pre").first.inner_text() == command
    assert "3 changes: +NCCL_ALGO=Tree, +enable_torch_symm_mem, +port=30001" in preview.inner_text()
    # What was typed is kept, and Launch is offered now; nothing was launched by looking.
    assert page.locator("#launch textarea[name=command]").input_value() == command
    assert page.locator('#launch button[value="launch"]').count() == 1
    assert len(api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]) == 1


IN_VIEW = "e => { const r = e.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 }"


def test_preview_and_refusals_land_where_the_form_is_in_chromium(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    # Below the fold on a wide screen and on a phone: the answer is a page of its own, so
    # the preview and a refusal beside its field must be where the reader is taken.
    campaign = make_campaign(api)
    path = f"/campaigns/{campaign['id']}"
    page = open_page(path)
    base = page.url.split(path)[0]
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(base + path)
        page.fill("#launch input[name=title]", "Symm mem")
        page.fill("#launch input[name=host]", "local")
        page.fill("#launch textarea[name=command]", "python -m sglang.launch_server --port 30001")
        page.click('#launch button[value="preview"]')
        page.locator('#launch button[value="launch"]').wait_for(timeout=10_000)
        # The page scrolls to its answer once its DOM is loaded: the button may come before.
        page.wait_for_load_state("domcontentloaded")
        assert page.locator("#launch-preview").evaluate(IN_VIEW), f"preview unseen at {width} px"
        page.goto(base + path)
        page.fill("#new-attempt input[name=title]", "Bad source")
        page.fill("#new-attempt input[name=source]", "http://not-a-log-source")
        page.click("#new-attempt button")
        error = page.locator('.field-error[data-form="new-attempt"][data-field="source"]')
        error.wait_for(timeout=10_000)
        page.wait_for_load_state("domcontentloaded")
        assert error.evaluate(IN_VIEW), f"the refusal is out of view at {width} px"
        # A new share link is shown once: the reader must see it to copy it.
        page.click("#shares button")
        page.locator(".new-share").wait_for(timeout=10_000)
        page.wait_for_load_state("domcontentloaded")
        assert page.locator(".new-share").evaluate(IN_VIEW), f"new link unseen at {width} px"


def test_a_launched_server_still_running_is_not_deleted_until_it_is_stopped(
    dash: tuple[httpx.Client, httpx.Client], sshd: Sshd
) -> None:
    # Deleting the attempt (or its campaign) would drop the run row, the dashboard's only
    # handle on the server: it would stay up on the host, its port and GPUs held.
    api, page = dash
    campaign = make_campaign(api)
    port = free_port()
    body = {"title": "Kept", "launch": {"host": sshd.alias, "command": server_command(port),
                                        "keep": True}}  # fmt: skip
    attempt_id = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body).json()["id"]
    up = wait_for(
        lambda: (r := attempt_of(api, attempt_id)["run"])["outcome"] == "ready" and r,
        what="kept up",
    )
    try:
        _refused_while_running(api, page, sshd, campaign["id"], attempt_id, port)
    finally:  # a failure above must not leave the server on the machine
        with contextlib.suppress(ProcessLookupError):
            os.killpg(up["pgid"], signal.SIGKILL)


def _refused_while_running(
    api: httpx.Client, page: httpx.Client, sshd: Sshd, campaign_id: int, attempt_id: int,
    port: int,
) -> None:  # fmt: skip
    campaign = {"id": campaign_id}
    refused = api.delete(f"/api/attempts/{attempt_id}")
    assert refused.status_code == 409, refused.text
    reason = f"the server of attempt {attempt_id} is still running on {sshd.alias} (kept running)"
    assert reason in refused.json()["detail"] and "stop it first" in refused.json()["detail"]
    assert api.delete(f"/api/campaigns/{campaign['id']}").status_code == 409
    html = page.get(f"/attempts/{attempt_id}").text
    assert has_root(html, f"still-running-{attempt_id}")  # said before anyone tries
    deleted = page.post(
        f"/attempts/{attempt_id}/delete", data={"csrf_token": csrf_of(html), "confirm": "yes"}
    )
    assert deleted.status_code == 409 and reason in deleted.text
    assert f'action="/attempts/{attempt_id}/stop"' in deleted.text  # Stop offered beside it
    campaign_page = page.get(f"/campaigns/{campaign['id']}").text
    gone = page.post(
        f"/campaigns/{campaign['id']}/delete",
        data={"csrf_token": csrf_of(campaign_page), "confirm": "yes"},
    )
    assert gone.status_code == 409 and reason in gone.text and has_root(gone.text, "still-running")
    assert port_listening(port) and attempt_of(api, attempt_id)["run"]["stoppable"]

    assert api.post(f"/api/attempts/{attempt_id}/stop").status_code == 200
    run = wait_for(
        lambda: (r := attempt_of(api, attempt_id)["run"])["stop_report"] and r, what="stopped"
    )
    assert run["stop_report"]["stopped"] and not port_listening(port)  # with its proof
    assert api.delete(f"/api/campaigns/{campaign['id']}").status_code == 204


def test_a_kept_run_reads_kept_running_with_stop_and_one_retest_counting_warm_ups_apart(
    dash: tuple[httpx.Client, httpx.Client],
    sshd: Sshd,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    api, client = dash
    campaign = make_campaign(api)
    port = free_port()
    bench = bench_command(port, "--num-prompts", "4", "--pause", "0.5")
    launch = {"host": sshd.alias, "command": server_command(port), "keep": True, "warmup": 1,
              "repeat": 2, "bench": bench}  # fmt: skip
    body = {"title": "Kept", "launch": launch}
    attempt_id = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body).json()["id"]
    try:
        page = open_page(f"/campaigns/{campaign['id']}", base=str(client.base_url))
        card_run = page.locator(f"#attempt-{attempt_id} #run-{attempt_id}")
        # Counted as try counts them: the warm-up apart, then the measured runs.
        card_run.filter(has_text="warm-up 1 of 1, not recorded").wait_for(timeout=30_000)
        card_run.filter(has_text="run 1 of 2").wait_for(timeout=30_000)
        card_run.locator(".chip", has_text="kept running").wait_for(timeout=30_000)
        assert "run 3 of" not in card_run.inner_text() and "of 3" not in card_run.inner_text()

        page.goto(f"{client.base_url}/attempts/{attempt_id}")
        labels = page.locator(f"#bench-runs-{attempt_id} li").all_inner_texts()
        assert [t.split(":")[0] for t in labels] == ["warm-up 1 (not recorded)", "run 1", "run 2"]
        assert page.locator(f"#run-{attempt_id} .chip").inner_text() == "kept running"
        assert page.locator(f"#stop-form-{attempt_id} button").is_visible()
        # One Retest control, saying what it does: none while the server holds its port.
        retest = page.locator(f"#retest-{attempt_id}")
        assert page.locator(".retest").count() == 1 and "Retest once it is stopped" in (
            retest.inner_text()
        )
        assert page.locator(f"#relaunch-form-{attempt_id}").count() == 0
        assert page.get_by_text("Retest: launch again").count() == 0

        page.click(f"#stop-form-{attempt_id} button")
        page.locator(f"#run-{attempt_id} .chip", has_text="done").wait_for(timeout=30_000)
        button = page.locator(f"#relaunch-form-{attempt_id} button")
        assert page.locator(".retest").count() == 1 and button.inner_text() == "Retest"
        assert f"launches the same command again on {sshd.alias}" in retest.inner_text()
    finally:
        run = attempt_of(api, attempt_id)["run"]
        if run["pgid"] and run["stop_report"] is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run["pgid"], signal.SIGKILL)


def test_the_launch_form_takes_repeat_auto_and_its_budget(
    dash: tuple[httpx.Client, httpx.Client], sshd: Sshd
) -> None:
    api, page = dash
    campaign = make_campaign(api)
    port = free_port()
    html = page.get(f"/campaigns/{campaign['id']}").text
    assert 'list="repeat-choices"' in html and '<option value="auto">' in html
    form = {"csrf_token": csrf_of(html), "title": "Auto", "host": sshd.alias,
            "command": server_command(port), "bench": bench_command(port), "repeat": "auto",
            "max_runs": "6"}  # fmt: skip
    preview = page.post(f"/campaigns/{campaign['id']}/launch", data={**form, "action": "preview"})
    assert preview.status_code == 200, preview.text
    assert "3 runs and one more after each until the call against the baseline is clear, 6 at" in (
        preview.text
    )
    assert "each of up to 4 looks at 98.75 %" in preview.text
    for bad, field in (({"repeat": "sometimes"}, "repeat"), ({"max_runs": "2"}, "max_runs")):
        refused = page.post(f"/campaigns/{campaign['id']}/launch",
                            data={**form, **bad, "action": "preview"})  # fmt: skip
        assert refused.status_code == 422
        assert f'data-form="launch" data-field="{field}"' in refused.text
    launched = page.post(f"/campaigns/{campaign['id']}/launch", data={**form, "action": "launch"})
    assert launched.status_code == 303, launched.text
    attempt_id = int(launched.headers["location"].rsplit("/", 1)[1])
    run = attempt_of(api, attempt_id)["run"]
    assert run["repeat"] == 6 and run["auto_repeat"]["max_runs"] == 6
    assert api.post(f"/api/attempts/{attempt_id}/stop").status_code == 200
    wait_for(lambda: attempt_of(api, attempt_id)["run"]["state"] in ("done", "failed"),
             what="the run stopped")  # fmt: skip
