"""Notes are markdown: rendered by markdown-it-py, sanitized by nh3 (raw HTML never trusted),
and for the `.md` export kept as markdown with the links the page would drop made inert."""

import html
import re
import unicodedata
from typing import Any

import nh3
from markdown_it import MarkdownIt

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _image_as_link(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    """An image is never loaded from a note (a tracking pixel would tell its host who read
    the page): it shows as a link to it, named by its alt text, for the reader to follow."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = str(token.attrGet("src") or "")
    return f'<a href="{html.escape(src)}">{html.escape(f"image: {alt}")}</a>'


_markdown.add_render_rule("image", _image_as_link)

_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del",
}  # fmt: skip

# The one allow-list of link schemes, for the page and the `.md` export alike (relative
# links have none and are kept): javascript:, vbscript:, data:... run or show what the
# note's author chose in the reader's browser.
LINK_SCHEMES = frozenset({"http", "https", "mailto"})


def render_markdown(text: str) -> str:
    html_text = _markdown.render(text)
    return nh3.clean(
        html_text,
        tags=_ALLOWED_TAGS,
        attributes={"a": {"href", "title"}},
        url_schemes=set(LINK_SCHEMES),
        link_rel="noopener noreferrer nofollow",
    )


# Where a destination starts: an inline link or image `](`, a reference definition `]:`,
# an autolink `<`; then the scheme, if the destination has one.
_DESTINATION_SCHEME = re.compile(r"(?:\]\(|\]:|<)<?([a-z][a-z0-9+.\-]*):")
_BACKSLASH_ESCAPE = re.compile(r"\\(?=[!-/:-@\[-`{-~])")


def _as_a_reader_parses(text: str) -> str:
    """The text with what hides a scheme from a plain search undone, as some reader (a
    Markdown viewer, then the browser's URL parser) undoes it: character references
    (`&#106;avascript:`, however deeply nested), backslash escapes (`javascript\\:`),
    whitespace and control characters (`java<TAB>script:`), case (`JaVaScRiPt:`)."""
    for _ in range(5):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    text = _BACKSLASH_ESCAPE.sub("", text)
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c)[0] != "C").lower()


def has_unsafe_link(text: str) -> bool:
    """Whether any link, image, reference definition or autolink could point outside
    LINK_SCHEMES. Errs on the side of yes: a false one only costs the note its links."""
    found = _DESTINATION_SCHEME.finditer(_as_a_reader_parses(text))
    return any(match.group(1) not in LINK_SCHEMES for match in found)


def inert_links(markdown: str) -> str:
    """Markdown whose links all stay inside LINK_SCHEMES. A link that may not has its
    brackets written as character references: no viewer builds a link, image or reference
    definition from those, and the text still reads as typed (as the page shows it:
    markdown-it makes no link of such a destination either). The note's other links stay;
    where an unsafe one hides in another form, every bracket of the note goes inert."""
    if not has_unsafe_link(markdown):
        return markdown

    def unsafe(link: re.Match[str]) -> bool:
        return has_unsafe_link(link.group(0))

    rest = _INLINE_LINK.sub(lambda link: " " if unsafe(link) else link.group(0), markdown)
    if has_unsafe_link(rest):
        return _inert(markdown)
    return _INLINE_LINK.sub(
        lambda link: _inert(link.group(0)) if unsafe(link) else link.group(0), markdown
    )


# An inline link or image, no bracket inside its text, one level of parentheses inside its
# destination: "[text](dest)", "[x](javascript:alert(1))".
_INLINE_LINK = re.compile(r"!?\[[^\[\]\n]*\]\((?:[^()\n]|\([^()\n]*\))*\)")


def _inert(markdown: str) -> str:
    return markdown.replace("[", "&#91;").replace("]", "&#93;")


# An inline link to a page of this dashboard ("[side by side](/compare?ids=9,10)"): the owner's
# pages answer a share link's reader with a login form.
_OWN_PAGE_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(\s*<?/(?!/)[^)\s>]*>?(?:\s+\"[^\"\n]*\")?\s*\)")


def own_page_links_as_text(markdown: str) -> str:
    """Markdown for a share link's reader: links to this dashboard's own pages, which only its
    owner may open, become their text."""
    return _OWN_PAGE_LINK.sub(r"\1", markdown)
