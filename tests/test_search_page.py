"""The search page `/search?q=` and the header's search box: hits in the API's order, each
linking to its campaign, attempt or note, q marked in escaped text; and in Chromium, from the
campaign list, typing in the box and pressing Enter."""

import re
from pathlib import Path

import httpx
import pytest

from tests.helpers import UI_WAIT_MS, make_attempt, make_campaign
from tests.test_pages import HX, has_root

SHOTS = Path("test-artifacts/search")
HOSTILE = '<script>alert("owned")</script><img src=x onerror=alert(1)>'


def page(browser: httpx.Client, q: str | None, **headers: str) -> httpx.Response:
    response = browser.get("/search", params={} if q is None else {"q": q}, headers=headers)
    assert response.status_code == 200, response.text
    return response


def hrefs(html: str) -> list[str]:
    return re.findall(r'<a class="hit-title" href="([^"]+)"', html)


def test_hits_link_to_their_rows_in_the_apis_order(
    api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api, name="DeepSeek", description="try nccl ring first")
    exact = make_attempt(api, campaign["id"], title="NCCL ring")
    judged = make_attempt(api, campaign["id"], title="Tree")
    api.patch(f"/api/attempts/{judged['id']}", json={"verdict": "slower than nccl ring"})
    note = api.post(f"/api/attempts/{exact['id']}/notes", json={"body": "NCCL RING again"})
    on_campaign = api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "nccl ring?"})
    hits = api.get("/api/search", params={"q": "nccl ring"}).json()
    assert len(hits) == 5

    html = page(browser, "nccl ring").text
    assert has_root(html, "search-results")
    assert hrefs(html) == [
        f"/attempts/{exact['id']}",
        f"/campaigns/{campaign['id']}",
        f"/attempts/{judged['id']}",
        f"/campaigns/{campaign['id']}#note-{on_campaign.json()['id']}",
        f"/attempts/{exact['id']}#note-{note.json()['id']}",
    ]
    # The API's order, hit for hit.
    kinds = re.findall(r'<li class="hit hit-(\w+)">', html)
    assert kinds == [h["kind"] for h in hits]
    # Every occurrence marked, in its own case.
    assert "slower than <mark>nccl ring</mark>" in html
    assert "<mark>NCCL RING</mark> again" in html
    title = f'<a class="hit-title" href="/attempts/{exact["id"]}"><mark>NCCL ring</mark></a>'
    assert title in html
    # The link's target is there: the note on the attempt page.
    target = browser.get(f"/attempts/{exact['id']}").text
    assert f'id="note-{note.json()["id"]}"' in target

    # htmx asks for the partial alone; the header's box keeps the query.
    fragment = page(browser, "nccl ring", **HX).text
    assert fragment.lstrip().startswith('<section class="panel search-results" id="search-results"')
    assert hrefs(fragment) == hrefs(html)
    assert 'name="q" value="nccl ring"' in html


def test_hostile_markup_is_text_and_the_hit_still_marked(
    api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api, name="Markup")
    attempt = make_attempt(api, campaign["id"], title="Script kiddie", hypothesis=HOSTILE)
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": f"note: {HOSTILE}"})
    html = page(browser, "SCRIPT").text
    assert "<script>alert" not in html and "<img src=x" not in html
    # Each piece escaped, the mark around each occurrence, whatever its case.
    assert "&lt;<mark>script</mark>&gt;alert(&#34;owned&#34;)&lt;/<mark>script</mark>&gt;" in html
    assert "<mark>Script</mark> kiddie" in html
    # The query itself is text too, in the heading, the title and the box.
    odd = page(browser, '"><img src=x onerror=alert(2)>').text
    assert "<img src=x onerror=alert(2)>" not in odd
    assert 'value="&#34;&gt;&lt;img src=x onerror=alert(2)&gt;"' in odd
    assert has_root(odd, "search-none")


def test_empty_no_match_and_refused_queries(browser: httpx.Client) -> None:
    for q in (None, "", "   "):
        html = page(browser, q).text
        assert has_root(html, "search-empty") and not has_root(html, "search-none")
    none = page(browser, "nothing matches this").text
    assert has_root(none, "search-none") and "No matches" in none
    assert "nothing matches this" in none
    assert browser.get("/search", params={"q": "x" * 201}).status_code == 422


def test_every_owner_page_has_the_search_box(api: httpx.Client, browser: httpx.Client) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    other = make_attempt(api, campaign["id"], title="Other")
    box = re.compile(
        r'<form class="search-box" method="get" action="/search" role="search">'
        r'<input type="search" name="q"'
    )
    for path in ("/", f"/campaigns/{campaign['id']}", f"/attempts/{attempt['id']}",
                 f"/compare?ids={attempt['id']},{other['id']}", "/search?q=x"):  # fmt: skip
        response = browser.get(path)
        assert response.status_code == 200, path
        assert box.search(response.text), path


@pytest.mark.parametrize("path", ["/search", "/search?q=secret"])
def test_strangers_are_asked_to_log_in(
    api: httpx.Client, anonymous: httpx.Client, path: str
) -> None:
    make_campaign(api, name="secret plans")
    response = anonymous.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 401
    assert has_root(response.text, "login")
    assert "secret plans" not in response.text and 'class="search-box"' not in response.text


@pytest.mark.browser
def test_search_from_the_header_with_enter(api: httpx.Client, open_page) -> None:  # type: ignore[no-untyped-def]
    campaign = make_campaign(api, name="EAGLE-3 on PCIe")
    make_attempt(api, campaign["id"], title="NCCL Tree")
    symm = make_attempt(
        api, campaign["id"], title="Torch symmetric memory",
        command="python -m sglang.launch_server --enable-torch-symm-mem",
    )  # fmt: skip
    browser_page = open_page("/")
    browser_page.wait_for_selector("#campaign-list", timeout=UI_WAIT_MS)
    box = browser_page.get_by_role("searchbox", name="Search")
    box.fill("SYMM-mem")
    box.press("Enter")
    browser_page.wait_for_url(re.compile(r"/search\?q=SYMM-mem$"), timeout=UI_WAIT_MS)
    hit = browser_page.locator("#search-results li.hit")
    assert hit.count() == 1
    marks = hit.locator("mark")
    assert marks.all_inner_texts() == ["symm-mem"]
    assert "--enable-torch-symm-mem" in hit.locator(".snippet").inner_text()
    assert browser_page.get_by_role("searchbox", name="Search").input_value() == "SYMM-mem"
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser_page.screenshot(path=str(SHOTS / "search-1400.png"))
    browser_page.set_viewport_size({"width": 390, "height": 844})
    width = browser_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width} px"
    browser_page.screenshot(path=str(SHOTS / "search-390.png"))
    hit.get_by_role("link", name="Torch symmetric memory").click()
    browser_page.wait_for_url(re.compile(rf"/attempts/{symm['id']}$"), timeout=UI_WAIT_MS)
    assert "Torch symmetric memory" in browser_page.locator("h1").first.inner_text()
    assert browser_page.dialogs == []
