"""Queries across every campaign: the search box's matches, and the earlier attempts that
failed the same way (an attempt's "seen before"). The search reads the index of migration
0017: on SQLite its FTS5 tables pick the candidates, on PostgreSQL pg_trgm serves the ILIKE."""

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import case, func, literal, literal_column, or_, true
from sqlalchemy import column as sa_column
from sqlalchemy import select as sa_select
from sqlalchemy import table as sa_table
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from app.models import Attempt, Campaign, Note

SEEN_BEFORE_LIMIT = 20
SEARCH_LIMIT = 50
# The trigram index matches no row for a query shorter than one trigram: those scan.
INDEXED_MIN_CHARS = 3

Kind = Literal["campaign", "attempt", "note"]
# Ties between ranks: a campaign, then its attempts, then notes.
KIND_ORDER: dict[Kind, int] = {"campaign": 0, "attempt": 1, "note": 2}


def seen_before(
    session: Session, *, fingerprint: str, before_id: int, limit: int = SEEN_BEFORE_LIMIT
) -> list[tuple[int, int, str, str, str | None]]:
    """(campaign_id, attempt_id, title, status, verdict) of the attempts of any campaign
    created before `before_id` with this failure fingerprint, newest first (the
    fingerprint's index finds them)."""
    query = (
        sa_select(col(Attempt.campaign_id), col(Attempt.id), col(Attempt.title),
                  col(Attempt.status), col(Attempt.verdict))
        .where(col(Attempt.fingerprint) == fingerprint, col(Attempt.id) < before_id)
        .order_by(col(Attempt.id).desc())
        .limit(limit)
    )  # fmt: skip
    return [(row[0], row[1], row[2], str(row[3]), row[4]) for row in session.execute(query)]


@dataclass(frozen=True)
class Match:
    """One row that matched, with its texts in the order its snippet prefers them."""

    kind: Kind
    rank: int
    row_id: int
    campaign_id: int
    attempt_id: int | None
    title: str
    texts: tuple[str | None, ...]

    def order(self) -> tuple[int, int, int]:
        return self.rank, KIND_ORDER[self.kind], -self.row_id


def _rank(title: Any, q: str) -> ColumnElement[int]:
    """0: the title is q (any case), 1: the title holds it, 2: another field does."""
    return case(
        (func.lower(title) == func.lower(literal(q)), 0),
        (title.icontains(q, autoescape=True), 1),
        else_=2,
    )


def _candidates(
    session: Session, q: str, index: str, indexed: bool, row_id: Any
) -> ColumnElement[bool]:
    """On SQLite, the rows whose FTS5 trigram index holds q (any case), as a superset of the
    LIKE that follows: it folds more cases than SQLite's ASCII-only LIKE, never fewer, so
    the LIKE still decides and the answer is the scan's. q is one quoted phrase: its quotes,
    `*`, `OR` and `NEAR` are text."""
    sqlite = session.get_bind().dialect.name == "sqlite"
    if not (indexed and sqlite) or len(q) < INDEXED_MIN_CHARS:
        return true()
    phrase = '"' + q.replace('"', '""') + '"'
    fts = sa_table(index, sa_column("rowid"))
    return row_id.in_(sa_select(fts.c.rowid).where(literal_column(index).op("MATCH")(phrase)))


def search(
    session: Session, *, q: str, limit: int = SEARCH_LIMIT, indexed: bool = True
) -> list[Match]:
    """Campaigns, attempts and notes of every campaign with q in their text (a substring,
    any case; % and _ are q's own characters), best first. `indexed=False` scans the rows
    on SQLite (bench/search.py's reference)."""

    def holds(*fields: Any) -> ColumnElement[bool]:
        return or_(*(field.icontains(q, autoescape=True) for field in fields))

    root_cause = col(Attempt.diagnosis)["root_cause"].as_string()
    campaign_rank = _rank(col(Campaign.name), q)
    campaigns = (
        sa_select(col(Campaign.id), campaign_rank, col(Campaign.name), col(Campaign.description))
        .where(_candidates(session, q, "campaign_search", indexed, col(Campaign.id)))
        .where(holds(col(Campaign.name), col(Campaign.description)))
        .order_by(campaign_rank, col(Campaign.id).desc())
        .limit(limit)
    )
    attempt_rank = _rank(col(Attempt.title), q)
    attempt_fields = (
        col(Attempt.title),
        col(Attempt.verdict),
        root_cause,
        col(Attempt.hypothesis),
        col(Attempt.flags),
        col(Attempt.command),
    )
    attempts = (
        sa_select(col(Attempt.id), attempt_rank, col(Attempt.campaign_id), *attempt_fields)
        .where(_candidates(session, q, "attempt_search", indexed, col(Attempt.id)))
        .where(holds(*attempt_fields))
        .order_by(attempt_rank, col(Attempt.id).desc())
        .limit(limit)
    )
    # A note goes by its attempt's title, or its campaign's name when on the campaign.
    notes = (
        sa_select(col(Note.id), col(Note.campaign_id), col(Note.attempt_id),
                  func.coalesce(col(Attempt.title), col(Campaign.name)), col(Note.body))
        .join(Campaign, col(Campaign.id) == col(Note.campaign_id))
        .outerjoin(Attempt, col(Attempt.id) == col(Note.attempt_id))
        .where(_candidates(session, q, "note_search", indexed, col(Note.id)))
        .where(holds(col(Note.body)))
        .order_by(col(Note.id).desc())
        .limit(limit)
    )  # fmt: skip
    found = [
        Match("campaign", rank, campaign_id, campaign_id, None, name, (name, description))
        for campaign_id, rank, name, description in session.execute(campaigns)
    ]
    found += [
        Match("attempt", row[1], row[0], row[2], row[0], row[3], tuple(row[3:]))
        for row in session.execute(attempts)
    ]
    found += [
        Match("note", 2, note_id, campaign_id, attempt_id, title, (body,))
        for note_id, campaign_id, attempt_id, title, body in session.execute(notes)
    ]
    return sorted(found, key=Match.order)[:limit]


def campaign_names(session: Session, ids: set[int]) -> dict[int, str]:
    """Each campaign's name by id, for the search page's lines."""
    if not ids:
        return {}
    query = sa_select(col(Campaign.id), col(Campaign.name)).where(col(Campaign.id).in_(ids))
    return {campaign_id: name for campaign_id, name in session.execute(query)}
