"""The search page: every campaign's matches for q, best first, each linking to its campaign,
attempt or note, with q marked in its title and snippet."""

import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape
from sqlmodel import Session

from app import repo, views
from app.errors import Invalid

MAX_QUERY_CHARS = 200  # the API's limit (app.schemas.Name)


def parse_query(q: str) -> str:
    """q as the API takes it (stripped); "" for no query yet."""
    q = q.strip()
    if len(q) > MAX_QUERY_CHARS:
        raise Invalid(f"q: at most {MAX_QUERY_CHARS} characters")
    if "\x00" in q:
        raise Invalid("q: no NUL characters")
    return q


def highlight(text: str, q: str) -> Markup:
    """text escaped, each occurrence of q (any case) inside <mark>: a log line or a note may
    hold markup, and none of it may reach the page as markup."""
    if not q:
        return escape(text)
    pieces = re.split(f"({re.escape(q)})", text, flags=re.IGNORECASE)
    return Markup("").join(
        Markup("<mark>{}</mark>").format(piece) if odd else escape(piece)
        for odd, piece in ((n % 2 == 1, p) for n, p in enumerate(pieces))
    )


@dataclass(frozen=True)
class Hit:
    kind: str
    href: str
    title: Markup
    snippet: Markup
    campaign_id: int
    campaign_name: str


def _href(match: repo.Match) -> str:
    if match.kind == "campaign":
        return f"/campaigns/{match.campaign_id}"
    if match.kind == "attempt":
        return f"/attempts/{match.attempt_id}"
    if match.attempt_id is not None:
        return f"/attempts/{match.attempt_id}#note-{match.row_id}"
    return f"/campaigns/{match.campaign_id}#note-{match.row_id}"


def search_context(session: Session, q: str) -> dict[str, Any]:
    """The hits for q (none asked for when q is empty), as the API orders them."""
    if not q:
        return {"q": q, "hits": []}
    matches = repo.search(session, q=q)
    names = repo.campaign_names(session, {m.campaign_id for m in matches})
    hits = [
        Hit(
            kind=m.kind,
            href=_href(m),
            title=highlight(m.title, q),
            snippet=highlight(views.snippet(m.texts, q), q),
            campaign_id=m.campaign_id,
            campaign_name=names.get(m.campaign_id, ""),
        )
        for m in matches
    ]
    return {"q": q, "hits": hits}
