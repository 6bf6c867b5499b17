"""An attempt's hints, what to try next under its root cause: what any campaign learned from
the same failure (a retest that got past it and what changed, the verdicts written on it),
then the knowledge base's advice (app/diagnosis/advice.py)."""

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from app import environment as env
from app import repo
from app.diagnosis.advice import advice_for
from app.flags import FlagSet, LoggedArgs, flag_diff, masked_diff
from app.models import Attempt, Run, Status
from app.numbers import fmt_number
from app.schemas import HintOut

FIXES_LIMIT = 3
VERDICTS_LIMIT = 3


def hints_for(session: Session, attempt: Attempt) -> list[HintOut]:
    """History first, then knowledge; none without a root cause. Its queries are few and
    bounded (the fingerprint's index, limits), as seen_before's: an attempt's own view asks,
    a list never does."""
    return [*history(session, attempt), *knowledge(attempt.diagnosis)]


def knowledge(diagnosis: Mapping[str, Any] | None, *, name_frame: bool = True) -> list[HintOut]:
    """`name_frame`: False where the frame is not shown (the share page)."""
    return [
        HintOut(text=text, source="knowledge")
        for text in advice_for(diagnosis, name_frame=name_frame)
    ]


def history(session: Session, attempt: Attempt) -> list[HintOut]:
    """The retests that got past this failure elsewhere (another attempt with its fingerprint,
    of any campaign), with what changed; then the verdicts written on those attempts."""
    if not attempt.fingerprint or attempt.id is None:
        return []
    return history_of(
        session, fingerprint=attempt.fingerprint, other_than=attempt.id,
        campaign_id=attempt.campaign_id,
    )  # fmt: skip


def history_of(
    session: Session, *, fingerprint: str, other_than: int = 0, campaign_id: int | None = None
) -> list[HintOut]:
    """history() of a failure met outside any attempt (a log excerpt): every campaign's
    attempts with it are named with their campaign."""
    same = repo.same_failure(session, fingerprint=fingerprint, other_than=other_than)
    named = {
        other: f"#{other}" if campaign == campaign_id else f'#{other} in campaign "{name}"'
        for other, campaign, name, _ in same
    }
    originals = {other: campaign for other, campaign, _, _ in same}
    fixes = repo.retests_past(session, originals=originals, limit=FIXES_LIMIT)
    said = []
    if fixes:
        fix_ids = [f.id for f in fixes if f.id is not None]
        crashed = {
            a.id: a
            for a in repo.attempts_by_ids(
                session, attempt_ids={f.retest_of for f in fixes if f.retest_of is not None},
                with_diagnosis=False,
            )
            if a.id is not None
        }  # fmt: skip
        runs = repo.runs_by_attempt(session, attempt_ids=[*crashed, *fix_ids])
        samples = repo.samples_by_attempt(session, attempt_ids=fix_ids)
        for fix in fixes:
            assert fix.id is not None and fix.retest_of is not None
            original = crashed[fix.retest_of]
            outcome = _outcome(fix, samples.get(fix.id, []))
            said.append(
                HintOut(
                    text=f"{named[fix.retest_of]} crashed the same way; its retest #{fix.id} "
                    f"{outcome}{_changes(original, fix, runs)}",
                    source="history",
                    attempt_id=fix.id,
                )
            )
    verdicts = [(other, verdict.strip()) for other, _, _, verdict in same if verdict]
    verdicts = [(other, text) for other, text in verdicts if text][:VERDICTS_LIMIT]
    said += [
        HintOut(text=f"Verdict on {named[other]}: {verdict}", source="history", attempt_id=other)
        for other, verdict in verdicts
    ]
    return said


def _outcome(fix: Attempt, samples: list[float]) -> str:
    if samples:
        return f"measured {fmt_number(sum(samples) / len(samples))}"
    return "came up ready" if fix.status == Status.ready else f"was {Status(fix.status).value}"


def _changes(original: Attempt, fix: Attempt, runs: Mapping[int, Run]) -> str:
    """What the retest changed against the crash: its environment ("cuda 12.8 → 13.0"), then
    its flags, as the attempt page's diffs say them."""
    assert original.id is not None and fix.id is not None
    parts = []
    before = env.of_attempt(original, runs.get(original.id))
    after = env.of_attempt(fix, runs.get(fix.id))
    if before and after:
        found = env.diff(before, after)
        if found["changed"] or found["added"] or found["removed"]:
            parts.append(found["summary"])
    flags = masked_diff(flag_diff(_flag_set(fix), _flag_set(original)))
    if not flags.empty:
        parts.append(f"flags: {flags.summary()}")
    if not parts:
        return ", with no change that its command or its log shows"
    return f" after {'; '.join(parts)}"


def _flag_set(attempt: Attempt) -> FlagSet:
    logged = LoggedArgs.from_json(attempt.logged_args)
    return FlagSet.of(attempt.command, logged, typed=attempt.flags)
