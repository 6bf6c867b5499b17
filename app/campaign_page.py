"""The campaign page's context: its attempts by lane, the head's story, the chart, the
filter; and the same with the parts that grow with the attempts rendered once per change."""

from dataclasses import dataclass
from typing import Any

from fastapi import Request
from markupsafe import Markup
from sqlmodel import Session

from app import actions, repo, sharing, views
from app.chart import build_chart
from app.headline import headline
from app.models import Status
from app.rendering import RenderCache, render_partial
from app.routes.events import newest_event_id


def campaign_context(
    session: Session,
    campaign_id: int,
    *,
    retest: int | None = None,
    filter: views.AttemptFilter | None = None,
) -> dict[str, Any]:
    campaign = actions.require_campaign(session, campaign_id)
    detail = views.campaign_detail(session, campaign, cards_only=True)
    notes = repo.list_notes(session, campaign_id=campaign_id)
    filter = filter or views.AttemptFilter()
    hidden = {a.id for a in detail.attempts if not filter.matches(a)}
    lanes = views.lanes_newest_first(detail.attempts)
    return {
        "campaign": detail,
        "headline": headline(detail, detail.attempts),
        "chart_data": build_chart(detail, detail.attempts),
        "attempts": detail.attempts,
        "attempts_by_id": {a.id: a for a in detail.attempts},
        "lanes": lanes,
        "filter": filter,
        "statuses": [s.value for s in Status],
        "hidden_ids": hidden,
        # A filter that finds dead ends opens their fold (without script too).
        "fold_open": filter.active and any(a.id not in hidden for a in lanes["eliminated"]),
        "campaign_notes": [views.note_view(n) for n in notes if n.attempt_id is None],
        "shares": [sharing.share_out(link) for link in sharing.list_links(session, campaign_id)],
        "note_counts": _count_by_attempt(notes),
        # Read in the render's own snapshot: the page's live stream starts right after it,
        # so a change committed between the render and the stream's start is not missed.
        "live_cursor": newest_event_id(session, campaign_id),
        "new_attempt": _new_attempt_defaults(detail.attempts, retest),
    }


def _new_attempt_defaults(attempts: list[Any], retest: int | None) -> dict[str, Any]:
    """The new-attempt form, pre-filled from the attempt being retested."""
    original = next((a for a in attempts if a.id == retest), None)
    if original is None:
        return {}
    return {
        "title": f"Retest: {original.title}"[:200],
        "hypothesis": original.hypothesis,
        "command": original.command,
        "flags": original.flags.typed,  # typed beside the command; its own flags come with it
        # A launched attempt's log is its run's: the retest's run writes a new one.
        "source": "" if original.run is not None else original.source or "",
        "retest_of": str(original.id),
    }


def _count_by_attempt(notes: list[Any]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for note in notes:
        if note.attempt_id is not None:
            counts[note.attempt_id] = counts.get(note.attempt_id, 0) + 1
    return counts


@dataclass(frozen=True)
class CampaignFragments:
    """The parts of a campaign page that grow with its attempts, as rendered HTML."""

    head: Markup
    timeline: Markup


def cached_campaign_context(request: Request, session: Session, campaign_id: int) -> dict[str, Any]:
    """The campaign page with its head and timeline rendered once per change of the campaign
    (keyed by its newest event, as share pages are): most of a 1,000-attempt page's time,
    repeated for nobody when a team keeps it open. The rest is read for each request: the
    forms and their CSRF token, the notes, the share links."""
    campaign = actions.require_campaign(session, campaign_id)  # a 404 for any id, however big
    # Then: the fragments rendered in this snapshot are at least as new as their key.
    cursor = newest_event_id(session, campaign_id)
    cache: RenderCache[int, CampaignFragments] = request.app.state.page_renders
    fragments = cache.get(campaign_id, cursor)
    if fragments is None:
        context = campaign_context(session, campaign_id)
        fragments = CampaignFragments(
            head=Markup(render_partial(request, "partials/_campaign_head.html", context)),
            timeline=Markup(render_partial(request, "partials/_timeline.html", context)),
        )
        cache.put(campaign_id, cursor, fragments)
        return {**context, "fragments": fragments}
    titles = repo.attempt_titles(session, campaign_id=campaign_id)
    notes = repo.list_notes(session, campaign_id=campaign_id, attempt_id=None)
    return {
        "campaign": views.campaign_view(session, campaign, attempt_count=len(titles)),
        "fragments": fragments,
        "attempts": [AttemptTitle(i, t) for i, t in sorted(titles.items())],
        "filter": views.AttemptFilter(),
        "statuses": [s.value for s in Status],
        "campaign_notes": [views.note_view(n) for n in notes if n.attempt_id is None],
        "shares": [sharing.share_out(link) for link in sharing.list_links(session, campaign_id)],
        "live_cursor": cursor,
        "new_attempt": {},
    }


@dataclass(frozen=True)
class AttemptTitle:
    """What the new-attempt form's choices show of an attempt."""

    id: int
    title: str
