"""The campaign page of a long campaign as plain HTML: the head's story, the filter form that
works without script, the fold of dead ends, collapsed badges, one rendering per change."""

import re

import httpx

from tests.conftest import LiveServer
from tests.helpers import make_attempt, make_campaign, patch, seed_long_campaign

HX = {"HX-Request": "true"}
CARD = re.compile(r'<article class="card lane-\w+ status-(\w+)" id="attempt-(\d+)"([^>]*)>')


def cards(html: str) -> dict[int, tuple[str, bool]]:
    """Each card's status and whether it is hidden, by attempt id."""
    return {
        int(attempt_id): (status, " hidden" in rest)
        for status, attempt_id, rest in CARD.findall(html)
    }


def head_of(html: str) -> str:
    start = html.index('id="campaign-head"')
    return html[start : html.index("</section>", start)]


def test_the_head_tells_the_story_on_the_owners_page_and_the_share_page(
    browser: httpx.Client, api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=82.0, target=120.0)
    page = browser.get(f"/campaigns/{campaign['id']}").text
    assert "none yet" in head_of(page) and "+46.3 %" in head_of(page)  # 82 to 120
    first = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    api.post(f"/api/attempts/{first['id']}/measurements", json={"value": 92.6})
    assert patch(api, first["id"], status="adopted", set_baseline=True).status_code == 200
    second = make_attempt(api, campaign["id"], title="EAGLE-3 topk 4")
    api.post(f"/api/attempts/{second['id']}/measurements", json={"value": 100.0})
    assert patch(api, second["id"], status="adopted").status_code == 200
    third = make_attempt(api, campaign["id"], title="Faster, not adopted")
    api.post(f"/api/attempts/{third['id']}/measurements", json={"value": 110.0})

    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    shared = anonymous.get(f"/s/{token}").text
    for head in (head_of(browser.get(f"/campaigns/{campaign['id']}").text), shared):
        # The best adopted (not the faster one still in play), against the first baseline
        # (82, not the 92.6 in force now), and what is left to the target.
        assert "100.0" in head and f"#{second['id']}" in head and "EAGLE-3 topk 4" in head
        assert "+22.0 %" in head  # 100 over 82
        assert "+20.0 %" in head  # 120 over 100
        assert "from 82.0" in head and "target 120.0" in head and "92.6" in head
    assert patch(api, third["id"], status="adopted").status_code == 200
    assert "reached" not in head_of(browser.get(f"/campaigns/{campaign['id']}").text)
    api.patch(f"/api/campaigns/{campaign['id']}", json={"target": 105.0})
    head = head_of(browser.get(f"/campaigns/{campaign['id']}").text)
    assert "reached" in head and "110.0" in head and "+34.1 %" in head


def test_the_charts_key_says_which_side_is_better_when_lower_is(
    browser: httpx.Client, api: httpx.Client, anonymous: httpx.Client
) -> None:
    # A latency campaign's faster attempt is a green point below the baseline, under a key
    # that said "green above the baseline, red below".
    campaign = make_campaign(api, metric="ms", higher_is_better=False, baseline=100.0)
    attempt = make_attempt(api, campaign["id"], title="Chunked prefill")
    for value in (90.0, 89.6, 90.4):
        api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
    once = make_attempt(api, campaign["id"], title="Measured once")
    api.post(f"/api/attempts/{once['id']}/measurements", json={"value": 91.0})
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    for page in (
        browser.get(f"/campaigns/{campaign['id']}").text,
        anonymous.get(f"/s/{token}").text,
    ):
        assert 'class="point up"' in page
        assert 'class="point up unclear"' in page  # which way it points, not yet a call
        assert "green below the baseline (lower is better), red above" in page
        assert "hollow not yet clear" in page
    higher = make_campaign(api, baseline=82.0)
    api.post(
        f"/api/attempts/{make_attempt(api, higher['id'])['id']}/measurements", json={"value": 90.0}
    )
    assert "green above the baseline, red below" in browser.get(f"/campaigns/{higher['id']}").text


def test_a_gain_of_nothing_is_shown_neither_as_a_gain_nor_as_a_loss(
    browser: httpx.Client, api: httpx.Client, anonymous: httpx.Client
) -> None:
    # The home page's form leaves the baseline empty: the first adopted result (the box
    # ticked by default) becomes the first baseline, and the gain over it is 0.
    campaign = make_campaign(api, baseline=None)
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    for page in (browser.get(f"/campaigns/{campaign['id']}"), anonymous.get(f"/s/{token}")):
        start = page.text.index('<dl class="figures headline">')
        told = page.text[start : page.text.index("</dl>", start)]
        # Until then there is no baseline to speak of: said so, not "from — tok/s".
        assert "no baseline yet" in told and "from —" not in told and "— <small>" not in told, told
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 92.6})
    assert patch(api, attempt["id"], status="adopted", set_baseline=True).status_code == 200
    head = head_of(browser.get(f"/campaigns/{campaign['id']}").text)
    gain = re.search(r'<div class="fig-gain">.*?</div>', head, re.S)
    assert gain and "+0.0 %" in gain.group(0), head
    assert "down" not in gain.group(0) and "up" not in gain.group(0), gain.group(0)
    slower = make_attempt(api, campaign["id"], title="slower")
    api.post(f"/api/attempts/{slower['id']}/measurements", json={"value": 80.0})
    assert patch(api, slower["id"], status="adopted").status_code == 200
    head = head_of(browser.get(f"/campaigns/{campaign['id']}").text)
    assert '<span class="delta down">' not in head  # the best adopted is still 92.6


def test_the_filter_form_works_without_script(browser: httpx.Client, server: LiveServer) -> None:
    made = seed_long_campaign(server.app.state.engine, 120)
    url = f"/campaigns/{made['campaign_id']}"
    everything = cards(browser.get(url).text)
    assert len(everything) == 120 and not any(hidden for _, hidden in everything.values())

    crashed = cards(browser.get(url, params={"status": "crashed"}).text)
    shown = {i for i, (_, hidden) in crashed.items() if not hidden}
    assert shown == {i for i, s in made["status"].items() if s == "crashed"} and shown
    assert len(crashed) == 120  # the others are there, hidden: script can show them again

    page = browser.get(url, params={"q": "keyerror: 2"}).text  # any case; 2, 20-28
    found = {i for i, (_, hidden) in cards(page).items() if not hidden}
    assert found == {i for i, cause in made["cause"].items() if "KeyError: 2" in cause}
    assert {made["status"][i] for i in found} == {"eliminated", "crashed"}
    # Dead ends among the matches: their fold opens.
    assert '<details class="fold" id="eliminated-fold" open>' in page
    assert '<details class="fold" id="eliminated-fold">' in browser.get(url).text

    # Flags and hypothesis are searched too, though a card does not show them.
    by_flags = cards(browser.get(url, params={"q": "--CHUNK 17"}).text)
    assert {i for i, (_, hidden) in by_flags.items() if not hidden} == {made["ids"][17]}
    narrowed = cards(browser.get(url, params={"q": "--chunk 17", "status": "crashed"}).text)
    assert made["status"][made["ids"][17]] != "crashed"
    assert not any(not hidden for _, hidden in narrowed.values())
    by_id = cards(browser.get(url, params={"q": f"#{min(everything)}"}).text)
    assert min(everything) in {i for i, (_, hidden) in by_id.items() if not hidden}

    fragment = browser.get(url, params={"status": "crashed"}, headers=HX)
    assert fragment.text.lstrip().startswith('<section class="timeline" id="timeline"')
    assert "<html" not in fragment.text and cards(fragment.text) == crashed
    refused = browser.get(url, params={"status": "exploded"})
    assert refused.status_code == 422 and "no such status" in refused.text
    assert browser.get(url, params={"q": "x" * 201}).status_code == 422


def test_same_root_cause_badges_collapse_to_the_first_and_a_count(
    browser: httpx.Client, server: LiveServer
) -> None:
    made = seed_long_campaign(server.app.state.engine, 200)
    same = sorted(i for i, cause in made["cause"].items() if cause == "KeyError: 2")
    assert len(same) >= 4
    page = browser.get(f"/campaigns/{made['campaign_id']}").text
    last = page[page.index(f'id="attempt-{same[-1]}"') :]
    last = last[: last.index("</article>")]
    assert last.count('class="badge same-cause"') == 1
    assert f'same root cause as #{same[0]} <span class="more">+{len(same) - 2}</span>' in last
    first = page[page.index(f'id="attempt-{same[0]}"') :]
    assert "same-cause" not in first[: first.index("</article>")]


def test_the_page_is_rendered_anew_after_every_change(
    browser: httpx.Client, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="NCCL Tree")
    url = f"/campaigns/{campaign['id']}"
    first, again = browser.get(url).text, browser.get(url).text
    assert cards(first) == cards(again) == {attempt["id"]: ("proposed", False)}
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90.0})
    assert cards(browser.get(url).text) == {attempt["id"]: ("measured", False)}
    patch(api, attempt["id"], status="eliminated", verdict="no gain on PCIe")
    page = browser.get(url).text
    assert cards(page) == {attempt["id"]: ("eliminated", False)} and "no gain on PCIe" in page
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "see the log"})
    assert ">1 note</span>" in browser.get(url).text
    # Each request still gets its own form token.
    assert 'name="csrf_token" value="' in browser.get(url).text
