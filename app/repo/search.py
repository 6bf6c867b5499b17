"""Queries across every campaign: the search box's matches, the earlier attempts that
failed the same way (an attempt's "seen before"), and what those attempts' retests learned
(its hints). The search reads the index of migration 0017: on SQLite its FTS5 tables pick
the candidates, on PostgreSQL pg_trgm serves the ILIKE."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Select, String, case, func, literal, literal_column, or_, text, true
from sqlalchemy import column as sa_column
from sqlalchemy import select as sa_select
from sqlalchemy import table as sa_table
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from app.models import Attempt, Campaign, Note, Status

SEEN_BEFORE_LIMIT = 20
SEARCH_LIMIT = 50
# The trigram index matches no row for a query shorter than one trigram: those scan.
INDEXED_MIN_CHARS = 3
# The expressions of migration 0017's pg_trgm indexes, to the letter.
POSTGRESQL_SEARCH_TEXT = {
    "campaign": "(coalesce(name, '') || ' ' || coalesce(description, ''))",
    "attempt": "(coalesce(title, '') || ' ' || coalesce(verdict, '') || ' ' || "
    "coalesce(diagnosis ->> 'root_cause', '') || ' ' || coalesce(hypothesis, '') || ' ' || "
    "coalesce(flags, '') || ' ' || coalesce(command, ''))",
}

Kind = Literal["campaign", "attempt", "note"]
Rows = Select[*tuple[Any, ...]]
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


def ids_with_fingerprint(
    session: Session, *, fingerprint: str, limit: int = SEEN_BEFORE_LIMIT
) -> list[int]:
    """The attempts of any campaign with this failure fingerprint, newest first (its index)."""
    query = (
        sa_select(col(Attempt.id))
        .where(col(Attempt.fingerprint) == fingerprint)
        .order_by(col(Attempt.id).desc())
        .limit(limit)
    )
    return [row[0] for row in session.execute(query)]


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


def _rank_tests(title: Any, q: str) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """Whether the title is q (any case), and whether it holds q."""
    return func.lower(title) == func.lower(literal(q)), title.icontains(q, autoescape=True)


def _rank(title: Any, q: str) -> ColumnElement[int]:
    """0: the title is q (any case), 1: the title holds it, 2: another field does."""
    is_q, in_title = _rank_tests(title, q)
    return case((is_q, 0), (in_title, 1), else_=2)


def _sqlite_phrase(q: str, columns: tuple[str, ...] = ()) -> str:
    """q as one FTS5 phrase (its quotes doubled: `*`, `OR`, `NEAR` and `:` are text), in
    those columns only when named."""
    phrase = '"' + q.replace('"', '""') + '"'
    return "{" + " ".join(columns) + "} : " + phrase if columns else phrase


def _indexed_on(session: Session, q: str) -> str | None:
    """Which index serves q here: "sqlite" (FTS5 trigram: q of a trigram or more),
    "postgresql" (pg_trgm), or None (a scan)."""
    dialect = session.get_bind().dialect.name
    return None if dialect == "sqlite" and len(q) < INDEXED_MIN_CHARS else dialect


def _newest(
    session: Session,
    stmt: Rows,
    q: str,
    *,
    row_id: Any,
    index: str,
    columns: tuple[str, ...] = (),
) -> Rows:
    """stmt's rows newest first. On SQLite its FTS5 table drives, in rowid order, so LIMIT
    stops it after the first rows that stmt's own LIKE keeps (a word in every row costs
    as little as a rare one); the index folds more cases than SQLite's ASCII-only LIKE,
    never fewer, so that LIKE still decides and the answer is the scan's."""
    if _indexed_on(session, q) != "sqlite":
        return stmt.order_by(row_id.desc())
    fts = sa_table(index, sa_column("rowid"))
    return (
        stmt.join(fts, fts.c.rowid == row_id)
        .where(literal_column(index).op("MATCH")(_sqlite_phrase(q, columns)))
        .order_by(fts.c.rowid.desc())
    )


def _postgresql_text(session: Session, q: str, table: str) -> ColumnElement[bool]:
    """On PostgreSQL, q in the row's searched fields joined (the expression of its pg_trgm
    index, to the letter): one index scan where the OR of a field each reads the table. A
    superset (q may span two fields): the fields' own ILIKE decides."""
    if _indexed_on(session, q) != "postgresql":
        return true()
    joined = literal_column(POSTGRESQL_SEARCH_TEXT[table], String)
    return joined.icontains(q, autoescape=True)


@contextmanager
def _planned_for_q(session: Session, q: str) -> Iterator[None]:
    """On PostgreSQL, while the search runs: plans for this q (a pattern's rows run from
    none to all: a plan made for any q fits none), and no sequential scan where an index
    serves: the planner prices an ILIKE of six long fields as one operator, and read 10,000
    attempts in 60 ms for `out of memory` where the index gives its 417 in 11. The settings
    are the transaction's: what else it runs gets its own back."""
    if _indexed_on(session, q) != "postgresql":
        yield
        return
    before = session.execute(
        text("SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')")
    ).one()
    setting = text(
        "SELECT set_config('plan_cache_mode', :plans, true),"
        " set_config('enable_seqscan', :seq, true)"
    )
    session.execute(setting, {"plans": "force_custom_plan", "seq": "off"})
    yield  # on an error the transaction is lost, and its settings with it
    session.execute(setting, {"plans": before[0], "seq": before[1]})


def search(session: Session, *, q: str, limit: int = SEARCH_LIMIT) -> list[Match]:
    """Campaigns, attempts and notes of every campaign with q in their text (a substring,
    any case; % and _ are q's own characters), best first: scan()'s answer, from the index
    of migration 0017, each rank of attempts apart and newest first, so a LIMIT stops it."""
    with _planned_for_q(session, q):
        return _search(session, q, limit)


def _search(session: Session, q: str, limit: int) -> list[Match]:
    def holds(*fields: Any) -> ColumnElement[bool]:
        return or_(*(field.icontains(q, autoescape=True) for field in fields))

    campaign_rank = _rank(col(Campaign.name), q)
    fts = sa_table("campaign_search", sa_column("rowid"))
    campaigns = (
        sa_select(col(Campaign.id), campaign_rank, col(Campaign.name), col(Campaign.description))
        .where(holds(col(Campaign.name), col(Campaign.description)))
        .where(_postgresql_text(session, q, "campaign"))
        .order_by(campaign_rank, col(Campaign.id).desc())
        .limit(limit)
    )
    if _indexed_on(session, q) == "sqlite":
        match = literal_column("campaign_search").op("MATCH")(_sqlite_phrase(q))
        campaigns = campaigns.where(col(Campaign.id).in_(sa_select(fts.c.rowid).where(match)))
    found = [
        Match("campaign", rank, campaign_id, campaign_id, None, name, (name, description))
        for campaign_id, rank, name, description in session.execute(campaigns)
    ]

    title = col(Attempt.title)
    fields = (title, col(Attempt.verdict), col(Attempt.diagnosis)["root_cause"].as_string(),
              col(Attempt.hypothesis), col(Attempt.flags), col(Attempt.command))  # fmt: skip
    is_q, in_title = _rank_tests(title, q)
    # By rank (_rank's), each newest first: each part stops at what the page can show.
    parts = [
        (0, is_q, ()),
        (1, in_title & ~is_q, ("title",)),
        (2, ~in_title, ("verdict", "root_cause", "hypothesis", "flags", "command")),
    ]
    attempts: list[Match] = []
    for rank, part, columns in parts:
        wanted = limit - len(attempts)
        if wanted <= 0:
            break
        stmt = (
            sa_select(col(Attempt.id), col(Attempt.campaign_id), *fields)
            .where(holds(*fields), part)
            .where(_postgresql_text(session, q, "attempt") if rank == 2 else true())
        )
        if rank == 0:  # the index of lower(title) finds them (migration 0017)
            stmt = stmt.order_by(col(Attempt.id).desc()).limit(wanted)
        else:
            stmt = _newest(session, stmt, q, row_id=col(Attempt.id),
                           index="attempt_search", columns=columns).limit(wanted)  # fmt: skip
        attempts += [
            Match("attempt", rank, row[0], row[1], row[0], row[2], tuple(row[2:]))
            for row in session.execute(stmt)
        ]
    found += attempts

    # A note goes by its attempt's title, or its campaign's name when on the campaign.
    notes = (
        sa_select(col(Note.id), col(Note.campaign_id), col(Note.attempt_id),
                  func.coalesce(col(Attempt.title), col(Campaign.name)), col(Note.body))
        .join(Campaign, col(Campaign.id) == col(Note.campaign_id))
        .outerjoin(Attempt, col(Attempt.id) == col(Note.attempt_id))
        .where(holds(col(Note.body)))
    )  # fmt: skip
    notes = _newest(session, notes, q, row_id=col(Note.id), index="note_search")
    found += [
        Match("note", 2, note_id, campaign_id, attempt_id, title, (body,))
        for note_id, campaign_id, attempt_id, title, body in session.execute(notes.limit(limit))
    ]
    return sorted(found, key=Match.order)[:limit]


def campaign_names(session: Session, ids: set[int]) -> dict[int, str]:
    """Each campaign's name by id, for the search page's lines."""
    if not ids:
        return {}
    query = sa_select(col(Campaign.id), col(Campaign.name)).where(col(Campaign.id).in_(ids))
    return {campaign_id: name for campaign_id, name in session.execute(query)}


def scan(session: Session, *, q: str, limit: int = SEARCH_LIMIT) -> list[Match]:
    """search()'s answer by reading every row, as before migration 0017: the reference the
    tests hold search() to, and bench/search.py times it against."""

    def holds(*fields: Any) -> ColumnElement[bool]:
        return or_(*(field.icontains(q, autoescape=True) for field in fields))

    campaign_rank = _rank(col(Campaign.name), q)
    campaigns = (
        sa_select(col(Campaign.id), campaign_rank, col(Campaign.name), col(Campaign.description))
        .where(holds(col(Campaign.name), col(Campaign.description)))
        .order_by(campaign_rank, col(Campaign.id).desc())
        .limit(limit)
    )
    attempt_rank = _rank(col(Attempt.title), q)
    fields = (col(Attempt.title), col(Attempt.verdict),
              col(Attempt.diagnosis)["root_cause"].as_string(), col(Attempt.hypothesis),
              col(Attempt.flags), col(Attempt.command))  # fmt: skip
    attempts = (
        sa_select(col(Attempt.id), attempt_rank, col(Attempt.campaign_id), *fields)
        .where(holds(*fields))
        .order_by(attempt_rank, col(Attempt.id).desc())
        .limit(limit)
    )
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
