"""The campaign's judgement: lanes, repeated runs, and a metric against the baseline
(which status changes make sense is app/lifecycle.py's)."""

import bisect
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.models import BaselineChange, Lane, Status


def lane_of(status: Status) -> Lane:
    if status == Status.adopted:
        return Lane.adopted
    if status == Status.eliminated:
        return Lane.eliminated
    return Lane.tested


@dataclass(frozen=True)
class MetricSummary:
    """Repeated benchmark runs of one attempt: mean ± sample standard deviation (n)."""

    mean: float
    spread: float
    n: int

    @classmethod
    def of(cls, samples: list[float]) -> "MetricSummary | None":
        if not samples:
            return None
        # Scaled down by a power of two (exact) so that the sums of figures near the float
        # limit (two runs of 1e308) cannot overflow; scaling back cannot pass the largest.
        scale = math.ldexp(1.0, max(0, math.frexp(max(abs(s) for s in samples))[1] - 1))
        scaled = [s / scale for s in samples]
        mean_scaled = math.fsum(scaled) / len(scaled)
        # Floats and fsum, not statistics.stdev: its exact Fractions were a third of a
        # 1,000-attempt page's time.
        variance = math.fsum((s - mean_scaled) ** 2 for s in scaled) / max(len(scaled) - 1, 1)
        mean = mean_scaled * scale
        spread = math.sqrt(variance) * scale if len(samples) > 1 else 0.0
        # Samples of both signs near the limit: a spread too wide for a float is the widest.
        return cls(mean=mean, spread=min(spread, sys.float_info.max), n=len(samples))


@dataclass(frozen=True)
class Delta:
    pct: float
    within_noise: bool
    improved: bool


def judge(
    summary: MetricSummary | None,
    baseline: float | None,
    *,
    noise_pct: float,
    higher_is_better: bool,
) -> Delta | None:
    """The change against the baseline, and whether it stands out of the noise.

    The noise band is the larger of the campaign's noise floor and the spread of the
    attempt's own samples: a +0.1 % "win" on one run is not a win.
    """
    if summary is None or not baseline:
        return None
    difference = summary.mean - baseline
    if math.isfinite(difference):
        pct = difference / abs(baseline) * 100.0
    else:  # two figures near the float limit: divide first
        pct = (summary.mean / abs(baseline) - math.copysign(1.0, baseline)) * 100.0
    if not math.isfinite(pct):
        return None  # against a baseline near zero a change has no percentage
    band = max(noise_pct, summary.spread / abs(baseline) * 100.0)
    within_noise = abs(pct) <= band
    improved = not within_noise and ((pct > 0) == higher_is_better)
    return Delta(pct=pct, within_noise=within_noise, improved=improved)


def change_in_force(
    history: Sequence[BaselineChange], when: datetime, times: Sequence[datetime] | None = None
) -> BaselineChange | None:
    """The baseline change set last before `when`; the first one when none was set yet.
    `times`: the history's set_at, when asked for many attempts (a bisection each)."""
    if not history:
        return None
    index = bisect.bisect_right(times or [c.set_at for c in history], when)
    return history[max(index - 1, 0)]
