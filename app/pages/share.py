"""The public share page: its context (the masked summary and its chart), its live partials
and its live renderer, one for every reader of a link."""

from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from sqlmodel import Session

from app import repo, sharing
from app.models import ShareLink
from app.pages.chart import build_chart
from app.pages.live import (
    ADDED,
    MEASURED,
    REMOVED,
    SHAPE,
    STATUS,
    TITLE,
    LivePage,
    LivePartial,
    PageEntry,
    PageRenderer,
    Subject,
    event_kinds,
)

PAGE = LivePage(
    "share",
    (
        LivePartial("partials/_share_summary.html", "share-summary",
                    kinds=event_kinds("campaign", "note", "share"), on=SHAPE),
        # As on the campaign page: the chart's points and the best result name attempts.
        LivePartial("partials/_share_head.html", "share-head",
                    on=frozenset({ADDED, REMOVED, STATUS, MEASURED, TITLE}),
                    within="share-summary"),
        LivePartial("partials/_share_item.html", "share-attempt-{id}",
                    kinds=event_kinds("attempt"), each=True, within="share-summary"),
    ),
)  # fmt: skip


def share_context(session: Session, link: ShareLink, token: str) -> dict[str, Any]:
    result = sharing.summary(session, link)
    shared = [s.attempt for s in result.attempts]
    return {
        "summary": result,
        "campaign": result.campaign,
        "chart_data": build_chart(result.campaign, shared, link_prefix="#attempt-"),
        "chart_link_prefix": "#attempt-",
        "token": token,
        # The page's live stream starts right after this render (see campaign_context).
        "live_cursor": repo.newest_event_id(session, link.campaign_id),
    }


def share_view(templates: Jinja2Templates, campaign_id: int, token: str) -> PageRenderer:
    """The page's live renderer for one link: its rendering (redacted or not) is the same
    for every reader."""

    def context(session: Session) -> dict[str, Any]:
        return share_context(session, sharing.find(session, token), token)

    def cards(
        session: Session, whole: dict[str, Any] | None, ids: list[int]
    ) -> dict[int, dict[str, Any] | str]:
        # The mask learns from every text of the campaign: the whole summary, read once.
        found = whole if whole is not None else context(session)
        items = {s.attempt.id: s for s in found["summary"].attempts}
        return {i: {**found, "shared": items[i], "attempt": items[i].attempt}
                for i in ids if i in items}  # fmt: skip

    return PageRenderer(
        templates,
        PAGE,
        context,
        is_owner=False,
        shapes=lambda session: repo.attempt_shapes(session, campaign_id=campaign_id),
        cards=cards,
    )


def _stream_view(request: Request, subject: Subject) -> PageRenderer:
    assert subject.token is not None  # a share's stream is one link's
    return share_view(request.app.state.templates, subject.campaign_id, subject.token)


ENTRY = PageEntry(PAGE, _stream_view)
