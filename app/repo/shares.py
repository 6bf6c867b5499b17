"""Queries of share links (found by the hash of their token)."""

from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from app.models import ShareLink
from app.repo.ids import storable


def find_share_link(session: Session, *, token_hash: str) -> ShareLink | None:
    return session.exec(select(ShareLink).where(ShareLink.token_hash == token_hash)).first()


def note_share_opened(session: Session, *, link_id: int, at: datetime) -> None:
    session.execute(update(ShareLink).where(col(ShareLink.id) == link_id).values(last_opened_at=at))


def list_share_links(session: Session, *, campaign_id: int) -> list[ShareLink]:
    query = select(ShareLink).where(ShareLink.campaign_id == campaign_id)
    return list(session.exec(query.order_by(col(ShareLink.id).desc())))


def get_share_link(session: Session, *, link_id: int) -> ShareLink | None:
    return session.get(ShareLink, link_id) if storable(link_id) else None
