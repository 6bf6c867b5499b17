"""From the kept lines to a diagnosis: ready, crashed, the one root-cause line, its class.

Runs at query time over the few lines the scanner kept, so it can look backwards and
forwards: newest-first logs, chained tracebacks, logging's own error blocks, wrappers.
"""

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field

from app.diagnosis import rules
from app.diagnosis.lines import host_prefix, strip_prefixes
from app.diagnosis.scanner import Line

EXCERPT_BEFORE = 30
EXCERPT_AFTER = 6
FOLLOW_UP_LINES = 60
SURVIVED_GAP_LINES = 2000
SERVED_AFTER = 3  # engine-side serving lines after a failure: the server lived through it
SERVED_GAP_LINES = 50  # ...or a serving figure this many lines after it

_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?")
_SPLIT_LOST_NEWLINES = re.compile(r"\s(?=\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\) )|\s(?=File \")")
# sglang's own prefix ("[2026-02-27 13:21:27 TP3]") or its words in the message; not a
# container named after it in front of another server's lines.
_SGLANG_PREFIX = re.compile(r"\bTP\d+\]")
_SGLANG = re.compile(r"sglang|ServerArgs\(|fired up and ready")
# The scanner finds TGI's router by its source file (a literal keeps Hyperscan fast);
# only its "Connected" line means ready.
_NOT_READY = re.compile(r"router/src/server\.rs(?!.*: Connected\s*$)")
_READY_ANY = re.compile(r"fired up and ready to roll|server is listening|HTTP server listening")
_STARTUP = re.compile(
    r"load_weights|load_model|[Ll]oad(?:ing)? (?:model )?weight|[Cc]apture cuda graph"
    r"|Capturing batches"
    r"|capture_one_batch|cuda_graph_runner|__init__|\binit_\w+|[Ii]nitializ|warmup|from_engine_args"
    r"|Failed to (?:initialize|create)|Memory profiling|launch_server|run_scheduler_process"
    r"|Model init|KV cache|_wait_and_warmup|Started server process|ServerArgs\("
)
_RUNTIME = re.compile(
    r"event_loop|run_engine_loop|engine_step|Decode batch|Prefill batch|\bEpoch \d|train|test_\w+"
    r"|run_test|barrier|sigkill_handler|oom-killer"
)
# (glog's "E0720 03:42:54.944486 1 file.cc:810] " may follow a container's or a launcher's prefix)
_INFO_LEVEL = re.compile(
    r"(?:^|[\s\[(|])(?:INFO|WARNING|WARN|DEBUG|NOTICE)(?:[\s\]:|]|$)|\[[IW]\d{3,4}\s"
    r"|(?:^|[\s:>])[IW]\d{4}\s+\d"
)
_ERROR_LEVEL = re.compile(
    r"(?:^|[\s\[(|])(?:ERROR|CRITICAL|FATAL|E)(?=[\s\]:|]|$)|(?:^|[\s:>])[EF]\d{4}\s|\[[EF]\d{3,4}\s"
)
_ERRORISH = re.compile(r"[Ee]rror|[Ff]ail|ERROR|FAIL")
# Work only a live engine logs; a front end answering health checks is no proof.
_ENGINE_SERVING = re.compile(r"Decode batch|Prefill batch|Avg generation throughput")
_CODE_FRAME = re.compile(r'File "[^"]+", line \d+')
_WORD = re.compile(r"[A-Za-z]{3,}")
_HANG_DUMP = re.compile(r"Pyspy dump|py-spy dump|^Thread \d+ \((?:idle|active)\)")
# (a log that lost its newlines glues the quoted source after the function's name)
_FRAME_LINE = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>[\w<>.]+))?'
)
# The standard library: an interpreter's lib/python3.X/ outside site- and dist-packages, and
# frozen modules. Site-packages frames are someone's code to patch, so they count.
_STDLIB = re.compile(
    r"(?:^|[/\\])lib[/\\]python3(?:\.\d+)?[/\\](?!(?:site|dist)-packages[/\\])|^<frozen "
)
MAX_CANDIDATES = 3
HANG_TAIL_LINES = 20  # waits this close to each other are one wait


@dataclass
class Entry:
    line: Line
    text: str
    content: str
    noise: bool = False
    in_traceback: int | None = None  # index of the traceback's first line
    strength: int = 0  # 0: not a failure, 1: wrapper, 2: logged error, 3: failure
    consequence: bool = False
    warning: bool = False  # an error by its shape that a process may live through
    # An exception quoted inside a "--- Logging error ---" block that logging did not raise:
    # the explanation when nothing outside the block says more.
    quoted: bool = False


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str | None


@dataclass
class Analysis:
    ready: bool | None
    crashed: bool
    root: Entry | None
    error_class: str | None
    fingerprint: str | None
    excerpt: list[Line] = field(default_factory=list)
    ready_line: Line | None = None
    candidates: list[Line] = field(default_factory=list)  # best first, the root cause first
    frame: Frame | None = None


def _virtual_lines(line: Line) -> list[Line]:
    """A log that lost its newlines (pasted as one line) read as the lines it was."""
    text = line.text
    if len(text) < 300 or text.count('File "') < 2:
        return [line]
    parts = [p.strip() for p in _SPLIT_LOST_NEWLINES.split(text) if p.strip()]
    return [Line(line.offset, line.number, part, line.cut) for part in parts]


def _host_prefixes(lines: list[Line]) -> frozenset[str]:
    counts: dict[str, int] = {}
    for line in lines:
        host = host_prefix(line.text)
        if host:
            counts[host] = counts.get(host, 0) + 1
    return frozenset(h for h, n in counts.items() if n >= 3 and n * 2 >= len(lines))


def _newest_first(entries: list[Entry]) -> bool:
    stamps = [m.group(0) for e in entries[:400] if (m := _TIMESTAMP.search(e.text[:80]))]
    pairs = list(itertools.pairwise(stamps))
    down = sum(1 for a, b in pairs if b < a)
    up = sum(1 for a, b in pairs if b > a)
    return down >= 3 and down > 2 * up


def _mark(entries: list[Entry]) -> None:
    """Tracebacks, logging-error blocks, chains, and how strongly each line says 'failed'."""
    levels = [_level(entry) for entry in entries]
    # A log viewer that stamps ERROR on every line says nothing by it; a logger's own
    # severity inside that stamp still does.
    error_stamps = [_error_stamps(entry) for entry in entries]
    # Counted by physical line: a log that lost its newlines is one stamped line.
    by_line: dict[int, int] = {}
    for entry, stamps in zip(entries, error_stamps, strict=True):
        by_line[entry.line.offset] = max(stamps, by_line.get(entry.line.offset, 0))
    stamped = Counter(by_line.values())

    def informs(stamps: int) -> bool:
        return stamps > 0 and 2 * sum(n for k, n in stamped.items() if k >= stamps) < len(by_line)

    traceback_start: int | None = None
    logging_block = False
    logging_frames = False  # the block's current traceback runs through logging itself
    chain_pending = False
    framed = False  # a frame of the current traceback was seen: its exception comes next
    source_next = False  # the line after a frame quotes its source
    for index, entry in enumerate(entries):
        content = entry.content
        if rules.LOGGING_ERROR in content:
            logging_block, traceback_start = True, None
            entry.noise = True
            continue
        if logging_block:
            entry.noise = True
            if rules.TRACEBACK in content:
                logging_frames = False
            elif "logging/__init__.py" in content or "logging/handlers.py" in content:
                logging_frames = True
            elif rules.EXCEPTION_LINE.match(content):
                entry.quoted, entry.strength = not logging_frames, 3
            # The block ends after logging's "Arguments: (...)" line.
            if content.startswith("Arguments:"):
                logging_block = False
            continue
        if rules.CHAINED.search(content):
            chain_pending = True
            entry.noise = True
            continue
        if rules.TRACEBACK in content:
            traceback_start, framed = index, False
            entry.in_traceback = index
            entry.strength = 1
            continue
        if traceback_start is not None and rules.FRAME.search(content):
            entry.in_traceback = traceback_start
            framed = source_next = True
            if "logging/__init__.py" in content or "logging/handlers.py" in content:
                _mark_logging_traceback(entries, traceback_start, index)
            continue
        if _CODE_FRAME.match(content):
            # A fragment that starts inside a traceback: frames all the same.
            framed = source_next = True
            continue
        if source_next and not (
            rules.EXCEPTION_LINE.match(content) or rules.TRACEBACK_END.match(content)
        ):
            # The source line a frame quotes ("raise NotImplementedError") is code, not a
            # failure, whatever severity a log viewer stamped on it.
            source_next = False
            entry.in_traceback = traceback_start
            continue
        source_next = False
        level = levels[index]
        if rules.HARD_NOISE.search(content):
            entry.noise = True
            continue
        if (
            rules.EXCEPTION_LINE.match(content)
            or rules.QUALIFIED_EXCEPTION.match(content)
            or (framed and rules.TRACEBACK_END.match(content))
        ):
            entry.in_traceback = traceback_start
            entry.strength = 3
            entry.consequence = chain_pending and traceback_start is not None
            if traceback_start is not None and entries[traceback_start].noise:
                entry.noise = True
            traceback_start, chain_pending, framed = None, False, False
        elif (level == "info" and not rules.ERROR_CODE.search(content)) or rules.NOISE.search(
            content
        ):
            entry.noise = True
            continue
        elif rules.NATIVE_FAILURE.search(content):
            entry.strength = 3
        elif rules.ERROR_CODE.search(content):
            entry.strength = 2  # names an error code, whatever the severity it was logged with
        elif rules.WARNING_ERROR.search(content):
            entry.strength, entry.warning = 2, True
        elif (level == "error" and informs(error_stamps[index])) or (
            rules.SEVERITY_ERROR.search(content) and _ERRORISH.search(content)
        ):
            entry.strength = 2
        if rules.WRAPPERS.search(content):
            entry.strength = 1
        if traceback_start is not None and not rules.FRAME.search(content) and entry.strength == 0:
            # Source lines under a frame belong to the traceback too.
            entry.in_traceback = traceback_start


def _prefix(entry: Entry) -> str:
    cut = entry.text.find(entry.content) if entry.content else -1
    return entry.text[:cut] if cut > 0 else ""


def _error_stamps(entry: Entry) -> int:
    """How many error severities the line's prefix carries (a viewer's and a logger's)."""
    return len(_ERROR_LEVEL.findall(_prefix(entry)))


def _level(entry: Entry) -> str | None:
    """The severity a logger put in the line's prefix, if any."""
    prefix = _prefix(entry)
    if _INFO_LEVEL.search(prefix):
        return "info"
    if _ERROR_LEVEL.search(prefix):
        return "error"
    return None


def _mark_logging_traceback(entries: list[Entry], start: int, until: int) -> None:
    for entry in entries[start : until + 1]:
        entry.noise = True
    # ...and the exception that ends it.
    for entry in entries[until + 1 : until + 40]:
        entry.noise = True
        if rules.EXCEPTION_LINE.match(entry.content):
            break


def _specificity(entry: Entry) -> int:
    return sum(score for pattern, score in rules.SPECIFICITY if pattern.search(entry.content))


def _restates(later: Entry, first: Entry) -> bool:
    """A native abort quoting the failure ("what(): ... Watchdog caught collective operation
    timeout ...") says nothing the first line did not: the first one in time stays."""
    words = set(_WORD.findall(first.content))
    return len(words) >= 4 and len(words & set(_WORD.findall(later.content))) >= 0.6 * len(words)


def _choose_root(entries: list[Entry]) -> Entry | None:
    position = {id(entry): index for index, entry in enumerate(entries)}  # in time order
    failures = [e for e in entries if e.strength >= 2 and not e.noise and not e.consequence]
    if not failures:
        failures = [e for e in entries if e.strength >= 2 and not e.noise]
    if not failures:
        failures = [e for e in entries if e.quoted]
    if failures:
        # A failure the server lived through long ago is not why it died: look at the last
        # burst of failures, and blame its first one (later ranks die of it).
        burst_start = 0
        for index in range(1, len(failures)):
            gap = abs(failures[index].line.number - failures[index - 1].line.number)
            if gap > SURVIVED_GAP_LINES:
                burst_start = index
        failures = failures[burst_start:]
        first = failures[0]
        if first.strength == 2 and not first.warning:
            # A logged "X failed" is usually followed by the exception that says why, unless
            # that exception only sends the reader elsewhere ("See inner exception"). NCCL's
            # WARN is the specific line that later exceptions summarise.
            following = [
                e for e in failures
                if e.strength == 3 and 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
            ]  # fmt: skip
            if (
                following
                and not rules.POINTS_ELSEWHERE.search(following[0].content)
                and rules.detail(following[0].content) >= rules.detail(first.content)
            ):
                first = following[0]
        if rules.QUOTES_NEXT.search(first.content):
            # "BackendCompilerFailed: backend='inductor' raised:": the line it quotes says why.
            quoted = [
                e for e in failures
                if 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
                and not rules.POINTS_ELSEWHERE.search(e.content)
            ]  # fmt: skip
            if quoted:
                first = quoted[0]
        # One incident often spans a few lines (oom-kill, then "Killed process"): the most
        # telling line of the first incident.
        incident = [
            e for e in failures
            if abs(e.line.number - first.line.number) <= 3 and e is not first
            and (e.warning or not first.warning)
        ]  # fmt: skip
        best = first
        for candidate in incident:
            if _specificity(candidate) > _specificity(best) and not _restates(candidate, first):
                best = candidate
        return best
    # Only wrappers: the weakest one that still says something ("exits with return code = -9"),
    # else a wrapper that points elsewhere, for the log holds nothing better.
    wrappers = [e for e in entries if e.strength == 1 and not e.noise]
    informative = [e for e in wrappers if not rules.STRONG_WRAPPERS.search(e.content)]
    pointing = [e for e in wrappers if rules.TRACEBACK not in e.content]
    chosen = informative or pointing
    return chosen[0] if chosen else None


def _runners_up(entries: list[Entry], root: Entry) -> list[Entry]:
    """The root cause, then the next lines an engineer would read if it were wrong: other
    failures before wrappers, the last burst first, then by how specific they are. A line
    repeated by every rank counts once."""
    burst_start = root.line.number
    for entry in reversed(entries):
        if entry.strength >= 2 and not entry.noise and entry.line.number < burst_start:
            if burst_start - entry.line.number > SURVIVED_GAP_LINES:
                break
            burst_start = entry.line.number
    # Traceback headers and wrappers that point elsewhere tell nothing a glance could use.
    ranked = sorted(
        (
            e
            for e in entries
            if e.strength >= 1
            and not e.noise
            and e is not root
            and not rules.STRONG_WRAPPERS.search(e.content)
        ),
        key=lambda e: (
            e.strength < 2,
            e.line.number < burst_start,
            -_specificity(e),
            abs(e.line.number - root.line.number),
        ),
    )
    chosen, seen = [root], {rules.normalized(root.content)}
    for entry in ranked:
        key = rules.normalized(entry.content)
        if key not in seen:
            seen.add(key)
            chosen.append(entry)
        if len(chosen) == MAX_CANDIDATES:
            break
    return chosen


def _is_frame_part(entries: list[Entry], index: int) -> bool:
    """A frame line, a caret line under one, or the source line a frame quotes."""
    content = entries[index].content
    if _FRAME_LINE.match(content) or rules.FRAME.search(content):
        return True
    return index > 0 and _FRAME_LINE.match(entries[index - 1].content) is not None


def _adjacent(first: Entry, second: Entry) -> bool:
    return 0 <= second.line.number - first.line.number <= 1  # a log that lost its newlines


def _failing_traceback(entries: list[Entry], root: Entry) -> list[Entry]:
    """The frames right above the root cause (a fragment may start without its Traceback
    header); for a line logged before its traceback (vLLM's repr of the exception, a native
    abort), the frames that closely follow it."""
    index = entries.index(root)
    start = index
    while start > 0 and _adjacent(entries[start - 1], entries[start]):
        if not _is_frame_part(entries, start - 1):
            break
        start -= 1
    if start < index:
        return entries[start:index]
    for later in range(index + 1, min(len(entries), index + 1 + FOLLOW_UP_LINES)):
        if _FRAME_LINE.match(entries[later].content):
            end = later
            while end + 1 < len(entries) and _adjacent(entries[end], entries[end + 1]):
                if not _is_frame_part(entries, end + 1):
                    break
                end += 1
            return entries[later : end + 1]
        if entries[later].strength >= 2:
            break  # another failure first: no frames of this one
    return []


def _frame(traceback: list[Entry]) -> Frame | None:
    """The innermost frame outside the standard library: the code to open and patch."""
    for entry in reversed(traceback):
        match = _FRAME_LINE.match(entry.content)
        if match and not _STDLIB.search(match["file"]):
            return Frame(match["file"], int(match["line"]), match["function"])
    return None


def _excerpt(entries: list[Entry], root: Entry) -> list[Entry]:
    """The traceback that ends in the root cause (or the lines before it), and what follows."""
    index = entries.index(root)
    start = max(0, index - 8)
    if root.in_traceback is not None and root.in_traceback >= index - EXCERPT_BEFORE:
        start = root.in_traceback
    chosen = entries[start : index + 1]
    for entry in entries[index + 1 : index + 1 + EXCERPT_AFTER]:
        if rules.TRACEBACK in entry.content or entry.line.number > chosen[-1].line.number + 1:
            break
        chosen.append(entry)
    return chosen


def analyze(
    kept: list[Line],
    ready_lines: list[Line],
    first_runtime_offset: int | None,
    last_serving_line: int | None = None,
    lines_total: int | None = None,
) -> Analysis:
    lines = [virtual for line in kept for virtual in _virtual_lines(line)]
    hosts = _host_prefixes(lines)
    entries = [Entry(line, line.text, strip_prefixes(line.text, hosts)) for line in lines]
    newest_first = _newest_first(entries)
    if newest_first:
        entries.reverse()
    _mark(entries)
    launches = [e for e in entries if rules.LAUNCH.search(e.text)]
    if len(launches) > 1:
        # Several launches in one file: the story is the last one's; what failed before it
        # belongs to a run that is over (and its readiness too).
        last_launch = launches[-1]
        ready_lines = [r for r in ready_lines if not _before(r, last_launch.line, newest_first)]
        for entry in entries:
            if _before(entry.line, last_launch.line, newest_first):
                entry.strength = min(entry.strength, 0)
    sglang = any(_SGLANG_PREFIX.search(e.text) or _SGLANG.search(e.content) for e in entries)
    ready_line = next(
        (
            line
            for line in (reversed(ready_lines) if newest_first else ready_lines)
            if (not sglang or _READY_ANY.search(line.text)) and not _NOT_READY.search(line.text)
        ),
        None,
    )
    if ready_line is not None:
        # A server that became ready lived through whatever failed before (a retried
        # connection, a warning's traceback): only what fails after counts.
        for entry in entries:
            if _before(entry.line, ready_line, newest_first):
                entry.strength = min(entry.strength, 0)
    _forget_survived(entries, None if newest_first else last_serving_line)
    root = _choose_root(entries)

    if root is None:
        waiting = _waiting_at_the_end(entries, lines_total, newest_first)
        hang = waiting is not None or any(_HANG_DUMP.search(e.content) for e in entries)
        return Analysis(
            ready=True if ready_line else None,
            crashed=False,
            root=waiting,
            error_class="timeout_or_hang" if hang else None,
            fingerprint=rules.fingerprint("timeout_or_hang", waiting.content) if waiting else None,
            excerpt=[e.line for e in _excerpt(entries, waiting)] if waiting else [],
            ready_line=ready_line,
            candidates=[waiting.line] if waiting else [],
        )

    excerpt = _excerpt(entries, root)
    root_index = entries.index(root)
    crashed = _crashed(entries, root)
    error_class = rules.error_class(root.content, "\n".join(e.content for e in excerpt))
    ready: bool | None
    if ready_line is not None and _before(ready_line, root.line, newest_first):
        ready = True
    elif (
        first_runtime_offset is not None
        and _offset_before(first_runtime_offset, root.line.offset, newest_first)
    ) or any(_RUNTIME.search(e.content) for e in entries[max(0, root_index - 60) : root_index + 5]):
        ready = None
    elif error_class == "cuda_graph" or any(
        _STARTUP.search(e.content) for e in entries[max(0, root_index - 80) : root_index + 40]
    ):
        # CUDA graphs are captured while the server starts.
        ready = False
    else:
        ready = None
    return Analysis(
        ready=ready,
        crashed=crashed,
        root=root,
        error_class=error_class,
        fingerprint=rules.fingerprint(error_class, root.content),
        excerpt=[e.line for e in excerpt],
        ready_line=ready_line,
        candidates=[e.line for e in _runners_up(entries, root)],
        frame=_frame(_failing_traceback(entries, root)),
    )


def _waiting_at_the_end(
    entries: list[Entry], lines_total: int | None, newest_first: bool
) -> Entry | None:
    """A log that ends with processes saying they still wait (for a barrier, a peer, a
    broadcast) and nothing failing: the first of those last waits is why it hangs."""
    waits = [index for index, entry in enumerate(entries) if rules.HANG_WAIT.search(entry.content)]
    if not waits or lines_total is None:
        return None
    last = entries[waits[-1]]
    after = entries[waits[-1] + 1 :]
    later_lines = last.line.number - 1 if newest_first else lines_total - last.line.number
    if any(entry.content for entry in after) or later_lines > len(after):
        return None  # the log went on after it: it was only slow
    start = waits[-1]
    for index in reversed(waits[:-1]):
        if abs(entries[start].line.number - entries[index].line.number) > HANG_TAIL_LINES:
            break
        start = index
    return entries[start]


def _crashed(entries: list[Entry], root: Entry) -> bool:
    """A warning-shaped error (NCCL's WARN) explains a hang unless something fatal follows it."""
    if not root.warning:
        return True
    later = entries[entries.index(root) :]
    return any(e.strength and not e.warning and not e.noise for e in later)


def _forget_survived(entries: list[Entry], last_serving_line: int | None) -> None:
    """The engine went on serving after a failure (a bad request, a client gone): the
    server lived through it, so it is not why the server died."""
    serving_after = 0
    for entry in reversed(entries):  # in time order, newest last
        if _ENGINE_SERVING.search(entry.content):
            serving_after += 1
        elif entry.strength and (
            serving_after >= SERVED_AFTER
            or (
                last_serving_line is not None
                and last_serving_line - entry.line.number > SERVED_GAP_LINES
            )
        ):
            entry.strength = 0


def _before(first: Line, second: Line, newest_first: bool) -> bool:
    return _offset_before(first.offset, second.offset, newest_first)


def _offset_before(first: int, second: int, newest_first: bool) -> bool:
    return first > second if newest_first else first < second
