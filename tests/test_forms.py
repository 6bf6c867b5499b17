"""Every verb of the pages with the form's defaults; refusals in place, beside their field,
with what was typed kept; editing and deleting campaigns and attempts; retest."""

import re
from pathlib import Path

import httpx

from tests.conftest import LiveServer
from tests.helpers import csrf_of, make_attempt, make_campaign, wait_for

HX = {"HX-Request": "true"}


def form_defaults(html: str, action: str) -> dict[str, str]:
    """What a browser would submit for the form posting to `action`, nothing touched."""
    match = re.search(rf'<form[^>]*action="{re.escape(action)}".*?</form>', html, re.S)
    assert match, f"no form for {action}"
    form = match.group(0)
    fields: dict[str, str] = {}
    for tag in re.finditer(r"<input[^>]*>", form):
        attrs = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', tag.group(0)))
        kind = attrs.get("type", "text")
        if kind == "checkbox":
            if re.search(r"\schecked\b", tag.group(0)):
                fields[attrs["name"]] = attrs.get("value", "on")
        elif "name" in attrs:
            fields[attrs["name"]] = attrs.get("value", "")
    for select in re.finditer(r'<select name="(\w+)".*?</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected', select.group(0)) or re.search(
            r'<option value="([^"]*)"', select.group(0)
        )
        fields[select.group(1)] = chosen.group(1) if chosen else ""
    for area in re.finditer(r'<textarea name="(\w+)"[^>]*>(.*?)</textarea>', form, re.S):
        fields[area.group(1)] = area.group(2)
    return fields


def test_eliminate_from_the_attempt_page_with_the_forms_defaults(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source="file:///nonexistent/run.log")
    page = browser.get(f"/attempts/{attempt['id']}").text
    fields = form_defaults(page, f"/attempts/{attempt['id']}/status")
    assert fields["set_baseline"] == "on", "the adopt box is ticked by default"
    fields |= {"status": "eliminated", "verdict": "Dead end: needs NVLink"}
    # Plain form, then the same through htmx on a second attempt.
    assert browser.post(f"/attempts/{attempt['id']}/status", data=fields).status_code == 303
    stored = api.get(f"/api/attempts/{attempt['id']}").json()
    assert stored["status"] == "eliminated" and stored["verdict"] == "Dead end: needs NVLink"
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["baseline"] == 82.0

    second = make_attempt(api, campaign["id"], title="NCCL Tree")
    fields = form_defaults(
        browser.get(f"/attempts/{second['id']}").text, f"/attempts/{second['id']}/status"
    )
    fields |= {"status": "eliminated", "verdict": "slower"}
    answer = browser.post(f"/attempts/{second['id']}/status", data=fields, headers=HX)
    assert answer.status_code == 200
    assert answer.text.lstrip().startswith('<div id="attempt-detail"')
    assert api.get(f"/api/attempts/{second['id']}").json()["status"] == "eliminated"


def test_a_dead_end_s_reason_is_edited_on_its_page_while_the_cli_cannot_rewrite_it(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    api.patch(f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "slowr"})
    page = browser.get(f"/attempts/{attempt['id']}").text
    fields = form_defaults(page, f"/attempts/{attempt['id']}/status")
    assert fields["status"] == "eliminated" and fields["verdict"] == "slowr"
    # final: no other status is offered, only its reason to edit
    choice = re.search(r'<select name="status".*?</select>', page, re.S)
    assert choice and re.findall(r'<option value="(\w+)"', choice.group(0)) == ["eliminated"]
    fields["verdict"] = "slower by 4 %"  # the typo fixed, the status left as the form shows it
    assert browser.post(f"/attempts/{attempt['id']}/status", data=fields).status_code == 303
    assert api.get(f"/api/attempts/{attempt['id']}").json()["verdict"] == "slower by 4 %"
    # `eliminate` again, as from a second terminal, asks for a new verdict: refused
    again = api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "other words"}
    )
    assert again.status_code == 409 and "a verdict is final" in again.json()["detail"]
    same = api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "slower by 4 %"}
    )
    assert same.status_code == 200  # (a retry of the same words)


def test_adopting_with_the_box_ticked_moves_the_baseline(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90})
    page = browser.get(f"/attempts/{attempt['id']}").text
    fields = form_defaults(page, f"/attempts/{attempt['id']}/status")
    fields |= {"status": "adopted", "verdict": "CUDA 13 wins"}
    assert browser.post(f"/attempts/{attempt['id']}/status", data=fields).status_code == 303
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["baseline"] == 90.0
    # saved again as the form now shows it, the box still ticked: the verdict is edited
    fields = form_defaults(
        browser.get(f"/attempts/{attempt['id']}").text, f"/attempts/{attempt['id']}/status"
    )
    assert (fields["status"], fields.get("set_baseline")) == ("adopted", "on")
    fields["verdict"] = "CUDA 13 wins by 9 %"
    assert browser.post(f"/attempts/{attempt['id']}/status", data=fields).status_code == 303
    assert api.get(f"/api/attempts/{attempt['id']}").json()["verdict"] == "CUDA 13 wins by 9 %"


def refused_field(html: str, form: str, field: str) -> str:
    match = re.search(
        rf'<span class="field-error" role="alert" data-form="{form}" data-field="{field}">'
        r"([^<]*)</span>",
        html,
    )
    assert match, f"no message beside {form}.{field}"
    return match.group(1)


def test_a_measurement_typed_as_its_placeholder_shows_is_taken(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=9916.4)
    attempt = make_attempt(api, campaign["id"])
    page = browser.get(f"/attempts/{attempt['id']}").text
    field = re.search(r'<input name="value"[^>]*placeholder="([^"]*)"', page)
    assert field, "the measurement field shows an example"
    answer = browser.post(
        f"/attempts/{attempt['id']}/measurements",
        data={"csrf_token": csrf_of(page), "value": field.group(1)},
    )
    assert answer.status_code == 303, (field.group(1), answer.text[:300])
    assert api.get(f"/api/attempts/{attempt['id']}").json()["metric"]["mean"] == 9916.4


def test_a_mistyped_measurement_is_refused_beside_its_field(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    path = f"/attempts/{attempt['id']}"
    csrf = csrf_of(browser.get(path).text)
    for headers in ({}, HX):
        answer = browser.post(
            f"{path}/measurements", data={"csrf_token": csrf, "value": "fast"}, headers=headers
        )
        assert answer.status_code == 422
        assert answer.headers["content-type"].startswith("text/html")
        assert "valid number" in refused_field(answer.text, "measure", "value")
        assert 'value="fast"' in answer.text
        assert "Check the form" not in answer.text
    negative = browser.post(f"{path}/measurements", data={"csrf_token": csrf, "value": "-3"})
    assert negative.status_code == 422
    assert "greater than or equal to 0" in refused_field(negative.text, "measure", "value")
    assert api.get(f"/api/attempts/{attempt['id']}").json()["metric"] is None


def test_campaign_figures_that_make_no_sense_are_refused_in_place(browser: httpx.Client) -> None:
    page = browser.get("/").text
    base = form_defaults(page, "/campaigns") | {"name": "EAGLE-3", "description": "kept"}
    cases = [
        ({"baseline": "abc"}, "baseline", "valid number"),
        ({"baseline": "-82"}, "baseline", "greater than or equal to 0"),
        ({"baseline": "82", "target": "60"}, "target", "above the baseline"),
        ({"baseline": "1e400"}, "baseline", "finite"),
    ]
    for typed, field, message in cases:
        answer = browser.post("/campaigns", data=base | typed)
        assert answer.status_code == 422, typed
        assert message in refused_field(answer.text, "new-campaign", field), typed
        for value in typed.values():
            assert f'value="{value}"' in answer.text
        assert ">kept</textarea>" in answer.text
    assert browser.get("/api/campaigns").json() == []


def test_emptying_the_target_field_removes_the_target(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api, target=120)
    path = f"/campaigns/{campaign['id']}"
    fields = form_defaults(browser.get(path).text, f"{path}/edit")
    assert fields["target"] == "120.0"
    assert browser.post(f"{path}/edit", data=fields | {"target": ""}).status_code == 303
    stored = api.get(f"/api/campaigns/{campaign['id']}").json()
    assert stored["target"] is None and stored["baseline"] == 82.0
    assert "no target" in browser.get(path).text
    # Left as it was, the field keeps the target.
    api.patch(f"/api/campaigns/{campaign['id']}", json={"target": 100})
    fields = form_defaults(browser.get(path).text, f"{path}/edit")
    assert browser.post(f"{path}/edit", data=fields).status_code == 303
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["target"] == 100


def test_a_log_is_attached_from_the_attempt_page_of_an_attempt_made_without_one(
    browser: httpx.Client, api: httpx.Client, server: LiveServer, tmp_path: Path
) -> None:
    # The campaign page's form left as it is: an attempt with no log source. The page says
    # to set one; it must be possible there.
    campaign = make_campaign(api)
    path = f"/campaigns/{campaign['id']}"
    fields = form_defaults(browser.get(path).text, f"{path}/attempts")
    assert browser.post(f"{path}/attempts", data=fields | {"title": "by hand"}).status_code == 303
    attempt = api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"][0]
    assert attempt["source"] is None
    page = browser.get(f"/attempts/{attempt['id']}").text
    assert "No log attached" in page
    fields = form_defaults(page, f"/attempts/{attempt['id']}/edit")
    own = server.settings.database_url.removeprefix("sqlite:///")
    if own != server.settings.database_url:  # SQLite: the dashboard's own file is refused
        refused = browser.post(
            f"/attempts/{attempt['id']}/edit", data=fields | {"source": f"file://{own}"}
        )
        assert refused.status_code == 422
        assert "own files" in refused_field(refused.text, "edit-attempt", "source")
    log = tmp_path / "by-hand.log"
    log.write_text("[2026-02-27 13:21:27] The server is fired up and ready to roll!\n")
    attached = browser.post(
        f"/attempts/{attempt['id']}/edit", data=fields | {"source": f"file://{log}"}
    )
    assert attached.status_code == 303
    wait_for(lambda: api.get(f"/api/attempts/{attempt['id']}/log").content == log.read_bytes())
    # The form's defaults again (the source shown as it is): nothing changes.
    fields = form_defaults(
        browser.get(f"/attempts/{attempt['id']}").text, f"/attempts/{attempt['id']}/edit"
    )
    assert fields["source"] == f"file://{log}"
    assert browser.post(f"/attempts/{attempt['id']}/edit", data=fields).status_code == 303
    assert api.get(f"/api/attempts/{attempt['id']}").json()["source"] == f"file://{log}"


def test_edit_and_delete_a_campaign_and_an_attempt(
    browser: httpx.Client, api: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    log.write_text("[2026-02-27 13:21:27] The server is fired up and ready to roll!\n")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: api.get(f"/api/attempts/{attempt['id']}/log").text.startswith("[2026"))
    other = make_attempt(api, campaign["id"], title="kept", retest_of=attempt["id"])

    page = browser.get(f"/attempts/{attempt['id']}").text
    fields = form_defaults(page, f"/attempts/{attempt['id']}/edit")
    assert fields["title"] == "Torch symmetric memory"
    fields |= {"title": "Torch symm mem, take 2", "hypothesis": ""}
    assert browser.post(f"/attempts/{attempt['id']}/edit", data=fields).status_code == 303
    edited = api.get(f"/api/attempts/{attempt['id']}").json()
    assert edited["title"] == "Torch symm mem, take 2" and edited["hypothesis"] == ""
    assert (
        api.patch(f"/api/attempts/{attempt['id']}", json={"flags": "--x"}).json()["flags"]["typed"]
        == "--x"
    )

    page = browser.get(f"/campaigns/{campaign['id']}").text
    # The page stays open while attempts come: its delete box counts none it would miss (the
    # demo's said "its 6 attempts" over eleven).
    assert "Delete the campaign, all its attempts" in page
    fields = form_defaults(page, f"/campaigns/{campaign['id']}/edit")
    assert fields["name"] == campaign["name"] and fields["baseline"] == "82.0"
    refused = browser.post(f"/campaigns/{campaign['id']}/edit", data=fields | {"target": "10"})
    assert refused.status_code == 422 and "above the baseline" in refused.text
    fields |= {"name": "EAGLE-3, renamed", "target": "120"}
    assert browser.post(f"/campaigns/{campaign['id']}/edit", data=fields).status_code == 303
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["target"] == 120.0

    # Deleting asks for the box to be ticked; then the attempt and its log are gone.
    delete = form_defaults(
        browser.get(f"/attempts/{attempt['id']}").text, f"/attempts/{attempt['id']}/delete"
    )
    assert "confirm" not in delete
    unconfirmed = browser.post(f"/attempts/{attempt['id']}/delete", data=delete)
    assert unconfirmed.status_code == 422 and "tick the box" in unconfirmed.text
    gone = browser.post(f"/attempts/{attempt['id']}/delete", data=delete | {"confirm": "yes"})
    assert gone.status_code == 303
    assert gone.headers["location"] == f"/campaigns/{campaign['id']}?deleted={attempt['id']}"
    assert f"#{attempt['id']} deleted" in browser.get(gone.headers["location"]).text
    # Said only when true: a link that names an attempt still there says nothing.
    lying = browser.get(f"/campaigns/{campaign['id']}?deleted={other['id']}").text
    assert f"#{other['id']} deleted" not in lying
    assert api.get(f"/api/attempts/{attempt['id']}").status_code == 404
    assert api.get(f"/api/attempts/{attempt['id']}/log").status_code == 404
    assert api.get(f"/api/attempts/{other['id']}").json()["retest_of"] is None

    assert api.delete(f"/api/attempts/{other['id']}").status_code == 204
    assert api.delete(f"/api/campaigns/{campaign['id']}").status_code == 204
    assert api.get(f"/api/campaigns/{campaign['id']}").status_code == 404
    assert api.delete(f"/api/campaigns/{campaign['id']}").status_code == 404


def test_retest_prefills_the_new_attempt(browser: httpx.Client, api: httpx.Client) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(
        api, campaign["id"], command="python -m sglang.launch_server --tp 8",
        flags="--enable-torch-symm-mem", source="file:///data/logs/run.log",
    )  # fmt: skip
    page = browser.get(f"/attempts/{attempt['id']}").text
    link = re.search(r'href="(/campaigns/\d+\?retest=\d+)#new-attempt">Retest', page)
    assert link, "the attempt page has a Retest button"
    fields = form_defaults(browser.get(link.group(1)).text, f"/campaigns/{campaign['id']}/attempts")
    assert fields["title"] == "Retest: Torch symmetric memory"
    assert fields["command"] == "python -m sglang.launch_server --tp 8"
    assert fields["flags"] == "--enable-torch-symm-mem"
    assert fields["source"] == "file:///data/logs/run.log"
    assert fields["retest_of"] == str(attempt["id"])
    assert browser.post(f"/campaigns/{campaign['id']}/attempts", data=fields).status_code == 303
    retest = api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"][-1]
    assert retest["retest_of"] == attempt["id"] and retest["title"].startswith("Retest: ")


def test_closed_cards_say_what_happened_not_what_is_missing(
    browser: httpx.Client, api: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    log.write_text('Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 12\n')
    campaign = make_campaign(api)
    crashed = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: api.get(f"/api/attempts/{crashed['id']}").json()["status"] == "crashed")
    dead = make_attempt(api, campaign["id"], title="NCCL Tree", source=f"file://{log}")
    wait_for(lambda: api.get(f"/api/attempts/{dead['id']}").json()["status"] == "crashed")
    api.patch(f"/api/attempts/{dead['id']}", json={"status": "eliminated", "verdict": "no"})
    wait_for(
        lambda: (
            (api.get(f"/api/attempts/{dead['id']}").json()["tail"] or {}).get("state") == "stopped"
        )
    )
    proposed = make_attempt(api, campaign["id"], title="later")

    page = browser.get(f"/campaigns/{campaign['id']}").text

    def card(attempt_id: int) -> str:
        match = re.search(rf'<article[^>]*id="attempt-{attempt_id}".*?</article>', page, re.S)
        assert match
        return match.group(0)

    assert "not measured: it crashed" in card(crashed["id"])
    assert "no measurement yet" not in card(crashed["id"])
    assert "not measured" in card(dead["id"]) and "no measurement yet" not in card(dead["id"])
    assert ">stopped<" not in card(dead["id"])
    assert "no measurement yet" in card(proposed["id"])
    attempt_page = browser.get(f"/attempts/{dead['id']}").text
    assert "no longer followed" in attempt_page and ">stopped<" not in attempt_page
    # A closed attempt offers no measurement form it would refuse.
    assert f'action="/attempts/{dead["id"]}/measurements"' not in attempt_page
    assert "it takes no more runs" in attempt_page
    open_page = browser.get(f"/attempts/{proposed['id']}").text
    assert f'action="/attempts/{proposed["id"]}/measurements"' in open_page


def test_a_page_open_on_a_deleted_attempt_is_sent_to_its_campaign(api: httpx.Client) -> None:
    from tests.sse import SSEReader

    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    url = f"/api/campaigns/{campaign['id']}/events?view=attempt&attempt={attempt['id']}"
    tab = SSEReader(api, url)
    assert tab.next(skip=()).event == "hello"
    assert api.delete(f"/api/attempts/{attempt['id']}").status_code == 204
    reload = tab.until(lambda m: m.event == "reload")
    assert reload.data == f"/campaigns/{campaign['id']}?deleted={attempt['id']}"
    tab.close()
    assert api.get(url).status_code == 404


def test_the_campaigns_benchmark_pattern_is_set_refused_in_place_and_cleared(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    action = f"/campaigns/{campaign['id']}/edit"
    fields = form_defaults(browser.get(f"/campaigns/{campaign['id']}").text, action)
    assert fields["bench_pattern"] == ""
    refused = browser.post(action, data=fields | {"bench_pattern": "req/s: [0-9.]+"})
    assert refused.status_code == 422
    assert 'data-form="edit-campaign" data-field="bench_pattern"' in refused.text
    assert "has no group: put ( ) around the figure" in refused.text
    assert 'value="req/s: [0-9.]+"' in refused.text  # what was typed, kept
    pattern = r"req/s: ([\d.]+)"
    assert browser.post(action, data=fields | {"bench_pattern": pattern}).status_code == 303
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["bench_pattern"] == pattern
    fields = form_defaults(browser.get(f"/campaigns/{campaign['id']}").text, action)
    assert fields["bench_pattern"] == pattern
    assert browser.post(action, data=fields | {"bench_pattern": ""}).status_code == 303
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["bench_pattern"] is None


def test_a_lower_is_better_campaign_from_the_form(browser: httpx.Client, api: httpx.Client) -> None:
    # The form had no way to say a latency (ms) gets better as it falls: a TTFT campaign made
    # there judged a faster attempt a regression, in red.
    page = browser.get("/").text
    defaults = form_defaults(page, "/campaigns")
    assert defaults["higher_is_better"] == "true"  # throughput, the default
    fields = defaults | {
        "name": "TTFT",
        "metric": "ms",
        "baseline": "100",
        "higher_is_better": "false",
    }
    created = browser.post("/campaigns", data=fields)
    assert created.status_code == 303
    campaign = api.get(created.headers["location"].replace("/campaigns", "/api/campaigns")).json()
    assert campaign["higher_is_better"] is False
    attempt = make_attempt(api, campaign["id"])
    for value in (90.0, 89.5, 90.5):
        api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
    judged = api.get(f"/api/attempts/{attempt['id']}").json()
    assert judged["stats"]["call"] == "better" and judged["improved"] is True
    # Refused for another field, the choice is kept.
    refused = browser.post("/campaigns", data=fields | {"baseline": "fast"})
    assert form_defaults(refused.text, "/campaigns")["higher_is_better"] == "false"
