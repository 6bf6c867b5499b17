"""The diagnosis engine: feed a server log's bytes in any chunks, ask what happened.

Pure: no I/O. The same engine serves `campaign-dash diagnose`, the tailer and the tests.
"""

from dataclasses import dataclass, field
from typing import Any

from app.diagnosis.analysis import analyze
from app.diagnosis.frames import Frame
from app.diagnosis.rules import ERROR_CLASSES
from app.diagnosis.scanner import Figure, Line, Scanner

__all__ = [
    "ERROR_CLASSES",
    "Candidate",
    "Diagnoser",
    "Diagnosis",
    "Frame",
    "Throughput",
    "diagnose_bytes",
]


@dataclass(frozen=True)
class Finding:
    text: str
    offset: int
    line: int


@dataclass(frozen=True)
class Candidate:
    """One of the lines that may explain the failure, as the log has it."""

    line: str
    line_no: int
    offset: int


@dataclass(frozen=True)
class Throughput:
    value: float
    unit: str
    label: str
    offset: int
    line: int


@dataclass(frozen=True)
class Diagnosis:
    ready: bool | None
    crashed: bool | None  # None: nothing in the log tells (crashed_reason says why)
    root_cause: str | None
    error_class: str | None
    fingerprint: str | None
    excerpt: str | None
    throughput: list[Throughput] = field(default_factory=list)
    root_cause_at: Finding | None = None
    ready_at: Finding | None = None
    excerpt_first_line: int | None = None
    bytes_read: int = 0
    lines_read: int = 0
    # Up to three lines that may explain the failure, best first: the root cause, then
    # the runners-up an engineer reads when it is wrong.
    candidates: list[Candidate] = field(default_factory=list)
    # The innermost frame of the failing traceback outside the standard library.
    frame: Frame | None = None
    # Why `crashed` reads as it does: the line that decided it, or why nothing could.
    crashed_reason: str = ""
    # Set where the log says another process failed and holds no error of its own yet: what
    # the root cause is waiting for ("waiting for the failing process's error").
    pending: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # Not asdict(): it deep-copies value by value, and the ingest asks on every commit
        # for a log's hundreds of figures (a fifth of a catch-up's time went there).
        body = {name: getattr(self, name) for name in self.__dataclass_fields__}
        body["throughput"] = [dict(vars(figure)) for figure in self.throughput]
        body["candidates"] = [dict(vars(candidate)) for candidate in self.candidates]
        body["frame"] = dict(vars(self.frame)) if self.frame is not None else None
        for name in ("root_cause_at", "ready_at"):
            finding = body[name]
            body[name] = dict(vars(finding)) if finding is not None else None
        return body


def _finding(line: Line | None) -> Finding | None:
    return Finding(line.text, line.offset, line.number) if line else None


class Diagnoser:
    """Incremental: `feed()` bytes as they arrive, `diagnosis()` at any moment."""

    def __init__(self, ready_pattern: str | None = None) -> None:
        self._scanner = Scanner(ready_pattern)
        self._cached: Diagnosis | None = None

    def feed(self, data: bytes) -> None:
        if data:
            self._scanner.feed(data)
            self._cached = None

    def skip(self, count: int) -> None:
        """Account for bytes of the log that are no longer there (dropped past the cap)."""
        if count:
            self._scanner.skip(count)
            self._cached = None

    def settled_throughput(self, label: str) -> list[Throughput]:
        """The figures with this label that no later byte can change, in log order: what
        measurements are made of, so that a log read as it grows and the same log read at
        once give the same ones."""
        return [
            Throughput(f.value, f.unit, f.label, f.offset, f.number)
            for f in self._scanner.settled_figures(label)
        ]

    def diagnosis(self) -> Diagnosis:
        if self._cached is None:
            self._cached = self._diagnose()
        return self._cached

    def _diagnose(self) -> Diagnosis:
        scanner = self._scanner
        kept = scanner.kept_lines()
        ready_lines = list(scanner.ready_lines)
        pending = scanner.pending_line()
        figures: list[Figure] = scanner.figures()
        if pending is not None:
            # The unfinished last line counts as it reads now.
            kept = [*kept, pending]
            if scanner.pending_says_ready():
                ready_lines.append(pending)
        result = analyze(
            kept,
            ready_lines,
            scanner.first_serving_offset(),
            scanner.last_serving_line(),
            scanner.lines_seen + (1 if pending else 0),
        )
        excerpt = "\n".join(line.text for line in result.excerpt) if result.excerpt else None
        return Diagnosis(
            ready=result.ready,
            crashed=result.crashed,
            root_cause=result.root.line.text if result.root else None,
            error_class=result.error_class,
            fingerprint=result.fingerprint,
            excerpt=excerpt,
            throughput=[Throughput(f.value, f.unit, f.label, f.offset, f.number) for f in figures],
            root_cause_at=_finding(result.root.line) if result.root else None,
            ready_at=_finding(result.ready_line),
            excerpt_first_line=result.excerpt[0].number if result.excerpt else None,
            bytes_read=scanner.bytes_seen,
            lines_read=scanner.lines_seen + (1 if pending else 0),
            candidates=[Candidate(c.text, c.number, c.offset) for c in result.candidates],
            frame=result.frame,
            crashed_reason=result.crashed_reason,
            pending=result.pending,
        )


def diagnose_bytes(data: bytes, ready_pattern: str | None = None) -> Diagnosis:
    diagnoser = Diagnoser(ready_pattern)
    diagnoser.feed(data)
    return diagnoser.diagnosis()
