"""The throughput chart: every attempt at its place in the campaign, measured ones as
points against the baseline in force and the target, the others as their outcome (crashed,
eliminated, not measured yet) on the chart's floor; each baseline step labelled with its
value, the one in force now drawn to the right edge. Server-rendered SVG (so it shows in
the share view, in print, without JS)."""

import functools
import math
from dataclasses import dataclass, field
from decimal import Decimal

from markupsafe import Markup, escape

from app.headline import crashed
from app.models import Lane, Status
from app.numbers import fmt_judgement, fmt_number
from app.schemas import AttemptOut, CampaignOut
from app.stats import Call

# Coordinates are percentages of the drawing, which CSS sizes: text and dots keep their
# size in pixels whatever the width (a scaled viewBox shrank the labels to 4 px on a phone).
WIDTH, HEIGHT = 100, 100
LEFT, RIGHT, TOP, BOTTOM = 1.5, 1.5, 7, 14
FLOOR = HEIGHT - BOTTOM - 2  # where an attempt without a figure shows its outcome
X_LABELS = 6  # attempt numbers under the plot: a few, evenly spread, never one per point
DENSE = 120  # past this many attempts they are drawn smaller

# An attempt without a figure, by what became of it: (css, glyph, words).
_CRASHED = ("crashed", "\u2715", "crashed")  # ✕
_GIVEN_UP = ("eliminated", "\u2298", "eliminated")  # ⊘
_PENDING = ("pending", "\u25cb", "no figure yet")  # ○


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    attempt: AttemptOut
    css: str  # up, down, noise; unjudged: no baseline to judge it against


@dataclass(frozen=True)
class Segment:
    x1: float
    y1: float
    x2: float
    y2: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    points: list[Point]
    baseline: list[Segment]  # stepped: each attempt against the baseline of its time
    target_y: float | None
    ticks: list[tuple[float, str]]
    metric: str
    x_labels: list[tuple[float, str, str]] = field(default_factory=list)  # x, text, anchor
    # Written here, not in the template: a thousand points in Jinja2 were 7 escapes each,
    # the most of a page rendered after a new figure.
    points_svg: Markup = field(default_factory=Markup)
    baseline_labels: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, text
    outcomes: dict[str, int] = field(default_factory=dict)  # attempts without a figure, by css

    @property
    def empty(self) -> bool:
        return not self.points and not self.outcomes

    @property
    def judged(self) -> bool:
        return any(point.css != "unjudged" for point in self.points)

    @property
    def dense(self) -> bool:
        return len(self.points) + sum(self.outcomes.values()) > DENSE


def _outcome(attempt: AttemptOut) -> tuple[str, str, str]:
    if attempt.status in (Status.crashed, Status.eliminated) and crashed(attempt):
        return _CRASHED
    if attempt.status == Status.eliminated:
        return _GIVEN_UP
    return _PENDING


def build_chart(
    campaign: CampaignOut, attempts: list[AttemptOut], *, link_prefix: str = "/attempts/"
) -> Chart:
    """`link_prefix`: where a point links, followed by its attempt's id."""
    attempts = [a for a in attempts if a.lane != Lane.refused]  # nothing ran: no outcome
    measured = [a for a in attempts if a.metric_value is not None]
    values = [a.metric_value for a in measured if a.metric_value is not None]
    values += [a.baseline for a in attempts if a.baseline is not None]
    if campaign.target is not None:
        values.append(campaign.target)
    if campaign.baseline is not None:
        values.append(campaign.baseline)
    values = [v for v in values if math.isfinite(v)]
    if not attempts or not values:
        return Chart(WIDTH, HEIGHT, [], [], None, [], campaign.metric)
    # Laid out in units of a power of two (exact) so that the padded range of figures near
    # the float limit cannot overflow.
    scale = math.ldexp(1.0, max(0, math.frexp(max(abs(v) for v in values))[1] - 1))
    low, high = min(values) / scale, max(values) / scale
    if high > low:
        # At least a billionth of the figure: values a float step apart (2^70, 2^70 + 1)
        # still get a range whose ticks are distinct floats.
        pad = max((high - low) * 0.1, abs(high) * 1e-9)
    else:
        pad = max(abs(high) * 0.1, 1.0 / scale)
    low, high = (max(0.0, low - pad) if low >= 0 else low - pad), high + pad

    def y_at(scaled: float) -> float:
        return TOP + (high - scaled) / (high - low) * (HEIGHT - TOP - BOTTOM)

    def y_of(value: float) -> float:
        return y_at(value / scale)

    # The baseline in force now, when no attempt has been judged by it yet, gets a slot of
    # its own at the right: adopting an attempt moves the line at once.
    now = (
        campaign.baseline
        if campaign.baseline is not None and math.isfinite(campaign.baseline)
        else None
    )
    last_baseline = attempts[-1].baseline
    slots = len(attempts) + (1 if now is not None and now != last_baseline else 0)
    step = (WIDTH - LEFT - RIGHT) / slots
    small = len(attempts) > DENSE
    link, radius = str(escape(link_prefix)), 3 if small else 6
    points: list[Point] = []
    svg: list[str] = []
    outcomes: dict[str, int] = {}
    baseline_ys: dict[float, float] = {}  # few baselines in force, many attempts
    steps: list[tuple[float, float, int, int]] = []  # (value, y, first, last slot)

    def hold(value: float, index: int) -> None:
        if value not in baseline_ys:
            baseline_ys[value] = round(y_of(value), 2)
        if steps and steps[-1][0] == value:
            steps[-1] = (value, steps[-1][1], steps[-1][2], index)  # one line while it holds
        else:
            steps.append((value, baseline_ys[value], index, index))

    for index, attempt in enumerate(attempts):
        x = round(LEFT + step * (index + 0.5), 2)
        value = attempt.metric_value
        if value is not None and math.isfinite(value):
            y = round(y_of(value), 2)
            css = _call_css(attempt, campaign.higher_is_better)
            points.append(Point(x, y, attempt, css))
            given_up = attempt.status == Status.eliminated
            stats = attempt.stats
            interval = None
            if stats.ci95 is not None and all(math.isfinite(v) for v in stats.ci95):
                # Drawn within the plot: a two-run interval may span far past every figure.
                interval = tuple(round(min(max(y_of(v), TOP), FLOOR), 2) for v in stats.ci95)
            said = fmt_judgement(stats.delta_pct, stats.delta_ci95_pct, stats.call.value, stats.n)
            shown = (attempt.id, attempt.title, value, campaign.metric, said)
            svg.append(_point_svg(link, radius, x, y, css, *shown, given_up, interval))
        else:
            kind = _outcome(attempt)
            outcomes[kind[0]] = outcomes.get(kind[0], 0) + 1
            cause = (attempt.diagnosis or {}).get("root_cause") or ""
            svg.append(_marker_svg(link, small, x, kind, attempt.id, attempt.title, cause))
        if attempt.baseline is not None and math.isfinite(attempt.baseline):
            hold(attempt.baseline, index)
    if now is not None:
        hold(now, slots - 1)  # drawn to the right edge: the baseline the next attempt meets
    baseline: list[Segment] = []
    baseline_labels: list[tuple[float, float, str]] = []
    for value, y, first, last in steps:
        left, right = round(LEFT + step * first, 2), round(LEFT + step * (last + 1), 2)
        if baseline:  # the step up or down where the baseline changed
            baseline.append(Segment(left, baseline[-1].y2, left, y))
        baseline.append(Segment(left, y, right, y))
        baseline_labels.append((left, y, fmt_number(value)))
    # Round in the metric's own units, not in units of `scale`: 1,250 tok/s, not 1,249.28.
    real_low, real_high = low * scale, high * scale
    if math.isfinite(real_low) and math.isfinite(real_high):
        tick_step, real_ticks = nice_ticks(real_low, real_high)
        tick_step, tick_values = tick_step / scale, [t / scale for t in real_ticks]
    else:  # a range past the float limit: round in units of `scale`
        tick_step, tick_values = nice_ticks(low, high)
    ticks = [(round(y_at(v), 2), tick_label(v, tick_step, scale)) for v in tick_values]
    target_y = round(y_of(campaign.target), 2) if campaign.target is not None else None
    every = max(1, math.ceil(len(attempts) / X_LABELS))
    # Anchored inward at the edges: a centred label there would be cut in half.
    x_labels = []
    for index in range(0, len(attempts), every):
        x = round(LEFT + step * (index + 0.5), 2)
        anchor = "start" if x < 8 else "end" if x > 92 else "middle"
        x_labels.append((x, f"#{attempts[index].id}", anchor))
    return Chart(WIDTH, HEIGHT, points, baseline, target_y, ticks, campaign.metric, x_labels,
                 Markup("".join(svg)), baseline_labels, outcomes)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _point_svg(
    link: str,
    radius: int,
    x: float,
    y: float,
    css: str,
    attempt_id: int,
    title: str,
    value: float,
    metric: str,
    judgement: str,
    given_up: bool,
    interval: tuple[float, ...] | None,
) -> str:
    """A point as a link to its attempt, with its tooltip and the 95 % interval of its mean;
    kept, as after a new figure all but one point are drawn as before."""
    label = f"#{attempt_id} {title}: {fmt_number(value)} {metric}"
    if judgement:
        label += f" ({judgement})"
    whisker = ""
    if interval is not None:
        low, high = interval
        # No title of its own: the point's says it all, and a large chart has hundreds.
        whisker = (
            f'<line class="ci {css.split()[0]}" x1="{x}%" x2="{x}%" y1="{low}%" y2="{high}%"/>'
        )
    if given_up:
        label, css = f"{label}, eliminated", f"{css} eliminated"
    return (
        f'<a href="{link}{attempt_id}">{whisker}<circle class="point {css}" cx="{x}%"'
        f' cy="{y}%" r="{radius}"><title>{escape(label)}</title></circle></a>'
    )


def _call_css(attempt: AttemptOut, higher_is_better: bool) -> str:
    """better: up; worse: down; same: noise; inconclusive: the way it points, drawn hollow;
    unjudged: no baseline to judge it against."""
    stats = attempt.stats
    if stats.delta_pct is None:
        return "unjudged"
    if stats.call == Call.same:
        return "noise"
    if stats.call in (Call.better, Call.worse):
        return "up" if stats.call == Call.better else "down"
    if stats.delta_pct == 0:
        return "noise unclear"  # (it points neither way)
    return ("up" if (stats.delta_pct > 0) == higher_is_better else "down") + " unclear"


@functools.lru_cache(maxsize=4096)
def _marker_svg(
    link: str, small: bool, x: float, kind: tuple[str, str, str], attempt_id: int, title: str,
    cause: str,
) -> str:  # fmt: skip
    """An attempt without a figure: its outcome on the chart's floor, at its place."""
    css, glyph, words = kind
    label = f"#{attempt_id} {title}: {words}" + (f": {cause[:160]}" if cause else "")
    size = " small" if small else ""
    return (
        f'<a href="{link}{attempt_id}"><text class="marker {css}{size}" x="{x}%" y="{FLOOR}%"'
        f' text-anchor="middle" dominant-baseline="central">{glyph}'
        f"<title>{escape(label)}</title></text></a>"
    )


MAX_TICKS = 10


def nice_ticks(low: float, high: float, count: int = 4) -> tuple[float, list[float]]:
    """About `count` round values strictly inside (low, high), and their step: 1, 2, 5 or
    10 times a power of ten. Computed, never stepped to: a step below the float spacing of
    the values would never advance."""
    raw = (high - low) / count
    if not math.isfinite(raw) or raw <= 0:
        return 0.0, []
    power = 10.0 ** math.floor(math.log10(raw))
    # The round multiple nearest the raw step (Heckbert's "nice numbers").
    step = power * next((m for limit, m in ((1.5, 1), (3, 2), (7, 5)) if raw / power < limit), 10)
    first = math.floor(low / step) + 1
    last = math.ceil(high / step) - 1
    ticks = [n * step for n in range(first, min(last, first + MAX_TICKS - 1) + 1)]
    return step, [t for t in ticks if low < t < high]


def tick_label(value: float, step: float, scale: float = 1.0) -> str:
    """The tick `value` (in units of `scale`) with digits enough to tell it from its
    neighbours `step` away; exponent notation past 10^15 and for steps below 10^-4."""
    true_value, true_step = Decimal(value) * Decimal(scale), Decimal(step) * Decimal(scale)
    if true_value == 0:
        return "0"
    if abs(true_value) < Decimal(10) ** 15 and true_step >= Decimal("0.0001"):
        decimals = max(0, -math.floor(true_step.log10())) if true_step < 1 else 0
        return f"{float(true_value):,.{decimals}f}"
    digits = 2 + max(0, math.floor((abs(true_value) / true_step).log10()))
    return f"{true_value:.{min(digits, 17)}g}"
