"""Pages and forms: each page whole and as its htmx partial, forms without JavaScript."""

import re
from pathlib import Path

import httpx
import pytest
from markupsafe import escape

from app.auth import SESSION_COOKIE
from tests.conftest import OWNER_TOKEN
from tests.helpers import attempt_of, csrf_of, make_attempt, make_campaign, wait_for

HX = {"HX-Request": "true"}


def has_root(html: str, element_id: str) -> bool:
    return re.search(rf'<[a-z]+[^>]*\bid="{element_id}"', html) is not None


def test_login_link_sets_a_safe_cookie(anonymous: httpx.Client) -> None:
    response = anonymous.get("/login", params={"token": OWNER_TOKEN, "next": "/campaigns/1"})
    assert response.status_code == 303
    assert response.headers["location"] == "/campaigns/1"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert OWNER_TOKEN not in cookie


def test_login_refuses_bad_tokens_and_open_redirects(anonymous: httpx.Client) -> None:
    bad = anonymous.get("/login", params={"token": "nope"})
    assert bad.status_code == 401 and "not valid" in bad.text
    assert "set-cookie" not in bad.headers
    evil = anonymous.get("/login", params={"token": OWNER_TOKEN, "next": "//evil.example/"})
    assert evil.headers["location"] == "/"
    form = anonymous.get("/login")
    assert form.status_code == 200 and has_root(form.text, "login")
    # (the demo prints a link too: the page names both)
    assert "<code>campaign-dash serve</code> (or <code>demo</code>) printed" in form.text


@pytest.mark.parametrize("path", ["/", "/campaigns/1", "/attempts/1"])
def test_pages_ask_strangers_to_log_in(anonymous: httpx.Client, path: str) -> None:
    for cookie in (None, "forged-session-value"):
        if cookie:
            anonymous.cookies.set(SESSION_COOKIE, cookie)
        response = anonymous.get(path, headers={"Accept": "text/html"})
        assert response.status_code == 401
        assert has_root(response.text, "login")


def test_campaign_list_page_and_partial(browser: httpx.Client, api: httpx.Client) -> None:
    make_campaign(api, name="Kimi K2.5 <int4>")
    page = browser.get("/")
    assert page.status_code == 200
    assert has_root(page.text, "campaign-list") and has_root(page.text, "new-campaign")
    assert "Kimi K2.5 &lt;int4&gt;" in page.text
    assert 'integrity="sha384-' in page.text and "cdn.jsdelivr.net/npm/htmx.org@2" in page.text
    partial = browser.get("/", headers=HX)
    assert partial.text.lstrip().startswith('<section class="panel" id="campaign-list"')
    assert "<html" not in partial.text


def test_the_campaign_list_is_live_through_one_stream_of_every_campaign(
    browser: httpx.Client, api: httpx.Client, anonymous: httpx.Client
) -> None:
    from tests.sse import SSEReader

    first, second = make_campaign(api, name="EAGLE-3"), make_campaign(api, name="Kimi")
    page = browser.get("/").text
    assert 'sse-connect="/api/events?view=campaigns&amp;after=' in page
    assert 'sse-swap="campaign-list"' in page
    tab = SSEReader(browser, "/api/events?view=campaigns")
    assert tab.next(skip=()).event == "hello"
    make_attempt(api, second["id"])
    swap = tab.until(lambda m: m.event == "campaign-list")
    # The partial the page includes, as its plain request gets it.
    assert swap.data.startswith('<section class="panel" id="campaign-list"')
    assert re.search(r"Kimi</a>\s*<span[^>]*>1 attempt\s*·", swap.data), swap.data
    make_attempt(api, first["id"])
    swap = tab.until(lambda m: m.event == "campaign-list")
    assert re.search(r"EAGLE-3</a>\s*<span[^>]*>1 attempt\s*·", swap.data), swap.data
    tab.close()
    assert anonymous.get("/api/events?view=campaigns").status_code == 401
    assert browser.get("/api/events?view=nothing").status_code == 422


def test_campaign_page_shows_the_lanes_newest_first_and_folds_the_dead_ends(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api, target=100.0)
    first = make_attempt(api, campaign["id"], title="EAGLE-3 speculative decoding")
    api.post(f"/api/attempts/{first['id']}/measurements", json={"value": 54})
    second = make_attempt(api, campaign["id"], title="Custom allreduce on PCIe")
    api.post(f"/api/attempts/{second['id']}/measurements", json={"value": 38})
    api.patch(f"/api/attempts/{second['id']}", json={"status": "eliminated", "verdict": "PCIe"})
    third = make_attempt(api, campaign["id"], title="CUDA 13", retest_of=first["id"])
    api.post(f"/api/attempts/{third['id']}/measurements", json={"value": 92.6})
    api.patch(f"/api/attempts/{third['id']}", json={"status": "adopted"})
    fourth = make_attempt(api, campaign["id"], title="NCCL Tree")

    page = browser.get(f"/campaigns/{campaign['id']}")
    assert page.status_code == 200
    for element_id in ("timeline", "campaign-head", "new-attempt", "notes", "eliminated-fold"):
        assert has_root(page.text, element_id), element_id
    cards = re.findall(
        r'<article class="card lane-(\w+) status-(\w+)" id="attempt-(\d+)"', page.text
    )
    # In play newest first, then what was adopted, then the dead ends in their fold.
    assert cards == [
        ("tested", "proposed", str(fourth["id"])),
        ("tested", "measured", str(first["id"])),
        ("adopted", "adopted", str(third["id"])),
        ("eliminated", "eliminated", str(second["id"])),
    ]
    fold = page.text[page.text.index('<details class="fold" id="eliminated-fold"') :]
    fold = fold[: fold.index("</details>")]
    assert f'id="attempt-{second["id"]}"' in fold and f'id="attempt-{first["id"]}"' not in fold
    # The new-attempt form comes before the timeline.
    assert page.text.index('id="new-attempt"') < page.text.index('id="timeline"')
    assert "-34.1 %" in page.text and "+12.9 %" in page.text
    assert f"retest of #{first['id']}" in page.text

    partial = browser.get(f"/campaigns/{campaign['id']}", headers=HX)
    assert partial.text.lstrip().startswith('<section class="timeline" id="timeline"')
    assert "<html" not in partial.text and f'id="attempt-{third["id"]}"' in partial.text


def test_attempt_page_and_partial(browser: httpx.Client, api: httpx.Client) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(
        api,
        campaign["id"],
        hypothesis="<b>bold</b> claim",
        command="python -m sglang.launch_server --enable-torch-symm-mem",
        flags="--enable-torch-symm-mem",
    )
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "needs *NVLink*"})
    page = browser.get(f"/attempts/{attempt['id']}")
    assert page.status_code == 200
    for element_id in ("attempt-detail", "status-form", "measure-form", "notes"):
        assert has_root(page.text, element_id), element_id
    assert "&lt;b&gt;bold&lt;/b&gt; claim" in page.text
    assert "--enable-torch-symm-mem" in page.text and "<em>NVLink</em>" in page.text
    partial = browser.get(f"/attempts/{attempt['id']}", headers=HX)
    assert partial.text.lstrip().startswith('<div id="attempt-detail"')
    assert "<html" not in partial.text


def test_unknown_pages_are_404_pages(browser: httpx.Client) -> None:
    for path in ("/campaigns/77", "/attempts/77"):
        response = browser.get(path)
        assert response.status_code == 404 and has_root(response.text, "error")


def test_a_malformed_page_address_is_an_error_page(
    browser: httpx.Client, api: httpx.Client
) -> None:
    # A pasted link cut short ("/campaigns/1x") showed the browser a raw JSON blob.
    for path in ("/campaigns/abc", "/attempts/1x"):
        response = browser.get(path)
        assert response.status_code == 422 and has_root(response.text, "error"), path
        assert "Input should be a valid integer" in response.text, path
    assert api.get("/api/campaigns/abc").json()["detail"][0]["loc"] == ["path", "campaign_id"]


def test_create_campaign_and_attempt_by_plain_forms(
    browser: httpx.Client, api: httpx.Client
) -> None:
    csrf = csrf_of(browser.get("/").text)
    created = browser.post(
        "/campaigns",
        data={
            "csrf_token": csrf,
            "name": "From a form",
            "metric": "tok/s",
            "baseline": "82",
            "target": "",
            "noise_pct": "1.0",
            "description": "goal",
        },
    )
    assert created.status_code == 303
    campaign_path = created.headers["location"]
    campaign_id = int(campaign_path.rsplit("/", 1)[1])
    assert api.get(f"/api/campaigns/{campaign_id}").json()["baseline"] == 82

    added = browser.post(
        f"/campaigns/{campaign_id}/attempts",
        data={
            "csrf_token": csrf,
            "title": "NCCL Tree",
            "hypothesis": "",
            "command": "",
            "flags": "NCCL_ALGO=Tree",
            "source": "",
            "retest_of": "",
            "blocked_by": "",
        },
    )
    assert added.status_code == 303 and added.headers["location"] == campaign_path
    attempts = api.get(f"/api/campaigns/{campaign_id}").json()["attempts"]
    assert [(a["title"], a["flags"]["typed"]) for a in attempts] == [
        ("NCCL Tree", "NCCL_ALGO=Tree")
    ]
    assert attempts[0]["flags"]["command"] == {"NCCL_ALGO": "Tree"}

    with_htmx = browser.post(
        f"/campaigns/{campaign_id}/attempts",
        data={"csrf_token": csrf, "title": "Second"},
        headers=HX,
    )
    assert with_htmx.status_code == 200
    assert with_htmx.text.lstrip().startswith('<section class="timeline" id="timeline"')
    assert "Second" in with_htmx.text


def test_status_measurement_and_note_forms(
    browser: httpx.Client, api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{tmp_path}/x.log")
    path = f"/attempts/{attempt['id']}"
    csrf = csrf_of(browser.get(path).text)

    measured = browser.post(f"{path}/measurements", data={"csrf_token": csrf, "value": "38"})
    assert measured.status_code == 303 and measured.headers["location"] == path
    again = browser.post(
        f"{path}/measurements", data={"csrf_token": csrf, "value": "40"}, headers=HX
    )
    assert again.status_code == 200 and again.text.lstrip().startswith('<div id="attempt-detail"')
    assert "39.0" in again.text and "(n=2)" in again.text
    status = browser.post(
        f"{path}/status",
        data={"csrf_token": csrf, "status": "eliminated", "verdict": "PCIe switch saturates"},
        headers=HX,
    )
    assert status.status_code == 200
    assert status.text.lstrip().startswith('<div id="attempt-detail"')
    body = api.get(f"/api/attempts/{attempt['id']}").json()
    assert body["status"] == "eliminated" and body["verdict"] == "PCIe switch saturates"

    note = browser.post(f"{path}/notes", data={"csrf_token": csrf, "body": "2x slower than NCCL"})
    assert note.status_code == 303 and note.headers["location"] == f"{path}#notes"
    notes = api.get(f"/api/attempts/{attempt['id']}/notes").json()
    assert [n["body"] for n in notes] == ["2x slower than NCCL"]

    note_id = notes[0]["id"]
    edited = browser.post(f"/notes/{note_id}/edit", data={"csrf_token": csrf, "body": "edited"})
    assert edited.status_code == 303
    assert api.get(f"/api/attempts/{attempt['id']}/notes").json()[0]["body"] == "edited"
    deleted = browser.post(f"/notes/{note_id}/delete", data={"csrf_token": csrf}, headers=HX)
    assert deleted.status_code == 200 and has_root(deleted.text, "attempt-detail")
    assert api.get(f"/api/attempts/{attempt['id']}/notes").json() == []

    campaign_note = browser.post(
        f"/campaigns/{campaign['id']}/notes", data={"csrf_token": csrf, "body": "PCIe only"}
    )
    assert campaign_note.status_code == 303
    htmx_note = browser.post(
        f"/campaigns/{campaign['id']}/notes", data={"csrf_token": csrf, "body": "two"}, headers=HX
    )
    assert htmx_note.text.lstrip().startswith('<section class="panel" id="notes"')


def test_forms_refuse_nonsense_with_a_readable_answer(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    path = f"/attempts/{attempt['id']}"
    csrf = csrf_of(browser.get(path).text)

    adopt = browser.post(f"{path}/status", data={"csrf_token": csrf, "status": "adopted"})
    assert adopt.status_code == 409 and "only a measured attempt" in adopt.text
    no_reason = browser.post(f"{path}/status", data={"csrf_token": csrf, "status": "eliminated"})
    assert no_reason.status_code == 422 and "needs a verdict" in no_reason.text
    bad_value = browser.post(f"{path}/measurements", data={"csrf_token": csrf, "value": "fast"})
    assert bad_value.status_code == 422
    # The page again, the message beside the field, what was typed kept.
    assert 'data-form="measure" data-field="value"' in bad_value.text
    assert re.search(r'<input name="value"[^>]* value="fast"', bad_value.text)
    htmx_refusal = browser.post(
        f"{path}/status", data={"csrf_token": csrf, "status": "adopted"}, headers=HX
    )
    assert htmx_refusal.status_code == 409
    assert "hx-retarget" not in htmx_refusal.headers
    # The form's own fragment comes back in place, never JSON.
    assert htmx_refusal.text.lstrip().startswith('<div id="attempt-detail"')
    assert "only a measured attempt" in htmx_refusal.text
    no_name = browser.post("/campaigns", data={"csrf_token": csrf, "name": " "})
    assert no_name.status_code == 422
    assert api.get(path.replace("/attempts", "/api/attempts")).json()["status"] == "proposed"


def test_every_form_requires_the_csrf_token(browser: httpx.Client, api: httpx.Client) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    note = api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "n"}).json()
    forms = {
        "/campaigns": {"name": "x"},
        f"/campaigns/{campaign['id']}/attempts": {"title": "x"},
        f"/campaigns/{campaign['id']}/notes": {"body": "x"},
        f"/attempts/{attempt['id']}/status": {"status": "running"},
        f"/attempts/{attempt['id']}/measurements": {"value": "1"},
        f"/attempts/{attempt['id']}/notes": {"body": "x"},
        f"/notes/{note['id']}/edit": {"body": "x"},
        f"/notes/{note['id']}/delete": {},
    }
    for path, data in forms.items():
        for csrf in (None, "0" * 64):
            fields = {**data, **({"csrf_token": csrf} if csrf else {})}
            response = browser.post(path, data=fields)
            assert response.status_code == 403, path
    after = api.get(f"/api/campaigns/{campaign['id']}").json()
    assert len(after["attempts"]) == 1 and after["attempts"][0]["status"] == "proposed"
    assert len(api.get("/api/campaigns").json()) == 1
    assert [n["body"] for n in api.get(f"/api/campaigns/{campaign['id']}/notes").json()] == ["n"]


def test_forms_need_the_owner_even_with_a_csrf_token(
    browser: httpx.Client, anonymous: httpx.Client
) -> None:
    csrf = csrf_of(browser.get("/").text)
    response = anonymous.post("/campaigns", data={"csrf_token": csrf, "name": "x"})
    assert response.status_code == 401


def test_the_session_cookie_cannot_write_through_the_api(browser: httpx.Client) -> None:
    assert browser.get("/api/campaigns").status_code == 200
    assert browser.post("/api/campaigns", json={"name": "x"}).status_code == 401


def test_the_campaign_page_draws_the_throughput_chart(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=89.5, target=120)
    empty = browser.get(f"/campaigns/{campaign['id']}").text
    assert 'id="chart"' in empty and "<svg" not in empty
    faster = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    for value in (92.4, 92.8, 92.6):
        api.post(f"/api/attempts/{faster['id']}/measurements", json={"value": value})
    slower = make_attempt(api, campaign["id"], title="Custom allreduce")
    for value in (38.0, 38.3, 37.9):
        api.post(f"/api/attempts/{slower['id']}/measurements", json={"value": value})
    unclear = make_attempt(api, campaign["id"], title="One run")
    api.post(f"/api/attempts/{unclear['id']}/measurements", json={"value": 91.0})
    level = make_attempt(api, campaign["id"], title="One run, no change")
    api.post(f"/api/attempts/{level['id']}/measurements", json={"value": 89.5})
    page = browser.get(f"/campaigns/{campaign['id']}").text
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count('<circle class="point') == 4
    # exactly the baseline, one run: it points neither way (not red, "below")
    assert '<circle class="point noise unclear"' in svg
    assert '<circle class="point up"' in svg and '<circle class="point down"' in svg
    # One run: which way it points, drawn hollow, and no interval to draw.
    assert '<circle class="point up unclear"' in svg
    assert svg.count('<line class="ci ') == 2
    assert "+3.5 % [+2.9, +4.0] better (n=3)" in svg  # the tooltip says the call
    assert 'class="target"' in svg and 'class="baseline"' in svg
    assert f'href="/attempts/{faster["id"]}"' in svg


def test_points_without_a_baseline_are_neither_above_nor_below_it(
    browser: httpx.Client, api: httpx.Client
) -> None:
    # The home page's form left as it is: no baseline yet, so nothing is judged against one.
    campaign = make_campaign(api, baseline=None)
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 92.6})
    page = browser.get(f"/campaigns/{campaign['id']}").text
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count('<circle class="point unjudged"') == 1, svg
    caption = page[page.index("</svg>") :].split("</figcaption>")[0]
    assert "red below" not in caption and "baseline in force" not in caption, caption


def test_the_attempt_page_shows_the_frame_and_the_runners_up_linked_into_the_log(
    browser: httpx.Client, api: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes((Path(__file__).parent / "data" / "seed_torch_symm_mem.log").read_bytes())
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")

    def diagnosed() -> dict | None:
        diagnosis = attempt_of(api, attempt["id"])["diagnosis"]
        return diagnosis if diagnosis and len(diagnosis["candidates"]) > 1 else None

    diagnosis = wait_for(diagnosed, what="the seed's diagnosis with its runners-up")
    runner_up = diagnosis["candidates"][1]
    for headers in ({}, HX):
        page = browser.get(f"/attempts/{attempt['id']}", headers=headers).text
        assert (
            "<code>/root/sglang/python/sglang/srt/distributed/device_communicators/"
            "torch_symm_mem.py:56 in __init__</code>" in page
        )
        assert "also in this log" in page
        link = f'<a href="#line-{runner_up["line_no"]}"'
        assert link in page
        # ...and the log view has that anchor on that very line, escaped.
        target = re.search(
            rf'<span class="line[^"]*" id="line-{runner_up["line_no"]}">([^<]*)', page
        )
        assert target is not None and target.group(1).rstrip("\n") == str(escape(runner_up["line"]))


def test_a_form_s_address_opened_leads_to_the_page_that_holds_the_form(
    browser: httpx.Client, api: httpx.Client
) -> None:
    # A refused form leaves its POST address in the address bar; Enter there, or the address
    # pasted into a chat, asks for it with GET.
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="t")
    for address, page in (
        ("/campaigns", "/"),
        (f"/campaigns/{campaign['id']}/launch", f"/campaigns/{campaign['id']}"),
        (f"/campaigns/{campaign['id']}/attempts", f"/campaigns/{campaign['id']}"),
        (f"/attempts/{attempt['id']}/notes", f"/attempts/{attempt['id']}"),
        ("/notes/1/edit", "/"),
    ):
        opened = browser.get(address)
        assert (opened.status_code, opened.headers.get("location")) == (303, page), address
        assert browser.get(page).status_code == 200
    # A program asking the API wrongly still hears why.
    wrong = api.put("/api/search", params={"q": "x"})
    assert wrong.status_code == 405 and wrong.json() == {"detail": "Method Not Allowed"}
