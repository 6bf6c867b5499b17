"""The campaign list: its context (each campaign with its attempt count and baseline), its live
partial and its live renderer, one for every reader: it hears every campaign's events."""

from typing import Any

from fastapi import Request
from sqlmodel import Session

from app import repo, views
from app.pages.live import LivePage, LivePartial, PageRenderer, event_kinds

# An attempt added or deleted changes a count; a campaign made or edited, its row.
PAGE = LivePage(
    "campaigns",
    (LivePartial("partials/_campaign_list.html", "campaign-list",
                 kinds=event_kinds("attempt", "campaign")),),
)  # fmt: skip


def campaigns_context(session: Session) -> dict[str, Any]:
    counts = repo.count_attempts_by_campaign(session)
    campaigns = [
        views.campaign_view(session, c, attempt_count=counts.get(c.id or 0, 0))
        for c in repo.list_campaigns(session)
    ]
    # Read in the render's own snapshot, as the campaign page's: nothing falls between.
    return {"campaigns": campaigns, "live_cursor": repo.newest_event_id(session, None)}


def campaigns_view(request: Request) -> PageRenderer:
    """The list's live renderer: rendered once per batch of events, whoever reads it."""
    return PageRenderer(request.app.state.templates, PAGE, campaigns_context)
