"""The `.md` export reads as typed: what names, titles, flags, hypotheses and root causes
carry is shown literally in a Markdown viewer, never turned into links, tags or structure."""

import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
from markdown_it import MarkdownIt

from tests.helpers import attempt_of, make_attempt, make_campaign, wait_for


def flat(text: str) -> str:
    """As the export writes a title: on one line."""
    return " ".join(text.split())


class _Blocks(HTMLParser):
    """The rendered Markdown's elements, each with its text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, str]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open.append((tag, []))

    def handle_endtag(self, tag: str) -> None:
        name, text = self._open.pop()
        self.elements.append((name, "".join(text).strip()))
        if self._open:
            self._open[-1][1].extend(text)

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1].append(data)

    def texts(self, tag: str) -> list[str]:
        return [text for name, text in self.elements if name == tag]


def test_markdown_export_shows_names_and_flags_as_typed(
    api: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    name = "[click](javascript:alert(1)) | *bold* `tick` <script>alert(1)</script>"
    title = "# not a heading\n- not an item | cell | _under_ ~~gone~~ ![img](x.png) &amp;"
    hypothesis = "1. first\n\n> quote\n<b>raw</b> [ref]: /x **strong** $x$"
    flags = "--a `b` ``c`` --d|e"
    verdict = "===\n---\nreal *verdict*"
    log = tmp_path / "md.log"
    log.write_text("[2026-03-02 10:00:04] RuntimeError: [x](javascript:alert(1)) **b** <i>i</i>\n")
    campaign = make_campaign(api, name=name, description=hypothesis)
    attempt = make_attempt(
        api, campaign["id"], title=title, hypothesis=hypothesis, flags=flags, source=f"file://{log}"
    )
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="the crash")
    assert api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": verdict}).status_code == 200
    link = api.post(f"/api/campaigns/{campaign['id']}/shares").json()
    markdown = anonymous.get(f"/s/{link['token']}.md").text

    parser = _Blocks()
    parser.feed(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown))
    assert parser.texts("h1") == [flat(name)]
    assert parser.texts("h3") == [f"#{attempt['id']} {flat(title)} — crashed"]
    assert parser.texts("p")[0] == flat(hypothesis)  # the description
    items = parser.texts("li")
    assert f"Hypothesis: {flat(hypothesis)}" in items
    assert f"Flags: {flags}" in items and parser.texts("code")[0] == flags
    assert f"Verdict: {flat(verdict)}" in items
    assert "[x](javascript:alert(1)) **b** <i>i</i>" in parser.texts("pre")[0]
    # Nothing the names carry became markup: no link, image, tag, emphasis, table or quote.
    tags = {tag for tag, _ in parser.elements}
    assert not tags & {"a", "img", "script", "b", "i", "em", "del", "table", "blockquote", "hr"}
    assert parser.texts("strong") == ["Baseline:", "Hypotheses:"]
    assert len(parser.texts("ul")) == 2  # the campaign's figures, the attempt's facts


def test_markdown_export_shows_the_metric_as_typed_and_a_missing_baseline_plainly(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    metric = "[x](javascript:1) *tok*/s <b>"
    campaign = make_campaign(api, metric=metric, baseline=None, target=120)
    attempt = make_attempt(api, campaign["id"], title="measured")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90})
    link = api.post(f"/api/campaigns/{campaign['id']}/shares").json()
    markdown = anonymous.get(f"/s/{link['token']}.md").text

    parser = _Blocks()
    parser.feed(MarkdownIt("commonmark").render(markdown))
    items = parser.texts("li")
    assert "Baseline: not set" in items, items  # no unit after a figure that is not there
    assert f"Target: 120 {metric}" in items, items
    assert parser.texts("h3") == [f"#{attempt['id']} measured — measured — 90.0 {metric}"]
    assert not {tag for tag, _ in parser.elements} & {"a", "em", "b"}


class _Links(HTMLParser):
    """Every destination a rendered Markdown document would follow or load."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if (tag, k) in {("a", "href"), ("img", "src")}]


def browser_scheme(url: str) -> str | None:
    """The scheme a browser reads: it drops tabs and newlines anywhere and C0 controls and
    spaces at the ends, and compares schemes without case."""
    url = re.sub(r"[\t\n\r]", "", url).strip("".join(map(chr, range(33))))
    match = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", url)
    return match.group(1).lower() if match else None


def followed(markdown: str) -> list[str]:
    """What a lenient viewer links to: every destination markdown-it parses, none refused
    (markdown-it's own check would hide what a laxer viewer follows)."""
    viewer = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    viewer.validateLink = lambda url: True  # type: ignore[method-assign]
    links = _Links()
    links.feed(viewer.render(markdown))
    return links.urls


UNSAFE_NOTES = [
    "[click](javascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pixel](data:image/png;base64,iVBORw0KGgo=)",
    "[click](JaVaScRiPt:alert(1))",
    "[click]( javascript:alert(1) )",
    "[click](<java\tscript:alert(1)>)",
    "[click](java\tscript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](&#x6A;avascript&colon;alert(1))",
    "[click](javascript\\:alert(1))",
    "[click][ref]\n\n[ref]: javascript:alert(1)",
    "[click][ref]\n\n[ref]:\n  vbscript:msgbox(1) 'title'",
    "[ref]\n\n[REF]: <data:text/html,x>",
    "<javascript:alert(1)>",
    "<JAVASCRIPT:alert(1)>",
    "see [ok](https://example.com) and [bad](javascript:alert(1))",
    "[a [nested](javascript:alert(1)) link](https://example.com)",
]


def test_markdown_export_keeps_only_the_links_the_page_keeps(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    for body in UNSAFE_NOTES:
        note = {"body": f"dead end: {body}"}
        assert api.post(f"/api/attempts/{attempt['id']}/notes", json=note).status_code == 201
        assert api.post(f"/api/campaigns/{campaign['id']}/notes", json=note).status_code == 201
    safe = "[the PR](https://github.com/sgl-project/sglang/pull/1) [mail](mailto:a@b.c) [up](#x)"
    assert api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": safe}).status_code == 201
    link = api.post(f"/api/campaigns/{campaign['id']}/shares").json()
    markdown = anonymous.get(f"/s/{link['token']}.md").text

    urls = followed(markdown)
    schemes = {browser_scheme(url) for url in urls}
    assert schemes <= {"https", "mailto", None}, [u for u in urls if browser_scheme(u)]
    # The safe note keeps its links; the unsafe ones still read as typed, and a note that
    # mixes them keeps its safe one (example.com here, its host masked by the share).
    assert urls.count("https://github.com/sgl-project/sglang/pull/1") == urls.count("#x") == 1
    assert len([u for u in urls if u.startswith("mailto:")]) == 1  # its address masked
    assert urls.count("https://host") == 4 and len(urls) == 7, urls
    text = MarkdownIt("commonmark").render(markdown)
    assert "<p>dead end: [click](javascript:alert(1))</p>" in text
    # The page drops the same ones.
    page_links = _Links()
    page_links.feed(anonymous.get(f"/s/{link['token']}").text)
    page_schemes = {browser_scheme(url) for url in page_links.urls}
    assert page_schemes <= {"https", "mailto", None}, page_links.urls


def test_a_note_s_link_to_an_owner_page_reads_as_text_for_the_share_s_reader(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    # The demo's own note on its retest: "[side by side with the CUDA 13 baseline](/compare?...)"
    campaign = make_campaign(api)
    first, second = make_attempt(api, campaign["id"]), make_attempt(api, campaign["id"])
    compare = f"/compare?ids={first['id']},{second['id']}"
    body = f"Faster: see [side by side with the baseline]({compare}) and [the PR](https://github.com/sgl-project/sglang/pull/1)"
    assert api.post(f"/api/attempts/{second['id']}/notes", json={"body": body}).status_code == 201
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    assert anonymous.get(compare).status_code == 401  # the owner's page, not the reader's
    page = _Links()
    page.feed(anonymous.get(f"/s/{token}").text)
    assert "https://github.com/sgl-project/sglang/pull/1" in page.urls and not any(
        u.startswith("/compare") for u in page.urls
    )
    assert "Faster: see side by side with the baseline and" in anonymous.get(f"/s/{token}").text
    markdown = anonymous.get(f"/s/{token}.md").text
    assert followed(markdown) == ["https://github.com/sgl-project/sglang/pull/1"]
    assert (
        "see side by side with the baseline and [the PR](https://github.com/sgl-project/sglang/pull/1)"
        in markdown
    )
    notes = anonymous.get(f"/s/{token}.json").json()
    assert compare not in str(notes) and "side by side with the baseline" in str(notes)
    # The owner's own page keeps the link.
    assert f'href="{compare}"' in api.get(f"/attempts/{second['id']}").text.replace("&amp;", "&")


def test_a_retest_is_the_story_s_turning_point_and_a_block_is_said_as_one(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    crashed = make_attempt(api, campaign["id"], title="FP8 KV cache")
    waiting = make_attempt(api, campaign["id"], title="Bigger batch", blocked_by=crashed["id"])
    retest = make_attempt(api, campaign["id"], title="FP8 KV, new kernel", retest_of=crashed["id"])
    link = api.post(f"/api/campaigns/{campaign['id']}/shares").json()
    markdown = anonymous.get(f"/s/{link['token']}.md").text
    sections = {s.split(" ", 1)[0]: s for s in markdown.split("\n### ")[1:]}
    assert f"*Blocked by #{crashed['id']}.*" in sections[f"#{waiting['id']}"]
    assert "Turning point" not in sections[f"#{waiting['id']}"]
    assert f"*Turning point: retest of #{crashed['id']}.*" in sections[f"#{retest['id']}"]
    page = anonymous.get(f"/s/{link['token']}").text
    assert f'blocked by <a href="#attempt-{crashed["id"]}">#{crashed["id"]}</a>' in page
    assert "turning point: blocked" not in page
    assert f"turning point: retest of #{crashed['id']}" in page


def test_an_unsafe_link_goes_inert_alone_and_the_note_s_other_links_and_brackets_stay() -> None:
    from app.markdown import has_unsafe_link, inert_links

    note = (
        "See [the NCCL docs](https://docs.nvidia.com/deeplearning/nccl/), not "
        "[this](javascript:alert(1)); HF_TOKEN=[secret]"
    )
    kept = inert_links(note)
    assert kept == (
        "See [the NCCL docs](https://docs.nvidia.com/deeplearning/nccl/), not "
        "&#91;this&#93;(javascript:alert(1)); HF_TOKEN=[secret]"
    )
    assert followed(kept) == ["https://docs.nvidia.com/deeplearning/nccl/"]
    # An unsafe destination in a form the link pattern does not take: every bracket goes.
    hidden = "[ok](https://a.b) [ref]\n\n[ref]: javascript:alert(1)"
    assert has_unsafe_link(hidden) and "[" not in inert_links(hidden)


def test_a_note_s_image_is_a_link_in_the_markdown_too_never_an_image_to_load(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    body = "![tracking pixel](https://example.org/p.png?u=alice) ![](https://example.org/g.png)"
    assert api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": body}).is_success
    link = api.post(f"/api/campaigns/{campaign['id']}/shares", json={"redact": False}).json()
    text = MarkdownIt("commonmark").render(anonymous.get(f"/s/{link['token']}.md").text)
    assert "<img" not in text
    assert '<a href="https://example.org/p.png?u=alice">image: tracking pixel</a>' in text
    assert '<a href="https://example.org/g.png">image: image</a>' in text
