"""Attempts side by side: their calls, every figure with its interval, the flags and what
differs from the first, their root causes, and each run's figure on one axis."""

import math
import re
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from app import actions, views
from app import environment as env
from app.errors import Invalid
from app.numbers import fmt_number
from app.schemas import AttemptOut, FlagValue

MAX_COMPARED = 8
# Where the per-run strip draws, in % of its height: the labels keep the rest.
STRIP_TOP, STRIP_BOTTOM = 6.0, 88.0
ROW_NAMES = {**env.SAID, "engine_version": "engine version"}


def parse_ids(values: list[str]) -> list[int]:
    """`?ids=3,7,9` or `?ids=3&ids=7`: 2 to 8 distinct attempt ids, in the order given."""
    ids: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip().lstrip("#")
            if not part:
                continue
            if not part.isdigit() or len(part) > 18:
                raise Invalid(f"ids: {part[:40]!r} is not an attempt id")
            if int(part) not in ids:
                ids.append(int(part))
    if not 2 <= len(ids) <= MAX_COMPARED:
        raise Invalid(f"ids: compare 2 to {MAX_COMPARED} attempts (got {len(ids)})")
    return ids


def compared(session: Session, ids: list[int]) -> list[AttemptOut]:
    """Each attempt as the API shows it (judged in its own campaign), in the order asked."""
    return [views.attempt_view(session, actions.require_attempt(session, i)) for i in ids]


@dataclass(frozen=True)
class Row:
    name: str
    cells: list[str]
    differs: list[bool]  # against the first column

    @property
    def any_differs(self) -> bool:
        return any(self.differs)


def _flag_text(value: FlagValue | None) -> str:
    if value is None:
        return "—"
    if value is True:
        return "on"
    return str(value)


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def flag_label(name: str) -> str:
    """A flag as typed: `--mem-fraction-static`, `-O`; an environment variable (its case
    kept by the parse) as itself: `CUDA_VISIBLE_DEVICES`."""
    if len(name) == 1:
        return f"-{name}"
    if _ENV_NAME.fullmatch(name):
        return name
    return "--" + name.replace("_", "-")


def flag_rows(attempts: list[AttemptOut]) -> tuple[list[Row], int]:
    """The flags that differ between the attempts (against the first), and how many more
    they share. The launch command's flags, or the engine's echo where there was no command."""
    sets = [a.flags.command or a.flags.logged or {} for a in attempts]
    names = sorted({name for flags in sets for name in flags})
    rows, same = [], 0
    for name in names:
        cells = [_flag_text(flags.get(name)) for flags in sets]
        differs = [cell != cells[0] for cell in cells]
        if any(differs):
            rows.append(Row(flag_label(name), cells, differs))
        else:
            same += 1
    return rows, same


def environment_rows(attempts: list[AttemptOut]) -> list[Row]:
    """What ran underneath each, field by field; what differs from the first column marked
    (a field one of them does not know is no difference)."""
    sets = [env.flat(a.environment.model_dump()) if a.environment else {} for a in attempts]
    names = [n for n in (*env.FIELDS, *sorted({n for s in sets for n in s} - set(env.FIELDS)))
             if any(n in s for s in sets)]  # fmt: skip
    rows = []
    for name in names:
        cells = [s.get(name, "—") for s in sets]
        first = sets[0].get(name)
        differs = [first is not None and name in s and s[name] != first for s in sets]
        rows.append(Row(ROW_NAMES.get(name, name), cells, differs))
    return rows


def figure_rows(attempts: list[AttemptOut]) -> list[Row]:
    """Every figure any of them has, its mean and 95 % interval in each column."""
    names = sorted({name for a in attempts for name in a.figures})
    rows = []
    for name in names:
        cells = []
        for attempt in attempts:
            figure = attempt.figures.get(name)
            if figure is None:
                cells.append("—")
                continue
            text = f"{fmt_number(figure.mean, 2)} {figure.unit}".strip()
            if figure.ci95 is not None:
                low, high = (fmt_number(v, 2) for v in figure.ci95)
                text += f" [{low}, {high}]"
            cells.append(text + f" (n={figure.n})")
        rows.append(Row(name, cells, [False] * len(cells)))
    return rows


@dataclass(frozen=True)
class Strip:
    """Each attempt's runs of the metric as dots in its column, its mean as a bar and its
    interval as a line: the spread that decides a call, seen at once."""

    columns: list[dict[str, Any]]
    ticks: list[tuple[float, str]]

    @property
    def empty(self) -> bool:
        return not any(c["dots"] for c in self.columns)


def strip(attempts: list[AttemptOut]) -> Strip:
    values = [v for a in attempts if a.metric for v in a.metric.samples if math.isfinite(v)]
    values += [v for a in attempts for v in (a.stats.ci95 or ()) if math.isfinite(v)]
    if not values:
        return Strip([{"attempt": a, "dots": []} for a in attempts], [])
    low, high = min(values), max(values)
    pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad

    def y(value: float) -> float:
        share = (high - value) / (high - low) if high > low else 0.5
        return round(STRIP_TOP + share * (STRIP_BOTTOM - STRIP_TOP), 2)

    width = 100 / len(attempts)
    columns = []
    for index, attempt in enumerate(attempts):
        x = round(width * (index + 0.5), 2)
        samples = attempt.metric.samples if attempt.metric else []
        spread = min(width * 0.3, 6.0)
        dots = [
            (round(x - spread / 2 + spread * (n / max(len(samples) - 1, 1)), 2), y(v), v)
            for n, v in enumerate(samples)
            if math.isfinite(v)
        ]
        ci = attempt.stats.ci95
        columns.append({
            "attempt": attempt, "x": x, "dots": dots,
            "mean": y(attempt.stats.mean) if attempt.stats.mean is not None else None,
            "ci": (y(ci[0]), y(ci[1])) if ci and all(math.isfinite(v) for v in ci) else None,
        })  # fmt: skip
    ticks = [(y(v), fmt_number(v, 1)) for v in (low + pad, (low + high) / 2, high - pad)]
    return Strip(columns, ticks)


def compare_context(session: Session, ids: list[int]) -> dict[str, Any]:
    attempts = compared(session, ids)
    campaigns = {a.campaign_id: actions.require_campaign(session, a.campaign_id) for a in attempts}
    flags, flags_same = flag_rows(attempts)
    return {
        "attempts": attempts,
        "campaigns": campaigns,
        "flag_rows": flags,
        "flags_same": flags_same,
        "figure_rows": figure_rows(attempts),
        "environment_rows": environment_rows(attempts),
        "strip": strip(attempts),
        "ids": ",".join(str(i) for i in ids),
    }
