"""`flags` and `flag_diff` on the API and the pages: read from the commands and from the
line the engine echoed its arguments on, found by the ingest as the log arrives (a real
dashboard tailing real files), diffed against the campaign's baseline attempt, secrets
masked wherever they are shown."""

import json
import re
from pathlib import Path

import httpx

from app import demo_logs
from tests.helpers import (
    attempt_of,
    make_attempt,
    make_campaign,
    name_baseline_configuration,
    wait_for,
)
from tests.test_pages import HX, has_root

LAUNCH = "python -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8"
KEY = "sk-" + "q" * 30


def _log(tmp_path: Path, name: str, flags: dict[str, object], *, tail: str = "") -> Path:
    path = tmp_path / f"{name}.log"
    path.write_text("\n".join(demo_logs.startup(flags)) + "\n" + tail)
    return path


def _logged(api: httpx.Client, attempt_id: int) -> dict:
    return wait_for(
        lambda: (a := attempt_of(api, attempt_id))["flags"]["logged"] and a,
        what=f"the args line of #{attempt_id}",
    )


def test_only_change_against_the_baseline_attempt_from_the_commands(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    baseline = name_baseline_configuration(
        api, make_attempt(api, campaign["id"], title="Baseline", command=LAUNCH)
    )
    attempt = make_attempt(
        api, campaign["id"], command=f"NCCL_ALGO=Ring {LAUNCH} --enable-torch-symm-mem"
    )
    read = attempt_of(api, attempt["id"])
    assert read["flags"]["engine"] == "sglang" and read["flags"]["logged"] is None
    assert read["flags"]["command"]["enable_torch_symm_mem"] is True
    assert read["flag_diff"] == {
        "baseline_attempt_id": baseline["id"],
        "basis": "command",
        "added": {"NCCL_ALGO": "Ring", "enable_torch_symm_mem": True},
        "removed": {},
        "changed": {},
        "summary": "2 changes: +NCCL_ALGO=Ring, +enable_torch_symm_mem",
    }
    assert attempt_of(api, baseline["id"])["flag_diff"] is None  # the baseline itself
    # The campaign's view of its attempts says the same.
    listed = api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
    assert [a["flag_diff"] for a in listed] == [None, read["flag_diff"]]

    only = make_attempt(
        api, campaign["id"], title="Symm mem", command=f"{LAUNCH} --enable-torch-symm-mem"
    )
    assert attempt_of(api, only["id"])["flag_diff"]["summary"] == (
        "only change: +enable_torch_symm_mem"
    )


def test_the_logs_server_args_line_is_found_and_compared(api: httpx.Client, tmp_path: Path) -> None:
    campaign = make_campaign(api)
    base_log = _log(tmp_path, "base", {"random_seed": 1})
    # The engine's own words decide, though the commands spell the parallelism differently.
    symm_log = _log(tmp_path, "symm", {"random_seed": 2, "enable_torch_symm_mem": True})
    baseline = name_baseline_configuration(
        api,
        make_attempt(
            api, campaign["id"], title="Baseline", command=LAUNCH, source=f"file://{base_log}"
        ),
    )
    attempt = make_attempt(
        api, campaign["id"],
        command="python -m sglang.launch_server --model /shared/kimi-k2.5-int4 "
        "--tensor-parallel-size 8 --enable-torch-symm-mem",
        source=f"file://{symm_log}",
    )  # fmt: skip
    _logged(api, baseline["id"])
    read = _logged(api, attempt["id"])
    logged = read["flags"]["logged"]
    assert logged["enable_torch_symm_mem"] is True and logged["tp_size"] == "8"
    assert logged["model_path"] == demo_logs.MODEL
    assert read["flag_diff"]["basis"] == "log"
    assert read["flag_diff"]["summary"] == "only change: +enable_torch_symm_mem"


def test_a_vllm_line_arriving_late_and_across_writes(api: httpx.Client, tmp_path: Path) -> None:
    campaign = make_campaign(api)
    path = tmp_path / "vllm.log"
    path.write_text("INFO 08-06 21:22:58 [__init__.py:244] Automatically detected platform cuda.\n")
    attempt = make_attempt(
        api, campaign["id"], command="vllm serve /m -tp 2", source=f"file://{path}"
    )

    def read_so_far() -> int:  # the tail's state is made when the tail starts: None before
        return (attempt_of(api, attempt["id"])["tail"] or {}).get("bytes_read", 0)

    wait_for(lambda: read_so_far() > 0, what="first line")
    line = (
        "INFO 08-06 21:23:02 [cli_args.py:309] non-default args: {'model': '/m', "
        f"'tensor_parallel_size': 2, 'api_key': ['{KEY}'], 'enable_prefix_caching': False}}\n"
    )
    with path.open("a") as log:  # in two writes, the tail may well read it in two pieces
        log.write(line[:60])
        log.flush()
        wait_for(lambda: read_so_far() > 80, what="half")
        log.write(line[60:])
    read = _logged(api, attempt["id"])
    assert read["flags"]["engine"] == "vllm"
    assert read["flags"]["logged"] == {
        "model": "/m", "tensor_parallel_size": "2", "api_key": "[secret]",
        "enable_prefix_caching": False,
    }  # fmt: skip
    assert KEY not in api.get(f"/api/attempts/{attempt['id']}").text


def test_the_baseline_set_by_adopting_a_pivot_is_compared_against(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    make_attempt(api, campaign["id"], title="Baseline", command=LAUNCH)
    pivot = make_attempt(api, campaign["id"], title="CUDA 13", command=f"{LAUNCH} --cuda-13")
    api.post(f"/api/attempts/{pivot['id']}/measurements", json={"value": 90.0})
    adopted = api.patch(
        f"/api/attempts/{pivot['id']}", json={"status": "adopted", "set_baseline": True}
    )
    assert adopted.status_code == 200, adopted.text
    after = make_attempt(
        api, campaign["id"], title="Symm mem", command=f"{LAUNCH} --cuda-13 --enable-torch-symm-mem"
    )
    diff = attempt_of(api, after["id"])["flag_diff"]
    assert diff["baseline_attempt_id"] == pivot["id"]
    assert diff["summary"] == "only change: +enable_torch_symm_mem"


def test_typed_flags_without_a_command_are_what_differs(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    baseline = name_baseline_configuration(
        api, make_attempt(api, campaign["id"], title="Baseline", command=LAUNCH)
    )
    typed = make_attempt(api, campaign["id"], title="Tree", flags="NCCL_ALGO=Tree --tp 4")
    read = attempt_of(api, typed["id"])
    assert read["flags"]["typed"] == "NCCL_ALGO=Tree --tp 4"
    assert read["flag_diff"]["baseline_attempt_id"] == baseline["id"]
    assert read["flag_diff"]["added"] == {"NCCL_ALGO": "Tree"}
    # `--tp` typed alone is still sglang's tp_size: the baseline's engine names it.
    assert read["flag_diff"]["changed"] == {"tp_size": {"baseline": "8", "attempt": "4"}}


def test_an_attempt_without_a_command_or_flags_is_the_baselines_command(
    api: httpx.Client, tmp_path: Path
) -> None:
    # An attempt added with a log source alone read "4 changes: -m, -model_path, -tp_size,
    # -port": the baseline's whole command, as if this one had dropped it.
    campaign = make_campaign(api)
    base_log = _log(tmp_path, "baseline", {})
    baseline = name_baseline_configuration(
        api,
        make_attempt(
            api, campaign["id"], title="Baseline", command=LAUNCH, source=f"file://{base_log}"
        ),
    )
    _logged(api, baseline["id"])
    bare = make_attempt(api, campaign["id"], title="Config file changed")
    read = attempt_of(api, bare["id"])
    assert read["flag_diff"]["summary"] == "no flag differs from the baseline"
    assert read["flags"]["engine"] == "sglang"
    # Its log's echo is what ran: what it adds is the change, the command's `-m` is none.
    log = _log(tmp_path, "symm", {"enable_torch_symm_mem": True})
    echoed = make_attempt(api, campaign["id"], title="Symm mem", source=f"file://{log}")
    assert _logged(api, echoed["id"])["flag_diff"]["summary"] == (
        "only change: +enable_torch_symm_mem"
    )


def test_secrets_in_flags_are_masked_on_the_api_pages_and_share(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    name_baseline_configuration(
        api,
        make_attempt(api, campaign["id"], title="Baseline", command=f"{LAUNCH} --api-key {KEY}"),
    )
    attempt = make_attempt(
        api, campaign["id"], command=f"HF_TOKEN=hf_{'z' * 34} {LAUNCH} --api-key sk-{'w' * 30}"
    )
    read = attempt_of(api, attempt["id"])
    assert read["flags"]["command"]["api_key"] == "[secret]"
    assert read["flag_diff"]["changed"] == {
        "api_key": {"baseline": "[secret]", "attempt": "[secret]"}
    }
    assert read["flag_diff"]["added"] == {"HF_TOKEN": "[secret]"}
    # The JSON a script or an agent reads holds the command with its secrets masked, in the
    # attempt, in its campaign's list and in the export.
    assert read["command"] == f"HF_TOKEN=[secret] {LAUNCH} --api-key [secret]"
    listed = api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
    export = api.get(f"/api/campaigns/{campaign['id']}/summary.json").text
    for text in (json.dumps(read), json.dumps(listed), export):
        assert "w" * 30 not in text and "z" * 30 not in text and "q" * 30 not in text
    page = browser.get(f"/attempts/{attempt['id']}").text
    assert f"HF_TOKEN=hf_{'z' * 34}" in page  # the edit box: as typed, for its owner alone
    # The owner's own page shows the command as typed (its edit box must hold it); the flags
    # read from it are masked there too, and everything a share shows is.
    shown = re.search(r'<p class="flag-diff".*?</details>', page, re.S)
    assert shown and f"flag-list-{attempt['id']}" in shown.group(0)
    assert "[secret]" in shown.group(0)
    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    for text in (
        shown.group(0),
        anonymous.get(f"/s/{token}").text,
        anonymous.get(f"/s/{token}.md").text,
        anonymous.get(f"/s/{token}.json").text,
    ):
        assert "w" * 30 not in text and "z" * 30 not in text and "q" * 30 not in text


def test_the_diff_on_the_card_the_attempt_page_and_the_share_page(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    baseline = name_baseline_configuration(
        api, make_attempt(api, campaign["id"], title="Baseline", command=LAUNCH)
    )
    attempt = make_attempt(api, campaign["id"], command=f"{LAUNCH} --enable-torch-symm-mem")
    diff_id = f"flag-diff-{attempt['id']}"
    summary = "only change: +enable_torch_symm_mem"

    for headers in ({}, HX):  # the page, and the timeline partial htmx swaps in
        html = browser.get(f"/campaigns/{campaign['id']}", headers=headers).text
        assert has_root(html, diff_id), headers
        card = re.search(rf'<article[^>]*id="attempt-{attempt["id"]}".*?</article>', html, re.S)
        assert card and summary in card.group(0)
        assert not has_root(html, f"flag-diff-{baseline['id']}")  # nothing to compare with
    for headers in ({}, HX):
        html = browser.get(f"/attempts/{attempt['id']}", headers=headers).text
        assert has_root(html, diff_id) and summary in html
        assert f'href="/attempts/{baseline["id"]}">#{baseline["id"]}</a>' in html
    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    shared = anonymous.get(f"/s/{token}").text
    assert has_root(shared, diff_id) and summary in shared
    assert f'href="#attempt-{baseline["id"]}"' in shared
    assert f"Against #{baseline['id']}: `{summary}`" in anonymous.get(f"/s/{token}.md").text
    # The share's JSON has the diff, not the hundreds of flags an engine echoes.
    item = anonymous.get(f"/s/{token}.json").json()["attempts"][1]
    assert item["flag_diff"]["summary"] == summary and item["flags"]["logged"] is None


def test_the_new_attempt_form_no_longer_asks_for_flags(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    page = browser.get(f"/campaigns/{campaign['id']}").text
    form = re.search(
        rf'<form[^>]*action="/campaigns/{campaign["id"]}/attempts".*?</form>', page, re.S
    )
    assert form and 'name="command"' in form.group(0) and 'name="flags"' not in form.group(0)
    assert "read from the command" in form.group(0)
    attempt = make_attempt(api, campaign["id"], command=LAUNCH)
    edit = browser.get(f"/attempts/{attempt['id']}").text
    edit_form = re.search(
        rf'<form[^>]*action="/attempts/{attempt["id"]}/edit".*?</form>', edit, re.S
    )
    assert edit_form and 'name="flags"' not in edit_form.group(0)
