"""A campaign's benchmark runs as CSV, one row per run: the runner's runs with every figure
each one gave (warm-ups and failed runs included, marked), and the figures recorded without
the runner (read from a followed log, or typed), one row each."""

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session

from app import repo
from app.models import Lane
from app.schemas import AttemptOut, CampaignOut

FIXED = ("campaign_id", "campaign", "attempt_id", "title", "status", "verdict", "run",
         "warmup", "counted", "value", "metric", "host", "started", "failure")  # fmt: skip
# A spreadsheet reads a text cell that starts with one of these as a formula (CSV
# injection): such a cell is written with a leading apostrophe, as text.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass
class RunRow:
    attempt: AttemptOut
    run: int
    warmup: bool
    counted: bool
    value: float | None
    host: str | None
    started: datetime | None
    failure: str | None
    figures: dict[str, float] = field(default_factory=dict)


def run_rows(session: Session, attempts: Iterable[AttemptOut]) -> list[RunRow]:
    """Every benchmark run of these attempts, in attempt then run order; a refused launch
    ran nothing."""
    shown = [a for a in attempts if a.lane != Lane.refused]
    ids = [a.id for a in shown]
    runs = repo.runs_by_attempt(session, attempt_ids=ids)
    measured = repo.measurements_by_attempt(session, attempt_ids=ids)
    rows = []
    for attempt in shown:
        run = runs.get(attempt.id)
        if run is not None and run.bench_runs:
            for entry in run.bench_runs:
                value = entry.get("metric_recorded")
                # Numbered as people count: warm-up 1, then run 1, 2, 3
                index = int(entry.get("index") or 0)
                number = index if entry.get("warmup") else index - run.warmup
                started = entry.get("started_at")
                rows.append(RunRow(
                    attempt, number, bool(entry.get("warmup")), value is not None, value,
                    run.host,
                    # (runs recorded before their own start was kept: the launch's)
                    datetime.fromtimestamp(started, UTC) if started else run.launched_at,
                    entry.get("failure") or entry.get("invalid"), dict(entry.get("figures") or {}),
                ))  # fmt: skip
            continue
        for number, (value, created_at) in enumerate(measured.get(attempt.id, []), start=1):
            rows.append(RunRow(attempt, number, False, True, value, None, created_at, None))
    return rows


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else value


def to_csv(campaign: CampaignOut, rows: list[RunRow], mask: Callable[[str], str]) -> str:
    """`mask`: what the runs' own texts (host, failure) go through, a share link's masking
    or none; the campaign's and the attempts' come as given (a share's are masked)."""
    labels = sorted({label for row in rows for label in row.figures})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([*FIXED, *labels])
    for row in rows:
        attempt = row.attempt
        host, failure = (mask(t) if t else t for t in (row.host, row.failure))
        fixed = (campaign.id, campaign.name, attempt.id, attempt.title, attempt.status.value,
                 attempt.verdict, row.run,
                 row.warmup, row.counted, row.value, campaign.metric, host, row.started,
                 failure)  # fmt: skip
        writer.writerow([_cell(v) for v in (*fixed, *(row.figures.get(k) for k in labels))])
    return out.getvalue()
