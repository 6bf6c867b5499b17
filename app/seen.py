"""Log text from outside a campaign, read against every campaign's memory: its diagnosis
with what was learned under the same failure (`POST /api/diagnose`), and the attempts that
met that failure before, with their verdicts and what got past them (`POST /api/seen`):
the question an agent asks before it launches, and after a crash."""

import re
from pathlib import PurePath
from typing import Any

from sqlmodel import Session

from app import hints, repo
from app.diagnosis import Diagnoser, Diagnosis
from app.diagnosis.rules import normalized
from app.models import Attempt, Status
from app.schemas import DiagnosedOut, FixOut, HintOut, SeenMatchOut, SeenOut

MATCHES_LIMIT = 20
# A text without a root cause is looked up as typed when it is one short line.
LOOKUP_CHARS = 300


def diagnose(text: str) -> Diagnosis:
    diagnoser = Diagnoser()
    diagnoser.feed(text.encode("utf-8", "replace"))
    return diagnoser.diagnosis()


def diagnosed(session: Session, text: str) -> DiagnosedOut:
    """The diagnosis of a log excerpt, with the hints an attempt with it would get."""
    found = diagnose(text).to_dict()
    said: list[HintOut] = []
    if found.get("fingerprint"):
        said = hints.history_of(session, fingerprint=found["fingerprint"])
    return DiagnosedOut(**found, hints=[*said, *hints.knowledge(found)])


def seen(
    session: Session, *, text: str, fingerprint: str | None = None, frame_file: str | None = None
) -> SeenOut:
    """The attempts of any campaign that failed as `text` says, newest first: the same
    fingerprint, or the same root-cause line under another class (a bare `KeyError: 12`
    against the traceback that placed it), or a verdict that names it."""
    found = diagnose(text)
    root_cause = found.root_cause
    fingerprint = fingerprint or found.fingerprint
    lookup = root_cause or _one_line(text)
    ids: dict[int, None] = {}  # ordered: fingerprint matches first
    if fingerprint:
        ids.update(dict.fromkeys(repo.ids_with_fingerprint(session, fingerprint=fingerprint)))
    if lookup:
        wanted = _loose(lookup)
        hits = [m.attempt_id for q in _queries(lookup) for m in repo.search(session, q=q)
                if m.kind == "attempt" and m.attempt_id is not None]  # fmt: skip
        where = frame_file or (found.frame.file if found.frame is not None else None)
        for attempt in repo.attempts_by_ids(session, attempt_ids=hits):
            if attempt.id is not None and _names(attempt, wanted) and _same_place(attempt, where):
                ids.setdefault(attempt.id)
    matches = _matches(session, list(ids)[:MATCHES_LIMIT])
    return SeenOut(
        root_cause=root_cause, error_class=found.error_class, fingerprint=fingerprint,
        matches=matches,
    )  # fmt: skip


def _one_line(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 and len(lines[0]) <= LOOKUP_CHARS else None


def _same_place(attempt: Attempt, file: str | None) -> bool:
    """The same words raised in another file are another failure (`KeyError: 12` of a
    kernel's config table, not of symmetric memory's): where both logs name the failing
    frame, its file must be the same (by name: checkouts live in different places)."""
    theirs = ((attempt.diagnosis or {}).get("frame") or {}).get("file")
    return not file or not theirs or PurePath(theirs).name == PurePath(file).name


def _names(attempt: Attempt, wanted: str) -> bool:
    cause = (attempt.diagnosis or {}).get("root_cause") or ""
    return wanted in _loose(cause) or wanted in _loose(attempt.verdict or "")


# Quotes a person leaves out when typing a line ("No module named flash_attn"), and spaces
_QUOTES = re.compile(r"[\'\"`\u2018\u2019\u201c\u201d]")
_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"[\w.-]{4,}")


def _loose(text: str) -> str:
    return _SPACES.sub(" ", _QUOTES.sub("", normalized(text))).strip().lower()


def _queries(lookup: str) -> list[str]:
    """The line as typed, then its longest word: a line typed without the log's quotes is
    found by that word, then kept only if the whole line matches without quotes."""
    typed = lookup.strip()[:LOOKUP_CHARS]
    words = sorted(_WORDS.findall(_QUOTES.sub(" ", typed)), key=len, reverse=True)
    return [typed, *words[:1]]


def _matches(session: Session, attempt_ids: list[int]) -> list[SeenMatchOut]:
    attempts = {a.id: a for a in repo.attempts_by_ids(session, attempt_ids=attempt_ids)}
    names = repo.campaign_names(session, {a.campaign_id for a in attempts.values()})
    originals = {a.id: a.campaign_id for a in attempts.values() if a.id is not None}
    fixes: dict[int, list[FixOut]] = {}
    for fix in repo.retests_past(session, originals=originals, limit=MATCHES_LIMIT):
        assert fix.id is not None and fix.retest_of is not None
        fixes.setdefault(fix.retest_of, []).append(
            FixOut(attempt_id=fix.id, title=fix.title, status=Status(fix.status))
        )
    out = []
    for attempt_id in attempt_ids:
        attempt = attempts[attempt_id]
        diagnosis: dict[str, Any] = attempt.diagnosis or {}
        out.append(
            SeenMatchOut(
                campaign_id=attempt.campaign_id,
                campaign=names.get(attempt.campaign_id, ""),
                attempt_id=attempt_id,
                title=attempt.title,
                status=Status(attempt.status),
                verdict=attempt.verdict,
                root_cause=diagnosis.get("root_cause"),
                error_class=diagnosis.get("error_class"),
                fixed_by=fixes.get(attempt_id, []),
            )
        )
    return out
