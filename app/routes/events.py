"""Server-Sent Events of a campaign: JSON for API clients, rendered partials for the pages.

A stream catches up from the database after its cursor, then joins its view's broadcaster
(app/live.py), which renders each change once for every reader. Each message's id is the
database id of its event, so a reconnect with Last-Event-ID gets exactly what it missed.
Heartbeats are named events, so a page can tell a quiet stream from a dead one.
"""

from collections.abc import AsyncGenerator, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Header, Query, Request
from sse_starlette import ServerSentEvent

from app import actions, repo
from app.db import session_scope
from app.deps import is_owner, require_api_owner, session_cookie
from app.errors import NotFound
from app.live import Batch, Hub, Message, Signal, View, ViewKey
from app.pages import PAGES
from app.pages.campaigns import campaigns_view
from app.pages.live import Subject, json_renderer
from app.sse import LiveStream, WriteNow

__all__ = ["SEND_TIMEOUT_S", "stream"]

router = APIRouter(tags=["events"])

SEND_TIMEOUT_S = 10.0  # a client that takes no bytes this long is cut (found within 2x)
TOO_FAR_BEHIND = 5_000


@router.get("/api/campaigns/{campaign_id}/events", dependencies=[Depends(require_api_owner)])
async def campaign_events(
    campaign_id: int,
    request: Request,
    view: Annotated[str | None, Query(pattern="^(campaign|attempt)$")] = None,
    attempt: int | None = None,
    after: Annotated[int | None, Query(ge=0, le=repo.MAX_ID)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> LiveStream:
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
            return resume if resume is not None else repo.newest_event_id(session, campaign_id)

    cursor = await anyio.to_thread.run_sync(start)
    key: ViewKey
    if view is None:
        key = (campaign_id, "json")
        live_view = View(campaign_id, json_renderer(request.app.state.pauses))
    else:
        page = PAGES[view]
        if page.of_attempt and attempt is None:
            raise NotFound(f"the {view} view needs ?attempt=")
        # One broadcaster per page, and per attempt on an attempt's page.
        key = (campaign_id, view, attempt) if page.of_attempt else (campaign_id, view)
        render = page.renderer(request, Subject(campaign_id, attempt_id=attempt))
        live_view = View(campaign_id, render, prime=render.prime)
    csrf = request.app.state.auth.csrf_token(session_cookie(request)).encode()

    def still_owner() -> bool:
        return is_owner(request)

    return sse_response(
        lambda write_now: stream(request, key, live_view, cursor, csrf, still_owner, write_now)
    )


@router.get("/api/events", dependencies=[Depends(require_api_owner)])
async def every_campaigns_events(
    request: Request,
    view: Annotated[str, Query(pattern="^campaigns$")],
    after: Annotated[int | None, Query(ge=0, le=repo.MAX_ID)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> LiveStream:
    """Server-Sent Events of every campaign, as the campaign list's partial
    (`?view=campaigns`); `Last-Event-ID` (or `?after=`) resumes."""
    engine = request.app.state.engine

    def start() -> int:
        with session_scope(engine, snapshot=True) as session:
            resume = resume_point(last_event_id, after)
            return resume if resume is not None else repo.newest_event_id(session, None)

    cursor = await anyio.to_thread.run_sync(start)
    # One broadcaster for every reader of the list: each change costs them bytes, no query.
    render = campaigns_view(request)
    live_view = View(None, render, prime=render.prime)
    csrf = request.app.state.auth.csrf_token(session_cookie(request)).encode()

    def still_owner() -> bool:
        return is_owner(request)

    return sse_response(
        lambda write_now: stream(
            request, (None, view), live_view, cursor, csrf, still_owner, write_now
        )
    )


def sse_response(messages: Callable[[WriteNow], AsyncGenerator[bytes, None]]) -> LiveStream:
    return LiveStream(
        messages,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        send_timeout_s=SEND_TIMEOUT_S,
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


HELLO = ServerSentEvent(data="", event="hello", retry=2000).encode()
HEARTBEAT = ServerSentEvent(data="", event="heartbeat").encode()
RELOAD = ServerSentEvent(data="", event="reload").encode()
GONE = ServerSentEvent(data="", event="gone").encode()


async def stream(
    request: Request,
    key: ViewKey,
    view: View,
    cursor: int,
    csrf: bytes,
    still_allowed: Callable[[], bool],
    write_now: WriteNow,
    *,
    ending: bytes = RELOAD,
) -> AsyncGenerator[bytes, None]:
    """One reader's stream: caught up from the database to where its broadcaster was when
    it joined, then the broadcaster's bytes. The join and the broadcaster's hand-over both
    run on the loop without an await between, so nothing falls between the two. While it
    waits, the broadcaster writes each batch to its socket itself (`write_now`); whatever
    waits for it instead goes out as one write; a heartbeat comes with each RECHECK."""
    hub: Hub = request.app.state.live
    engine = request.app.state.engine

    def catch_up(after: int, upto: int) -> tuple[list[Message], int, bytes | None]:
        """The messages after `after` up to `upto`, and the ending instead when there are
        none to give: the link was revoked meanwhile, or the reader is too far behind."""
        with session_scope(engine, snapshot=True) as session:
            if view.still_valid is not None and not view.still_valid(session):
                return [], after, GONE  # revoked after the join: its render would fail
            # The last event this reader saw was pruned, and maybe more after it: reload.
            # (Ids are shared by all campaigns, so gaps between a campaign's ids are normal.)
            lost = bool(after) and repo.oldest_event_id(session, view.campaign_id) > after
            if lost or upto - after > TOO_FAR_BEHIND:
                # Too far behind to catch up message by message: the page reloads itself.
                reload_id = str(after) if after else None
                return [], after, ServerSentEvent(data="", event="reload", id=reload_id).encode()
            events = repo.events_after(session, view.campaign_id, after, upto)
            if not events:
                return [], upto, None
            return view.render(session, events, None), events[-1].id or upto, None

    def newest() -> int:
        with session_scope(engine, snapshot=True) as session:
            return repo.newest_event_id(session, view.campaign_id)

    if not still_allowed():
        yield HELLO + ending  # logged out, or the token was reset: the page reloads to the login
        return
    latest = await anyio.to_thread.run_sync(newest)
    async with hub.subscribe(key, view, cursor, latest) as subscriber:
        yield HELLO  # joined: every change from here on reaches this reader
        while cursor < subscriber.joined_at:
            messages, cursor, end = await anyio.to_thread.run_sync(
                catch_up, cursor, subscriber.joined_at
            )
            if end is not None:
                yield end
                return
            yield b"".join(message.encode(csrf) for message in messages)

        def direct(batch: Batch) -> bool:
            return write_now(b"".join(message.encode(csrf) for message in batch))

        while True:
            subscriber.direct = direct  # only while no send of this stream is under way
            items = await subscriber.take()
            subscriber.direct = None
            if items is None:  # dropped for being slow: it reconnects with Last-Event-ID
                return
            chunk = []
            for item in items:
                if not isinstance(item, Signal):
                    chunk += [message.encode(csrf) for message in item]
                elif item is Signal.GONE or not still_allowed():
                    chunk.append(GONE if item is Signal.GONE else ending)
                    yield b"".join(chunk)
                    return
                else:
                    chunk.append(HEARTBEAT)
            yield b"".join(chunk)
