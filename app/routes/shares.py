"""Share links: the owner's API and buttons, and the public read-only summary at /s/{token}."""

from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import BaseModel, Field
from sqlmodel import Session
from starlette.responses import JSONResponse, PlainTextResponse, Response

from app import actions, exports, repo, sharing
from app.db import session_scope
from app.deps import SessionDep, is_owner, require_api_owner
from app.errors import NotFound
from app.live import View
from app.models import ShareLink
from app.pages import PAGES
from app.pages.live import Subject
from app.pages.rendering import RenderCache, is_htmx, render
from app.pages.share import share_context
from app.routes import events
from app.sse import LiveStream

owner_router = APIRouter(tags=["shares"], dependencies=[Depends(require_api_owner)])
public_router = APIRouter(include_in_schema=False)


class ShareCreate(BaseModel):
    expires_in_hours: Annotated[float, Field(gt=0, le=24 * 366)] | None = None
    redact: bool = True


@owner_router.post("/api/campaigns/{campaign_id}/shares", status_code=201)
def create_share(
    campaign_id: int, request: Request, session: SessionDep, data: ShareCreate | None = None
) -> sharing.ShareOut:
    """A read-only link to the campaign's summary; the token is shown this once."""
    data = data or ShareCreate()
    link, token = sharing.create(
        session, campaign_id, expires_in_hours=data.expires_in_hours, redact=data.redact
    )
    return sharing.share_out(link, token, sharing.share_url(request, token))


@owner_router.get("/api/campaigns/{campaign_id}/shares")
def list_shares(campaign_id: int, session: SessionDep) -> list[sharing.ShareOut]:
    """The campaign's share links, with when each was last opened."""
    actions.require_campaign(session, campaign_id)
    return [sharing.share_out(link) for link in sharing.list_links(session, campaign_id)]


@owner_router.delete("/api/shares/{token}", status_code=204)
def revoke_share(token: str, session: SessionDep) -> Response:
    """Revoke a link: its page, exports and open event streams end at once."""
    sharing.revoke(session, sharing.find(session, token))
    return Response(status_code=204)


# --- public ----------------------------------------------------------------------


# A share's live render masks the whole campaign: at most a third of a core on it.
SHARE_PACE = 2.0

# Of the request threads, the ones anonymous readers may take at once: a crowd of them
# waits its turn without a thread or a connection, and the owner's requests go ahead.
SHARE_THREADS = 2
CachedKey = tuple[int, str, bool, bool]  # link, suffix, owner's eyes, htmx partial


@dataclass(frozen=True)
class Rendered:
    cursor: int  # the campaign's newest event when it was rendered
    body: bytes
    media_type: str


RenderedShares = RenderCache[CachedKey, Rendered]


@public_router.get("/s/{name}")
async def shared_summary(name: str, request: Request) -> Response:
    limiter: anyio.CapacityLimiter = request.app.state.share_limiter
    return await anyio.to_thread.run_sync(_shared_summary, name, request, limiter=limiter)


def _shared_summary(name: str, request: Request) -> Response:
    token, _, suffix = name.partition(".")
    engine = request.app.state.engine
    renders: RenderedShares = request.app.state.share_renders
    sharing.open_link(engine, token)
    if suffix not in ("", "md", "json", "csv"):
        raise NotFound("a share link ends in nothing, .md, .json or .csv")
    with session_scope(engine, snapshot=True) as session:
        link = sharing.find(session, token)
        cursor = repo.newest_event_id(session, link.campaign_id)
        key = (link.id or 0, suffix, is_owner(request), is_htmx(request))
        cached = renders.get(key, cursor)
        if cached is None:
            response = _render_share(request, session, link, token, suffix)
            cached = Rendered(cursor, bytes(response.body), response.media_type or "")
            renders.put(key, cursor, cached)
    return Response(cached.body, media_type=cached.media_type)


def _render_share(
    request: Request, session: Session, link: ShareLink, token: str, suffix: str
) -> Response:
    if suffix == "md":
        markdown = sharing.to_markdown(sharing.summary(session, link))
        return PlainTextResponse(markdown, media_type="text/markdown; charset=utf-8")
    if suffix == "json":
        return JSONResponse(sharing.to_json(sharing.summary(session, link)))
    if suffix == "csv":
        found = sharing.summary(session, link)
        attempts = [shared.attempt for shared in found.attempts]
        text = exports.to_csv(found.campaign, exports.run_rows(session, attempts), found.mask)
        return Response(text, media_type="text/csv; charset=utf-8")
    return render(
        request, "pages/share.html", share_context(session, link, token),
        partial="partials/_share_summary.html",
    )  # fmt: skip


@public_router.get("/s/{token}/events")
async def shared_events(
    token: str,
    request: Request,
    after: Annotated[int | None, Query(ge=0, le=repo.MAX_ID)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> LiveStream:
    """Live updates of one shared summary; ends when the link is revoked or expires;
    resumes after `Last-Event-ID`, or the page's `?after=`."""
    engine = request.app.state.engine

    def start() -> tuple[int, int]:
        with session_scope(engine, snapshot=True) as session:
            link = sharing.find(session, token)
            resume = events.resume_point(last_event_id, after)
            if resume is None:
                resume = repo.newest_event_id(session, link.campaign_id)
            return link.campaign_id, resume

    campaign_id, cursor = await anyio.to_thread.run_sync(start)

    def still_shared(session: Session) -> bool:
        try:
            sharing.find(session, token)
        except NotFound:
            return False
        return True

    # One broadcaster per link: its rendering (redacted or not) is the same for every reader.
    key = (campaign_id, "share", token)
    render = PAGES["share"].renderer(request, Subject(campaign_id, token=token))
    view = View(campaign_id, render, still_valid=still_shared, prime=render.prime,
                pace=SHARE_PACE, shows_tails=False)  # fmt: skip
    return events.sse_response(
        lambda write_now: events.stream(
            request, key, view, cursor, b"", lambda: True, write_now, ending=events.GONE
        )
    )
