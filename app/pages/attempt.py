"""The attempt page: its context (the attempt, its log's tail, its notes, the forms), its live
partials and its live renderer."""

from collections.abc import Mapping
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from sqlmodel import Session

from app import actions, pivots, repo, views
from app.models import Status
from app.pages.live import LivePage, LivePartial, PageEntry, PageRenderer, Subject, event_kinds
from app.pauses import Pauses

PAGE = LivePage(
    "attempt",
    (
        LivePartial("partials/_attempt_summary.html", "attempt-{id}",
                    kinds=event_kinds("attempt", "campaign")),
        LivePartial("partials/_tail_state.html", "tail-{id}", kinds=event_kinds("attempt")),
        LivePartial("partials/_log_lines.html", "log-{id}", kinds=event_kinds("log"), append=True),
        LivePartial("partials/_status_choice.html", "status-{id}", kinds=event_kinds("attempt")),
        LivePartial("partials/_measure_form.html", "measure-{id}", kinds=event_kinds("attempt")),
        LivePartial("partials/_attempt_notes_list.html", "notes-{id}", kinds=event_kinds("note")),
    ),
)  # fmt: skip


def deleted_url(campaign_id: int, attempt_id: int) -> str:
    """Where a deleted attempt's page goes: its campaign, which says it was deleted."""
    return f"/campaigns/{campaign_id}?deleted={attempt_id}"


def attempt_context(
    session: Session,
    attempt_id: int,
    *,
    with_log: bool = True,
    paused: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """The attempt page's context; a live update, which only appends to the log it shows,
    goes `with_log=False` (reading the last 512 KiB is the page's first render's cost).
    `paused`: the tails a full disk paused (app/pauses.py)."""
    attempt = actions.require_attempt(session, attempt_id)
    campaign = actions.require_campaign(session, attempt.campaign_id)
    notes = repo.list_notes(session, campaign_id=attempt.campaign_id, attempt_id=attempt_id)
    view = views.attempt_view(session, attempt, paused)
    return {
        "campaign": campaign,
        "attempt": view,
        "log_lines": views.log_tail(session, view) if with_log else [],
        "titles": repo.attempt_titles(session, campaign_id=attempt.campaign_id),
        "notes": [views.note_view(n) for n in notes],
        "statuses": [s.value for s in Status],
        "live_cursor": repo.newest_event_id(session, attempt.campaign_id),
        # Its retests, each with what came of it, beside it.
        "retests": [
            (retest, pivots.retest_outcome(view, retest))
            for retest in views.attempt_views(
                session, campaign, repo.retests_of(session, attempt_id=attempt_id)
            )
        ],
        # Adopted: what it may have unblocked, offered for a retest (app/pivots.py).
        "unblocks": pivots.unblocks(session, attempt_id) if view.status == Status.adopted else [],
    }


def attempt_page_view(
    templates: Jinja2Templates,
    campaign_id: int,
    attempt_id: int,
    pauses: Pauses | None = None,
) -> PageRenderer:
    """The page's live renderer: its partials for this attempt's events only."""

    def context(session: Session) -> dict[str, Any]:
        if repo.get_attempt(session, attempt_id=attempt_id) is None:
            # Deleted: reloaded, the page would be a Not found; its campaign says what happened.
            return {"gone": deleted_url(campaign_id, attempt_id)}
        paused = pauses.waiting() if pauses else None
        return attempt_context(session, attempt_id, with_log=False, paused=paused)

    return PageRenderer(templates, PAGE, context, attempt_id=attempt_id)


def _stream_view(request: Request, subject: Subject) -> PageRenderer:
    assert subject.attempt_id is not None  # of_attempt: the route asks for it
    return attempt_page_view(
        request.app.state.templates,
        subject.campaign_id,
        subject.attempt_id,
        request.app.state.pauses,
    )


ENTRY = PageEntry(PAGE, _stream_view, of_attempt=True)
