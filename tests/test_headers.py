"""Security headers on every response, and the pages still working under their policy in
Debian's Chromium (htmx from the npm copies of the CDN files)."""

import base64
import hashlib
import re

import httpx
import pytest

from app.pages.rendering import HTMX_SRI, HTMX_URL
from tests.conftest import OWNER_TOKEN, LiveServer
from tests.helpers import make_attempt, make_campaign


def policy_of(response: httpx.Response) -> dict[str, list[str]]:
    directives = [d.split() for d in response.headers["content-security-policy"].split(";")]
    return {d[0]: d[1:] for d in directives if d}


def seeded(api: httpx.Client) -> tuple[dict, dict, str]:
    campaign = make_campaign(api, target=120.0)
    attempt = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 92.6})
    other = make_attempt(api, campaign["id"], title="Custom allreduce")
    api.post(f"/api/attempts/{other['id']}/measurements", json={"value": 38.0})
    api.patch(f"/api/attempts/{other['id']}", json={"status": "eliminated", "verdict": "slower"})
    api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "PCIe only: **no NVLink**"})
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    return campaign, attempt, token


def test_every_response_carries_the_security_headers(
    server: LiveServer, api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign, attempt, token = seeded(api)
    responses = [
        browser.get("/"),
        browser.get(f"/campaigns/{campaign['id']}"),
        browser.get(f"/attempts/{attempt['id']}"),
        anonymous.get(f"/s/{token}"),
        anonymous.get(f"/s/{token}.md"),
        anonymous.get(f"/s/{token}.json"),
        anonymous.get("/login"),
        anonymous.get("/static/app.js"),
        api.get(f"/api/campaigns/{campaign['id']}"),
        anonymous.get("/api/campaigns"),  # 401
        anonymous.get("/s/not-a-token"),  # 404
        anonymous.post("/api/campaigns", json={"name": "x"}),  # refused before the body
        api.post("/api/campaigns", content=b"x" * (2 << 20)),  # 413
        anonymous.get("/openapi.json"),
        httpx.get(f"{server.url}/login", params={"token": OWNER_TOKEN}),  # 303
    ]
    for response in responses:
        where = f"{response.request.method} {response.request.url.path} {response.status_code}"
        assert response.headers["x-content-type-options"] == "nosniff", where
        assert response.headers["referrer-policy"] == "same-origin", where
        policy = policy_of(response)
        assert policy["frame-ancestors"] == ["'none'"], where
        assert policy["default-src"] == ["'none'"], where
        # Our own files and the pinned CDN file, by URL and by its SRI hash: no inline
        # script, no other host, no eval.
        assert sorted(policy["script-src"]) == sorted(["'self'", HTMX_URL, f"'{HTMX_SRI}'"]), where
        assert policy["style-src"] == ["'self'"], where


def test_pages_have_no_inline_script_or_style(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign, attempt, token = seeded(api)
    pages = [
        browser.get(path).text
        for path in ("/", f"/campaigns/{campaign['id']}", f"/attempts/{attempt['id']}")
    ] + [anonymous.get(f"/s/{token}").text, anonymous.get("/login").text]
    for html in pages:
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
        assert "<style" not in html and not re.search(r"\sstyle=", html)
        assert not re.search(r"\son[a-z]+=", html), "an inline event handler"


def test_the_api_docs_allow_their_own_inline_script_only(anonymous: httpx.Client) -> None:
    docs = anonymous.get("/docs")
    assert docs.status_code == 200
    policy = policy_of(docs)
    inline = re.findall(rb"<script>(.*?)</script>", docs.content, re.S)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0]).digest()).decode()
    assert f"'sha256-{digest}'" in policy["script-src"]
    assert "'unsafe-inline'" not in policy["script-src"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert docs.headers["x-content-type-options"] == "nosniff"


WATCH_CSP = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


def watched(page) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    """Reload the page with listeners for CSP violations and console errors in place."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.context.add_init_script(WATCH_CSP)
    page.reload()
    return errors, page.evaluate("window.__violations")


def violations(page) -> list[str]:  # type: ignore[no-untyped-def]
    return list(page.evaluate("window.__violations"))


@pytest.mark.browser
def test_pages_work_in_chromium_without_a_policy_violation(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign, attempt, token = seeded(api)

    # The campaign page: htmx loaded through its SRI, the stream live, the chart drawn, the
    # attempt in play in its lane and the dead end in the fold below it, which opens.
    page = open_page(f"/campaigns/{campaign['id']}")
    errors, _ = watched(page)
    page.wait_for_selector("#live-status.on", timeout=10_000)
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.locator("#chart circle.point").count() == 2
    page.click("#eliminated-fold > summary")
    in_play = page.locator(f"#attempt-{attempt['id']}").bounding_box()
    dead_end = page.locator("#eliminated-fold .card.lane-eliminated").bounding_box()
    assert in_play and dead_end and dead_end["y"] >= in_play["y"] + in_play["height"]
    make_attempt(api, campaign["id"], title="Arrives live")
    page.locator(".card .title", has_text="Arrives live").wait_for(timeout=10_000)
    assert violations(page) == [] and errors == []

    # The attempt page: an htmx form swaps its answer in place.
    page = open_page(f"/attempts/{attempt['id']}")
    errors, _ = watched(page)
    page.wait_for_selector("#live-status.on", timeout=10_000)
    page.evaluate("window.__marker = 'no reload'")
    page.fill("#measure-form input[name=value]", "94.0")
    page.click("#measure-form button")
    page.locator("#attempt-detail", has_text="93.3").wait_for(timeout=10_000)
    assert page.evaluate("window.__marker") == "no reload"
    assert violations(page) == [] and errors == []

    # The campaign list, the login page and the share page of a reader with no cookie.
    for path, logged_in in (("/", True), ("/login", False), (f"/s/{token}", False)):
        page = open_page(path, logged_in=logged_in)
        errors, _ = watched(page)
        if path.startswith("/s/"):
            page.wait_for_selector("#live-status.on", timeout=10_000)
            assert page.locator("#chart circle.point").count() == 2
        assert violations(page) == [] and errors == [], path

    # The policy is enforced, and this test would see a breach: an injected inline style
    # and script are refused and reported.
    page.evaluate(
        "document.body.insertAdjacentHTML('beforeend', '<div id=x style=\"color: red\"></div>');"
        "var s = document.createElement('script'); s.textContent = 'window.__ran = 1';"
        "document.body.appendChild(s);"
    )
    page.wait_for_function("window.__violations.length >= 2", timeout=5_000)
    assert page.evaluate("window.__ran") is None
    assert any(v.startswith("style-src") for v in violations(page))
    assert any(v.startswith("script-src") for v in violations(page))


@pytest.mark.browser
def test_an_error_pages_back_link_goes_back(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    # It was `javascript:history.back()`: inline script, which the policy refuses, so the
    # link did nothing but log a violation.
    campaign = make_campaign(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    start = page.url
    page.goto(start.replace(f"/campaigns/{campaign['id']}", "/attempts/999999"))
    errors, found = watched(page)
    assert page.locator("#error").count() == 1 and found == []
    page.click("#error ~ p a:has-text('Back')")
    page.wait_for_url(start, timeout=10_000)
    assert [e for e in errors if "Content Security Policy" in e] == []


def test_nothing_but_the_static_files_may_be_stored_by_a_cache(
    server: LiveServer, api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    """Owner pages and API answers hold the owner's data; share pages are no-store too: their
    URL is their secret, and a revoked link must stop showing the campaign."""
    campaign, attempt, token = seeded(api)
    responses = [
        browser.get("/"),
        browser.get(f"/campaigns/{campaign['id']}"),
        browser.get(f"/attempts/{attempt['id']}"),
        browser.get(f"/campaigns/{campaign['id']}", headers={"HX-Request": "true"}),
        api.get(f"/api/campaigns/{campaign['id']}"),
        api.get(f"/api/attempts/{attempt['id']}"),
        api.get(f"/api/campaigns/{campaign['id']}/runs.csv"),
        api.post("/api/campaigns", json={"name": "stored?"}),
        anonymous.get("/api/campaigns"),  # 401
        anonymous.get(f"/s/{token}"),
        anonymous.get(f"/s/{token}.md"),
        anonymous.get(f"/s/{token}.json"),
        anonymous.get("/s/not-a-token"),  # 404
        anonymous.get("/login"),
        httpx.get(f"{server.url}/login", params={"token": OWNER_TOKEN}),  # 303 with the cookie
        anonymous.get("/openapi.json"),
    ]
    with api.stream("GET", f"/api/campaigns/{campaign['id']}/events") as stream:
        responses.append(stream)
    for response in responses:
        where = f"{response.request.method} {response.request.url.path} {response.status_code}"
        assert response.headers.get("cache-control") == "no-store", where
    for path in ("/static/app.js", "/static/app.css"):
        static = anonymous.get(path)
        assert static.status_code == 200 and "no-store" not in static.headers.get(
            "cache-control", ""
        ), path


@pytest.mark.browser
def test_a_long_title_never_breaks_the_attempt_s_number(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    title = "<script>alert('t')</script> " + "L" * 170  # a word longer than a line
    attempt = make_attempt(api, campaign["id"], title=title)
    card = f"#attempt-{attempt['id']} .seq"
    for path, number in ((f"/attempts/{attempt['id']}", ".attempt-title .seq"),
                         (f"/campaigns/{campaign['id']}", card)):  # fmt: skip
        page = open_page(path)
        page.set_viewport_size({"width": 1280, "height": 800})
        seq = page.locator(number).first
        box = seq.bounding_box()
        line = float(page.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 16",
                                   seq.element_handle()))  # fmt: skip
        assert box is not None and box["height"] < 1.5 * line, (path, box, line)  # one line
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280, (path, width)  # and nothing runs off the side
