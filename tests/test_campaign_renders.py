"""The campaign page kept rendered between requests (app/pages/campaign_renders.py): a change made
through another dashboard of the same database is never served stale, whatever of a card it
changes; the page with its kept renderings is the page rendered from nothing; after one change
only that attempt's card is rendered anew."""

import re
from typing import Any

import httpx

from app import repo, views
from app.config import Settings
from app.db import session_scope
from app.models import Attempt, Run, utcnow
from app.pages.campaign_renders import CampaignRenders, Card, Shared
from app.pages.rendering import CSRF_MARK, SPLICE_MARK, Splice
from tests.conftest import OWNER_TOKEN, SERVER_ERRORS, LiveServer, running
from tests.helpers import csrf_of, make_attempt, make_campaign, patch, seed_long_campaign
from tests.sse import SSEReader

TP8 = "python -m sglang.launch_server --tp 8 --mem-fraction-static 0.85"
TP4 = TP8.replace("--tp 8", "--tp 4")


def owner_page(base_url: str, path: str) -> str:
    """The page as the owner's browser gets it from the dashboard at `base_url`."""
    with httpx.Client(base_url=base_url, timeout=30, event_hooks=SERVER_ERRORS) as client:
        assert client.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        response = client.get(path, headers={"Accept": "text/html"})
        assert response.status_code == 200, response.text[:300]
        return response.text


def comparable(html: str) -> str:
    """Two sessions' pages differ by their CSRF token only."""
    return html.replace(csrf_of(html), "CSRF")


def card(html: str, attempt_id: int) -> str:
    start = html.rindex("<article", 0, html.index(f'id="attempt-{attempt_id}"'))
    return html[start : html.index("</article>", start)]


def test_a_change_made_on_another_dashboard_is_never_served_stale(
    server: LiveServer, settings: Settings
) -> None:
    made = seed_long_campaign(server.app.state.engine, 120)
    campaign_id = made["campaign_id"]
    url = f"/campaigns/{campaign_id}"

    def page() -> str:
        """This dashboard's page (its renderings kept from the requests before), which must
        be the page a dashboard that has kept nothing renders."""
        kept = owner_page(server.url, url)
        with running(settings) as (fresh, _):
            assert comparable(kept) == comparable(owner_page(fresh.url, url))
        return kept

    with running(settings) as (_, other):  # every change goes through the other dashboard
        base = make_attempt(other, campaign_id, title="the baseline run")
        tried = make_attempt(other, campaign_id, title="TP 4", command=TP4)
        running_one = next(i for i, s in made["status"].items() if s == "running")
        measured = next(i for i, s in made["status"].items() if s == "measured")
        page()

        assert patch(other, measured, status="eliminated", verdict="no gain at TP 8").is_success
        shown = card(page(), measured)
        assert "status-eliminated" in shown and "no gain at TP 8" in shown

        other.post(f"/api/attempts/{measured}/notes", json={"body": "see the log"})
        assert ">1 note</span>" in card(page(), measured)

        # A running attempt found crashed: the chart's mark for it (on the floor, with no
        # figure) says so too, and the head counts it (neither moves its lane).
        crashing = next(i for i, s in made["status"].items() if s == "running" and i != running_one)
        assert patch(other, crashing, status="crashed").is_success
        assert f"#{crashing} " in page()  # the page, kept and fresh alike (checked in page())

        assert "no measurement yet" in card(page(), running_one)
        for value in (95.5, 95.3, 95.7):
            other.post(f"/api/attempts/{running_one}/measurements", json={"value": value})
        shown = card(page(), running_one)
        assert "95.5" in shown and "status-measured" in shown

        # The noise band is the campaign's: every card's call is made with it.
        assert "call-better" in card(page(), running_one)
        assert other.patch(f"/api/campaigns/{campaign_id}", json={"noise_pct": 50.0}).is_success
        assert "call-same" in card(page(), running_one)

        # A new baseline: the head says it, and an attempt tried after it is judged by it.
        other.post(f"/api/attempts/{base['id']}/measurements", json={"value": 100.0})
        assert patch(other, base["id"], status="adopted", set_baseline=True).is_success
        assert "100.0 <small>tok/s</small>" in page().split('class="fig-baseline"')[1][:200]
        after = make_attempt(other, campaign_id, title="after the new baseline")
        other.post(f"/api/attempts/{after['id']}/measurements", json={"value": 110.0})
        assert "+10.0 %" in card(page(), after["id"])

        # The attempt flags are compared against changes its command: others' diffs change.
        # (Tried before the adoption: its baseline is the typed one, named the baseline run's.)
        assert "tp_size: 8 → 4" not in card(page(), tried["id"])
        assert patch(other, base["id"], baseline_configuration=True).is_success
        found = other.get(f"/api/attempts/{tried['id']}").json()
        compared = found["flag_diff"]["baseline_attempt_id"]
        assert compared == base["id"] and "tp_size: 8 → 4" not in card(page(), tried["id"])
        assert patch(other, compared, command=TP8).is_success
        assert "tp_size: 8 → 4" in card(page(), tried["id"])

        same = sorted(i for i, cause in made["cause"].items() if cause == "KeyError: 2")
        assert len(same) == 3
        assert f"same root cause as #{same[0]} <span" in card(page(), same[2])
        assert other.delete(f"/api/attempts/{same[0]}").status_code == 204
        shown = card(page(), same[2])
        assert f"same root cause as #{same[1]}</a>" in shown and "more" not in shown

        # Deleting the attempt a retest names unlinks it in the database itself.
        retest = make_attempt(other, campaign_id, title="again", retest_of=same[1])
        assert f"retest of #{same[1]}" in card(page(), retest["id"])
        assert other.delete(f"/api/attempts/{same[1]}").status_code == 204
        assert "retest of" not in card(page(), retest["id"])


def kept_cards(server: LiveServer, campaign_id: int) -> dict[int, Card]:
    with session_scope(server.app.state.engine, snapshot=True) as session:
        campaign = repo.get_campaign(session, campaign_id=campaign_id)
        assert campaign is not None
        return server.app.state.campaign_renders.cards(session, campaign)


def test_after_one_change_only_that_card_is_rendered_anew(
    server: LiveServer, api: httpx.Client
) -> None:
    made = seed_long_campaign(server.app.state.engine, 50)
    campaign_id = made["campaign_id"]
    first = kept_cards(server, campaign_id)
    again = kept_cards(server, campaign_id)
    assert len(first) == 50 and all(again[i] is first[i] for i in first)

    running_one = next(i for i, s in made["status"].items() if s == "running")
    api.post(f"/api/attempts/{running_one}/measurements", json={"value": 95.5})
    after = kept_cards(server, campaign_id)
    assert [i for i in after if after[i] is not first[i]] == [running_one]
    assert after[running_one].view.metric_value == 95.5

    # A writer that does not touch updated_at: the row's update moves it all the same.
    measured = next(i for i, s in made["status"].items() if s == "measured")
    with session_scope(server.app.state.engine) as session:
        row = session.get(Attempt, measured)
        assert row is not None
        row.verdict = "written by another program"
    edited = kept_cards(server, campaign_id)
    assert [i for i in edited if edited[i] is not after[i]] == [measured]
    assert "written by another program" in edited[measured].html
    after = edited

    # A run launched and not ended shows its elapsed time: its card is never kept.
    launched = next(i for i, s in made["status"].items() if s == "running" and i != running_one)
    with session_scope(server.app.state.engine) as session:
        session.add(Run(attempt_id=launched, host="gpu-box", command=TP8, run_key="k",
                        state="benchmarking", launched_at=utcnow()))  # fmt: skip
    with_run = kept_cards(server, campaign_id)
    assert with_run[launched].clock and 'class="run-state"' in with_run[launched].html
    changed = [i for i in with_run if with_run[i] is not after[i]]
    assert changed == [launched]
    assert kept_cards(server, campaign_id)[launched] is not with_run[launched]


def test_the_campaigns_viewed_last_are_kept_up_to_a_number_of_cards(server: LiveServer) -> None:
    engine = server.app.state.engine
    first, second = (seed_long_campaign(engine, 30)["campaign_id"] for _ in range(2))
    renders = CampaignRenders(server.app.state.templates, cards=40)

    def view(campaign_id: int) -> dict[int, Card]:
        with session_scope(engine, snapshot=True) as session:
            campaign = repo.get_campaign(session, campaign_id=campaign_id)
            assert campaign is not None
            return renders.cards(session, campaign)

    kept = view(first)
    assert all(view(first)[i] is card for i, card in kept.items())
    view(second)  # 60 cards: the campaign viewed before goes, this one stays
    assert all(view(first)[i] is not card for i, card in kept.items())


def test_a_request_on_an_older_snapshot_never_leaves_its_timeline_to_a_newer_one(
    server: LiveServer, api: httpx.Client
) -> None:
    engine = server.app.state.engine
    campaign_id = seed_long_campaign(engine, 20)["campaign_id"]
    renders = CampaignRenders(server.app.state.templates)

    def timeline(cards: dict[int, Card]) -> str:
        attempts = [card.view for card in cards.values()]
        context = {"lanes": views.lanes_newest_first(attempts), "attempts": attempts,
                   "card_html": {i: card.html for i, card in cards.items()}}  # fmt: skip
        return renders.timeline(campaign_id, cards.values(), context, keep=True).html("")

    with session_scope(engine, snapshot=True) as older:
        before = repo.get_campaign(older, campaign_id=campaign_id)  # its snapshot begins
        assert before is not None
        # The noise band changes no attempt's row: only what every card depends on.
        assert api.patch(f"/api/campaigns/{campaign_id}", json={"noise_pct": 50.0}).is_success
        with session_scope(engine, snapshot=True) as newer:
            campaign = repo.get_campaign(newer, campaign_id=campaign_id)
            assert campaign is not None and campaign.noise_pct == 50.0
            cards = renders.cards(newer, campaign)
            # The older request runs between this one's cards and its timeline.
            assert "call-same" not in timeline(renders.cards(older, before))
            assert "call-same" in timeline(cards)


def test_each_session_gets_its_own_token_in_the_kept_page(server: LiveServer) -> None:
    made = seed_long_campaign(server.app.state.engine, 20)
    url = f"/campaigns/{made['campaign_id']}"
    pages = [owner_page(server.url, url) for _ in range(2)]
    tokens = [csrf_of(page) for page in pages]
    assert tokens[0] != tokens[1]
    for page, token, other in zip(pages, tokens, reversed(tokens), strict=True):
        assert CSRF_MARK not in page and SPLICE_MARK not in page and other not in page
        forms: Any = re.findall(r'name="csrf_token" value="([^"]+)"', page)
        assert forms and set(forms) == {token}


def test_a_kept_rendering_goes_into_its_page_as_bytes_with_the_readers_token() -> None:
    kept = Shared.of(f'<form><input name="csrf_token" value="{CSRF_MARK}"></form> é → #1')
    splice = Splice()
    page = f"<main>{splice(kept)}</main><p>{splice(kept)}</p> ·"
    body = splice.body(page, "token-of-this-session")
    form = '<form><input name="csrf_token" value="token-of-this-session"></form> é → #1'
    assert body.decode() == f"<main>{form}</main><p>{form}</p> ·"


def test_the_live_view_sends_the_renderings_the_page_keeps(
    server: LiveServer, api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="NCCL Tree")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90.0})
    url = f"/campaigns/{campaign['id']}"
    browser.get(url)
    reader = SSEReader(api, f"/api/campaigns/{campaign['id']}/events?view=campaign")
    # A title is the chart's and the best result's too: the head is sent again.
    assert patch(api, attempt["id"], title="NCCL <Tree>").is_success
    head = reader.until(lambda m: m.event == "campaign-head")
    card_sent = reader.until(lambda m: m.event == f"card-{attempt['id']}")
    reader.close()
    assert "NCCL &lt;Tree&gt;" in head.data and "NCCL &lt;Tree&gt;" in card_sent.data
    page = browser.get(url).text  # rendered once, by the live view, for the page too
    assert head.data in page and card_sent.data in page
    assert kept_cards(server, campaign["id"])[attempt["id"]].html == card_sent.data


def test_a_campaign_with_no_figure_yet_says_what_brings_the_chart(
    server: LiveServer, api: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=None)  # no baseline, no target
    make_attempt(api, campaign["id"], title="not measured yet")
    page = owner_page(server.url, f"/campaigns/{campaign['id']}")
    caption = page.split('id="chart"')[1].split("</figure>")[0]
    assert "with the first figure" in caption and "<svg" not in caption
