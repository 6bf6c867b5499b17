"""Incremental scan of a log's bytes: keeps only the lines that matter and the figures.

Speed comes from never looking at most lines: one Hyperscan pass per 1 MiB window finds
rare literals (errors, tracebacks, readiness); only lines around those hits are decoded
and kept. Periodic throughput figures are summarized: every figure of the first
`FIRST_FIGURES` lines of a kind, then the last line of that kind in each window.
Everything here depends on the bytes alone, never on how they were split into chunks.
"""

import re
from collections import deque
from dataclasses import dataclass, field

import hyperscan

from app.diagnosis.lines import decode
from app.diagnosis.rules import FRAME

WINDOW = 1 << 20
BEFORE = 8  # lines kept before an interesting line
AFTER = 40  # lines kept after one; a traceback keeps extending this
MAX_LINE_BYTES = 1 << 20  # a longer line keeps this prefix and is marked as cut
MAX_KEPT_CHARS = 16_384  # of a kept line's text
HEAD_LINES = 20_000
TAIL_LINES = 20_000
FIRST_FIGURES = 100

# Rare literals that make a line worth reading, and what kind of hint each gives.
_ANCHORS: list[tuple[bytes, int]] = [
    (lit, 0)
    for lit in (
        b"rror", b"RROR", b"xception", b"Traceback", b"Killed", b"killed", b"ailed", b"FAILED",
        b"ssert", b"what()", b"Cannot allocate memory", b"oom-kill", b"oom_kill", b"SIGSEGV",
        b"Segmentation fault", b"core dumped", b"Fatal", b"FATAL", b"Watchdog", b"timed out",
        b"Timeout", b"timeout", b"NCCL WARN", b"return code", b"exit code", b"exit status",
        b"larger than the maximum", b"Try increasing", b"not supported", b"no kernel image",
        b"[E]", b"Terminated", b"Aborted", b"sigquit", b"Cuda failure", b"Last error",
        b"Call stack:", b"Message: ", b"Arguments: ", b"Pyspy dump", b"py-spy dump", b"(idle): ",
    )
] + [(b"out of memory", hyperscan.HS_FLAG_CASELESS)]  # fmt: skip

READY_LITERALS = (
    b"ready to roll", b"Application startup complete", b"Uvicorn running on",
    b"server is listening", b"HTTP server listening", b"Started server process",
)  # fmt: skip
# Present-or-not per window (Hyperscan reports them once): serving has begun.
_RUNTIME_LITERALS = (
    b"Decode batch",
    b"Prefill batch",
    b'HTTP/1.1" 200',
    b"Avg generation throughput",
)

_ANCHOR_ID, _READY_ID, _RUNTIME_ID, _FIGURE_ID, _CUSTOM_READY_ID = 0, 1000, 2000, 3000, 4000


@dataclass(frozen=True)
class FigureKind:
    literal: bytes
    pattern: re.Pattern[bytes]


# Each pattern yields (label, value, unit) from one line.
FIGURE_KINDS = (
    # sglang: "gen throughput (token/s): 1397.13", "input throughput (token/s): 559.53"
    FigureKind(
        b" throughput (token/s): ",
        re.compile(rb"(\w+ throughput) \((token/s)\): ([0-9]+(?:\.[0-9]+)?)"),
    ),
    # vLLM: "Avg prompt throughput: 1254.4 tokens/s, Avg generation throughput: 29.2 tokens/s"
    FigureKind(
        b" throughput: ",
        re.compile(rb"((?:Avg )?\w+ throughput): ([0-9]+(?:\.[0-9]+)?) (tokens/s|tok/s|token/s)"),
    ),
    # Benchmark summaries: "Output token throughput (tok/s):  5624.71",
    # "Request goodput (req/s): 3.75"
    *(
        FigureKind(
            literal,
            re.compile(
                rb"^\s*([A-Z][\w ]*?(?:throughput|goodput)) \((tok/s|tokens/s|token/s|req/s)\):"
                rb"\s+([0-9]+(?:\.[0-9]+)?)",
                re.M,
            ),
        )
        for literal in (b" (tok/s):", b" (req/s):")
    ),
    # Plain figures: "Throughput: 82.1 tok/s", "82 tok/s"
    FigureKind(
        b"tok/s",
        re.compile(
            rb"(?:([A-Za-z][\w /-]{0,40}?)\s*[:=]\s*)?([0-9]+(?:\.[0-9]+)?)\s*(tok/s)\b(?!\))"
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Line:
    offset: int
    number: int
    text: str
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Figure:
    label: str
    value: float
    unit: str
    offset: int
    number: int


def _figures_in(kind_index: int, raw: bytes, offset: int, number: int) -> list[Figure]:
    kind = FIGURE_KINDS[kind_index]
    figures = []
    for match in kind.pattern.finditer(raw):
        if kind_index in (0, 2, 3):
            label, unit, value = match.group(1), match.group(2), match.group(3)
        elif kind_index == 1:
            label, value, unit = match.group(1), match.group(2), match.group(3)
        else:
            if any(k.literal in raw for k in FIGURE_KINDS[:-1]):
                continue  # counted by a more specific kind
            label = match.group(1) or b"throughput"
            value, unit = match.group(2), match.group(3)
        figures.append(
            Figure(
                label.decode().strip(), float(value), unit.decode(), offset + match.start(), number
            )
        )
    return figures


@dataclass
class _Summary:
    """Figures of one kind: all of the first lines, then the last line of each window."""

    first: list[Figure] = field(default_factory=list)
    first_lines: int = 0
    last_first_offset: int = -1
    window_last: dict[int, list[Figure]] = field(default_factory=dict)


def compile_database(ready_pattern: str | None) -> hyperscan.Database:
    expressions, ids, flags = [], [], []

    def add(expression: bytes, ident: int, flag: int) -> None:
        expressions.append(expression)
        ids.append(ident)
        flags.append(flag)

    for literal, flag in _ANCHORS:
        add(re.escape(literal), _ANCHOR_ID, flag)
    for literal in READY_LITERALS:
        add(re.escape(literal), _READY_ID, 0)
    for literal in _RUNTIME_LITERALS:
        add(re.escape(literal), _RUNTIME_ID, hyperscan.HS_FLAG_SINGLEMATCH)
    for index, kind in enumerate(FIGURE_KINDS):
        add(re.escape(kind.literal), _FIGURE_ID + index, hyperscan.HS_FLAG_SINGLEMATCH)
    if ready_pattern:
        add(ready_pattern.encode(), _CUSTOM_READY_ID, 0)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    except hyperscan.error as error:
        raise ValueError(f"readiness pattern {ready_pattern!r} cannot be used: {error}") from None
    return database


class Scanner:
    """Feed bytes in any chunks; read `kept_lines()`, `figures()` and the markers."""

    def __init__(self, ready_pattern: str | None = None) -> None:
        self._database = compile_database(ready_pattern)
        self.bytes_seen = 0
        self.lines_seen = 0
        self._pending = b""
        self._pending_offset = 0
        self._pending_cut = False
        self._carry: deque[tuple[int, bytes]] = deque(maxlen=BEFORE)  # (offset, raw) of last lines
        self._after = 0
        self._last_kept_number = 0
        self.head: list[Line] = []
        self.tail: deque[Line] = deque(maxlen=TAIL_LINES)
        self.lines_dropped = 0
        self.ready_lines: list[Line] = []
        self.first_runtime_offset: int | None = None
        self._summaries = [_Summary() for _ in FIGURE_KINDS]
        self._hits: list[tuple[int, int]] = []

    # --- input ---------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.bytes_seen += len(data)
        if self._pending_cut:
            newline = data.find(b"\n")
            if newline < 0:
                return  # still inside an over-long line: its prefix is already kept
            self._process_cut_line()
            data = data[newline + 1 :]
            self._pending_offset = self.bytes_seen - len(data)
        buffer = self._pending + data if self._pending else data
        last_newline = buffer.rfind(b"\n")
        if last_newline < 0:
            self._hold(buffer)
            return
        block = buffer[: last_newline + 1]
        block_offset = self._pending_offset
        self._pending = b""
        self._pending_offset = block_offset + len(block)
        self._process_block(block, block_offset)
        self._hold(buffer[last_newline + 1 :])

    def _hold(self, partial: bytes) -> None:
        if len(partial) > MAX_LINE_BYTES:
            partial = partial[:MAX_LINE_BYTES]
            self._pending_cut = True
        self._pending = partial

    def _process_cut_line(self) -> None:
        offset = self._pending_offset
        prefix = self._pending
        self._pending = b""
        self._pending_cut = False
        self._process_block(prefix + b"\n", offset, cut=True)

    def pending_line(self) -> Line | None:
        """The last line, still without its newline (what a reader sees now)."""
        if not self._pending:
            return None
        text = decode(self._pending[:MAX_KEPT_CHARS])
        return Line(self._pending_offset, self.lines_seen + 1, text, self._pending_cut)

    # --- blocks of whole lines ---------------------------------------------------

    def _process_block(self, block: bytes, block_offset: int, cut: bool = False) -> None:
        start = 0
        while start < len(block):
            absolute = block_offset + start
            boundary = (absolute // WINDOW + 1) * WINDOW - block_offset
            if boundary < len(block):
                end = block.find(b"\n", boundary - 1) + 1
                if end <= start:
                    end = len(block)
            else:
                end = len(block)
            segment = block[start:end] if (start, end) != (0, len(block)) else block
            self._process_segment(segment, block_offset + start, absolute // WINDOW, cut)
            start = end

    def _on_match(self, ident: int, _from: int, to: int, _flags: int, _context: object) -> None:
        self._hits.append((ident, to))

    def _process_segment(self, segment: bytes, offset: int, window: int, cut: bool) -> None:
        self._hits = []
        self._database.scan(segment, match_event_handler=self._on_match)
        first_number = self.lines_seen + 1
        newlines = segment.count(b"\n")
        interesting: set[int] = set()
        ready_starts: set[int] = set()
        for ident, end in self._hits:
            if ident == _RUNTIME_ID:
                position = offset + end
                if self.first_runtime_offset is None or position < self.first_runtime_offset:
                    self.first_runtime_offset = position
                continue
            if _FIGURE_ID <= ident < _FIGURE_ID + len(FIGURE_KINDS):
                self._collect_figures(
                    ident - _FIGURE_ID, segment, offset, window, first_number, newlines
                )
                continue
            line_start = segment.rfind(b"\n", 0, max(end - 1, 0)) + 1
            interesting.add(line_start)
            if ident in (_READY_ID, _CUSTOM_READY_ID):
                ready_starts.add(line_start)
        self._keep_lines(segment, offset, first_number, sorted(interesting), ready_starts, cut)
        self.lines_seen += newlines

    def _keep_lines(
        self,
        segment: bytes,
        offset: int,
        first_number: int,
        hits: list[int],
        ready_starts: set[int],
        cut: bool,
    ) -> None:
        cursor, number = 0, first_number
        hit_index = 0
        size = len(segment)
        while cursor < size:
            if self._after <= 0:
                while hit_index < len(hits) and hits[hit_index] < cursor:
                    hit_index += 1
                if hit_index == len(hits):
                    break
                target = hits[hit_index]
                start = target
                for _ in range(BEFORE):
                    if start <= cursor:
                        break
                    start = segment.rfind(b"\n", 0, start - 1) + 1
                start = max(start, cursor)
                if start == 0 and target < _nth_line_start(segment, BEFORE):
                    self._keep_carry(first_number, BEFORE - segment.count(b"\n", 0, target))
                number += segment.count(b"\n", cursor, start)
                cursor = start
                self._after = segment.count(b"\n", start, target) + 1
            end = segment.find(b"\n", cursor)
            raw = segment[cursor:end]
            if hit_index < len(hits) and hits[hit_index] == cursor:
                self._after = max(self._after, AFTER + 1)
                hit_index += 1
            line = self._keep(raw, offset + cursor, number, cut)
            if cursor in ready_starts:
                self.ready_lines.append(line)
            if FRAME.search(line.text):
                self._after = max(self._after, 6)
            self._after -= 1
            cursor = end + 1
            number += 1
        # The last lines of every segment: the context before a hit in the next one.
        last_lines: list[tuple[int, bytes]] = []
        line_end = size
        while line_end > 0 and len(last_lines) < BEFORE:
            line_start = segment.rfind(b"\n", 0, line_end - 1) + 1
            last_lines.append((offset + line_start, segment[line_start : line_end - 1]))
            line_end = line_start
        last_lines.reverse()
        carried = [*self._carry, *last_lines][-BEFORE:]
        self._carry.clear()
        self._carry.extend(carried)

    def _keep_carry(self, first_number: int, wanted: int) -> None:
        carried = list(self._carry)[-wanted:] if wanted > 0 else []
        for index, (offset, raw) in enumerate(carried):
            number = first_number - len(carried) + index
            if number > self._last_kept_number:
                self._keep(raw, offset, number, False)

    def _keep(self, raw: bytes, offset: int, number: int, cut: bool) -> Line:
        line = Line(offset, number, decode(raw[:MAX_KEPT_CHARS])[:MAX_KEPT_CHARS], cut)
        if number <= self._last_kept_number:
            return line
        self._last_kept_number = number
        if len(self.head) < HEAD_LINES:
            self.head.append(line)
        else:
            if len(self.tail) == self.tail.maxlen:
                self.lines_dropped += 1
            self.tail.append(line)
        return line

    # --- throughput --------------------------------------------------------------

    def _collect_figures(
        self, kind: int, segment: bytes, offset: int, window: int, first_number: int, newlines: int
    ) -> None:
        summary = self._summaries[kind]
        literal = FIGURE_KINDS[kind].literal
        position, counted, number = 0, 0, first_number
        # Lines with the literal but no figure count too: the search stays bounded.
        while summary.first_lines < FIRST_FIGURES:
            found = segment.find(literal, position)
            if found < 0:
                return
            start = segment.rfind(b"\n", 0, found) + 1
            end = segment.find(b"\n", found)
            number += segment.count(b"\n", counted, start)
            counted = start
            figures = _figures_in(kind, segment[start:end], offset + start, number)
            summary.first_lines += 1
            summary.first.extend(figures)
            summary.last_first_offset = offset + start
            position = end + 1
        found = segment.rfind(literal)
        if found < 0:
            return
        start = segment.rfind(b"\n", 0, found) + 1
        if offset + start <= summary.last_first_offset:
            return
        end = segment.find(b"\n", found)
        number = first_number + newlines - segment.count(b"\n", start)
        figures = _figures_in(kind, segment[start:end], offset + start, number)
        if figures:
            summary.window_last[window] = figures

    def figures(self) -> list[Figure]:
        found: list[Figure] = []
        for summary in self._summaries:
            found.extend(summary.first)
            for figures in summary.window_last.values():
                found.extend(figures)
        return sorted(found, key=lambda f: f.offset)

    def kept_lines(self) -> list[Line]:
        return [*self.head, *self.tail]


def _nth_line_start(segment: bytes, n: int) -> int:
    position = 0
    for _ in range(n):
        newline = segment.find(b"\n", position)
        if newline < 0:
            return len(segment)
        position = newline + 1
    return position
