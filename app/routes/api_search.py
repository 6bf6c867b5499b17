"""JSON API across campaigns: searching their attempts, notes and verdicts, and comparing
attempts side by side."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app import views
from app.deps import SessionDep, require_api_owner
from app.pages.compare import compared, parse_ids
from app.schemas import CompareOut, Name, SearchHitOut

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
