"""The campaign's judgement: lanes, repeated runs, and a metric against the baseline
(which status changes make sense is app/lifecycle.py's)."""

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.models import BaselineChange, Lane, Status
from app.stats import CONFIDENCE, Call, Difference, Summary, call, difference, summarize


def lane_of(status: Status) -> Lane:
    if status == Status.adopted:
        return Lane.adopted
    if status == Status.eliminated:
        return Lane.eliminated
    return Lane.tested


@dataclass(frozen=True)
class Judgement:
    """An attempt's runs against the baseline in force: what the call rests on."""

    measured: Summary | None
    baseline: float | None  # its mean: the baseline attempt's runs, or the typed value
    baseline_n: int | None  # None: a typed value
    baseline_attempt_id: int | None
    change: Difference | None
    call: Call
    noise_pct: float
    noise_learned: bool  # from the baseline attempt's repeats, not the campaign's setting


# The baseline attempt's runs teach the noise band from this many on.
NOISE_FROM_RUNS = 3


def judge(
    samples: list[float],
    reference: BaselineChange | None,
    reference_samples: list[float],
    *,
    attempt_id: int | None,
    noise_pct: float,
    higher_is_better: bool,
    confidence: float = CONFIDENCE,
) -> Judgement:
    """The attempt's runs against `reference` (the baseline change in force at its start):
    Welch against the runs of the attempt that set it, when it has two or more; the typed
    value otherwise. An attempt is not judged against itself."""
    measured = summarize(samples)
    if reference is None or (
        reference.attempt_id is not None and reference.attempt_id == attempt_id
    ):
        verdict = Call.unmeasured if measured is None else Call.inconclusive
        return Judgement(measured, None, None, None, None, verdict, noise_pct, False)
    runs = summarize(reference_samples) if reference.attempt_id is not None else None
    base = runs if runs is not None and runs.n >= 2 else None
    value = base.mean if base is not None else reference.value
    # The typed band is the least change that matters; runs of the baseline that vary more
    # than that widen it (a quieter baseline does not narrow it below what matters).
    noise, noise_learned = noise_pct, False
    learned = base.cv_pct if base is not None and base.n >= NOISE_FROM_RUNS else None
    if learned is not None and learned > noise_pct:
        noise, noise_learned = learned, True
    change = (
        difference(measured, value, base, confidence=confidence) if measured is not None else None
    )
    verdict = call(measured, change, noise_pct=noise, higher_is_better=higher_is_better)
    return Judgement(
        measured, value, runs.n if runs is not None else None, reference.attempt_id, change,
        verdict, noise, noise_learned,
    )  # fmt: skip


def change_in_force(
    history: Sequence[BaselineChange], when: datetime, times: Sequence[datetime] | None = None
) -> BaselineChange | None:
    """The baseline change set last before `when`; the first one when none was set yet.
    `times`: the history's set_at, when asked for many attempts (a bisection each)."""
    if not history:
        return None
    index = bisect.bisect_right(times or [c.set_at for c in history], when)
    return history[max(index - 1, 0)]
