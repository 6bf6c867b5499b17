"""The `.md` export reads as typed: what names, titles, flags, hypotheses and root causes
carry is shown literally in a Markdown viewer, never turned into links, tags or structure."""

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
