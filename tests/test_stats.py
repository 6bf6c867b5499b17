"""The judgement's statistics against a reference implementation (scipy), at small and
large n, equal and unequal variances; and the call each kind of sample gets."""

import math
import random

import pytest
from scipy import stats as reference

from app.stats import (
    AUTO_MAX_RUNS,
    AUTO_MIN_RUNS,
    Call,
    call,
    difference,
    sequential_confidence,
    summarize,
    t_quantile,
)

# Runs of tok/s as a campaign has them: n = 2, 3, 5, 30, tight and loose.
SAMPLES = {
    2: [89.1, 90.3],
    3: [92.4, 92.9, 92.6],
    5: [88.0, 91.5, 90.2, 89.7, 92.8],
    30: [90 + 2.4 * math.sin(i * 1.7) + 0.3 * (i % 4) for i in range(30)],
}


@pytest.mark.parametrize("df", [1, 2, 3, 4, 1.37, 5.5, 29, 57.3, 1000])
@pytest.mark.parametrize("probability", [0.975, 0.9, 0.995])
def test_t_quantiles_match_the_reference(df: float, probability: float) -> None:
    assert t_quantile(probability, df) == pytest.approx(reference.t.ppf(probability, df), rel=1e-10)


@pytest.mark.parametrize("n", sorted(SAMPLES))
def test_the_mean_and_its_t_interval_match_the_reference(n: int) -> None:
    values = SAMPLES[n]
    summary = summarize(values)
    assert summary is not None and summary.n == n
    expected = reference.t.interval(0.95, n - 1, loc=sum(values) / n, scale=reference.sem(values))
    assert summary.ci95 == pytest.approx(expected, rel=1e-10)
    assert summary.stdev == pytest.approx(reference.tstd(values), rel=1e-12)
    assert summary.cv_pct == pytest.approx(reference.tstd(values) / (sum(values) / n) * 100)


@pytest.mark.parametrize("n_attempt", sorted(SAMPLES))
@pytest.mark.parametrize(
    "baseline", [[89.2, 89.9, 89.4], [85.0, 95.0], [89.5] * 4 + [89.6], SAMPLES[30]],
    ids=["tight-3", "loose-2", "near-equal-5", "30"],
)  # fmt: skip
def test_the_difference_against_a_baseline_attempt_is_welchs_interval(
    n_attempt: int, baseline: list[float]
) -> None:
    values = SAMPLES[n_attempt]
    measured, base = summarize(values), summarize(baseline)
    assert measured is not None and base is not None
    change = difference(measured, base.mean, base)
    welch = reference.ttest_ind(values, baseline, equal_var=False).confidence_interval(0.95)
    base_mean = sum(baseline) / len(baseline)
    assert change is not None and change.ci95_pct is not None
    assert change.pct == pytest.approx((measured.mean - base_mean) / base_mean * 100, rel=1e-12)
    expected = (welch.low / base_mean * 100, welch.high / base_mean * 100)
    assert change.ci95_pct == pytest.approx(expected, rel=1e-9)


def test_equal_variances_give_welchs_interval_not_the_pooled_one() -> None:
    values, baseline = [91.0, 92.0, 93.0], [88.0, 89.0, 90.0, 91.0, 92.0, 93.0]
    measured, base = summarize(values), summarize(baseline)
    assert measured and base
    change = difference(measured, base.mean, base)
    assert change is not None and change.ci95_pct is not None
    welch = reference.ttest_ind(values, baseline, equal_var=False).confidence_interval()
    pooled = reference.ttest_ind(values, baseline, equal_var=True).confidence_interval()
    assert change.ci95_pct[0] == pytest.approx(welch.low / base.mean * 100, rel=1e-9)
    assert change.ci95_pct[0] != pytest.approx(pooled.low / base.mean * 100, rel=1e-6)


@pytest.mark.parametrize("n", sorted(SAMPLES))
def test_against_a_typed_baseline_the_interval_is_the_one_sample_t(n: int) -> None:
    values, typed = SAMPLES[n], 89.5
    measured = summarize(values)
    assert measured is not None
    change = difference(measured, typed, None)
    one_sample = reference.ttest_1samp(values, popmean=typed).confidence_interval(0.95)
    assert change is not None and change.ci95_pct is not None
    expected = ((one_sample.low - typed) / typed * 100, (one_sample.high - typed) / typed * 100)
    assert change.ci95_pct == pytest.approx(expected, rel=1e-9)


def judged(values: list[float], baseline: float | list[float], *, noise: float = 1.0,
           higher_is_better: bool = True) -> Call:  # fmt: skip
    measured = summarize(values)
    base = summarize(baseline) if isinstance(baseline, list) else None
    base_mean = base.mean if base else float(baseline)  # type: ignore[arg-type]
    change = difference(measured, base_mean, base) if measured else None
    return call(measured, change, noise_pct=noise, higher_is_better=higher_is_better)


def test_each_call_on_samples_built_for_it() -> None:
    # A clear 10 % gain at 1 % noise: better from 3 runs.
    assert judged([98.4, 99.1, 98.8], [89.2, 89.9, 89.4]) == Call.better
    # The same gain on a latency metric, where lower is better: worse.
    assert judged([98.4, 99.1, 98.8], [89.2, 89.9, 89.4], higher_is_better=False) == Call.worse
    # A clear loss against a typed value.
    assert judged([80.1, 80.6, 80.3], 89.5) == Call.worse
    # Fusion in the seeds: 92.7 against 92.6, tight runs: the same, within ±1 %.
    assert judged([92.7, 92.65, 92.75, 92.7], [92.6, 92.55, 92.65, 92.6]) == Call.same
    # +0.1 % at 3 % noise with 3 runs: cannot be told.
    assert judged([92.7, 89.9, 95.5], [92.6, 95.4, 89.8]) == Call.inconclusive
    # One run: no interval, whatever it says.
    assert judged([99.0], 89.5) == Call.inconclusive
    assert judged([], 89.5) == Call.unmeasured
    # Against a baseline of zero there is no percentage to judge.
    assert judged([1.0, 2.0], 0.0) == Call.inconclusive


def test_identical_runs_have_a_zero_width_interval_and_figures_near_the_limit_stay_finite() -> None:
    flat = summarize([90.0, 90.0, 90.0])
    assert flat is not None and flat.ci95 == (90.0, 90.0)
    assert judged([90.0, 90.0, 90.0], [90.0, 90.0]) == Call.same
    huge = summarize([1.7e308, 1.79e308, 1.75e308])
    assert huge is not None and huge.ci95 is not None
    assert all(math.isfinite(v) for v in (huge.mean, huge.stdev or 0, *huge.ci95))
    change = difference(huge, 1.7e308, summarize([1.7e308, 1.69e308]))
    assert change is not None and all(math.isfinite(v) for v in change.ci95_pct or ())


def test_a_sequence_of_looks_keeps_a_false_better_or_worse_within_5_percent() -> None:
    """Runs with no true difference, looked at after each from the third to the tenth as
    `--repeat auto` does: at each look's 95 % the error grows with the looks (the reference
    here, over 10 %); at the level `sequential_confidence` gives, it stays within 5 %."""
    rng = random.Random(20261203)
    trials, max_runs = 4000, AUTO_MAX_RUNS
    level = sequential_confidence(max_runs)
    false = {"naive": 0, "sequential": 0}
    for _ in range(trials):
        runs = [rng.gauss(100.0, 2.4) for _ in range(max_runs)]
        for name, confidence in (("naive", 0.95), ("sequential", level)):
            for n in range(AUTO_MIN_RUNS, max_runs + 1):
                measured = summarize(runs[:n])
                assert measured is not None
                change = difference(measured, 100.0, None, confidence=confidence)
                verdict = call(measured, change, noise_pct=0.0, higher_is_better=True)
                if verdict in (Call.better, Call.worse):
                    false[name] += 1
                    break
    naive, sequential = (false[k] / trials for k in ("naive", "sequential"))
    assert naive > 0.10, naive  # why the looks need their own level
    assert sequential <= 0.05, sequential
    assert sequential >= 0.005  # the level is not so strict that nothing is ever called


def test_the_sequential_level_spends_the_error_over_the_looks() -> None:
    assert sequential_confidence(3) == pytest.approx(0.95)
    assert sequential_confidence(10) == pytest.approx(1 - 0.05 / 8)
    # One extreme look's quantile, checked against the reference too.
    assert t_quantile((1 + sequential_confidence(10)) / 2, 2) == pytest.approx(
        reference.t.ppf(1 - 0.05 / 16, 2), rel=1e-10
    )
