"""JSON API for searching every campaign: its attempts, notes and verdicts."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app import views
from app.deps import SessionDep, require_api_owner
from app.schemas import Name, SearchHitOut

router = APIRouter(tags=["search"], dependencies=[Depends(require_api_owner)])


@router.get("/api/search")
def search(q: Annotated[Name, Query()], session: SessionDep) -> list[SearchHitOut]:
    """Campaigns, attempts and notes whose text, verdict, notes, root cause or flags hold
    q (any case), best first: a title that is q, then titles holding it, then the rest."""
    return views.search_view(session, q)
