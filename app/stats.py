"""Is a gain real or noise: the t interval of an attempt's mean, its difference against the
baseline in force (Welch against the baseline attempt's runs, the one-sample t interval
against a typed value), and the call that interval supports. Exact for small n: Student's t
quantiles from the regularized incomplete beta function, checked against scipy in the tests
(scipy itself would cost every start-up its import for one function)."""

import enum
import functools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

CONFIDENCE = 0.95
# The regularized incomplete beta's continued fraction converges in tens of terms for the
# degrees of freedom met here; the bound only stops a pathological input.
_MAX_TERMS = 500
_EPS = 1e-15
_TINY = 1e-300


class Call(enum.StrEnum):
    better = "better"
    worse = "worse"
    same = "same"
    inconclusive = "inconclusive"
    unmeasured = "unmeasured"


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_TERMS + 1):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < _EPS:
            break
    return fraction


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
        + b * math.log1p(-x)
    )  # fmt: skip
    front = math.exp(log_front)
    # The fraction converges fast on this side of the mean; the other side by symmetry.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom, t >= 0."""
    return 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def _t_density(t: float, df: float) -> float:
    log_density = (
        math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )  # fmt: skip
    return math.exp(log_density)


@functools.lru_cache(maxsize=4096)
def t_quantile(probability: float, df: float) -> float:
    """The t with P(T <= t) = probability (> 0.5): Newton's method from below, where the
    upper tail is convex (each step stays short of the root), kept in a bracket."""
    if not 0.5 < probability < 1.0 or not df > 0.0:
        raise ValueError(f"t_quantile({probability}, {df}): needs 0.5 < p < 1 and df > 0")
    tail = 1.0 - probability
    low, high, t = 0.0, 1.0, 1.0
    while t_upper_tail(high, df) > tail:
        low, high = high, high * 2.0
    t = low
    for _ in range(200):
        gap = t_upper_tail(t, df) - tail  # > 0: still short of the quantile
        if gap > 0:
            low = t
        else:
            high = t
        step = t + gap / _t_density(t, df)
        t_next = step if low < step < high else (low + high) / 2.0
        if abs(t_next - t) <= 1e-13 * max(1.0, t):
            return t_next
        t = t_next
    return t


@dataclass(frozen=True)
class Summary:
    """Repeated runs of one attempt: n, mean, sample standard deviation, and the t interval
    of the mean (n - 1 degrees of freedom; None below 2 runs)."""

    n: int
    mean: float
    stdev: float | None
    ci95: tuple[float, float] | None

    @property
    def cv_pct(self) -> float | None:
        if self.stdev is None or self.mean == 0:
            return None
        return self.stdev / abs(self.mean) * 100.0

    @property
    def variance_of_mean(self) -> float | None:
        return None if self.stdev is None else self.stdev**2 / self.n


def _scale(values: Sequence[float]) -> float:
    # A power of two (exact) that brings figures near the float limit down, so that their
    # sums and squares cannot overflow; scaling back cannot pass the largest.
    return math.ldexp(1.0, max(0, math.frexp(max(abs(v) for v in values))[1] - 1))


def summarize(samples: Sequence[float]) -> Summary | None:
    if not samples:
        return None
    scale = _scale(samples)
    scaled = [s / scale for s in samples]
    n = len(scaled)
    mean = math.fsum(scaled) / n
    if n < 2:
        return Summary(n=1, mean=mean * scale, stdev=None, ci95=None)
    stdev = math.sqrt(math.fsum((s - mean) ** 2 for s in scaled) / (n - 1))
    half = t_quantile((1 + CONFIDENCE) / 2, n - 1) * stdev / math.sqrt(n)
    return Summary(
        n=n,
        mean=mean * scale,
        stdev=_finite(stdev * scale),
        ci95=(_finite((mean - half) * scale), _finite((mean + half) * scale)),
    )


def _finite(value: float) -> float:
    """An interval's end past the float limit is written as the limit, not as infinity."""
    return max(-sys.float_info.max, min(value, sys.float_info.max))


@dataclass(frozen=True)
class Difference:
    """The attempt's mean against the baseline's, in % of the baseline: the point and its
    95 % interval (None where undefined: one run, or one baseline run to compare with)."""

    pct: float
    ci95_pct: tuple[float, float] | None


def difference(
    attempt: Summary,
    baseline_mean: float,
    baseline: Summary | None,
    *,
    confidence: float = CONFIDENCE,
) -> Difference | None:
    """Welch (Welch-Satterthwaite degrees of freedom) when the baseline has runs of its own
    with a spread, the one-sample t interval against the value otherwise; the interval at
    `confidence` (95 %; a sequence of looks asks for more: `sequential_confidence`)."""
    if baseline_mean == 0 or not math.isfinite(baseline_mean):
        return None  # against zero a change has no percentage
    scale = _scale([attempt.mean, baseline_mean])
    base = baseline_mean / scale
    if base == 0:
        return None  # a baseline this near zero against a figure near the limit: no percentage
    point = (attempt.mean / scale - base) / abs(base) * 100.0
    if not math.isfinite(point):
        return None
    if attempt.stdev is None:
        return Difference(pct=point, ci95_pct=None)
    own = (attempt.stdev / scale) ** 2 / attempt.n
    if baseline is not None and baseline.stdev is not None:
        theirs = (baseline.stdev / scale) ** 2 / baseline.n
        spread = own + theirs
        denominator = own**2 / (attempt.n - 1) + theirs**2 / (baseline.n - 1)
        df = spread**2 / denominator if denominator > 0 else math.inf
    else:
        spread, df = own, float(attempt.n - 1)
    if spread == 0:
        return Difference(pct=point, ci95_pct=(point, point))
    tail = (1 + confidence) / 2
    quantile = t_quantile(tail, df) if math.isfinite(df) else _normal_quantile(tail)
    half = quantile * math.sqrt(spread) / abs(base) * 100.0
    # (a spread near the float limit against a small baseline: an interval that wide is
    # written to the limit, as a summary's is, never as infinity)
    return Difference(pct=point, ci95_pct=(_finite(point - half), _finite(point + half)))


def _normal_quantile(probability: float) -> float:
    """Student's t with infinite degrees of freedom: what t_quantile tends to."""
    return NormalDist().inv_cdf(probability)


# `--repeat auto`: at least this many runs, then a look after each one until the call is
# clear or the budget is spent.
AUTO_MIN_RUNS = 3
AUTO_MAX_RUNS = 10


def sequential_confidence(max_runs: int, error: float = 1 - CONFIDENCE) -> float:
    """The level of each look's interval, so that a false better or worse over all the
    looks of a run (at n = AUTO_MIN_RUNS .. max_runs) stays within `error`: the error spent
    evenly over the looks (Bonferroni), which holds whatever the looks' correlation."""
    looks = max(1, max_runs - AUTO_MIN_RUNS + 1)
    return 1 - error / looks


def call(
    measured: Summary | None,
    change: Difference | None,
    *,
    noise_pct: float,
    higher_is_better: bool,
) -> Call:
    """`same` when the whole interval lies inside ±noise (a real but smaller change is no
    result either); `better`/`worse` when it lies wholly on one side of zero; else
    `inconclusive` (one run included: it has no interval)."""
    if measured is None:
        return Call.unmeasured
    if change is None or change.ci95_pct is None:
        return Call.inconclusive
    low, high = change.ci95_pct
    if -noise_pct <= low and high <= noise_pct:
        return Call.same
    if low > 0 or high < 0:
        return Call.better if (low > 0) == higher_is_better else Call.worse
    return Call.inconclusive
