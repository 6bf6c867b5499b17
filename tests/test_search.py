"""Across campaigns: an attempt's `seen_before` (earlier attempts that failed the same way)
and `GET /api/search`, over a live server on each database."""

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import attempt_of, make_attempt, make_campaign, patch, wait_for

pytestmark = pytest.mark.both_databases

CRASH_LOG = (Path(__file__).parent / "data" / "seed_torch_symm_mem.log").read_bytes()


def crashed(api: httpx.Client, campaign_id: int, log: Path, **fields: Any) -> dict[str, Any]:
    """An attempt whose log (the seed's KeyError crash) the tailer has diagnosed."""
    attempt = make_attempt(api, campaign_id, source=f"file://{log}", **fields)
    return wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["status"] == "crashed" and a, what="crash"
    )


def search(api: httpx.Client, q: str) -> list[dict[str, Any]]:
    response = api.get("/api/search", params={"q": q})
    assert response.status_code == 200, response.text
    return response.json()


def test_seen_before_lists_earlier_attempts_of_any_campaign_with_the_same_crash(
    api: httpx.Client, browser: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "crash.log"
    log.write_bytes(CRASH_LOG)
    first_campaign = make_campaign(api, name="EAGLE-3 on Blackwell")
    first = crashed(api, first_campaign["id"], log, title="Torch symmetric memory")
    verdict = "KeyError 12: symm-mem has no table for sm_120; dead end on Blackwell"
    assert patch(api, first["id"], status="eliminated", verdict=verdict).status_code == 200
    unrelated = make_attempt(api, first_campaign["id"], title="Never diagnosed")
    second_campaign = make_campaign(api, name="Llama 70B on the same box")
    second = crashed(api, second_campaign["id"], log, title="symm-mem again")
    assert second["diagnosis"]["fingerprint"] == first["diagnosis"]["fingerprint"]

    assert attempt_of(api, second["id"])["seen_before"] == [
        {"campaign_id": first_campaign["id"], "attempt_id": first["id"],
         "title": "Torch symmetric memory", "status": "eliminated", "verdict": verdict}
    ]  # fmt: skip
    # Neither itself nor a later attempt is "before"; no fingerprint, nothing seen.
    assert attempt_of(api, first["id"])["seen_before"] == []
    assert attempt_of(api, unrelated["id"])["seen_before"] == []
    third = crashed(api, second_campaign["id"], log, title="third try")
    assert [s["attempt_id"] for s in attempt_of(api, third["id"])["seen_before"]] == [
        second["id"],
        first["id"],
    ]  # newest first
    # A campaign's list leaves them out: no query per attempt.
    listed = api.get(f"/api/campaigns/{second_campaign['id']}").json()["attempts"]
    assert [a["seen_before"] for a in listed] == [None, None]

    page = browser.get(f"/attempts/{second['id']}")
    assert page.status_code == 200
    seen = page.text[page.text.index('id="seen-before"') :]
    seen = seen[: seen.index("</dd>")]
    assert f'href="/attempts/{first["id"]}"' in seen
    assert f'href="/campaigns/{first_campaign["id"]}"' in seen
    assert verdict in seen and "eliminated" in seen
    assert 'id="seen-before"' not in browser.get(f"/attempts/{first['id']}").text


def test_search_finds_titles_verdicts_notes_and_root_causes_title_first(
    api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, name="DeepSeek on H200", description="tuning the allreduce")
    exact = make_attempt(api, campaign["id"], title="NCCL ring")
    within = make_attempt(api, campaign["id"], title="Try the nccl RING fallback")
    judged = make_attempt(api, campaign["id"], title="Custom allreduce")
    assert patch(
        api, judged["id"], status="eliminated", verdict="slower than NCCL ring by 4 %"
    ).is_success
    noted = make_attempt(api, campaign["id"], title="Tree")
    note = api.post(f"/api/attempts/{noted['id']}/notes", json={"body": "compare with nccl ring"})
    assert note.status_code == 201
    other = make_campaign(api, name="Other campaign")
    on_campaign = api.post(
        f"/api/campaigns/{other['id']}/notes", json={"body": "**Next:** NCCL Ring with 2 nodes"}
    )
    assert on_campaign.status_code == 201

    hits = search(api, "nccl ring")
    assert hits[:2] == [
        {"kind": "attempt", "campaign_id": campaign["id"], "attempt_id": exact["id"],
         "title": "NCCL ring", "snippet": "NCCL ring"},
        {"kind": "attempt", "campaign_id": campaign["id"], "attempt_id": within["id"],
         "title": "Try the nccl RING fallback", "snippet": "Try the nccl RING fallback"},
    ]  # fmt: skip
    rest = {tuple(hit.values()) for hit in hits[2:]}
    assert rest == {
        ("attempt", campaign["id"], judged["id"], "Custom allreduce",
         "slower than NCCL ring by 4 %"),
        ("note", campaign["id"], noted["id"], "Tree", "compare with nccl ring"),
        # Plain text: the markdown is not rendered, nor escaped as HTML.
        ("note", other["id"], None, "Other campaign", "**Next:** NCCL Ring with 2 nodes"),
    }  # fmt: skip

    # A title holding q goes before a campaign's description holding it.
    assert [(h["kind"], h["title"], h["snippet"]) for h in search(api, "allreduce")] == [
        ("attempt", "Custom allreduce", "Custom allreduce"),
        ("campaign", "DeepSeek on H200", "tuning the allreduce"),
    ]
    assert search(api, "deepseek on h200")[0]["kind"] == "campaign"

    log = tmp_path / "crash.log"
    log.write_bytes(CRASH_LOG)
    diagnosed = crashed(api, campaign["id"], log, title="symm-mem")
    assert diagnosed["diagnosis"]["root_cause"] == "KeyError: 12"
    found = search(api, "keyerror: 12")
    assert [(h["attempt_id"], h["snippet"]) for h in found] == [(diagnosed["id"], "KeyError: 12")]
    assert search(api, "no such text anywhere") == []


def test_search_snippets_are_short_plain_and_masked(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    long = "word " * 100 + "needle <b>here</b> " + "tail " * 100
    attempt = make_attempt(
        api, campaign["id"], title="Long", hypothesis=long,
        command="python -m sglang.launch_server --api-key sk-abcdefghijklmnopqrstuvwxyz0123",
    )  # fmt: skip
    [hit] = search(api, "NEEDLE")
    assert hit["attempt_id"] == attempt["id"]
    assert len(hit["snippet"]) <= 160
    assert "needle <b>here</b>" in hit["snippet"]
    assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    [command] = search(api, "api-key")
    assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in command["snippet"]
    assert "--api-key" in command["snippet"]


def test_search_takes_percent_and_underscore_literally(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    percent = make_attempt(api, campaign["id"], title="100% of the KV cache")
    make_attempt(api, campaign["id"], title="1000 of the KV cache")
    underscore = make_attempt(api, campaign["id"], title="mem_fraction 0.9")
    make_attempt(api, campaign["id"], title="memXfraction 0.9")
    backslash = make_attempt(api, campaign["id"], title=r"C:\logs\run")
    assert [h["attempt_id"] for h in search(api, "100%")] == [percent["id"]]
    assert [h["attempt_id"] for h in search(api, "m_fr")] == [underscore["id"]]
    assert [h["attempt_id"] for h in search(api, "\\logs\\")] == [backslash["id"]]
    assert search(api, "%") == [search(api, "100%")[0]]
    assert search(api, "_") == [search(api, "m_fr")[0]]
    for odd in ("'", '"; drop table attempt; --', "/", "//%", "[a-z]*", "é", "😀"):
        assert search(api, odd) == []


@pytest.mark.parametrize(
    "params", [{}, {"q": ""}, {"q": "   "}, {"q": "x" * 201}, {"q": "nul\x00byte"}]
)
def test_a_missing_empty_long_or_nul_query_is_422(api: httpx.Client, params: dict) -> None:
    response = api.get("/api/search", params=params)
    assert response.status_code == 422
    assert "detail" in response.json()


def test_a_huge_query_is_refused_not_run(api: httpx.Client) -> None:
    response = api.get("/api/search", params={"q": "%_" * 2_500})
    assert response.status_code == 422
    assert "200 characters" in response.text


def test_search_is_for_the_owner(anonymous: httpx.Client, api: httpx.Client) -> None:
    make_campaign(api, name="secret plans")
    response = anonymous.get("/api/search", params={"q": "secret"})
    assert response.status_code == 401
    assert "secret plans" not in response.text


def test_seen_finds_a_failure_typed_without_the_log_s_quotes(
    api: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "missing.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/serve.py", line 3, in <module>\n'
        "    import flash_attn\n"
        "ModuleNotFoundError: No module named 'flash_attn'\n"
    )
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="crash")
    for typed in (
        "ModuleNotFoundError: No module named 'flash_attn'",
        "ModuleNotFoundError: No module named flash_attn",  # as people type it
        "No module named flash_attn",
        "flash_attn",
    ):
        found = api.post("/api/seen", json={"text": typed})
        assert found.status_code == 200, found.text
        assert [m["attempt_id"] for m in found.json()["matches"]] == [attempt["id"]], typed
    other = api.post("/api/seen", json={"text": "ModuleNotFoundError: No module named flashinfer"})
    assert other.json()["matches"] == []
    blank = api.post("/api/seen", json={"text": " \n "})  # (MCP's seen_before asks the same)
    assert blank.status_code == 422 and "error line" in blank.text, blank.text
