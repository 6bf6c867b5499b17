"""The end of a log: its last burst (the final lines after the last sign of normal progress),
the error shapes that must never be passed over there, and an operator's or a scheduler's stop."""

import bisect
import re

from app.diagnosis import rules
from app.diagnosis.entry import Entry
from app.diagnosis.knowledge.lifecycle import PIP_CANCELLED, STOPPED

BURST_LINES = 50  # how far back from the last line the final stretch reaches
_TASK_EXITED_WITH_ERROR = re.compile(r"\btasks? [\d,-]+: Exited with exit code [1-9]")
STOP_LOOKBACK = 50  # a failure this close before a stop is why the stop came (a launcher's)
# torchrun's agent recording a worker that died of its own (not of a stop's signal: SIGHUP,
# SIGINT, SIGTERM): a stop anywhere after it is the job's teardown (a scheduler ending the
# other nodes' agents because a task failed), not an operator's.
_WORKER_DIED = re.compile(r"\bfailed \(exitcode: (?!-(?:1|2|15)\))-?\d+\) local_rank: \d+")

# Error and fatal shapes of common loggers, C libraries, compilers, shells and supervisors: a
# line of the last burst with one of these is never passed over in silence. (Each holds one
# of the scanner's anchors, so such a line is always kept.)
ERROR_SHAPE = rules.Alternatives(
    (
        r"\b[Ee]rror:|\bERROR\b|\bFATAL\b|\bFatal\b|\bCRITICAL\b",
        # glog and c10: "E1201 10:00:00.123456 ...", "F1201 ...", "[E1201 10:00:00 f.cpp:1]"
        r"(?:^|[\s\]>:|])[EF]\d{4}\s+\d\d:\d\d:\d\d",
        r"\[[EF](?:\d{3,4}\s+[\d:.]+)?\s+[\w.-]+:\d+\]",
        r"\berrors? detected in the compilation of\b",
        r"\bmemory allocation of \d+ bytes failed\b",
        r"\bsubcommand failed\b",
        r"\bValue error, ",
        # (not vLLM's INFO "Aborted request ...": a client's, not the process's)
        r"\bKilled\b|Segmentation fault|core dumped|^Aborted\b|\bBus error\b",
        r"\bSIG(?:SEGV|ABRT|BUS|ILL|FPE|KILL|IOT)\b",
        r"\*\*\* SIG(?:TERM|INT) received\b",  # abseil's banner: a stop, read as one
        r"^[\w./-]+: Error\b",  # a tool's own word: "python: Error while finding module ..."
        r"^fatal: ",  # git's
        r"\b[Ee]xit(?:ed)?(?: with)?(?: exit)? (?:code|status)[ :=]*-?[1-9]\d*",
        r"\bexitcode\s*:\s*-?[1-9]\d*|\breturn(?:ed)? (?:non-zero exit status|code)[ :=]*-?[1-9]",
        # an allocator's warning, sometimes the only trace of an OOM before the process stops
        r"\b(?:ran )?out of memory\b",
        # a Python exception line, whatever printed it
        r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b(?::|$)",
    )
)
# Fatal by itself: a process that prints it is gone (as opposed to a logged error it may survive).
FATAL_SHAPE = rules.Alternatives(
    (
        r"\bFATAL\b|\bFatal\b|(?:^|[\s\]>:|])F\d{4}\s+\d\d:\d\d|\[F(?:\d{3,4}\s+[\d:.]+)?\s",
        r"\bKilled\b|Segmentation fault|core dumped|^Aborted\b|\bSIG(?:SEGV|ABRT|BUS|ILL|KILL)\b",
    )
)
_OOM = re.compile(r"\bout of memory\b")
_STOPPED = rules.Alternatives(tuple(row.pattern for row in STOPPED))
# A Ctrl-C that a failure after it explains otherwise: a bare KeyboardInterrupt (a launcher
# stopping its children because one failed), pip's cancelled install (the program that ran
# it went on, and failed of its own).
_OVERRULED_BY_A_LATER_FAILURE = re.compile(rf"^KeyboardInterrupt:?\s*$|{PIP_CANCELLED}")
# A task cancelled: a stop only where it is the last word (a cancelled wait raises its own
# error after it, chained: "During handling ... TimeoutError").
CANCELLED_LOOKBACK = 500  # lines before a cancellation where a failure would explain it
_CANCELLED = re.compile(r"^(?:asyncio\.(?:exceptions\.)?)?CancelledError\b")
_THREAD_DIED = re.compile(r"^Exception in thread \S")  # threading's excepthook header
# A process torn down by a stop: a C++ thread object destroyed while still running aborts,
# with no exception of its own to say, and Python's fault handler reports the abort.
_TEARDOWN_ABORT = re.compile(
    r"^terminate called without an active exception$|^Fatal Python error: Aborted$"
)


def fatal(entry: Entry) -> bool:
    """Whether a line says by its shape that the process is gone."""
    return (
        FATAL_SHAPE.search(entry.text) is not None or FATAL_SHAPE.search(entry.content) is not None
    )


def burst_start(entries: list[Entry], lines_total: int, progress_line: int | None) -> int:
    """The first line number of the last burst: the last `BURST_LINES` lines of the log, after
    the last sign of normal progress (a serving statistic, the ready line)."""
    last = max((e.line.number for e in entries), default=0)
    start = max(lines_total, last) - BURST_LINES + 1
    return max(start, (progress_line or 0) + 1)


def error_shaped(entry: Entry) -> bool:
    """Whether a line has an error or fatal shape, a known-benign line (a config dump, an
    access log) aside."""
    if not entry.content or rules.HARD_NOISE.search(entry.content):
        return False  # (a logger's prefix with no message says nothing)
    if entry.level == "info":
        # an INFO or WARNING record counts only where it says the process is gone or out of memory
        return (
            FATAL_SHAPE.search(entry.content) is not None or _OOM.search(entry.content) is not None
        )
    return (
        ERROR_SHAPE.search(entry.text) is not None or ERROR_SHAPE.search(entry.content) is not None
    )


def unexplained(entries: list[Entry], start: int) -> Entry | None:
    """The line of the last burst that explains it when nothing else was chosen: its first
    error-shaped line that is no wrapper, else its first error-shaped line."""
    shaped = [
        e
        for e in entries
        if e.line.number >= start
        # (a traceback's source lines are code; its exception set aside still says why)
        and (e.in_traceback is None or e.strength >= 2 or e.set_aside)
        and not rules.FRAME.search(e.content)
        and error_shaped(e)
    ]
    plain = [e for e in shaped if not rules.WRAPPERS.search(e.content)]
    return (plain or shaped)[0] if shaped else None


def stopped_at(entries: list[Entry], start: int) -> Entry | None:
    """The line where an operator or a scheduler stopped the process, when it is in the last
    burst (or only wrappers follow it) and no failure came just before it (a launcher
    stopping the other ranks after one failed stops them because of that failure)."""
    failed_at = sorted(
        e.line.number for e in entries
        if e.strength >= 2 and not e.noise and not _CANCELLED.match(e.content)
    )  # fmt: skip
    stops = [
        e for e in entries
        if _STOPPED.search(e.content)
        and not (_CANCELLED.match(e.content) and _cancelled_by_a_failure(failed_at, e))
    ]  # fmt: skip
    stop = next((e for e in stops if e.line.number >= start), None)
    if stop is None and stops and not _fails_after(entries, stops[-1]):
        # Earlier, where nothing after it failed but wrappers saying that it did (vLLM's API
        # server echoing a Ctrl-C of its engine core with a long traceback of its own).
        stop = stops[-1]
    if stop is None or (
        _OVERRULED_BY_A_LATER_FAILURE.match(stop.content) and _fails_after(entries, stop)
    ):
        return None
    if any(_WORKER_DIED.search(e.content) for e in entries[: entries.index(stop)]):
        return None
    for entry in entries:
        if entry is stop:
            return stop
        if (
            # (a launcher's word that a task exited with an error status counts: the scheduler
            # cancelled the job because of it)
            (
                entry.strength >= 2
                or entry.consequence  # (a wrapper of a failure: the failure is near too)
                or _TASK_EXITED_WITH_ERROR.search(entry.content)
            )
            and not entry.noise
            and abs(stop.line.number - entry.line.number) <= STOP_LOOKBACK  # (newest first too)
            # (the same stop said first by another logger is no failure before it)
            and not _STOPPED.search(entry.content)
            # (nor a worker thread's death: the main thread lives on, here until it is stopped)
            and not _in_a_thread(entries, entry)
        ):
            return None
    return stop


def _cancelled_by_a_failure(failed_at: list[int], cancelled: Entry) -> bool:
    """A cancellation near another failure is that failure's doing (the tasks it ended), and
    one followed by any error raised that error (a wait's timeout, chained). `failed_at`: the
    other failures' lines, sorted."""
    at = cancelled.line.number
    first_near = bisect.bisect_left(failed_at, at - CANCELLED_LOOKBACK)
    return first_near < len(failed_at)


def _in_a_thread(entries: list[Entry], entry: Entry) -> bool:
    start = entry.in_traceback
    return start is not None and any(
        _THREAD_DIED.match(e.content) for e in entries[max(0, start - 1) : start + 1]
    )


def _fails_after(entries: list[Entry], line: Entry) -> bool:
    """Whether something fails after a line (another stop's word, torchrun's SignalException
    for the same Ctrl-C, is no failure)."""
    after = entries[entries.index(line) + 1 :]
    return any(
        e.strength >= 2
        and not e.noise
        and not e.consequence
        and not _STOPPED.search(e.content)
        and not _TEARDOWN_ABORT.match(e.content)
        # (a worker thread dying as the stop tears down what it read from)
        and not _in_a_thread(entries, e)
        for e in after
    )
