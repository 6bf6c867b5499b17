"""Server-Sent Events of a campaign: JSON for API clients, rendered partials for the pages.

Each message's id is the database id of its event, so a reconnect with Last-Event-ID gets
exactly what it missed. Heartbeats are named events, so a page can tell a quiet stream
from a dead one. Database reads and rendering run in worker threads, never on the loop.
"""

import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Header, Query, Request
from sqlmodel import Session, col, func, select
from sse_starlette import EventSourceResponse, ServerSentEvent

from app import actions, repo, views
from app.db import session_scope
from app.deps import is_owner, require_api_owner
from app.diagnosis.lines import decode
from app.errors import NotFound
from app.ingest import stored_log
from app.models import LiveEvent
from app.rendering import render_partial

__all__ = ["SEND_TIMEOUT_S", "newest_event_id", "render_partial", "stream"]

router = APIRouter(tags=["events"])

SEND_TIMEOUT_S = 10.0  # a client that cannot take a message this long is dropped
BATCH = 500
TOO_FAR_BEHIND = 5_000
LOG_LINES_PER_EVENT = 500
THROTTLE_S = 0.1  # gather a burst of commits into one update


def newest_event_id(session: Session, campaign_id: int) -> int:
    query = select(func.coalesce(func.max(LiveEvent.id), 0))
    return int(session.exec(query.where(LiveEvent.campaign_id == campaign_id)).one() or 0)


def _oldest_id(session: Session, campaign_id: int) -> int:
    query = select(func.coalesce(func.min(LiveEvent.id), 0))
    return int(session.exec(query.where(LiveEvent.campaign_id == campaign_id)).one() or 0)


def _events_after(session: Session, campaign_id: int, after: int) -> list[LiveEvent]:
    return list(
        session.exec(
            select(LiveEvent)
            .where(LiveEvent.campaign_id == campaign_id, col(LiveEvent.id) > after)
            .order_by(col(LiveEvent.id))
            .limit(BATCH)
        )
    )


def _log_lines(session: Session, event: LiveEvent) -> list[str]:
    assert event.attempt_id is not None and event.start_offset is not None
    data = stored_log(session, event.attempt_id, event.start_offset,
                      (event.end_offset or event.start_offset) - event.start_offset)  # fmt: skip
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [decode(raw) for raw in lines[-LOG_LINES_PER_EVENT:]]


def json_messages(session: Session, events: list[LiveEvent]) -> list[ServerSentEvent]:
    """The contract of PRODUCT.md: attempt, log, note (and campaign) events as JSON."""
    messages = []
    for event in events:
        data: Any
        if event.kind == "attempt" and event.attempt_id is not None:
            attempt = repo.get_attempt(session, attempt_id=event.attempt_id)
            data = (
                views.attempt_view(session, attempt).model_dump(mode="json")
                if attempt
                else {"id": event.attempt_id, "deleted": True}
            )
        elif event.kind == "log":
            data = {"attempt_id": event.attempt_id, "lines": _log_lines(session, event),
                    "offset": event.start_offset, "end": event.end_offset}  # fmt: skip
        elif event.kind == "note" and event.note_id is not None:
            note = repo.get_note(session, note_id=event.note_id)
            data = (
                views.note_view(note).model_dump(mode="json")
                if note
                else {"id": event.note_id, "attempt_id": event.attempt_id, "deleted": True}
            )
        elif event.kind == "campaign":
            campaign = repo.get_campaign(session, campaign_id=event.campaign_id)
            if campaign is None:
                continue
            data = views.campaign_detail(session, campaign).model_dump(
                mode="json", exclude={"attempts"}
            )
        else:
            continue
        messages.append(ServerSentEvent(data=json.dumps(data), event=event.kind, id=str(event.id)))
    return messages


def html_messages(
    request: Request, session: Session, events: list[LiveEvent], view: str, attempt_id: int | None
) -> list[ServerSentEvent]:
    """The partials a page swaps in, rendered by the same templates as the page itself."""
    kinds = {e.kind for e in events if attempt_id is None or e.attempt_id in (None, attempt_id)}
    messages: list[ServerSentEvent] = []
    if view == "campaign" and kinds & {"attempt", "note", "campaign"}:
        from app.routes.pages import campaign_context  # the page's own context

        context = campaign_context(session, events[0].campaign_id)
        messages.append(
            ServerSentEvent(
                render_partial(request, "partials/_campaign_head.html", context),
                event="campaign-head",
            )
        )
        messages.append(
            ServerSentEvent(
                render_partial(request, "partials/_timeline.html", context), event="timeline"
            )
        )
        if "attempt" in kinds:
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_attempt_choices.html", context),
                    event="attempt-choices",
                )
            )
        if "note" in kinds:
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_campaign_notes_list.html", context),
                    event="campaign-notes",
                )
            )
    elif view == "attempt" and attempt_id is not None and kinds:
        from app.routes.pages import attempt_context

        if repo.get_attempt(session, attempt_id=attempt_id) is None:
            # Deleted: the page reloads and says so.
            return [ServerSentEvent(data="", event="reload", id=str(events[-1].id))]
        context = attempt_context(session, attempt_id)
        if kinds & {"attempt", "log", "campaign"}:
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_attempt_summary.html", context),
                    event=f"attempt-{attempt_id}",
                )
            )
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_tail.html", context),
                    event=f"tail-{attempt_id}",
                )
            )
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_status_choice.html", context),
                    event=f"status-{attempt_id}",
                )
            )
        if "note" in kinds:
            messages.append(
                ServerSentEvent(
                    render_partial(request, "partials/_attempt_notes_list.html", context),
                    event=f"notes-{attempt_id}",
                )
            )
    if messages:
        # Only the last message of a batch carries the id: a drop mid-batch resends it all.
        messages[-1].id = str(events[-1].id)
    else:
        # Nothing to show, but the cursor moves on.
        messages.append(ServerSentEvent(data="", event="cursor", id=str(events[-1].id)))
    return messages


@router.get("/api/campaigns/{campaign_id}/events", dependencies=[Depends(require_api_owner)])
async def campaign_events(
    campaign_id: int,
    request: Request,
    view: Annotated[str | None, Query(pattern="^(campaign|attempt)$")] = None,
    attempt: int | None = None,
    after: Annotated[int | None, Query(ge=0, le=repo.MAX_ID)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Server-Sent Events: `attempt`, `log`, `note` (JSON) as they happen; `Last-Event-ID`
    (or `?after=`) resumes; `?view=campaign|attempt` sends the pages' partials instead."""
    engine = request.app.state.engine

    def start() -> int:
        with session_scope(engine, snapshot=True) as session:
            actions.require_campaign(session, campaign_id)
            if attempt is not None:
                found = actions.require_attempt(session, attempt)
                if found.campaign_id != campaign_id:
                    raise NotFound(f"attempt {attempt} is not in campaign {campaign_id}")
            resume = resume_point(last_event_id, after)
            return resume if resume is not None else newest_event_id(session, campaign_id)

    cursor = await anyio.to_thread.run_sync(start)
    heartbeat = request.app.state.settings.heartbeat_seconds
    return EventSourceResponse(
        stream(request, campaign_id, cursor, view, attempt),
        ping=heartbeat,
        ping_message_factory=lambda: ServerSentEvent(data="", event="heartbeat"),
        send_timeout=SEND_TIMEOUT_S,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def resume_point(last_event_id: str | None, after: int | None) -> int | None:
    """Where a stream resumes: the browser's own reconnect sends Last-Event-ID, newer than
    the `after` its page was rendered with; neither: from now."""
    resume = _parse_id(last_event_id)
    return resume if resume is not None else after


def _parse_id(value: str | None) -> int | None:
    if not value or not value.strip().isdigit() or int(value) > repo.MAX_ID:
        return None  # not an id this server gave: start from now
    return int(value)


ShareView = tuple[Callable[[], bool], Callable[[Session], list[ServerSentEvent]]]


async def stream(
    request: Request,
    campaign_id: int,
    cursor: int,
    view: str | None,
    attempt_id: int | None,
    *,
    share: ShareView | None = None,
) -> AsyncIterator[ServerSentEvent]:
    engine = request.app.state.engine
    bus = request.app.state.bus

    def fetch(after: int) -> tuple[list[ServerSentEvent], int, bool]:
        with session_scope(engine, snapshot=True) as session:
            # The last event this reader saw was pruned, and maybe more after it: reload.
            # (Ids are shared by all campaigns, so gaps between a campaign's ids are normal.)
            oldest = _oldest_id(session, campaign_id)
            events_lost = bool(after) and oldest > after
            events = _events_after(session, campaign_id, after)
            behind = bool(events) and newest_event_id(session, campaign_id) - after > TOO_FAR_BEHIND
            if events_lost or behind:
                return [], after, True
            if not events:
                return [], after, False
            if share is not None:
                messages = share[1](session)
                messages[-1].id = str(events[-1].id)
            elif view is None:
                messages = json_messages(session, events)
            else:
                messages = html_messages(request, session, events, view, attempt_id)
            return messages, events[-1].id or after, False

    with bus.listen(campaign_id) as listener:
        yield ServerSentEvent(data="", event="hello", retry=2000)
        while True:
            if share is None and not is_owner(request):
                # Logged out, or the token was reset: the page reloads to the login page.
                yield ServerSentEvent(data="", event="reload")
                return
            if share is not None and not await anyio.to_thread.run_sync(share[0]):
                # Revoked or expired: the reader's stream ends now.
                yield ServerSentEvent(data="", event="gone")
                return
            messages, cursor, reload = await anyio.to_thread.run_sync(fetch, cursor)
            if reload:
                # Too far behind to catch up message by message: the page reloads itself.
                yield ServerSentEvent(data="", event="reload", id=str(cursor) if cursor else None)
                return
            for message in messages:
                yield message
            if messages:
                await anyio.sleep(THROTTLE_S)
                continue
            await listener.wait(request.app.state.settings.heartbeat_seconds)
