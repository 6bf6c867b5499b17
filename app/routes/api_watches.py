"""JSON API for watched log folders: each new log file of the folder becomes an attempt."""

from fastapi import APIRouter, Depends, Response
from sqlmodel import Session

from app import actions, views, watching
from app.deps import SessionDep, require_api_owner
from app.errors import NotFound
from app.models import Attempt, Watch
from app.schemas import AttemptOut, WatchImportIn, WatchIn, WatchOut

router = APIRouter(tags=["watches"], dependencies=[Depends(require_api_owner)])


def watch_out(watch: Watch, offered: list[str]) -> WatchOut:
    assert watch.id is not None
    return WatchOut(
        id=watch.id, campaign_id=watch.campaign_id, source=watch.source,
        created_at=watch.created_at, listed_at=watch.listed_at, last_error=watch.last_error,
        offered=offered,
    )  # fmt: skip


@router.post("/api/campaigns/{campaign_id}/watches", status_code=201)
def create_watch(campaign_id: int, data: WatchIn, session: SessionDep) -> WatchOut:
    """Watch a folder (`ssh://gpubox/data/logs/*.log`, `file:///...`): each file that
    appears in it from now on becomes an attempt within about a second; the files already
    there are offered (`offered`), not imported."""
    watch = watching.create_watch(session, campaign_id, data.source)
    return watch_out(watch, [])


@router.get("/api/campaigns/{campaign_id}/watches")
def list_watches(campaign_id: int, session: SessionDep) -> list[WatchOut]:
    return [watch_out(w, offered) for w, offered in _watches(session, campaign_id)]


def _watches(session: Session, campaign_id: int) -> list[tuple[Watch, list[str]]]:
    actions.require_campaign(session, campaign_id)
    return watching.watches_of(session, campaign_id)


@router.post("/api/watches/{watch_id}/import", status_code=201)
def import_offered(watch_id: int, data: WatchImportIn, session: SessionDep) -> AttemptOut:
    """Import a file the watch offers (there before it started) as an attempt."""
    attempt_id = watching.import_offered(session, watch_id, data.name)
    session.flush()
    attempt = session.get(Attempt, attempt_id)
    if attempt is None:
        raise NotFound(f"attempt {attempt_id} not found")
    return views.attempt_view(session, attempt)


@router.delete("/api/watches/{watch_id}", status_code=204)
def delete_watch(watch_id: int, session: SessionDep) -> Response:
    """Stop watching; the attempts it made stay."""
    watching.delete_watch(session, watch_id)
    return Response(status_code=204)
