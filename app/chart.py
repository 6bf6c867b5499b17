"""The throughput chart: every measured attempt against the baseline in force and the
target, as server-rendered SVG (so it shows in the share view, in print, without JS)."""

from dataclasses import dataclass

from app.schemas import AttemptOut, CampaignOut

WIDTH, HEIGHT = 900, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 14, 28


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    attempt: AttemptOut
    css: str  # up, down, noise


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    points: list[Point]
    baseline_path: str  # stepped: each attempt against the baseline of its time
    target_y: float | None
    ticks: list[tuple[float, str]]
    metric: str

    @property
    def empty(self) -> bool:
        return not self.points


def build_chart(campaign: CampaignOut, attempts: list[AttemptOut]) -> Chart:
    measured = [a for a in attempts if a.metric_value is not None]
    values = [a.metric_value for a in measured if a.metric_value is not None]
    values += [a.baseline for a in measured if a.baseline is not None]
    if campaign.target is not None:
        values.append(campaign.target)
    if campaign.baseline is not None:
        values.append(campaign.baseline)
    if not measured or not values:
        return Chart(WIDTH, HEIGHT, [], "", None, [], campaign.metric)
    low, high = min(values), max(values)
    pad = (high - low) * 0.1 or max(abs(high) * 0.1, 1.0)
    low, high = max(0.0, low - pad), high + pad

    def y_of(value: float) -> float:
        return TOP + (high - value) / (high - low) * (HEIGHT - TOP - BOTTOM)

    step = (WIDTH - LEFT - RIGHT) / max(len(measured), 1)
    points: list[Point] = []
    path: list[str] = []
    for index, attempt in enumerate(measured):
        x = LEFT + step * (index + 0.5)
        assert attempt.metric_value is not None
        css = "noise" if attempt.delta_within_noise else ("up" if attempt.improved else "down")
        points.append(Point(round(x, 1), round(y_of(attempt.metric_value), 1), attempt, css))
        if attempt.baseline is not None:
            y = round(y_of(attempt.baseline), 1)
            left, right = round(x - step / 2, 1), round(x + step / 2, 1)
            path.append(f"{'M' if not path else 'L'}{left},{y} L{right},{y}")
    ticks = [(round(y_of(v), 1), f"{v:,.0f}") for v in _nice_ticks(low, high)]
    target_y = round(y_of(campaign.target), 1) if campaign.target is not None else None
    return Chart(WIDTH, HEIGHT, points, " ".join(path), target_y, ticks, campaign.metric)


def _nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    raw = (high - low) / count
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    step = max(1.0, round(raw / magnitude) * magnitude)
    first = (int(low / step) + 1) * step
    ticks = []
    value = first
    while value < high:
        ticks.append(value)
        value += step
    return ticks
