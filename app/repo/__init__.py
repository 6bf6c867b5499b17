"""Every query the application makes, as typed keyword-only functions: campaigns,
attempts, measurements, notes and the owner's secrets here; logs, tails, share links and live
events in the modules beside it (all importable from `app.repo`)."""

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from app.models import (
    Attempt,
    BaselineChange,
    Campaign,
    Measurement,
    Note,
    OwnerSession,
    SiteSecret,
    TailState,
    utcnow,
)
from app.repo.cards import CardStamp, card_stamps
from app.repo.events import events_after, newest_event_id, oldest_event_id
from app.repo.ids import MAX_ID, MAX_OFFSET, storable
from app.repo.logs import (
    STREAM_ROWS,
    add_log_chunk,
    forget_log,
    kept_log_bytes,
    log_chunks,
    middle_chunks,
    stored_log,
    stream_stored_log,
)
from app.repo.runs import kept_running, running_servers, runs_by_attempt, server_may_run
from app.repo.search import (
    Match,
    campaign_names,
    ids_with_fingerprint,
    retests_past,
    same_failure,
    search,
    seen_before,
)
from app.repo.shares import find_share_link, get_share_link, list_share_links, note_share_opened
from app.repo.tails import followed_attempt_ids, prune_live_events, tail_state

__all__ = [
    "MAX_ID",
    "MAX_OFFSET",
    "STREAM_ROWS",
    "CardStamp",
    "Match",
    "add_log_chunk",
    "campaign_names",
    "card_stamps",
    "events_after",
    "find_share_link",
    "followed_attempt_ids",
    "forget_log",
    "get_share_link",
    "ids_with_fingerprint",
    "kept_log_bytes",
    "kept_running",
    "list_share_links",
    "log_chunks",
    "middle_chunks",
    "newest_event_id",
    "note_share_opened",
    "oldest_event_id",
    "prune_live_events",
    "retests_past",
    "running_servers",
    "runs_by_attempt",
    "same_failure",
    "search",
    "seen_before",
    "server_may_run",
    "storable",
    "stored_log",
    "stream_stored_log",
    "tail_state",
]  # fmt: skip


def list_campaigns(session: Session) -> list[Campaign]:
    return list(session.exec(select(Campaign).order_by(col(Campaign.id).desc())))


def count_attempts_by_campaign(session: Session) -> dict[int, int]:
    rows = session.exec(
        select(Attempt.campaign_id, func.count(col(Attempt.id))).group_by(col(Attempt.campaign_id))
    )
    return {campaign_id: count for campaign_id, count in rows}


def get_campaign(session: Session, *, campaign_id: int) -> Campaign | None:
    return session.get(Campaign, campaign_id) if storable(campaign_id) else None


def list_attempts(session: Session, *, campaign_id: int) -> list[Attempt]:
    """In the order they were tried (creation order)."""
    query = select(Attempt).where(Attempt.campaign_id == campaign_id).order_by(col(Attempt.id))
    return list(session.exec(query))


def attempt_shapes(session: Session, *, campaign_id: int) -> dict[int, tuple[Any, ...]]:
    """Per attempt, what more than its own card depends on: status (its lane), title (the
    pickers), root-cause fingerprint (others' badges), its measurements (the head's figures
    and chart: their count, newest id and highest value, as in a card's stamp; never a sum,
    which PostgreSQL refuses past the float limit). One cheap query, for a live page to tell
    what changed."""
    query = (
        # SQLAlchemy's own select: sqlmodel's typed overloads stop at four columns.
        sa_select(col(Attempt.id), col(Attempt.status), col(Attempt.title),
                  col(Attempt.fingerprint), func.count(col(Measurement.id)),
                  func.max(Measurement.id), func.max(Measurement.value))
        .outerjoin(Measurement, col(Measurement.attempt_id) == col(Attempt.id))
        .where(col(Attempt.campaign_id) == campaign_id)
        .group_by(col(Attempt.id))
    )  # fmt: skip
    return {int(row[0]): tuple(row[1:]) for row in session.execute(query)}


# What a card or a row shows of a diagnosis, read by the database from the JSON.
CARD_DIAGNOSIS = ("root_cause", "error_class", "pending")


def diagnosis_summaries(
    session: Session, *, campaign_id: int, attempt_ids: Iterable[int] | None = None
) -> dict[int, dict[str, Any]]:
    """The CARD_DIAGNOSIS fields of each diagnosed attempt of a campaign (or of these)."""
    diagnosis = col(Attempt.diagnosis)
    fields = [diagnosis[name].as_string() for name in CARD_DIAGNOSIS]
    query = select(col(Attempt.id), *fields).where(
        Attempt.campaign_id == campaign_id, diagnosis.is_not(None)
    )
    if attempt_ids is not None:
        query = query.where(col(Attempt.id).in_(list(attempt_ids)))
    return {row[0]: dict(zip(CARD_DIAGNOSIS, row[1:], strict=True)) for row in session.exec(query)}


def attempt_titles(session: Session, *, campaign_id: int) -> dict[int, str]:
    query = select(col(Attempt.id), col(Attempt.title)).where(Attempt.campaign_id == campaign_id)
    rows = session.exec(query)
    return {attempt_id: title for attempt_id, title in rows if attempt_id is not None}


def get_attempt(session: Session, *, attempt_id: int) -> Attempt | None:
    return session.get(Attempt, attempt_id) if storable(attempt_id) else None


def samples_by_attempt(session: Session, *, attempt_ids: Iterable[int]) -> dict[int, list[float]]:
    ids = list(attempt_ids)
    samples: dict[int, list[float]] = defaultdict(list)
    if not ids:
        return samples
    query = (
        select(col(Measurement.attempt_id), col(Measurement.value))
        .where(col(Measurement.attempt_id).in_(ids))
        .order_by(col(Measurement.id))
    )
    for attempt_id, value in session.exec(query):
        samples[attempt_id].append(value)
    return samples


def last_measured(session: Session, *, attempt_ids: Iterable[int]) -> datetime | None:
    """When the newest figure of these attempts was recorded."""
    ids = list(attempt_ids)
    if not ids:
        return None
    query = sa_select(func.max(Measurement.created_at)).where(col(Measurement.attempt_id).in_(ids))
    return session.execute(query).scalar_one_or_none()


def first_measured_after(
    session: Session, *, attempt_ids: Iterable[int], after: datetime
) -> dict[int, datetime]:
    """The attempts whose first figure came after `after`, with its time. The comparison is
    the database's: a page of a thousand attempts parses no thousand timestamps."""
    ids = list(attempt_ids)
    if not ids:
        return {}
    first = func.min(Measurement.created_at)
    query = (
        sa_select(col(Measurement.attempt_id), first)
        .where(col(Measurement.attempt_id).in_(ids))
        .group_by(col(Measurement.attempt_id))
        .having(first > after)
    )
    return {attempt_id: at for attempt_id, at in session.execute(query)}


def measurements_by_attempt(
    session: Session, *, attempt_ids: Iterable[int]
) -> dict[int, list[tuple[float, datetime]]]:
    """Each attempt's figures with when they were recorded, in the order recorded."""
    ids = list(attempt_ids)
    found: dict[int, list[tuple[float, datetime]]] = defaultdict(list)
    if not ids:
        return found
    query = (
        select(col(Measurement.attempt_id), col(Measurement.value), col(Measurement.created_at))
        .where(col(Measurement.attempt_id).in_(ids))
        .order_by(col(Measurement.id))
    )
    for attempt_id, value, created_at in session.exec(query):
        found[attempt_id].append((value, created_at))
    return found


def retests_of(session: Session, *, attempt_id: int) -> list[Attempt]:
    query = select(Attempt).where(Attempt.retest_of == attempt_id).order_by(col(Attempt.id))
    return list(session.exec(query))


def joiners(session: Session, *, attempt_ids: Iterable[int]) -> dict[int, list[int]]:
    """The attempts that re-measure each of these (`joins`), in id order."""
    ids = list(attempt_ids)
    found: dict[int, list[int]] = defaultdict(list)
    if not ids:
        return found
    query = (
        sa_select(col(Attempt.joins), col(Attempt.id))
        .where(col(Attempt.joins).in_(ids))
        .order_by(col(Attempt.id))
    )
    for joined, attempt_id in session.execute(query):
        found[joined].append(attempt_id)
    return found


def count_measurements(session: Session, *, attempt_id: int) -> int:
    query = select(func.count()).where(Measurement.attempt_id == attempt_id)
    return int(session.exec(query).one())


def newest_measurement_at(session: Session, *, attempt_id: int) -> datetime | None:
    query = select(func.max(Measurement.created_at)).where(Measurement.attempt_id == attempt_id)
    return session.exec(query).one()


def last_measured_offset(session: Session, *, attempt_id: int) -> int | None:
    """Where in the log the latest figure taken from it was (None: none taken yet)."""
    query = select(func.max(Measurement.log_offset)).where(Measurement.attempt_id == attempt_id)
    return session.exec(query).one()


def replace_measurements(session: Session, *, attempt_id: int, value: float) -> None:
    for measurement in session.exec(
        select(Measurement).where(Measurement.attempt_id == attempt_id)
    ):
        session.delete(measurement)
    session.add(Measurement(attempt_id=attempt_id, value=value))


def baseline_history(session: Session, *, campaign_id: int) -> list[BaselineChange]:
    query = (
        select(BaselineChange)
        .where(BaselineChange.campaign_id == campaign_id)
        .order_by(col(BaselineChange.set_at), col(BaselineChange.id))
    )
    return list(session.exec(query))


def tail_states(session: Session, *, attempt_ids: Iterable[int]) -> dict[int, TailState]:
    ids = list(attempt_ids)
    if not ids:
        return {}
    query = select(TailState).where(col(TailState.attempt_id).in_(ids))
    return {state.attempt_id: state for state in session.exec(query)}


def ids_by_fingerprint(
    session: Session, *, campaign_id: int, fingerprints: Iterable[str]
) -> dict[str, list[int]]:
    """The attempts of a campaign with each of these failure fingerprints, oldest first."""
    prints = list(fingerprints)
    if not prints:
        return {}
    # By the fingerprint's index alone, the campaign told apart here: given both, SQLite
    # (no statistics) takes the campaign's index and reads each of its attempts.
    query = (
        select(col(Attempt.id), col(Attempt.fingerprint), col(Attempt.campaign_id))
        .where(col(Attempt.fingerprint).in_(prints))
        .order_by(col(Attempt.id))
    )
    found: dict[str, list[int]] = defaultdict(list)
    for attempt_id, fingerprint, of_campaign in session.exec(query):
        if of_campaign == campaign_id and attempt_id is not None and fingerprint is not None:
            found[fingerprint].append(attempt_id)
    return found


def attempts_by_ids(
    session: Session, *, attempt_ids: Iterable[int], with_diagnosis: bool = True
) -> list[Attempt]:
    """In id order. `with_diagnosis=False` leaves the diagnosis unread (pair it with
    `diagnosis_summaries`): its JSON, 10 KiB an attempt with the throughput figures, was
    most of a 1,000-attempt page's time."""
    ids = list(attempt_ids)
    if not ids:
        return []
    query = select(Attempt).where(col(Attempt.id).in_(ids)).order_by(col(Attempt.id))
    if not with_diagnosis:
        query = query.options(defer(Attempt.diagnosis))  # type: ignore[arg-type]
    return list(session.exec(query))


def list_notes(session: Session, *, campaign_id: int, attempt_id: int | None = None) -> list[Note]:
    """A campaign's notes (all of them), or one attempt's notes."""
    query = select(Note).where(Note.campaign_id == campaign_id)
    if attempt_id is not None:
        query = query.where(Note.attempt_id == attempt_id)
    return list(session.exec(query.order_by(col(Note.id))))


def campaign_notes(session: Session, *, campaign_id: int) -> list[Note]:
    """The notes on the campaign as a whole, not on one of its attempts."""
    query = select(Note).where(Note.campaign_id == campaign_id, col(Note.attempt_id).is_(None))
    return list(session.exec(query.order_by(col(Note.id))))


def get_note(session: Session, *, note_id: int) -> Note | None:
    return session.get(Note, note_id) if storable(note_id) else None


def get_secret(session: Session, *, name: str) -> str | None:
    secret = session.get(SiteSecret, name)
    return secret.value if secret else None


def set_secret(session: Session, *, name: str, value: str) -> None:
    """One statement, so two dashboards starting at once on a new database both succeed (a
    read then an insert let the second fail on the name)."""
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(SiteSecret).values(name=name, value=value)
    session.execute(statement.on_conflict_do_update(index_elements=["name"], set_={"value": value}))
    loaded = session.identity_map.get(session.identity_key(SiteSecret, name))
    if loaded is not None:
        session.expire(loaded)  # loaded before now, it would show its old value


def list_owner_sessions(session: Session, *, max_age_s: float = 30 * 86400) -> list[str]:
    """Hashes of the browser sessions still open (younger than their cookie's max age)."""
    since = utcnow() - timedelta(seconds=max_age_s)
    query = select(OwnerSession.token_hash).where(col(OwnerSession.created_at) > since)
    return list(session.exec(query))


def add_owner_session(session: Session, *, token_hash: str) -> None:
    session.add(OwnerSession(token_hash=token_hash))


def delete_owner_session(session: Session, *, token_hash: str | None) -> None:
    """End one session, or every one (token_hash None)."""
    query = delete(OwnerSession)
    if token_hash is not None:
        query = query.where(col(OwnerSession.token_hash) == token_hash)
    session.execute(query)
