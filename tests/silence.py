"""Rule 1 of the method, never silent on a failure: what 'nothing found' is, and the lines of a
log's last burst that forbid it."""

import re

from app.diagnosis import Diagnosis, rules
from app.diagnosis.burst import BURST_LINES, ERROR_SHAPE
from app.diagnosis.knowledge.lifecycle import SERVING
from app.diagnosis.knowledge.ready import READY_LINES
from app.diagnosis.lines import decode, strip_prefixes

PROGRESS = re.compile("|".join(f"(?:{row.pattern})" for row in (*SERVING, *READY_LINES)))


def silent(found: Diagnosis) -> bool:
    """'Nothing found': no root cause, no candidate, no crash, and no reason but the generic one."""
    return (
        found.root_cause is None
        and not found.candidates
        and found.crashed is False
        and found.crashed_reason == rules.NO_FAILURE
    )


def last_burst_errors(log: bytes) -> list[str]:
    """The error-shaped lines of a log's last burst, read from the raw bytes (not from what
    the scanner kept): its last lines after the last sign of normal progress."""
    tail: list[str] = []
    for raw in reversed(log.split(b"\n")):  # (only the tail is decoded)
        line = decode(raw)
        if tail or line.strip():
            tail.append(line)
        if len(tail) == BURST_LINES:
            break
    tail.reverse()
    after = max((i for i, line in enumerate(tail) if PROGRESS.search(line)), default=-1)
    return [
        line
        for line in tail[after + 1 :]
        if (ERROR_SHAPE.search(line) or ERROR_SHAPE.search(strip_prefixes(line)))
        and not rules.HARD_NOISE.search(strip_prefixes(line))
    ]
