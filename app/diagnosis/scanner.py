"""Incremental scan of a log's bytes: keeps only the lines that matter and the figures.

Speed comes from never looking at most lines: one Hyperscan pass per 1 MiB window finds
rare literals (errors, tracebacks, readiness); only lines around those hits are decoded
and kept. The newlines behind line numbers are counted on a helper thread during that
pass. Throughput figures are summarized by kind: every figure of a kind's first lines
(the first 100 of a periodic serving statistic, the first 10,000 of a benchmark's results),
then the last line of that kind in each window. A line longer than `MAX_LINE_BYTES` is read
as its first `MAX_LINE_BYTES` bytes, however it arrives.
Everything here depends on the bytes alone, never on how they were split into chunks.
"""

import functools
import math
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import hyperscan

from app.diagnosis.hsdb import cached_database, scratch_for
from app.diagnosis.knowledge.figures import FIGURE_KINDS, FigureKind
from app.diagnosis.knowledge.lifecycle import FINISHED, INSTALLED, LAUNCHES, STARTED
from app.diagnosis.knowledge.ready import READY_LINES
from app.diagnosis.lines import decode
from app.diagnosis.rules import FRAME

WINDOW = 1 << 20
BEFORE = 8  # lines kept before an interesting line
AFTER = 40  # lines kept after one; a traceback keeps extending this
MAX_LINE_BYTES = 1 << 20  # a longer line keeps this prefix and is marked as cut
MAX_KEPT_CHARS = 16_384  # of a kept line's text
HEAD_LINES = 20_000
TAIL_LINES = 20_000
MAX_READY_LINES = 100
# Line numbers need every newline counted, and counting holds the GIL while the Hyperscan
# pass lets go of it: a helper thread counts a segment while the scan runs. Below this size
# handing the count over costs more than it saves.
OVERLAP_BYTES = 64 << 10
# Lines shorter than this on average are counted by bytes.count (see `count_newlines`).
SHORT_LINE = 32
# bytes.replace copies; kept this small, the copies stay in the cache and in malloc's heap
# (1 MiB ones were mapped afresh each time in bench/newlines.py: 4x the time, page faults).
COUNT_PIECE = 32 << 10
_NEWLINE_COUNTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scan-newlines")

# Rare literals that make a line worth reading. Few and short on purpose: Hyperscan's
# speed falls with every literal, and each of these covers a family ("illed": Killed, killed).
# Launch lines bring their own (knowledge/lifecycle.py), readiness lines are anchors too.
_ANCHORS: list[tuple[bytes, int]] = [
    (lit, 0)
    for lit in (
        b"rror", b"RROR", b"xception", b"Traceback", b"illed", b"ailed", b"ailure", b"FAIL",
        b"ssert", b"what()", b"emory", b"oom-k", b"oom_k", b"SIG", b"egmentation", b"egfault",
        b"dumped",
        b"atal", b"ATAL", b"Watchdog", b"imeout", b"imed out", b"NCCL WARN", b"xit code",
        b"xit status", b"xited", b"eturn code", b"larger than the maximum", b"Try increasing",
        b"supported", b"kernel image", b"[E]", b"[ERR]", b"erminated", b"borted", b"sigquit",
        b"spy dump",
        b"(idle)", b"xitcode", b"(cuda",
        b"panicked", b"opcode", b"llegal instruction", b"ardware instruction", b"as wrong s",
        b"ompiled with",
        b"uplicate GPU", b"isaligned address", b"device function", b"launch failure",
        b"annot ", b"ould not", b"ouldn't", b"nable to", b"non-zero status",
        b"o space left", b"o such file", b"ouble free", b"ignal (", b"eyboardInterrupt",
        b"econd interrupt", b"Prompt executed in", b"nbound variable", b"truncated to fit",
        # a missing file or command in the host's language ("No existe el archivo o el
        # directorio", "Befehl nicht gefunden")
        b"ommand not found", b"o existe el archivo", b"nicht gefunden", b"Aucun fichier",
        "такого файла".encode(), "没有那个文件".encode(),
        b"ibrary not loaded", b"ailed assertion", b"sh: abort", b"SSERT: ",
        # a shell's "core dumped", "segmentation fault" and "aborted" in Chinese, German,
        # French, Spanish and Russian
        "核心已转储".encode(), "段错误".encode(), b"Speicherzugriffsfehler",
        b"rreur de segmentation", "ción de segmento".encode(), b"bortado", b"bgebrochen",
        "сегментирования".encode(), "Аварийный".encode(),
        # the cause under a Rust tool's error report (uv's "╰─▶ Because ...")
        "╰─▶".encode(),
        b", exiting",  # NVSHMEM's fatal exit
        b"nvalid __", b"Shared or Local Address",  # compute-sanitizer's memcheck
        b"o module named",  # python -m's own word ("venv/bin/python: No module named x")
        b"nexpected EOF",  # bash on a quote left open
        b"larm clock",  # a shell on a job its own alarm killed (SIGALRM)
        b"Oops(",  # ik_llama.cpp's check finding a NaN, before its abort
        b"Kernel crashed",  # VS Code's Jupyter on a kernel that died
        b"is insufficient for CUDA",  # the CUDA runtime on a driver too old for it
    )
]  # fmt: skip

# Severity prefixes with no rare literal of their own: glog's "E1201 10:00:00.123456" and
# "F1201 ...", c10's "[E1201 10:00:00.000 file.cpp:12]" and "[E file.cpp:12]" (torch < 2.3).
_SEVERITY_ANCHORS = (
    rb"[EF](?:20\d\d)?[01]\d[0-3]\d \d\d:\d\d:\d\d\.",  # (month and day: fewer false starts)
    rb"\[[EF](?:\d{3,4} [\d:.]+)? [\w.-]+\.(?:cpp|cc|h|py):\d+\]",
    # TensorFlow's and XLA's "2025-03-23 20:28:49.804409: E external/xla/...cc:654]", and
    # llama.cpp's "0.00.065.436 E srv  start: ..."
    rb"\d\d:\d\d\.\d{6}: [EF] +(?:\d+ )?[\w/.-]+:\d+\]",
    rb"\d\.\d\d\.\d{3}\.\d{3} [EF] ",
    # the HIP runtime's error records (":1:rocdevice.cpp  :3434: 38724 us: ", ":0:" a guarantee)
    rb":[01]:[\w./-]+\s*:\s*\d+\s*:\s*\d+ us:",
    # Ascend CANN's error records ("EZ1001: [PID: 55172] ...", "EZ9999  [InferShape] ...")
    rb"\bE[A-Z0-9]\d{4}(?:: |  \[)",
)

_ANCHOR_ID, _READY_ID, _FIGURE_ID, _CUSTOM_READY_ID = 0, 1000, 3000, 4000
# Kinds searched with bytes.find in every window; the others where Hyperscan saw their anchor.
_DENSE_KINDS = frozenset(index for index, kind in enumerate(FIGURE_KINDS) if kind.dense)
_ANCHOR_RES = {kind.anchor: re.compile(kind.anchor) for kind in FIGURE_KINDS if kind.anchor}


def _counts(kind: FigureKind, raw: bytes) -> bool:
    """Whether a line is one of this kind's: it holds the literal and, when the kind has one,
    the anchor (a rare kind is looked for only where Hyperscan saw its anchor, so a line
    without it would count or not depending on its neighbours)."""
    if kind.literal not in raw:
        return False
    return kind.anchor is None or _ANCHOR_RES[kind.anchor].search(raw) is not None


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
    if kind.defers and any(other.literal in raw for other in FIGURE_KINDS[:kind_index]):
        return []  # counted by a more specific kind
    figures = []
    for match in kind.pattern.finditer(raw):
        figure = float(match["value"])
        if not math.isfinite(figure):
            continue  # a 400-digit "figure" is not a measurement; inf breaks every mean
        groups = match.groupdict()
        label, unit = groups.get("label") or kind.label, groups.get("unit") or kind.unit
        figures.append(
            Figure(label.decode().strip(), figure, unit.decode(), offset + match.start(), number)
        )
    return figures


@dataclass
class _Summary:
    """Figures of one kind: all of the first lines, then the last line of each window."""

    first: list[Figure] = field(default_factory=list)
    first_lines: int = 0
    window_last: dict[int, list[Figure]] = field(default_factory=dict)


def count_newlines(buffer: bytes, start: int, end: int) -> int:
    """`buffer.count(b"\\n", start, end)`, faster. Before Python 3.14 bytes.count is a byte
    loop; bytes.replace finds each newline with memchr and counts 2-3.5x faster on lines of a
    log's usual length (bench/README.md), but slower on very short ones: those, seen at the
    start or past one newline per `SHORT_LINE` bytes of a piece, are left to the byte loop."""
    if buffer.count(b"\n", start, min(end, start + 128 * SHORT_LINE)) >= 128:
        return buffer.count(b"\n", start, end)
    total = 0
    for piece in range(start, end, COUNT_PIECE):
        part = buffer[piece : min(piece + COUNT_PIECE, end)]  # replace takes no bounds
        most = len(part) // SHORT_LINE
        found = len(part) - len(part.replace(b"\n", b"", most))
        total += found if found < most else part.count(b"\n")
    return total


def _count_beside(buffer: bytes, start: int, end: int) -> Future[int] | None:
    """The newlines of buffer[start:end], counted on the helper thread; None where that costs
    more than it saves (a small segment) or cannot be (the interpreter is exiting while a
    daemon thread still feeds a scanner)."""
    if end - start < OVERLAP_BYTES:
        return None
    try:
        return _NEWLINE_COUNTER.submit(count_newlines, buffer, start, end)
    except RuntimeError:
        return None


@functools.lru_cache(maxsize=64)
def compile_database(ready_pattern: str | None) -> hyperscan.Database:
    """Compiled once per readiness pattern (a compile costs about 40 ms: more than reading
    most logs); a database is read-only, so every scanner of that pattern shares it."""
    expressions, ids, flags = [], [], []

    def add(expression: bytes, ident: int, flag: int) -> None:
        expressions.append(expression)
        ids.append(ident)
        flags.append(flag)

    for literal, flag in _ANCHORS:
        add(re.escape(literal), _ANCHOR_ID, flag)
    for expression in _SEVERITY_ANCHORS:
        add(expression, _ANCHOR_ID, 0)
    for launch in LAUNCHES:
        if launch.anchor:
            add(re.escape(launch.anchor.encode()), _ANCHOR_ID, 0)
    # (each pattern read as `re` reads it on one line: "$" at every line's end, not only at
    # the end of whatever block of lines the chunks made)
    for ready in READY_LINES:
        add(ready.pattern.encode(), _READY_ID, hyperscan.HS_FLAG_MULTILINE)
    for kept in (*FINISHED, *STARTED, *INSTALLED):
        add(kept.pattern.encode(), _ANCHOR_ID, hyperscan.HS_FLAG_MULTILINE)
    for index, kind in enumerate(FIGURE_KINDS):
        if index not in _DENSE_KINDS:
            add(kind.anchor or re.escape(kind.literal), _FIGURE_ID + index, 0)
    if ready_pattern:
        add(ready_pattern.encode(), _CUSTOM_READY_ID, 0)
    try:
        return cached_database("scan", expressions, ids, flags)
    except hyperscan.error as error:
        raise ValueError(f"readiness pattern {ready_pattern!r} cannot be used: {error}") from None


class Scanner:
    """Feed bytes in any chunks; read `kept_lines()`, `figures()` and the ready lines.

    Internally every step works on (buffer, start, end) so that a chunk is never copied.
    """

    def __init__(self, ready_pattern: str | None = None) -> None:
        self._database = compile_database(ready_pattern)
        self.bytes_seen = 0
        self.lines_seen = 0
        self._pending = b""
        self._pending_offset = 0
        self._pending_cut = False
        self._carry: list[tuple[int, bytes, bool]] = []  # (offset, raw, cut): last lines seen
        self._after = 0
        self._last_kept_number = 0
        self.head: list[Line] = []
        self.tail: deque[Line] = deque(maxlen=TAIL_LINES)
        self.ready_lines: list[Line] = []
        self._summaries = [_Summary() for _ in FIGURE_KINDS]
        self._hits: list[tuple[int, int]] = []

    # --- input ---------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.bytes_seen += len(data)
        start = 0
        if self._pending_cut:
            newline = data.find(b"\n")
            if newline < 0:
                return  # still inside an over-long line: its prefix is already kept
            self._finish_cut_line()
            start = newline + 1
            self._pending_offset = self.bytes_seen - len(data) + start
        elif self._pending:
            newline = data.find(b"\n")
            if newline < 0:
                self._hold(self._pending + data)
                return
            line = self._pending + data[: newline + 1]
            self._pending = b""
            self._process_block(line, 0, len(line), self._pending_offset)
            self._pending_offset += len(line)
            start = newline + 1
        last_newline = data.rfind(b"\n", start)
        if last_newline < 0:
            self._hold(data[start:])
            return
        self._process_block(data, start, last_newline + 1, self._pending_offset)
        self._pending_offset += last_newline + 1 - start
        self._hold(data[last_newline + 1 :])

    def skip(self, count: int) -> None:
        """Bytes that are gone (a dropped middle): offsets go on, the line in progress is cut."""
        self.bytes_seen += count
        self._pending, self._pending_cut = b"", False
        self._pending_offset = self.bytes_seen
        self._after = 0

    def _hold(self, partial: bytes) -> None:
        if len(partial) > MAX_LINE_BYTES:
            partial = partial[:MAX_LINE_BYTES]
            self._pending_cut = True
        self._pending = partial

    def _finish_cut_line(self) -> None:
        line = self._pending + b"\n"
        self._pending = b""
        self._pending_cut = False
        self._process_block(line, 0, len(line), self._pending_offset, cut=True)

    def pending_line(self) -> Line | None:
        """The last line, still without its newline (what a reader sees now)."""
        if not self._pending:
            return None
        text = decode(self._pending[:MAX_KEPT_CHARS])
        return Line(self._pending_offset, self.lines_seen + 1, text, self._pending_cut)

    def pending_says_ready(self) -> bool:
        """Whether the unfinished last line is a readiness line (a pasted log's last line
        often has no newline)."""
        if not self._pending:
            return False
        hits: list[int] = []

        def on_match(ident: int, _from: int, _to: int, _flags: int, _context: object) -> None:
            hits.append(ident)

        self._database.scan(
            self._pending[:MAX_KEPT_CHARS],
            match_event_handler=on_match,
            scratch=scratch_for(self._database),
        )
        return any(ident in (_READY_ID, _CUSTOM_READY_ID) for ident in hits)

    # --- blocks of whole lines ---------------------------------------------------

    def _process_block(
        self, buffer: bytes, start: int, end: int, offset: int, cut: bool = False
    ) -> None:
        """buffer[start:end] holds whole lines; `offset` is where buffer[start] is in the log."""
        while start < end:
            absolute = offset
            boundary = start + (absolute // WINDOW + 1) * WINDOW - absolute
            stop = end
            if boundary < end:
                stop = buffer.find(b"\n", boundary - 1, end) + 1 or end
                stop = max(stop, start + 1)
            self._process_segment(buffer, start, stop, offset, absolute // WINDOW, cut)
            offset += stop - start
            start = stop

    def _on_match(self, ident: int, _from: int, to: int, _flags: int, _context: object) -> None:
        self._hits.append((ident, to))

    def _scan(self, buffer: bytes, start: int, end: int) -> int:
        """Hyperscan's hits in buffer[start:end] into `_hits`; returns its newline count."""
        counted = _count_beside(buffer, start, end)  # first: it runs once the scan lets go
        view = memoryview(buffer)[start:end]  # no copy
        self._database.scan(
            view,  # type: ignore[type-var]
            match_event_handler=self._on_match,
            scratch=scratch_for(self._database),
        )
        return counted.result() if counted else count_newlines(buffer, start, end)

    def _process_segment(
        self, buffer: bytes, start: int, end: int, offset: int, window: int, cut: bool
    ) -> None:
        self._hits = []
        newlines = self._scan(buffer, start, end)
        first_number = self.lines_seen + 1
        interesting: set[int] = set()
        ready_starts: set[int] = set()
        kinds = set(_DENSE_KINDS)
        for ident, hit_end in self._hits:
            if ident >= _FIGURE_ID and ident < _CUSTOM_READY_ID:
                kinds.add(ident - _FIGURE_ID)
                continue
            line_start = buffer.rfind(b"\n", start, max(start + hit_end - 1, start)) + 1
            line_start = max(line_start, start)
            if start + hit_end - line_start > MAX_LINE_BYTES:
                continue  # past the part of an over-long line that is read
            interesting.add(line_start)
            if ident in (_READY_ID, _CUSTOM_READY_ID):
                ready_starts.add(line_start)
        for kind in sorted(kinds):
            self._collect_figures(kind, buffer, start, end, offset, window, first_number, newlines)
        self._keep_lines(
            buffer, start, end, offset, first_number, sorted(interesting), ready_starts, cut
        )
        self.lines_seen += newlines

    def _keep_lines(
        self,
        buffer: bytes,
        start: int,
        end: int,
        offset: int,
        first_number: int,
        hits: list[int],
        ready_starts: set[int],
        cut: bool,
    ) -> None:
        cursor, number = start, first_number
        hit_index = 0
        while cursor < end:
            if self._after <= 0:
                while hit_index < len(hits) and hits[hit_index] < cursor:
                    hit_index += 1
                if hit_index == len(hits):
                    break
                target = hits[hit_index]
                context_start = target
                lines_before = 0
                while lines_before < BEFORE and context_start > cursor:
                    context_start = buffer.rfind(b"\n", start, context_start - 1) + 1
                    context_start = max(context_start, start)
                    lines_before += 1
                if context_start == start and lines_before < BEFORE and cursor == start:
                    self._keep_carry(first_number, BEFORE - lines_before)
                number += count_newlines(buffer, cursor, context_start)
                cursor = context_start
                self._after = buffer.count(b"\n", context_start, target) + 1
            line_end = buffer.find(b"\n", cursor, end)
            if hit_index < len(hits) and hits[hit_index] == cursor:
                self._after = max(self._after, AFTER + 1)
                hit_index += 1
            line = self._keep(
                buffer[cursor : min(line_end, cursor + MAX_KEPT_CHARS)],
                offset + cursor - start,
                number,
                cut or line_end - cursor > MAX_LINE_BYTES,
            )
            if cursor in ready_starts:
                # Bounded (TGI's router logs every request from the file that says ready):
                # the first ones, and the latest, which a newest-first log starts with.
                if len(self.ready_lines) < MAX_READY_LINES:
                    self.ready_lines.append(line)
                else:
                    self.ready_lines[-1] = line
            if FRAME.search(line.text):
                self._after = max(self._after, 6)
            self._after -= 1
            cursor = line_end + 1
            number += 1
        # The last lines of every segment: the context before a hit in the next one.
        last_lines: list[tuple[int, bytes, bool]] = []
        line_end = end
        while line_end > start and len(last_lines) < BEFORE:
            line_start = max(buffer.rfind(b"\n", start, line_end - 1) + 1, start)
            raw = buffer[line_start : min(line_end - 1, line_start + MAX_KEPT_CHARS)]
            line_cut = cut or line_end - 1 - line_start > MAX_LINE_BYTES
            last_lines.append((offset + line_start - start, raw, line_cut))
            line_end = line_start
        last_lines.reverse()
        self._carry = [*self._carry, *last_lines][-BEFORE:]

    def _keep_carry(self, first_number: int, wanted: int) -> None:
        carried = self._carry[-wanted:]
        for index, (offset, raw, cut) in enumerate(carried):
            number = first_number - len(carried) + index
            if number > self._last_kept_number:
                self._keep(raw, offset, number, cut)

    def _keep(self, raw: bytes, offset: int, number: int, cut: bool) -> Line:
        line = Line(offset, number, decode(raw)[:MAX_KEPT_CHARS], cut)
        if number <= self._last_kept_number:
            return line
        self._last_kept_number = number
        if len(self.head) < HEAD_LINES:
            self.head.append(line)
        else:
            self.tail.append(line)
        return line

    # --- throughput --------------------------------------------------------------

    def _collect_figures(
        self,
        kind_index: int,
        buffer: bytes,
        start: int,
        end: int,
        offset: int,
        window: int,
        first_number: int,
        newlines: int,
    ) -> None:
        summary = self._summaries[kind_index]
        kind = FIGURE_KINDS[kind_index]
        position, counted, number = start, start, first_number
        # Lines of the kind without a figure count too: the search stays bounded.
        while summary.first_lines < kind.full_lines:
            found = buffer.find(kind.literal, position, end)
            if found < 0:
                return
            line_start = max(buffer.rfind(b"\n", start, found) + 1, start)
            line_end = buffer.find(b"\n", found, end)
            position = line_end + 1
            raw = buffer[line_start : min(line_end, line_start + MAX_LINE_BYTES)]
            if not _counts(kind, raw):
                continue
            number += count_newlines(buffer, counted, line_start)
            counted = line_start
            where = offset + line_start - start
            summary.first.extend(_figures_in(kind_index, raw, where, number))
            summary.first_lines += 1
        # Then the window's last line of the kind: looked for from the end.
        search_end = end
        while (found := buffer.rfind(kind.literal, position, search_end)) >= 0:
            line_start = max(buffer.rfind(b"\n", start, found) + 1, start)
            line_end = buffer.find(b"\n", found, end)
            raw = buffer[line_start : min(line_end, line_start + MAX_LINE_BYTES)]
            if _counts(kind, raw):
                number = first_number + newlines - count_newlines(buffer, line_start, end)
                # Even without a figure it is the window's last line so far, as it would be
                # read whole.
                where = offset + line_start - start
                summary.window_last[window] = _figures_in(kind_index, raw, where, number)
                return
            search_end = line_start

    def figures(self) -> list[Figure]:
        found: list[Figure] = []
        for summary in self._summaries:
            found.extend(summary.first)
            for figures in summary.window_last.values():
                found.extend(figures)
        return sorted(found, key=lambda f: f.offset)

    def settled_figures(self, label: str) -> list[Figure]:
        """The figures with this label that no later byte can change, in log order: what a
        measurement may be made of. A window's last line of a kind is known only once the
        window is over; taken before, it would be replaced by a later line, and a log read
        as it grows would count figures that the same log read at once never has."""
        open_window = self._pending_offset // WINDOW
        provisional = [
            figure.offset
            for summary in self._summaries
            for figure in summary.window_last.get(open_window, ())
            if figure.label == label
        ]
        frontier = min(provisional, default=None)
        return [
            figure
            for figure in self.figures()
            if figure.label == label and (frontier is None or figure.offset < frontier)
        ]

    def first_serving_offset(self) -> int | None:
        """Where periodic serving statistics first appear: the server was up by then."""
        periodic = [
            figure
            for kind, summary in zip(FIGURE_KINDS, self._summaries, strict=True)
            if kind.serving
            for figure in summary.first
        ]
        return min((f.offset for f in periodic), default=None)

    def last_serving_line(self) -> int | None:
        """The line of the latest periodic serving statistics that counted work: the engine
        was alive then (a front end's timer prints zeros for an engine core that has died)."""
        periodic = [
            figure
            for kind, summary in zip(FIGURE_KINDS, self._summaries, strict=True)
            if kind.serving
            for figure in (*summary.first, *(f for fs in summary.window_last.values() for f in fs))
            if figure.value > 0
        ]
        return max((f.number for f in periodic), default=None)

    def kept_lines(self) -> list[Line]:
        return [*self.head, *self.tail]
