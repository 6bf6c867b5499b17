"""The code a diagnosis's frame points at, shown beside the error: JSON for the API, a
fragment for the attempt page's "show code" button (a page of its own without JavaScript).
Owner only. The host is asked in a worker thread of its own limiter, never on the loop."""

from typing import Any

import anyio
from fastapi import APIRouter, Depends, HTTPException, Request
from starlette.responses import HTMLResponse, Response

from app import actions, views
from app.db import session_scope
from app.deps import require_api_owner, require_page_owner
from app.frame_source import SourceNotShown, read_frame_source
from app.pages.rendering import is_htmx, render
from app.schemas import AttemptOut, FrameSourceOut

router = APIRouter()
FETCHES_AT_ONCE = 4  # each holds a worker thread while a slow host answers


def _attempt(request: Request, attempt_id: int) -> tuple[AttemptOut, Any]:
    """The attempt's view and its campaign, read in a snapshot released before the host is
    asked: a slow host holds no database connection."""
    with session_scope(request.app.state.engine, snapshot=True) as session:
        attempt = actions.require_attempt(session, attempt_id)
        campaign = actions.require_campaign(session, attempt.campaign_id)
        return views.attempt_view(session, attempt), campaign


async def _read(request: Request, attempt: AttemptOut) -> FrameSourceOut:
    frame = (attempt.diagnosis or {}).get("frame")
    return await anyio.to_thread.run_sync(
        read_frame_source,
        request.app.state.sources,
        attempt.source,
        frame,
        limiter=request.app.state.frame_source_limiter,
    )


@router.get(
    "/api/attempts/{attempt_id}/frame-source",
    tags=["attempts"],
    dependencies=[Depends(require_api_owner)],
)
async def get_frame_source(attempt_id: int, request: Request) -> FrameSourceOut:
    """The lines around the diagnosis's frame (15 each side), read-only from the log's host:
    over SSH for ssh:// sources, from this machine for file:// ones; lines and answer capped."""
    attempt, _ = await anyio.to_thread.run_sync(_attempt, request, attempt_id)
    try:
        return await _read(request, attempt)
    except SourceNotShown as error:
        raise HTTPException(error.status_code, error.detail) from None


@router.get(
    "/attempts/{attempt_id}/frame-source",
    response_class=HTMLResponse,
    include_in_schema=False,
    dependencies=[Depends(require_page_owner)],
)
async def frame_source_page(attempt_id: int, request: Request) -> Response:
    attempt, campaign = await anyio.to_thread.run_sync(_attempt, request, attempt_id)
    context: dict[str, Any] = {"attempt": attempt, "campaign": campaign, "code": None}
    status_code = 200
    try:
        context["code"] = await _read(request, attempt)
    except SourceNotShown as error:
        context["problem"] = error.detail
        # htmx swaps the fragment only on success: the refusal is the fragment's content.
        status_code = 200 if is_htmx(request) else error.status_code
    return render(
        request,
        "pages/frame_source.html",
        context,
        partial="partials/_frame_source.html",
        status_code=status_code,
    )
