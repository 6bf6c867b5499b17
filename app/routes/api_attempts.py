"""JSON API for attempts: status and verdict, measurements, notes."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.responses import StreamingResponse

from app import actions, repo, views
from app.deps import SessionDep, SettingsDep, require_api_owner
from app.errors import Conflict
from app.schemas import AttemptOut, AttemptUpdate, MeasurementCreate, NoteCreate, NoteOut
from app.tailing.factory import check_log_source, trust_offered_key

router = APIRouter(tags=["attempts"], dependencies=[Depends(require_api_owner)])


@router.get("/api/attempts/{attempt_id}")
def get_attempt(attempt_id: int, request: Request, session: SessionDep) -> AttemptOut:
    """An attempt with its status, metric, delta against the baseline, diagnosis and tail
    (`state` "disk full" while the dashboard's disk holds its log back)."""
    attempt = actions.require_attempt(session, attempt_id)
    return views.attempt_view(session, attempt, request.app.state.pauses.waiting())


@router.patch("/api/attempts/{attempt_id}")
def update_attempt(
    attempt_id: int, data: AttemptUpdate, session: SessionDep, settings: SettingsDep
) -> AttemptOut:
    """Change status (409 when the change makes no sense), verdict, metric or log source;
    edit title, hypothesis, command or flags."""
    check_log_source(settings, data.source)
    attempt = actions.update_attempt(session, attempt_id, data)
    session.flush()
    return views.attempt_view(session, attempt)


@router.delete("/api/attempts/{attempt_id}", status_code=204)
def delete_attempt(attempt_id: int, session: SessionDep) -> Response:
    """Delete an attempt with its log, measurements and notes; 409 while a server it
    launched may still run (stop it first: its run is the only handle on it)."""
    actions.delete_attempt(session, attempt_id)
    return Response(status_code=204)


@router.post("/api/attempts/{attempt_id}/measurements", status_code=201)
def add_measurement(attempt_id: int, data: MeasurementCreate, session: SessionDep) -> AttemptOut:
    """One more benchmark run; the attempt's metric is the mean of its runs."""
    attempt = actions.add_measurement(session, attempt_id, data.value)
    session.flush()
    return views.attempt_view(session, attempt)


@router.post("/api/attempts/{attempt_id}/notes", status_code=201)
def add_note(attempt_id: int, data: NoteCreate, session: SessionDep) -> NoteOut:
    """A markdown note on an attempt: why it is a dead end, what to try next."""
    return views.note_view(actions.add_attempt_note(session, attempt_id, data))


@router.get("/api/attempts/{attempt_id}/notes")
def list_notes(attempt_id: int, session: SessionDep) -> list[NoteOut]:
    """The attempt's notes, oldest first."""
    attempt = actions.require_attempt(session, attempt_id)
    notes = repo.list_notes(session, campaign_id=attempt.campaign_id, attempt_id=attempt_id)
    return [views.note_view(n) for n in notes]


@router.get("/api/attempts/{attempt_id}/log", response_class=Response)
def get_log(
    attempt_id: int,
    request: Request,
    session: SessionDep,
    offset: Annotated[int, Query(ge=0, le=repo.MAX_OFFSET)] = 0,
    limit: Annotated[int | None, Query(ge=0, le=repo.MAX_OFFSET)] = None,
) -> Response:
    """The stored log, as read from its source (stream offsets: rotations are concatenated),
    streamed; `X-Next-Offset` is where the answer ends, to ask for what follows."""
    actions.require_attempt(session, attempt_id)
    tail = repo.tail_states(session, attempt_ids=[attempt_id]).get(attempt_id)
    size = tail.stored_bytes if tail else 0
    # What is stored now: a log that keeps growing does not make the answer endless.
    end = size if limit is None else min(offset + limit, size)
    return StreamingResponse(
        repo.stream_stored_log(request.app.state.engine, attempt_id, offset, max(0, end - offset)),
        media_type="text/plain; charset=utf-8",
        headers={"X-Log-Size": str(size), "X-Next-Offset": str(max(offset, end))},
    )


@router.post("/api/attempts/{attempt_id}/trust-host-key")
def trust_host_key(
    attempt_id: int, request: Request, session: SessionDep, replace: bool = False
) -> AttemptOut:
    """Trust the SSH host key the attempt's host offered (written to the dashboard's own
    known_hosts), then follow its log. Never done automatically; a changed key replaces
    the old one of that host only with `?replace=true`."""
    source, key_line, known = actions.offered_host_key(session, attempt_id)
    if known and not replace:
        raise Conflict(f"the host key changed (known: {known}): confirm with ?replace=true")
    trust_offered_key(request.app.state.settings, source, key_line)
    request.app.state.tailer.restart(attempt_id)
    return views.attempt_view(session, actions.require_attempt(session, attempt_id))


@router.patch("/api/notes/{note_id}")
def edit_note(note_id: int, data: NoteCreate, session: SessionDep) -> NoteOut:
    """Rewrite a note."""
    return views.note_view(actions.edit_note(session, note_id, data))


@router.delete("/api/notes/{note_id}", status_code=204)
def delete_note(note_id: int, session: SessionDep) -> Response:
    """Delete a note."""
    actions.delete_note(session, note_id)
    return Response(status_code=204)
