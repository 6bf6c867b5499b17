"""What to try next under a root cause: every row of the knowledge base (its example matches,
its counter does not, it rests on a public source, and the engine's diagnosis of its line
brings its advice); the fix another campaign found for the same failure, through the API, on
the attempt page and not on a share page; and the CLI's diagnose printing the advice."""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from markupsafe import escape

from app import demo_logs
from app.diagnosis import diagnose_bytes
from app.diagnosis.advice import advice_for
from app.diagnosis.knowledge.advice import ADVICE, Advice
from app.diagnosis.lines import decode
from app.diagnosis.rules import ERROR_CLASSES
from tests.helpers import attempt_of, corpus_log, make_attempt, make_campaign, patch, wait_for

TESTS = Path(__file__).parent
OBSERVED = re.compile(r"corpus case (\w+)|(tests/data/[\w.]+)")
QUIET = [f"step {n} done" for n in range(10)]

ROWS = [pytest.param(row, id=row.pattern[:48]) for row in ADVICE]


def _lines_of(where: str) -> set[str] | None:
    """The lines of the corpus case or test file `where` names, or None where it names none."""
    found = OBSERVED.search(where)
    if found is None:
        return None
    log = corpus_log(found[1]) if found[1] else (TESTS.parent / found[2]).read_bytes()
    return {decode(raw).rstrip() for raw in log.split(b"\n")}


@pytest.mark.parametrize("row", ROWS)
def test_the_example_matches_and_the_counter_does_not(row: Advice) -> None:
    assert re.search(row.pattern, row.example), row.example
    assert not re.search(row.pattern, row.counter), row.counter
    if row.context:
        assert re.search(row.context, row.context_line), row.context_line


@pytest.mark.parametrize("row", ROWS)
def test_each_row_rests_on_a_public_source_and_says_where_its_lines_come_from(
    row: Advice,
) -> None:
    assert re.fullmatch(r"https://[\w.-]+\.[a-z]{2,}/\S+", row.source), row.source
    assert row.classes and set(row.classes) <= set(ERROR_CLASSES), row.classes
    assert row.advice.strip() and row.example_from.strip() and row.counter_from.strip()
    assert bool(row.context_line) == bool(row.context_from)
    for line, where in (
        (row.example, row.example_from),
        (row.counter, row.counter_from),
        (row.context_line, row.context_from),
    ):
        lines = _lines_of(where)
        assert lines is None or line in lines, f"{line!r} is not a line of {where}"
        if lines is None and line:
            assert "https://" in where, f"{line!r}: from where?"


@pytest.mark.parametrize("row", ROWS)
def test_the_engine_s_diagnosis_of_the_example_brings_the_advice(row: Advice) -> None:
    setting = ["Traceback (most recent call last):", row.context_line, "    step()"]
    lines = [*QUIET, *(setting if row.context_line else []), row.example]
    diagnosis = diagnose_bytes("".join(f"{line}\n" for line in lines).encode()).to_dict()
    assert diagnosis["root_cause"] == row.example
    assert diagnosis["error_class"] in row.classes
    assert any(said.startswith(row.advice) for said in advice_for(diagnosis))


def test_an_out_of_memory_error_outside_graph_capture_gets_no_capture_advice() -> None:
    # Case 704 captured a graph, then ran out of memory after the capture ended.
    diagnosis = diagnose_bytes(corpus_log("704")).to_dict()
    assert diagnosis["error_class"] == "oom_gpu"
    assert not any("--cuda-graph-max-bs" in said for said in advice_for(diagnosis))


def test_an_out_of_memory_error_anywhere_gets_the_memory_advice() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 900, in '
        "init_memory_pool\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    said = advice_for(diagnose_bytes(log.encode()).to_dict())
    assert len(said) == 1 and said[0].startswith("GPU memory ran out: give the server less")
    # Under a graph capture, the capture's advice first.
    capture = (
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 436, in capture'
    )
    captured = advice_for(
        diagnose_bytes(log.replace("  File", f"{capture}\n  File").encode()).to_dict()
    )
    assert "--cuda-graph-max-bs" in captured[0] and captured[1].startswith("GPU memory ran out")


def test_the_frame_follows_the_advice_that_asks_for_it_unless_not_shown() -> None:
    log = (TESTS / "data" / "seed_torch_symm_mem.log").read_bytes()
    diagnosis = diagnose_bytes(log).to_dict()
    [said] = advice_for(diagnosis)
    assert said.startswith("A table keyed by compute capability has no entry")
    assert said.endswith(
        "The frame: /root/sglang/python/sglang/srt/distributed/device_communicators/"
        "torch_symm_mem.py:56, in __init__."
    )
    [unnamed] = advice_for(diagnosis, name_frame=False)
    assert "torch_symm_mem.py" not in unnamed and unnamed in said


def test_no_advice_without_a_root_cause() -> None:
    assert advice_for(None) == []
    healthy = diagnose_bytes(b"The server is fired up and ready to roll!\n").to_dict()
    assert advice_for(healthy) == []


# --- history: what the other campaigns learned, over the HTTP API ---------------------------


def crashed(
    api: httpx.Client, campaign_id: int, title: str, tmp: Path, **fields: Any
) -> dict[str, Any]:
    """An attempt whose log (the seeds' torch symmetric-memory crash on CUDA 12.8) the tailer
    has diagnosed."""
    log = tmp / f"{title}.log"
    lines = demo_logs.startup(SYMM_MEM, ready=False) + demo_logs.crash_torch_symm_mem()
    log.write_text("\n".join(lines) + "\n")
    attempt = make_attempt(api, campaign_id, title=title, source=f"file://{log}", **fields)
    return wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["status"] == "crashed" and a, what=title
    )


SYMM_MEM = {"enable_torch_symm_mem": True}


@pytest.mark.both_databases
def test_a_crash_shows_the_fix_another_campaign_found_for_the_same_failure(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    first = make_campaign(api, name="sm120-tp4")
    original = crashed(api, first["id"], "Torch symmetric memory", tmp_path)
    # Retested on the CUDA 13 stack, the same flags: up, and measured.
    log = tmp_path / "retest.log"
    log.write_text("\n".join(demo_logs.startup(SYMM_MEM, stack="cuda13")) + "\n")
    retest = make_attempt(api, first["id"], title="Symm mem on CUDA 13",
                          retest_of=original["id"], source=f"file://{log}")  # fmt: skip
    wait_for(lambda: attempt_of(api, retest["id"])["status"] == "ready", what="retest ready")
    for value in (92.5, 92.7, 92.9):
        posted = api.post(f"/api/attempts/{retest['id']}/measurements", json={"value": value})
        assert posted.status_code == 201, posted.text
    # A retest that crashed again taught nothing.
    again = crashed(api, first["id"], "Symm mem again", tmp_path, retest_of=original["id"])
    verdict = "symm-mem's table has no <b>SM120</b> before CUDA 13"
    assert patch(api, original["id"], status="eliminated", verdict=verdict).status_code == 200

    second = make_campaign(api, name="llama-70b")
    crash = crashed(api, second["id"], "Torch symmetric memory", tmp_path)
    assert crash["diagnosis"]["fingerprint"] == original["diagnosis"]["fingerprint"]

    hints = attempt_of(api, crash["id"])["hints"]
    fix, said, advice = hints
    assert fix["source"] == "history" and fix["attempt_id"] == retest["id"]
    assert fix["text"].startswith(
        f'#{original["id"]} in campaign "sm120-tp4" crashed the same way; '
        f"its retest #{retest['id']} measured 92.7 after "
    )
    assert "CUDA 12.8 → 13.0" in fix["text"] and "flags" not in fix["text"]
    assert said == {"text": f'Verdict on #{original["id"]} in campaign "sm120-tp4": {verdict}',
                    "source": "history", "attempt_id": original["id"]}  # fmt: skip
    assert advice["source"] == "knowledge" and advice["attempt_id"] is None
    assert advice["text"].startswith("A table keyed by compute capability")

    # In its own campaign the fix is its own retests' business (beside it on its page); the
    # crash that retested the same way names no campaign.
    mine = attempt_of(api, again["id"])["hints"]
    assert mine[0]["text"].startswith(f"#{original['id']} crashed the same way; its retest")
    assert [h["source"] for h in attempt_of(api, original["id"])["hints"]] == ["knowledge"]
    # A campaign's list leaves them out, as it does seen_before.
    listed = api.get(f"/api/campaigns/{second['id']}").json()["attempts"]
    assert [a["hints"] for a in listed] == [None]

    page = browser.get(f"/attempts/{crash['id']}").text
    shown = page[page.index(f'id="hints-{crash["id"]}"') :]
    shown = shown[: shown.index("</div>")]
    assert f'<a href="/attempts/{retest["id"]}">{escape(fix["text"])}</a>' in shown
    assert escape(said["text"]) in shown and "<b>SM120</b>" not in shown
    assert escape(advice["text"]) in shown

    # A share link's readers see the knowledge base's advice, nothing of other campaigns.
    link = api.post(f"/api/campaigns/{second['id']}/shares", json={})
    assert link.status_code == 201, link.text
    shared = anonymous.get(f"/s/{link.json()['token']}").text
    assert "A table keyed by compute capability" in shared
    assert "sm120-tp4" not in shared and "crashed the same way" not in shared
    assert "torch_symm_mem.py:56" not in shared  # the frame, not shown there either


def test_a_fix_that_changed_flags_says_which_and_one_that_only_came_up_says_so(
    api: httpx.Client, tmp_path: Path
) -> None:
    first = make_campaign(api, name="sm120-tp4")
    original = crashed(api, first["id"], "Torch symmetric memory", tmp_path)
    log = tmp_path / "without.log"
    log.write_text("\n".join(demo_logs.startup({})) + "\n")  # the same stack, symm-mem off
    retest = make_attempt(api, first["id"], title="Without symm mem",
                          retest_of=original["id"], source=f"file://{log}")  # fmt: skip
    wait_for(lambda: attempt_of(api, retest["id"])["status"] == "ready", what="retest ready")
    crash = crashed(api, make_campaign(api, name="llama-70b")["id"], "Symm mem", tmp_path)

    [fix, _advice] = attempt_of(api, crash["id"])["hints"]
    assert fix == {
        "text": f'#{original["id"]} in campaign "sm120-tp4" crashed the same way; its retest '
        f"#{retest['id']} came up ready after flags: only change: -enable_torch_symm_mem",
        "source": "history",
        "attempt_id": retest["id"],
    }


def test_the_cli_prints_the_knowledge_hints_plain_and_in_json() -> None:
    seed = str(TESTS / "data" / "seed_torch_symm_mem.log")
    # This checkout's command, whichever one the environment installed.
    command = [sys.executable, "-c", "from app.cli import main; main()", "diagnose", seed]
    plain = subprocess.run(command, cwd=TESTS.parent, capture_output=True, timeout=60)
    assert plain.returncode == 1, plain.stderr
    text = plain.stdout.decode()
    assert "What to try next:\n  - A table keyed by compute capability has no entry" in text
    assert "The frame: /root/sglang/python/sglang/srt/distributed/device_communicators/" in text
    as_json = subprocess.run([*command, "--json"], cwd=TESTS.parent, capture_output=True,
                             timeout=60)  # fmt: skip
    assert as_json.returncode == 1, as_json.stderr
    [hint] = json.loads(as_json.stdout)["hints"]
    assert hint["source"] == "knowledge" and hint["attempt_id"] is None
    assert hint["text"].startswith("A table keyed by compute capability has no entry")
    healthy = subprocess.run([*command[:-1], "-", "--json"], input=b"ready to roll!\n",
                             cwd=TESTS.parent, capture_output=True, timeout=60)  # fmt: skip
    assert json.loads(healthy.stdout)["hints"] == []
