"""What to try next for a diagnosis: the rows of knowledge/advice.py whose classes hold its
error class, whose pattern matches its root cause or a candidate line, and whose setting, when
they name one, is in its excerpt or frame."""

import functools
import re
from collections.abc import Mapping
from typing import Any

from app.diagnosis.knowledge.advice import ADVICE, Advice

# More would bury the one that applies: the rows are ordered specific first.
ADVICE_LIMIT = 2

_COMPILED = [
    (row, re.compile(row.pattern), re.compile(row.context) if row.context else None)
    for row in ADVICE
]


def advice_for(diagnosis: Mapping[str, Any] | None, *, name_frame: bool = True) -> list[str]:
    """The advice for a diagnosis (`Diagnosis.to_dict()`'s shape), best first. `name_frame`:
    follow the rows that say so with the failing frame's place (not where the frame is not
    shown: the share page)."""
    if not diagnosis or not diagnosis.get("root_cause"):
        return []
    lines = (diagnosis["root_cause"], *(c["line"] for c in diagnosis.get("candidates") or []))
    frame = diagnosis.get("frame") or {}
    setting = "\n".join(
        str(part or "")
        for part in (diagnosis.get("excerpt"), frame.get("file"), frame.get("function"))
    )
    rows = _matching(diagnosis.get("error_class") or "", lines, setting)
    said = []
    for row in rows[:ADVICE_LIMIT]:
        text = row.advice
        if row.frame and name_frame and frame.get("file"):
            where = f"{frame['file']}:{frame.get('line')}"
            function = f", in {frame['function']}" if frame.get("function") else ""
            text += f" The frame: {where}{function}."
        said.append(text)
    return said


@functools.lru_cache(maxsize=4096)
def _matching(error_class: str, lines: tuple[str, ...], setting: str) -> tuple[Advice, ...]:
    """Kept: a live page asks again on each of the attempt's events."""
    return tuple(
        row
        for row, pattern, context in _COMPILED
        if error_class in row.classes
        and any(pattern.search(line) for line in lines)
        and (context is None or context.search(setting))
    )
