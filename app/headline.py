"""A campaign's story at a glance: the best adopted result, the gain since the first baseline,
the way left to the target. One helper for the owner's page and the share page alike."""

import math
from dataclasses import dataclass

from app.schemas import AttemptOut, CampaignOut


@dataclass(frozen=True)
class DeadEnd:
    id: int
    title: str
    reason: str  # the verdict, else the root cause: why it is a dead end, in a line
    crashed: bool


@dataclass(frozen=True)
class Headline:
    best: AttemptOut | None  # the best adopted attempt with a figure
    first_baseline: float | None  # where the campaign started
    baseline: float | None  # the baseline in force now
    gain_pct: float | None  # best against the first baseline, signed as the figures move
    improved: bool | None  # the gain goes the better way
    target: float | None
    gap_pct: float | None  # from the best (or the baseline) to the target; None when reached
    reached: bool  # the best adopted result is at or past the target
    tested: int
    eliminated: int
    adopted: int
    dead_ends: tuple[DeadEnd, ...] = ()  # newest first


REASON_CHARS = 90


def crashed(attempt: AttemptOut) -> bool:
    """It crashed: so marked, or its log's diagnosis names a failure (the cards' summary of a
    diagnosis holds the root cause, not the whole reading)."""
    diagnosis = attempt.diagnosis or {}
    named = diagnosis.get("root_cause") or diagnosis.get("pending")
    return attempt.status.value == "crashed" or diagnosis.get("crashed") is True or bool(named)


def _dead_end(attempt: AttemptOut) -> DeadEnd:
    diagnosis = attempt.diagnosis or {}
    reason = (attempt.verdict or diagnosis.get("root_cause") or "").strip().splitlines()
    text = reason[0] if reason else ""
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "\u2026"
    return DeadEnd(attempt.id, attempt.title, text, crashed(attempt))


def _pct(value: float, reference: float | None) -> float | None:
    if reference is None or not reference:
        return None
    pct = (value - reference) / abs(reference) * 100.0
    return pct if math.isfinite(pct) else None


def headline(campaign: CampaignOut, attempts: list[AttemptOut]) -> Headline:
    better = max if campaign.higher_is_better else min
    adopted = [a for a in attempts if a.lane.value == "adopted" and a.metric_value is not None]
    best = better(adopted, key=lambda a: a.metric_value or 0.0) if adopted else None
    history = campaign.baseline_history
    first = history[0].value if history else campaign.baseline
    gain = _pct(best.metric_value, first) if best and best.metric_value is not None else None
    improved = None if gain is None else (gain > 0) == campaign.higher_is_better and gain != 0
    standing = best.metric_value if best else campaign.baseline
    target = campaign.target
    reached = False
    gap = None
    if target is not None and best is not None and best.metric_value is not None:
        reached = better(best.metric_value, target) == best.metric_value
    if target is not None and standing is not None and not reached:
        gap = _pct(target, standing)
    lanes = [a.lane.value for a in attempts]
    return Headline(
        best=best, first_baseline=first, baseline=campaign.baseline, gain_pct=gain,
        improved=improved, target=target, gap_pct=gap, reached=reached,
        tested=lanes.count("tested"), eliminated=lanes.count("eliminated"),
        adopted=lanes.count("adopted"),
        dead_ends=tuple(_dead_end(a) for a in reversed(attempts) if a.lane.value == "eliminated"),
    )  # fmt: skip
