"""JSON API across campaigns: searching their attempts, notes and verdicts, comparing
attempts side by side, and reading a log excerpt against what every campaign met."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app import seen, views
from app.deps import SessionDep, require_api_owner
from app.pages.compare import compared, parse_ids
from app.schemas import (
    CompareOut,
    DiagnosedOut,
    DiagnoseIn,
    Name,
    SearchHitOut,
    SeenIn,
    SeenOut,
)

router = APIRouter(tags=["search"], dependencies=[Depends(require_api_owner)])


@router.get("/api/search")
def search(q: Annotated[Name, Query()], session: SessionDep) -> list[SearchHitOut]:
    """Campaigns, attempts and notes whose text, verdict, notes, root cause or flags hold
    q (any case), best first: a title that is q, then titles holding it, then the rest."""
    return views.search_view(session, q)


@router.get("/api/compare")
def compare(ids: Annotated[list[str], Query(max_length=200)], session: SessionDep) -> CompareOut:
    """2 to 8 attempts side by side (`?ids=3,7,9`), each as `GET /api/attempts/{id}`
    gives it, in the order asked."""
    return CompareOut(attempts=compared(session, parse_ids(ids)))


@router.post("/api/diagnose")
def diagnose(data: DiagnoseIn, session: SessionDep) -> DiagnosedOut:
    """A log excerpt's diagnosis, as `campaign-dash diagnose --json` prints it, with the
    hints an attempt with it would get (what retests of the same failure changed)."""
    return seen.diagnosed(session, data.text)


@router.post("/api/seen")
def seen_before(data: SeenIn, session: SessionDep) -> SeenOut:
    """Has this failure been met before? The attempts of any campaign with the same root
    cause as the text (an error line or a log excerpt), newest first, each with its verdict
    and the retests that got past it."""
    return seen.seen(
        session, text=data.text, fingerprint=data.fingerprint, frame_file=data.frame_file
    )
