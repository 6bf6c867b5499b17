"""Queries across every campaign: the search box's matches, the earlier attempts that
failed the same way (an attempt's "seen before"), and what those attempts' retests learned
(its hints)."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import case, func, literal, or_
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from app.models import Attempt, Campaign, Note, Status

SEEN_BEFORE_LIMIT = 20
SEARCH_LIMIT = 50

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


def same_failure(
    session: Session, *, fingerprint: str, other_than: int, limit: int = SEEN_BEFORE_LIMIT
) -> list[tuple[int, int, str, str | None]]:
    """(attempt_id, campaign_id, campaign name, verdict) of the other attempts of any
    campaign with this failure fingerprint, before or after it, newest first (the
    fingerprint's index finds them)."""
    query = (
        sa_select(col(Attempt.id), col(Attempt.campaign_id), col(Campaign.name),
                  col(Attempt.verdict))
        .join(Campaign, col(Campaign.id) == col(Attempt.campaign_id))
        .where(col(Attempt.fingerprint) == fingerprint, col(Attempt.id) != other_than)
        .order_by(col(Attempt.id).desc())
        .limit(limit)
    )  # fmt: skip
    return [(row[0], row[1], row[2], row[3]) for row in session.execute(query)]


# A retest in one of these got past its original's failure.
GOT_PAST = (Status.ready, Status.measured, Status.adopted)


def retests_past(session: Session, *, originals: Mapping[int, int], limit: int) -> list[Attempt]:
    """The retests of these attempts (id: its campaign) that got past their failure, newest
    first. A retest is of its original's campaign (actions' link check) and newer than it:
    the campaigns' card index finds them from the oldest original on."""
    if not originals:
        return []
    query = (
        select(Attempt)
        .where(
            col(Attempt.campaign_id).in_(set(originals.values())),
            col(Attempt.id) > min(originals),
            col(Attempt.retest_of).in_(list(originals)),
            col(Attempt.status).in_(GOT_PAST),
        )
        .order_by(col(Attempt.id).desc())
        .limit(limit)
    )
    return list(session.exec(query))


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


def search(session: Session, *, q: str, limit: int = SEARCH_LIMIT) -> list[Match]:
    """Campaigns, attempts and notes of every campaign with q in their text (a substring,
    any case; % and _ are q's own characters), best first."""

    def holds(*fields: Any) -> ColumnElement[bool]:
        return or_(*(field.icontains(q, autoescape=True) for field in fields))

    root_cause = col(Attempt.diagnosis)["root_cause"].as_string()
    campaign_rank = _rank(col(Campaign.name), q)
    campaigns = (
        sa_select(col(Campaign.id), campaign_rank, col(Campaign.name), col(Campaign.description))
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
