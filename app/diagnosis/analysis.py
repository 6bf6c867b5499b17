"""From the kept lines to a diagnosis: ready, crashed, the one root-cause line, its class.

Runs at query time over the few lines the scanner kept, so it can look backwards and
forwards: newest-first logs, chained tracebacks, logging's own error blocks, wrappers.
"""

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.diagnosis import burst, rules
from app.diagnosis.entry import Entry
from app.diagnosis.frames import Frame, failing_traceback, innermost_frame
from app.diagnosis.knowledge.lifecycle import (
    ENGINE_GONE,
    FINISHED,
    INSTALLED,
    NEVER_STARTED,
    STARTED,
    WAITING,
)
from app.diagnosis.knowledge.ready import READY_LINES
from app.diagnosis.lines import host_prefix, strip_prefixes
from app.diagnosis.marking import IPYTHON_HEADER, LIVED_THROUGH, LOOP_RAN_ON, mark, stamped_errors
from app.diagnosis.scanner import AFTER, Line

EXCERPT_BEFORE = 30
EXCERPT_AFTER = 6
FOLLOW_UP_LINES = 60
CHAIN_LINES = 1000  # how far a bare exception's chain may go on to the one that explains it
SURVIVED_GAP_LINES = 2000
# One incident often spans a few lines (oom-kill, then "Killed process").
INCIDENT_LINES = 3
RESTATED_GAIN = 3  # how much more specific a line that says the first again must be
SERVED_AFTER = 3  # engine-side serving lines after a failure: the server lived through it
SERVED_GAP_LINES = 50  # ...or a serving figure this many lines after it
SERVED_ON = "the server went on serving after it"
# Lines between two words that a process is still waiting (a warning its web framework
# printed meanwhile) that keep them one run.
WAITING_GAP_LINES = 3
WENT_ON_LINES = 5  # ordinary lines after an error-severity line: the process went on
LIVED_ON_LINES = 500  # lines after an error-severity record: the process lived through it


def _alternation(patterns: Iterable[str]) -> re.Pattern[str]:
    """One expression matching where any of the patterns does."""
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns))


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?")
# (a terminal's padding to its width marks where a line ended, too; a worker's prefix starts
# a record even glued to the last character of the one before: "cached_file((APIServer pid=1) ")
_SPLIT_LOST_NEWLINES = re.compile(
    r"\s?(?=\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\) )|\s(?=File \")|\s{8,}(?=\S)"
)
_GOES_ON = re.compile(r":\s*\|?\s*$")
_QUOTES_OUTPUT = re.compile(r"(?:\b(?:[Oo]utput|stderr|stdout)|\(message\)):\s*$")
_SAYS_ERROR = re.compile(r"\berror\b", re.IGNORECASE)
_PADDED_GLUE = re.compile(r"\S\s{8,}(?:ERROR|WARNING|INFO|Traceback)\b")
# sglang's own prefix ("[2026-02-27 13:21:27 TP3]") or its words in the message; not a
# container named after it in front of another server's lines.
_SGLANG_PREFIX = re.compile(r"\bTP\d+\]")
_SGLANG = re.compile(r"sglang|ServerArgs\(|fired up and ready")
# A readiness line some rows find more broadly than they mean it (TGI's router by its source
# file): (what the row finds, what must be there too).
_CONFIRMED = [
    (re.compile(row.pattern), re.compile(row.confirm)) for row in READY_LINES if row.confirm
]
# sglang starts Uvicorn before its warm-up: in its log only the rows that say so mean ready.
_SGLANG_READY = _alternation(row.pattern for row in READY_LINES if row.in_sglang_log)
_STARTUP = re.compile(
    r"load_weights|load_model|[Ll]oad(?:ing)? (?:model )?weight|[Cc]apture cuda graph"
    r"|Capturing batches"
    r"|capture_one_batch|cuda_graph_runner|__init__|\binit_\w+|[Ii]nitializ|warmup|from_engine_args"
    r"|Failed to (?:initialize|create)|Memory profiling|launch_server|run_scheduler_process"
    r"|Model init|KV cache|_wait_and_warmup|Started server process|ServerArgs\("
    # loading the weights, as llama.cpp and the Python servers print it
    r"|load_tensors|llama_model_load|[Ll]oading (?:model|checkpoint|safetensors)"
)
_RUNTIME = re.compile(
    # "train" and "test_" as words of their own: not from_pretrained, latest_checkpoint
    r"event_loop|run_engine_loop|engine_step|Decode batch|Prefill batch|\bEpoch \d"
    r"|(?<![A-Za-z])train|(?<![A-Za-z])test_\w+"
    r"|run_test|barrier|sigkill_handler|oom-killer"
)
# A server's own word that it never came up ("Shard 0 failed to start", "Engine core
# initialization failed", "timed out waiting for llama runner to start").
_NEVER_STARTED = _alternation(row.pattern for row in NEVER_STARTED)
# Work only a live engine logs; a front end answering health checks is no proof. (The
# prefiltered set: read on every kept line, a plain alternation of the rows was a third of
# the corpus's time once the engines' own serving lines joined it.)
_ENGINE_SERVING = rules.SERVING
# An engine's word that it is going down (knowledge/lifecycle.py).
_ENGINE_GONE = _alternation(row.pattern for row in ENGINE_GONE)
# A statistics line that counts no work: a front end's logger prints it on a timer, even for an
# engine core that has died (vLLM's "Avg prompt throughput: 0.0 tokens/s, Avg generation
# throughput: 0.0 tokens/s, Running: 0 reqs").
_IDLE_STATS = re.compile(
    r"\bAvg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s, "
    r"Running: 0 reqs"
)
# Words of a server's log: a script or a test that fails while starting was never "not ready".
_SERVER = re.compile(
    r"\b(?:[Ss]erver|serve|[Ss]erving|uvicorn|API|endpoint|[Ee]ngine|[Ww]orker|[Ss]hard|vLLM|vllm"
    r"|sglang|tritonserver|llama_\w*|ollama|TensorRT|trtllm|[Mm]odel)\b"
)
_WORD = re.compile(r"[A-Za-z]{3,}")
# A process's word that it still waits on others (knowledge/lifecycle.py).
_WAITING = _alternation(row.pattern for row in WAITING)
# A job's word that it did its work to the end (knowledge/lifecycle.py).
_FINISHED = rules.Alternatives(tuple(row.pattern for row in FINISHED))
_STARTED = _alternation(row.pattern for row in STARTED)
_INSTALLED = _alternation(row.pattern for row in INSTALLED)
# pip's own words on a package it could not install, and how much work after them shows the
# program went on without it
_PIP_FAILED = re.compile(
    r"\s*(?:error: subprocess-exited-with-error|(?:ERROR: )+(?:Could not find a version that "
    r"satisfies|No matching distribution|Failed building wheel|Could not build wheels|Failed to "
    r"build installable wheels|pip's dependency resolver))"
)
PIP_WENT_ON_LINES = 100
# pip's own words on a step that failed (its legacy build's "error: invalid command ...")
_INSTALLER_ERROR = re.compile(r"\s*(?:ERROR: |error: |Failed to build |Failed building wheel )")
_HANG_DUMP = re.compile(r"Pyspy dump|py-spy dump|^Thread \d+ \((?:idle|active)\)")
MAX_CANDIDATES = 3
_OUT_OF_MEMORY = re.compile(r"(?i)\bout of memory\b")
_PEER_WAIT_TIMEOUT = re.compile(rules.PEER_WAIT_TIMEOUT)
_NAMES_A_VALUE = re.compile(r"\d")
_ORIGINAL_ERROR = re.compile(rules.ORIGINAL_ERROR)
DETAIL_ENTRIES = 8  # how far below its exception the line after "Last error:" may be


@dataclass
class Analysis:
    ready: bool | None
    crashed: bool | None
    root: Entry | None
    error_class: str | None
    fingerprint: str | None
    excerpt: list[Line] = field(default_factory=list)
    ready_line: Line | None = None
    candidates: list[Line] = field(default_factory=list)  # best first, the root cause first
    frame: Frame | None = None
    crashed_reason: str = ""  # why `crashed` reads as it does (None: nothing in the log tells)
    pending: str | None = None  # what the root cause waits for (another process's error)


def _virtual_lines(line: Line) -> list[Line]:
    """A log that lost its newlines (pasted as one line) read as the lines it was."""
    text = line.text
    if len(text) < 300 or (text.count('File "') < 2 and not _PADDED_GLUE.search(text)):
        return [line]
    parts = [p.strip() for p in _SPLIT_LOST_NEWLINES.split(text) if p.strip()]
    return [Line(line.offset, line.number, part, line.cut) for part in parts]


def _message(entries: list[Entry], index: int) -> str:
    """A root cause's message as its class is read: one that ends in a colon goes on in the
    next line (an assertion's condition, a table cell wrapped onto the next row)."""
    text = entries[index].content
    if _GOES_ON.search(text) and index + 1 < len(entries):
        following = entries[index + 1]
        if following.line.number == entries[index].line.number + 1:
            text = f"{text.rstrip(' |')} {following.content.strip(' |')}"
    said = entries[index + 1 : index + 3]
    if len(said) == 2 and said[0].content == "info:":
        # tt-metal's TT_THROW and TT_FATAL: where, then "info:", then what went wrong
        text = f"{text} {said[1].content}"
    return text


def _host_prefixes(lines: list[Line], stripped: list[str]) -> frozenset[str]:
    """The names a launcher puts before each line (pdsh's and DeepSpeed's "10.0.0.2: ", a
    job's "B-nemo-ft3/0 "): those of several lines, where most lines carry one of them (each
    node of a multi-node job its own)."""
    counts: dict[str, int] = {}
    for line, plain in zip(lines, stripped, strict=True):
        # (after a viewer's own stamp, if any: "E 2026-02-27T13:00:00Z 10.0.0.2: ...")
        host = host_prefix(line.text) or host_prefix(plain)
        if host:
            counts[host] = counts.get(host, 0) + 1
    hosts = {h: n for h, n in counts.items() if n >= 2}
    carried = sum(hosts.values())
    return frozenset(hosts) if carried >= 3 and carried * 2 >= len(lines) else frozenset()


# A wrapper relaying its child's output under a tag of its own ("[MusubiTuner WanLoRATrainer]
# TRAINER: Traceback (most recent call last):"): the tag before a traceback's header, where
# it is no logger's severity.
_RELAYED_TRACEBACK = re.compile(r"^(\S.{0,78}?: )Traceback \(most recent call last\):\s*$")
_SEVERITY_WORD = re.compile(r"(?i)\b(?:error|warn(?:ing)?|info|debug|critical|fatal)\b|\[[EWIF]\]")


def _relay_tags(stripped: list[str]) -> tuple[str, ...]:
    """The tags a wrapper puts before each line of its child's output, learned from the
    tracebacks they relay: a tag that also leads the traceback's frames and exception."""
    tags = {
        m[1]
        for plain in stripped
        if "Traceback (most recent call last):" in plain
        and (m := _RELAYED_TRACEBACK.match(plain))
        and not _SEVERITY_WORD.search(m[1])
    }
    return tuple(
        sorted((t for t in tags if sum(p.startswith(t) for p in stripped) >= 3), key=len)[::-1]
    )


def _peel(plain: str, tags: tuple[str, ...]) -> str:
    return next((plain[len(tag) :] for tag in tags if plain.startswith(tag)), plain)


def _newest_first(entries: list[Entry]) -> bool:
    stamps = [m.group(0) for e in entries[:400] if (m := _TIMESTAMP.search(e.text[:80]))]
    pairs = list(itertools.pairwise(stamps))
    down = sum(1 for a, b in pairs if b < a)
    up = sum(1 for a, b in pairs if b > a)
    return down >= 3 and down > 2 * up


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
        failures = _past_the_slips(entries, failures, position)
        # A failure the server lived through long ago is not why it died: look at the last
        # burst of failures, and blame its first one (later ranks die of it).
        burst_start = 0
        for index in range(1, len(failures)):
            gap = abs(failures[index].line.number - failures[index - 1].line.number)
            if gap > SURVIVED_GAP_LINES:
                burst_start = index
        failures = failures[burst_start:]
        failures = _lived_through(entries, failures, position)
        first = failures[0]
        if first.peer_gone:
            # "Connection closed by peer": the peer failed first, and says why if it is here.
            # Another process whose own story starts with a failure of its own, not a peer gone.
            first_of: dict[str | None, Entry] = {}
            for entry in failures:
                first_of.setdefault(_process(entry), entry)
            origin = next((e for e in first_of.values() if not e.peer_gone), None)
            if origin is not None:
                first = origin
        if first.warning and rules.MEMORY_RAN_OUT.search(first.content):
            # An allocator's warning that it ran out, then the failure it caused, in its own
            # words ("Execution of replica 0 failed: Resource exhausted: Out of memory ..."):
            # the failure is the line to read, the warning its detail.
            failed = next(
                (
                    e for e in failures
                    if not e.warning and _OUT_OF_MEMORY.search(e.content)
                    and 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
                ),
                None,
            )  # fmt: skip
            first = failed or first
        if _PEER_WAIT_TIMEOUT.search(first.content):
            # An all-to-all's kernels timing out on a peer that stopped answering: a rank out
            # of memory in the same burst is why it stopped (its trap's launch failure is not).
            starved = next(
                (e for e in failures if e.strength == 3 and _OUT_OF_MEMORY.search(e.content)), None
            )
            first = starved or first
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
                and not _same_logger(first, following[0])
                # (a shell reporting its child aborted says how it ended, not why, and an
                # exception carrying a library's status code alone says less than the error
                # logged first: "nixlBackendError: NIXL_ERR_BACKEND" after UCX's own)
                and not rules.SHELL_JOB.search(following[0].content)
                # (nor glibc's abort on the heap the failed set-up left corrupt, nor a crash
                # signal's banner: how the process died, not why)
                and not rules.HEAP_CORRUPTED.search(following[0].content)
                and not rules.SIGNALLED.search(following[0].content)
                and not rules.ABORT_BANNER.search(following[0].content)
                and not _only_a_status(following[0])
                # (nor another rank's word that its peer went away: this failure's consequence)
                and not following[0].peer_gone
            ):
                first = following[0]
        if rules.ABORT_BANNER.search(first.content):
            # An abort's banner says how the process died; a fatal check in the same burst
            # says why, even printed after it by another thread.
            check = next(
                (
                    e for e in failures
                    if e.strength == 3
                    and 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
                    and (rules.FATAL_CHECK.search(e.content) or rules.FATAL_LEVEL.search(e.prefix))
                ),
                None,
            )  # fmt: skip
            first = check or first
        if (
            rules.SHELL_JOB.search(first.content) and "Killed" in first.content
        ) or rules.KILLED_CHILD.search(first.content):
            # A shell's or a launcher's word that its child was killed says not why; the
            # kernel's or a scheduler's word after it does ("TERM_MEMLIMIT: job killed after
            # reaching LSF memory usage limit.", "Detected 1 oom_kill event in StepId=...").
            why = next(
                (
                    e for e in failures
                    if 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
                    and rules.HOST_MEMORY_KILL.search(e.content)
                ),
                None,
            )  # fmt: skip
            first = why or first
        first = _announced_traceback(entries, failures, first, position) or first
        first = _explained_by_chain(entries, first, position)
        details = [e for e in failures if e.detail and _is_detail_of(e, first, entries, position)]
        if details and details[0].content not in first.content:
            # "Last error:" then the line an exception's summary was made of, unless that line
            # repeats the one already chosen (NCCL's WARN, first in time).
            first = details[0]
        if _GOES_ON.search(first.content) or _introduces_a_quote(entries, position[id(first)]):
            # "RuntimeError: Internal Triton PTX codegen error:" (or its next line "`ptxas`
            # stderr:"): the failure it goes on to quote ("ptxas fatal : Value 'sm_100' is not
            # defined ...") says what it was.
            # (or lays its report out as fields below: "File:", "Line:", "Error code: 700",
            # "Error text: ...")
            reach = max(INCIDENT_LINES, _fields_below(entries, position[id(first)]))
            quoted = [
                e for e in failures
                if 0 < position[id(e)] - position[id(first)] <= reach and e.strength == 3
            ]  # fmt: skip
            if quoted:
                first = quoted[0]
            elif _QUOTES_OUTPUT.search(first.content):
                # (a tool's whole output quoted, "Ninja build failed. Ninja output:": its first
                # error, however far down the build's steps, before another such header)
                first = _first_error_quoted(failures, first, position) or first
        if rules.QUOTES_NEXT.search(first.content):
            # "BackendCompilerFailed: backend='inductor' raised:": the line it quotes says why.
            quoted = [
                e for e in failures
                if 0 < position[id(e)] - position[id(first)] <= FOLLOW_UP_LINES
                and not rules.POINTS_ELSEWHERE.search(e.content)
            ]  # fmt: skip
            if quoted:
                first = quoted[0]
        first = _located_below(entries, first, position)
        # One incident often spans a few lines (oom-kill, then "Killed process"): the most
        # telling line of the first incident.
        incident = [
            e for e in failures
            if abs(e.line.number - first.line.number) <= INCIDENT_LINES and e is not first
            and (e.warning or not first.warning)
            # (a peer gone beside the death that explains it is that death's consequence)
            and (first.peer_gone or not e.peer_gone)
        ]  # fmt: skip
        best = first
        for candidate in incident:
            gain = _specificity(candidate) - _specificity(best)
            # (one that says it again may still say why: "Requested buffer size exceeds
            # device memory allocation limit" after "Device memory allocation ... failed.")
            if gain > 0 and (not _restates(candidate, first) or gain >= RESTATED_GAIN):
                best = candidate
        return best
    for wrapper in (e for e in entries if e.strength == 1 and not e.noise):
        # an exception named alone, its message on the indented lines below it ("RuntimeError:",
        # then "    An attempt has been made to start a new process before the"): that says
        said = _reason_below(entries, wrapper, position[id(wrapper)])
        if said is not None:
            return said
    wrappers = [e for e in entries if e.strength == 1 and not e.noise]
    if _another_process_failed(entries) is not None:
        # Its error is that process's to print: none of these lines is the cause, but for a
        # test's summary quoting an exception of its own among tests that died of another
        # process (pytest's "FAILED t.py::test - RuntimeError: CUDA driver initialization
        # failed" beside "... - RuntimeError: Engine core initialization failed. See root
        # cause above").
        own = [
            e for e in wrappers
            if _TEST_SUMMARY_QUOTING.search(e.content)
            and not rules.ANOTHER_PROCESS_FAILED.search(e.content)
            and not rules.POINTS_ELSEWHERE.search(e.content)
        ]  # fmt: skip
        return own[0] if own else None
    # Only wrappers: the weakest one that still says something ("exits with return code = -9"),
    # else a wrapper that points elsewhere, for the log holds nothing better.
    # one that quotes the error it reports ("Worker failed with error 'Encoder cache miss
    # ...'") says most of all, though it points to a traceback the log does not hold
    quoting = [e for e in wrappers if rules.QUOTES_ERROR.search(e.content)]
    informative = [e for e in wrappers if not rules.STRONG_WRAPPERS.search(e.content)]
    pointing = [e for e in wrappers if rules.TRACEBACK not in e.content]
    chosen = quoting or informative or pointing
    if not chosen:
        return None
    return (
        _relayed_at_debug(entries, position[id(chosen[0])])
        or _logged_just_before(entries, position[id(chosen[0])])
        or chosen[0]
    )


# pytest's short summary of a test with the exception it raised
_TEST_SUMMARY_QUOTING = re.compile(r"^(?:FAILED|ERROR) \S+ - (?:[\w.]+\.)?[A-Z]\w*: \S")


def _relayed_at_debug(entries: list[Entry], index: int) -> Entry | None:
    """A tool that relays a child's output at its own DEBUG level (uv -v, a build backend's
    stderr), then says the child failed: the exception that ended the child's output."""
    if not rules.RELAYS_AT_DEBUG.search(entries[index].content):
        return None
    for entry in reversed(entries[max(0, index - FOLLOW_UP_LINES) : index]):
        if rules.EXCEPTION_LINE.match(_DEBUG_WORD.sub("", entry.content)):
            entry.strength, entry.noise = 3, False
            return entry
    return None


_DEBUG_WORD = re.compile(r"^(?:DEBUG|TRACE)\s+")  # uv's level word before what it relays


def _located_below(entries: list[Entry], first: Entry, position: dict[int, int]) -> Entry:
    """The record right below a terse error that says it again with where it was raised."""
    below = entries[position[id(first)] + 1 : position[id(first)] + 2]
    if below and rules.LOCATED_RECORD.search(below[0].content) and _restates(below[0], first):
        return below[0]
    return first


def _first_error_quoted(
    failures: list[Entry], header: Entry, position: dict[int, int]
) -> Entry | None:
    for entry in failures:
        distance = position[id(entry)] - position[id(header)]
        if distance <= 0:
            continue
        if distance > FOLLOW_UP_LINES or (entry.strength == 3 and _GOES_ON.search(entry.content)):
            return None  # (past the quote, or another header's own)
        if entry.strength == 3 and _SAYS_ERROR.search(entry.content):
            return entry
    return None


_FIELD = re.compile(r"^[A-Z][\w ]{0,20}:\s+\S")


def _fields_below(entries: list[Entry], index: int) -> int:
    """How many "Name: value" lines follow a header, one to a line."""
    count = 0
    for entry in entries[index + 1 :]:
        if entry.line.number != entries[index].line.number + count + 1:
            break
        if not _FIELD.match(entry.content):
            break
        count += 1
    return count


def _introduces_a_quote(entries: list[Entry], index: int) -> bool:
    """Whether the line after an exception's goes on with its message by introducing another
    program's output ("`ptxas` stderr:")."""
    if index + 1 >= len(entries) or not rules.EXCEPTION_LINE.match(entries[index].content):
        return False
    following = entries[index + 1]
    return (
        following.line.number == entries[index].line.number + 1
        and following.strength < 3  # (an error-severity line, not a failure of its own)
        and _GOES_ON.search(following.content) is not None
        and not rules.LAST_ERROR.match(following.content)
    )


def _logged_just_before(entries: list[Entry], index: int) -> Entry | None:
    """What the same logger said just before a wrapper ("Worker proc VllmWorker-3 died
    unexpectedly", then "EngineCore encountered a fatal error."): the wrapper reports that."""
    wrapper = entries[index]
    if all(stamped_errors(e) for e in entries if e.content):
        # every line stamped alike: a viewer's stamp, not the logger's word (a logger's own
        # "[warning]" after it does not make it the logger's)
        return None
    for entry in reversed(entries[max(0, index - INCIDENT_LINES) : index]):
        if entry.noise or entry.in_traceback is not None:
            return None
        if entry.level == "error" and wrapper.level == "error" and _prefix_words(entry) > 0:
            return entry
    return None


_COMMAND_NOT_FOUND = re.compile(rules.SHELL_COMMAND_NOT_FOUND)
_NOT_A_FAILURE = re.compile(r"\bThe caller indicates that this is not a failure\b")
# (a binding's own, lower-case names too: "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND")
_EXCEPTION_MESSAGE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): (.+)$")
EXPLAINS_WORDS = 5  # what a chained exception must add to the value it quotes
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
# a library's status code alone ("NVRTCError: NVRTC_ERROR_INVALID_OPTION (5)")
_STATUS_CODE = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+(?: \(-?\d+\))?")


def _announced_traceback(
    entries: list[Entry], failures: list[Entry], first: Entry, position: dict[int, int]
) -> Entry | None:
    """A logged error that announces the traceback right below it ("d2.engine.train_loop
    ERROR: Exception during training:"): the exception that traceback ends in, however long."""
    header = position[id(first)] + 1
    if not first.content.rstrip().endswith(":") or header >= len(entries):
        return None
    if rules.TRACEBACK not in entries[header].content:
        return None
    return next((e for e in failures if e.in_traceback == header and e.strength == 3), None)


def _lived_through(
    entries: list[Entry], failures: list[Entry], position: dict[int, int]
) -> list[Entry]:
    """The failures from the first one the process did not go on past: a logged error (an
    "ERROR ... Cannot use FA version 2 ..." it fell back from) followed by ordinary work and
    then by an exception is not why it stopped."""
    first_copy = 0  # of the failure being judged: the same record logged again is one failure
    for index, (failure, following) in enumerate(itertools.pairwise(failures)):
        between = entries[position[id(failure)] + 1 : position[id(following)]]
        if following.content == failure.content and not any(e.content for e in between):
            # (a record logged twice in a row, by two workers or two handlers: what follows
            # the last copy decides, and the first copy is the one to show)
            continue
        if _COMMAND_NOT_FOUND.match(failure.content) or _NOT_A_FAILURE.search(failure.content):
            # (a shell goes on to its next command, and an allocator's hint that it says is
            # "not a failure" is none: what failed after them is the story)
            first_copy = index + 1
            continue
        caught = failure.strength == 3 and _warned_and_went_on(between, failure)
        if not caught and (failure.strength != 2 or failure.warning):
            return failures[first_copy:]
        if len(_went_on(between, failure)) < WENT_ON_LINES:
            return failures[first_copy:]
        first_copy = index + 1
    return failures[first_copy:]


# A program's own warning that a step failed, said as it goes on to the next ("[WARN] Exp E
# training failed", "WARNING: evaluation failed, skipping")
_STEP_FAILED_WARNING = re.compile(
    r"^\[?(?:WARN|WARNING)\]?:?\s.*\b(?:failed|skipping|skipped|continuing)\b", re.IGNORECASE
)
CAUGHT_REACH = 2  # how close below an exception a program's word that it caught it comes


def _warned_and_went_on(between: list[Entry], failure: Entry) -> bool:
    """An exception the program caught: its own warning that the step failed just below."""
    return any(
        e.line.number - failure.line.number <= CAUGHT_REACH
        and _STEP_FAILED_WARNING.search(e.content)
        for e in between[:CAUGHT_REACH]
    )


def _went_on(later: list[Entry], root: Entry) -> list[Entry]:
    """Records of their own after an error-severity line: lines with fewer prefixes than the
    error's are the rest of its message (a logger prefixes a record's first line only)."""
    layers = _prefix_words(root)
    return [
        e for e in later
        if e.content and not e.strength and e.in_traceback is None
        and not rules.TEARDOWN.search(e.content) and _prefix_words(e) >= layers
    ]  # fmt: skip


def _only_a_status(entry: Entry) -> bool:
    said = _EXCEPTION_MESSAGE.match(entry.content)
    return said is not None and _STATUS_CODE.fullmatch(said[1].strip()) is not None


# An exception named by its module path and nothing more ("_queue.Empty" under a wait that
# timed out): bare, whatever its name ends in.
_BARE_QUALIFIED_NAME = re.compile(r"(?:[A-Za-z_]\w*\.)+[A-Z][A-Za-z]*")


# What to change, said by an exception ("... increase RAY_CGRAPH_get_timeout which is
# currently 10 seconds")
_ADVISES = re.compile(
    r"\b(?:[Ii]ncrease|[Dd]ecrease|[Rr]aise|[Ll]ower) (?:the )?[A-Z][A-Z0-9]*_\w+"
)


def _advised_in_chain(entries: list[Entry], first: Entry, position: dict[int, int]) -> Entry | None:
    """The same exception raised again in the chain, this time saying which setting to change
    (Ray's compiled graph timing out, then telling what timed out and what to raise)."""
    name = first.content.split(":", 1)[0]
    start = position[id(first)]
    for entry in entries[start + 1 : start + 1 + FOLLOW_UP_LINES]:
        if entry.strength == 3 and not entry.noise:
            if (
                entry.consequence
                and entry.content.split(":", 1)[0] == name
                and _ADVISES.search(entry.content)
                and not _ADVISES.search(first.content)
            ):
                return entry
            return None
    return None


# requests' and httpx's exceptions for an HTTP answer's status
_HTTP_STATUS_ERROR = re.compile(
    r"\bHTTPError: \d{3} (?:Client|Server) Error\b"
    r"|\bHTTPStatusError: (?:Client|Server) error '\d{3}"
)


# A launcher's failure that appends its child's log on the same line ("... timed out after
# 20 seconds: logs: ggml_cuda_init: ...")
_APPENDS_A_LOG = re.compile(r": logs?: \S")
# The Hub client's word when no answer and no cached copy was had
_OFFLINE_FALLBACK = re.compile(r"\bWe couldn't connect to 'https://huggingface\.co'")


# A cell's failure that leaves nothing behind for the cells after it: its operator stopped it,
# or its code named something undefined or did not parse.
_A_SLIP_OF_THE_CELL = frozenset(
    {"KeyboardInterrupt", "NameError", "SyntaxError", "IndentationError"}
)


def _past_the_slips(
    entries: list[Entry], failures: list[Entry], position: dict[int, int]
) -> list[Entry]:
    """A notebook's saved outputs (IPython's tracebacks, each headed by the exception's name)
    hold every cell that failed, each run after the one before it failed. Cells that failed
    by a slip (a typo, a stop) were gone past: the run's failure is the first cell that failed
    of its own, and the cells after it fail of what it left (memory still held, a model half
    built)."""
    named = [
        (entry, header[1]) for entry in entries
        if entry.strength == 1 and (header := IPYTHON_HEADER.match(entry.content))
    ]  # fmt: skip
    headers = [entry for entry, _ in named]
    header_ids = {id(e) for e in headers}
    own = [entry for entry, name in named if name not in _A_SLIP_OF_THE_CELL]
    if len(headers) < 2 or not own:
        return failures
    start = own[0]
    first = next(i for i, header in enumerate(headers) if header is start)
    # (a chain's exceptions, each under its own header: the cell's failure starts at the first)
    for earlier in reversed(headers[:first]):
        between = entries[position[id(earlier)] + 1 : position[id(start)]]
        if not any(rules.CHAINED.search(e.content) for e in between):
            break
        start = earlier
    # (what the cell printed before its traceback is its own, its workers' tracebacks too; an
    # earlier cell's traceback ends where its exception is)
    slips = [
        e.line.number for e in entries
        if e.in_traceback is not None and e.strength == 3 and e.line.number < start.line.number
        and id(entries[e.in_traceback]) in header_ids
    ]  # fmt: skip
    if not slips:
        return failures
    own_failures = [e for e in failures if e.line.number > max(slips)]
    return own_failures or failures


def _chain_end(entries: list[Entry], first: Entry, position: dict[int, int]) -> Entry:
    """The last exception of the chain an exception starts (each raised from the one before,
    its traceback beginning within `FOLLOW_UP_LINES` of it)."""
    end = first
    for entry in entries[position[id(first)] + 1 :]:
        if entry.strength != 3 or entry.noise:
            continue  # (IPython's source context between: no traceback of its own)
        begins = entries[entry.in_traceback] if entry.in_traceback is not None else entry
        if begins.line.number - end.line.number > FOLLOW_UP_LINES or not entry.consequence:
            break
        end = entry
    return end


_NO_MODULE = re.compile(r"\bNo module named '([\w-]+)")
_INSTALL = re.compile(r"\binstall\b", re.IGNORECASE)


def _is_detail_of(
    detail: Entry, first: Entry, entries: list[Entry], position: dict[int, int]
) -> bool:
    """Whether a line marked as a detail ("Last error:"'s next line, numpy's "Original error
    was: ...") says what the failure chosen so far summarised."""
    if _ORIGINAL_ERROR.search(detail.content):
        # (an exception's message may run long before it says why: numpy's advice)
        return 0 <= detail.line.number - first.line.number <= FOLLOW_UP_LINES
    if not _NAMES_A_VALUE.search(detail.content):
        return False
    at = position[id(detail)]
    return 0 <= at - position[id(first)] <= DETAIL_ENTRIES or any(
        # another rank's copy of the same exception, its "Last error:" filled in
        other.content == first.content
        for other in entries[max(0, at - DETAIL_ENTRIES) : at]
    )


_POINTS_ABOVE = re.compile(r"\babove\b")
_HANDLING = re.compile(r"^During handling of the above exception, another exception occurred:")


def _escaped_while_handled(
    entries: list[Entry], first: Entry, position: dict[int, int]
) -> Entry | None:
    """An exception a handler caught, then another raised while handling it ("During handling
    of the above exception, another exception occurred"): the one that escaped is the
    program's failure when it says more (a fallback's own failure, a library's reading of a
    probe that failed), unless it only repeats the caught one's words."""
    start = position[id(first)]
    if not any(_HANDLING.match(e.content) for e in entries[start + 1 : start + 6]):
        return None
    end = _chain_end(entries, first, position)
    if end is first or end.noise:
        return None
    said, was = _EXCEPTION_MESSAGE.match(end.content), _EXCEPTION_MESSAGE.match(first.content)
    if said is None:
        return None
    words = len(said[1].split())
    if words < EXPLAINS_WORDS or (was is not None and words < len(was[1].split())):
        return None
    if was is not None and (was[1].strip() in said[1] or said[1].strip() in was[1]):
        return None  # raised again with the same words: the original says it
    return None if _POINTS_ABOVE.search(said[1]) else end  # ("... the error above it")


def _explained_by_chain(entries: list[Entry], first: Entry, position: dict[int, int]) -> Entry:
    """A terse exception ("KeyError: 'gemma4_unified'") that the next one in its chain quotes
    and explains ("ValueError: ... model type `gemma4_unified` but Transformers does not
    recognize this architecture ..."): the explanation is the line to read."""
    advice = _advised_in_chain(entries, first, position)
    if advice is not None:
        return advice
    escaped = _escaped_while_handled(entries, first, position)
    if escaped is not None:
        return escaped
    if _HTTP_STATUS_ERROR.search(first.content):
        # A web client's status ("HTTPError: 401 Client Error: Unauthorized for url: ...")
        # that the caller raised its own meaning from ("OSError: You are trying to access a
        # gated repo."): the chain's last word says what the status meant, unless that word
        # is the offline fallback's, which the status belies (a 429: the Hub did answer).
        end = _chain_end(entries, first, position)
        return first if _OFFLINE_FALLBACK.search(end.content) else end
    named = rules.EXCEPTION_LINE.match(first.content)
    if _BARE_QUALIFIED_NAME.fullmatch(first.content) or (
        named is not None
        and (
            not (named[2] or named[3])
            or _OBJECT_REPR.fullmatch((named[2] or "").strip())
            or _STATUS_CODE.fullmatch((named[2] or "").strip())
        )
    ):
        # A bare name ("TimeoutError", "StopIteration") quotes nothing, nor does an object's
        # default repr ("KeyError: <vllm.config.ModelConfig object at 0x7fec41821900>") or a
        # status code alone: the next exception of its chain that says something explains it
        # (however long the traceback between them: IPython's quotes source around each frame).
        start = position[id(first)]
        for entry in entries[start + 1 : start + 1 + CHAIN_LINES]:
            if entry.strength == 3 and not entry.noise:
                said = _EXCEPTION_MESSAGE.match(entry.content)
                if entry.consequence and said and len(said[1].split()) >= EXPLAINS_WORDS:
                    return entry
                return first
        return first
    missing = _NO_MODULE.search(first.content)
    if missing is not None:
        # A missing module, then the library's own word on what to install ("ImportError:
        # Please install bitsandbytes>=0.46.1 via `pip install ...`"): the version is in it.
        start = position[id(first)]
        for entry in entries[start + 1 : start + 1 + FOLLOW_UP_LINES]:
            if entry.strength == 3 and not entry.noise:
                if (
                    entry.consequence
                    and missing[1] in entry.content
                    and _INSTALL.search(entry.content)
                ):
                    return entry
                return first
        return first
    terse = _EXCEPTION_MESSAGE.match(first.content)
    if terse is None or len(terse.group(1).split()) > 2:
        return first
    value = terse.group(1).strip("'\"`")
    if len(value) < 3:
        return first
    start = position[id(first)]
    for entry in entries[start + 1 : start + 1 + FOLLOW_UP_LINES]:
        if entry.strength == 3 and not entry.noise:
            explained = _EXCEPTION_MESSAGE.match(entry.content)
            if (
                entry.consequence
                and explained is not None
                and value in explained.group(1)
                and len(explained.group(1).split()) >= EXPLAINS_WORDS
            ):
                return entry
            return first
    return first


_DIGITS = re.compile(r"\d+")


def _crash_loop(entries: list[Entry], launches: list[Entry]) -> bool:
    """Whether the two runs before the last launch ended in the same failure."""
    position = {id(entry): index for index, entry in enumerate(entries)}
    endings = []
    for start, end in itertools.pairwise(launches[-3:]):
        run = entries[position[id(start)] : position[id(end)]]
        failed = [e for e in run if e.strength >= 2 and not e.noise]
        endings.append(_DIGITS.sub("0", failed[-1].content) if failed else None)
    return endings[0] is not None and endings[0] == endings[1]


def _fails_after(entries: list[Entry], launch: Entry) -> bool:
    """Whether anything failed from the launch line on."""
    after = False
    for entry in entries:
        after = after or entry is launch
        if after and entry.strength >= 2 and not entry.noise:
            return True
    return False


def _another_process_failed(entries: list[Entry]) -> Entry | None:
    """The first line that says in words another process failed ("Received sigquit from a
    child process"), where nothing else failed."""
    return next(
        (
            e
            for e in entries
            if e.strength == 1 and not e.noise and rules.ANOTHER_PROCESS_FAILED.search(e.content)
        ),
        None,
    )


def _ran_on_before(entries: list[Entry], wrapper: Entry) -> Entry | None:
    """The last failure set aside as lived through shortly before the word that another
    process failed: an exception asyncio's loop logged and ran on past, or a child's failure
    (a scheduler's watchdog) that the front end answered requests past."""
    before = entries[: entries.index(wrapper)]
    for lived_through in (
        lambda e: e.set_aside == LOOP_RAN_ON and rules.EXCEPTION_LINE.match(e.content),
        lambda e: e.set_aside == SERVED_ON and e.set_aside_strength >= 2 and not e.noise,
    ):
        found = next(
            (
                e for e in reversed(before)
                if lived_through(e) and wrapper.line.number - e.line.number <= FOLLOW_UP_LINES
            ),
            None,
        )  # fmt: skip
        if found is not None:
            return found
    return None


# A launcher naming the process that died by its name and pid, as that process's own lines are
# tagged ("Process ApiServer_0 (PID: 10466) died with exit code 1", "(ApiServer_0 pid=10466)")
_NAMED_PROCESS = re.compile(r"\bProcess (\w+) \(PID: (\d+)\)")


def _failure_of_the_named(entries: list[Entry], wrapper: Entry) -> Entry | None:
    """The last failure the process a wrapper names printed before it, even one set aside as
    lived through: the others went on (the engine loading on while its API server gave up
    waiting for it), the named one did not."""
    named = _NAMED_PROCESS.search(wrapper.content)
    if named is None:
        return None
    tag = f"({named[1]} pid={named[2]})"
    return next(
        (
            e for e in reversed(entries[: entries.index(wrapper)])
            if tag in e.text and not e.noise
            and (e.strength >= 2 or (e.set_aside and rules.EXCEPTION_LINE.match(e.content)))
        ),
        None,
    )  # fmt: skip


def _same_logger(first: Entry, later: Entry) -> bool:
    """Two records a logger tagged alike ("[TRT] [E]"): the later one is not the exception
    that says why the first failed, just its next line of complaint."""
    tags = rules.TAGS.match(first.content)
    return tags is not None and later.content.startswith(tags.group(0))


def _prefix_words(entry: Entry) -> int:
    cut = entry.text.rfind(entry.content) if entry.content else -1
    return len(entry.text[:cut].split()) if cut > 0 else 0


def _process(entry: Entry) -> str | None:
    for pattern in rules.PROCESS:
        if match := pattern.search(entry.text):
            return match.group(1)
    return None


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
    lines_total: int = 0,
) -> Analysis:
    lines = [virtual for line in kept for virtual in _virtual_lines(line)]
    stripped = [strip_prefixes(line.text) for line in lines]
    hosts = _host_prefixes(lines, stripped)
    if hosts:  # peeled again, launchers' names too
        stripped = [strip_prefixes(line.text, hosts) for line in lines]
    relayed = _relay_tags(stripped)
    if relayed:
        stripped = [_peel(plain, relayed) for plain in stripped]
    entries = [Entry(line, line.text, plain) for line, plain in zip(lines, stripped, strict=True)]
    newest_first = _newest_first(entries)
    if newest_first:
        entries.reverse()
    mark(entries)
    launches = [e for e in entries if rules.LAUNCH.search(e.text)]
    restarted = None
    if (
        len(launches) > 2
        and not _fails_after(entries, launches[-1])
        and _crash_loop(entries, launches)
    ):
        # A supervisor restarting the same crash again and again (a container's restart
        # policy): the run that just began is one more turn; the last one that ended tells.
        restarted = launches.pop()
    if launches:
        # Several launches in one file: the story is the last one's; what failed before it
        # belongs to a run that is over (and its readiness too). One launch the same: what
        # failed before it (a container's banner, a pipeline's first try) is not its story.
        last_launch = launches[-1]
        if len(launches) > 1:
            ready_lines = [r for r in ready_lines if not _before(r, last_launch.line, newest_first)]
        for entry in entries:
            if _before(entry.line, last_launch.line, newest_first):
                entry.strength = min(entry.strength, 0)
    appends = next(
        (e for e in entries if e.strength >= 2 and _APPENDS_A_LOG.search(e.content)), None
    )
    if appends is not None and not newest_first:
        # A launcher's failure that appends its child's log ("... timed out after 20 seconds:
        # logs: ..."): what follows is that log, printed after the failure, and a readiness
        # in it came before the failure.
        ready_lines = [r for r in ready_lines if r.number < appends.line.number]
    sglang = any(_SGLANG_PREFIX.search(e.text) or _SGLANG.search(e.content) for e in entries)
    ready_line = next(
        (
            line
            for line in (reversed(ready_lines) if newest_first else ready_lines)
            if (not sglang or _SGLANG_READY.search(line.text)) and _confirmed(line.text)
        ),
        None,
    )
    if ready_line is not None:
        # A server that became ready lived through whatever failed before (a retried
        # connection, a warning's traceback): only what fails after counts.
        for entry in entries:
            if _before(entry.line, ready_line, newest_first):
                entry.strength = min(entry.strength, 0)
    started = next((e for e in reversed(entries) if _STARTED.search(e.content)), None)
    if started is not None and not newest_first:
        # An engine that finished starting lived through what failed while it started.
        for entry in entries[: entries.index(started)]:
            if entry.strength:
                entry.strength, entry.set_aside = 0, "an error the engine finished starting after"
    if not newest_first:
        _forget_installs_gone_past(entries, lines_total)
    survived = _forget_survived(entries, None if newest_first else last_serving_line)
    if not newest_first:
        _forget_recurring(entries)
    # The last burst: read from its end, a newest-first log has none this way.
    start = None
    if not newest_first:
        progress = [last_serving_line or 0, ready_line.number if ready_line else 0]
        progress += [e.line.number for e in entries if _ENGINE_SERVING.search(e.content)]
        progress += [launches[-1].line.number] if launches else []  # a new run starts afresh
        start = burst.burst_start(entries, lines_total, max(progress))
    # (newest first: no burst to read from its end, but a stop nothing failed after still ends
    # the story)
    stop = burst.stopped_at(entries, start if start is not None else lines_total + 1)
    finished = None if newest_first or stop is not None else _finished(entries)
    said = stop or finished
    if said is not None:
        # Stopped by an operator or a scheduler (whatever its launcher prints next is no
        # failure), or done with its work: no crash.
        why = (
            "stopped by an operator or a scheduler" if stop else "the job said it finished its work"
        )
        return Analysis(
            ready=True if ready_line else None,
            crashed=False,
            root=None,
            error_class=None,
            fingerprint=None,
            ready_line=ready_line,
            crashed_reason=f"line {said.line.number}: {why}",
        )
    root = _choose_root(entries)
    if root is not None:
        root = (
            _said_below(entries, root)
            or _introduced_below(entries, root)
            or _quoted_first(entries, root)
            or _summarised_at_exit(entries, root)
            or _raised_below(entries, root)
            or _asserted(entries, root)
            or _null_asserted(entries, root)
            or _disk_full(entries, root)
            or root
        )
    # Lines after the last one kept (a newest-first log's unkept lines are its oldest).
    last_kept = max((e.line.number for e in entries), default=0)
    unseen_after = 0 if newest_first else max(0, lines_total - last_kept)
    late = None
    if root is None and start is not None and _another_process_failed(entries) is None:
        # Never silent on a failure: an error-shaped line that ends the log explains it, unless
        # the engine knows why it was set aside.
        late = burst.unexplained(entries, start)
        if late is not None and not late.set_aside and not late.noise and burst.fatal(late):
            late.strength = max(late.strength, 2)
            root = late

    retried = None
    if root is None and not newest_first:
        root = retried = _retried_until_the_end(entries, lines_total)
    if root is not None and (given := _reason_below(entries, root)) is not None:
        root = given
    if root is not None and (said := _said_before_asserting_nothing(entries, root)) is not None:
        root = said
    if root is None and (wrapper := _another_process_failed(entries)) is not None:
        ran_on = _ran_on_before(entries, wrapper) or _failure_of_the_named(entries, wrapper)
        if ran_on is not None:
            # The loop ran on past the exception, or the front end went on answering past a
            # child's failure (a scheduler's watchdog), but not for long: the process it was
            # to talk to is said to have failed right after, and nothing else says why.
            ran_on.strength, ran_on.set_aside = 3, ""
            root = ran_on
    if root is None and wrapper is not None:
        # It failed, and says so; why is for the failing process's own lines, still to come
        # (a child's traceback often lands after its parent's word that it died).
        return Analysis(
            ready=True if ready_line else None,
            crashed=True,
            root=None,
            error_class=None,
            fingerprint=None,
            ready_line=ready_line,
            crashed_reason=f"line {wrapper.line.number} says another process failed",
            pending=rules.WAITING,
        )
    waiting = _ends_waiting(entries, lines_total) if root is None and not newest_first else None
    if waiting is not None and late is None and survived is None:
        return Analysis(
            ready=True if ready_line else None,
            crashed=False,
            root=waiting,
            error_class="timeout_or_hang",
            fingerprint=rules.fingerprint("timeout_or_hang", waiting.content),
            excerpt=[waiting.line],
            ready_line=ready_line,
            candidates=[waiting.line],
            crashed_reason=(
                f"the log ends waiting on other processes (line {waiting.line.number}): "
                "a hang, not a crash"
            ),
        )
    if root is None:
        hang = any(_HANG_DUMP.search(e.content) for e in entries)
        reason = "a dump of stuck threads, no failure" if hang else rules.NO_FAILURE
        candidates = []
        if late is not None and not late.set_aside and not late.noise:
            # An error that says nothing fatal: shown, not called a crash (a server logs errors
            # it lives through, and a log cut short ends on one as often as a dead process).
            candidates = [late.line]
            reason = (
                f"line {late.line.number} has an error's shape but says nothing fatal, and "
                "nothing fatal follows: read as no crash"
            )
        elif late is not None:
            why = late.set_aside or "a line known not to be a failure"
            reason = f"line {late.line.number} has an error's shape: {why}"
        elif survived is not None:
            reason = f"line {survived.line.number} failed, then the server went on serving"
        return Analysis(
            ready=True if ready_line else None,
            crashed=False,
            candidates=candidates,
            root=None,
            error_class="timeout_or_hang" if hang else None,
            fingerprint=None,
            ready_line=ready_line,
            crashed_reason=reason,
        )

    if (
        ready_line is not None
        and _before(ready_line, root.line, newest_first)
        and _library_errors_only(entries, root)
    ):
        # A native library (a KV-transfer engine, a store client) logs its failures at
        # ERROR and returns them to its caller: after the server came up, such records
        # with nothing fatal after them are not its death.
        return _shown_not_fatal(
            root,
            ready_line,
            f"line {root.line.number} and the errors after it are a native library's records "
            "after the server was ready, and nothing fatal follows: read as no crash",
        )
    crashed, crashed_reason = _crashed(entries, root, unseen_after)
    lived_on = 0 if newest_first else lines_total - root.line.number
    if crashed is None and retried is None and lived_on >= LIVED_ON_LINES:
        # An error-severity record, then hundreds of lines of the same run's work with
        # nothing failing after: the run lived through it.
        return _shown_not_fatal(
            root,
            ready_line,
            f"line {root.line.number} is an error-severity record, then the process went on "
            f"for {lived_on} lines with nothing failing: read as no crash",
        )
    if retried is not None:
        crashed = True
        crashed_reason = f"line {root.line.number} timed out, and the log ends retrying it"
    if restarted is not None:
        crashed_reason += f"; restarted at line {restarted.line.number}, as after the run before"
    import_failed = _failed_import_behind(entries, root)
    if import_failed is not None:
        crashed_reason += (
            f"; it names a module whose import failed at line {import_failed.line.number}"
        )
        root = import_failed
    excerpt = _excerpt(entries, root)
    root_index = entries.index(root)
    context = [e.content for e in excerpt]
    if rules.SIGNALLED.search(root.content):
        # a signal's fault is told by the frames it died in, which faulthandler prints after it
        context += [e.content for e in entries[root_index + 1 : root_index + 1 + FOLLOW_UP_LINES]]
    error_class = rules.error_class(_message(entries, root_index), "\n".join(context))
    ready: bool | None
    if ready_line is not None and _before(ready_line, root.line, newest_first):
        ready = True
    elif any(_NEVER_STARTED.search(e.content) for e in entries[root_index:]):
        ready = False  # the server says so itself: it failed to start
    elif (
        first_runtime_offset is not None
        and _offset_before(first_runtime_offset, root.line.offset, newest_first)
    ) or any(_RUNTIME.search(e.content) for e in entries[max(0, root_index - 60) : root_index + 5]):
        ready = None
    elif (
        error_class in ("cuda_graph", "config_or_args")
        or any(
            _STARTUP.search(e.content) for e in entries[max(0, root_index - 80) : root_index + 40]
        )
    ) and (sglang or any(_SERVER.search(e.content) for e in entries)):
        # CUDA graphs are captured while the server starts.
        ready = False
    else:
        ready = None
    return Analysis(
        ready=ready,
        crashed=crashed,
        crashed_reason=crashed_reason,
        root=root,
        error_class=error_class,
        fingerprint=rules.fingerprint(error_class, root.content),
        excerpt=[e.line for e in excerpt],
        ready_line=ready_line,
        candidates=[e.line for e in _runners_up(entries, root)],
        frame=innermost_frame(failing_traceback(entries, root)),
    )


def _shown_not_fatal(root: Entry, ready_line: Line | None, reason: str) -> Analysis:
    """A failure the process lived through: shown as a runner-up, not called its death."""
    return Analysis(
        ready=True if ready_line else None,
        crashed=False,
        candidates=[root.line],
        root=None,
        error_class=None,
        fingerprint=None,
        ready_line=ready_line,
        crashed_reason=reason,
    )


_EMPTY_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\s*$")
_BARE_EXCEPTION = re.compile(r"^((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception))\s*$")
# logging.exception(repr(e)): "ValueError('Sampling parameters are missing ...')"
# (or "AssertionError()": its traceback's last line is the bare name)
_REPR_EXCEPTION = re.compile(
    r"^((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception))\((?:(['\"])(.+)\2)?\)\s*$"
)
_LISTED = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
SAID_BELOW_LINES = 20
# Paddle's own summary of what it raised, under its C++ frames: its exception's line is empty
# ("ResourceExhaustedError: ") and the message stands under it, past a blank line.
_ERROR_SUMMARY = re.compile(r"^Error Message Summary:$")
SUMMARY_REACH_LINES = 80  # a C++ traceback's frames between the exception and its summary


def _said_below(entries: list[Entry], root: Entry) -> Entry | None:
    """An exception with no message on its line ("ImportError: ") whose message, lines
    below, lists what failed: the first exception line of that list says it. A bare name
    ("ImportError", ranks' tracebacks interleaved) or its repr ("ValueError('...')", logged
    before its traceback) yields to the same exception with its message."""
    bare = _BARE_EXCEPTION.match(root.content) or _REPR_EXCEPTION.match(root.content)
    if bare is not None:
        named = f"{bare[1]}: "
        # A repr's message must match; its traceback, logged next, may be long.
        logged_repr = bare.re is _REPR_EXCEPTION
        quoted = (bare[3] or "") if logged_repr else ""
        reach = RAISED_REACH_LINES if logged_repr else SAID_BELOW_LINES
        for entry in entries[entries.index(root) + 1 :]:
            if entry.line.number - root.line.number > reach:
                break
            message = entry.content.removeprefix(named)
            quotes = message != entry.content and bool(message.strip())
            named_alone = entry.content.rstrip()
            if (quotes and message.startswith(quoted)) or (
                logged_repr
                and not quoted
                and (named_alone == bare[1] or named_alone.endswith(f".{bare[1]}"))
            ):
                entry.strength = max(entry.strength, 3)
                return entry
        return None
    if not _EMPTY_EXCEPTION.match(root.content):
        return None
    summarised = _summary_below(entries, root)
    if summarised is not None:
        summarised.strength = max(summarised.strength, 3)
        return summarised
    for entry in entries[entries.index(root) + 1 :]:
        if entry.line.number - root.line.number > SAID_BELOW_LINES:
            break
        listed = _LISTED.sub("", entry.content, count=1)
        said = rules.EXCEPTION_LINE.match(listed) and not _EMPTY_EXCEPTION.match(listed)
        if listed != entry.content and said:
            entry.strength = max(entry.strength, 3)
            return entry
    return None


def _summary_below(entries: list[Entry], root: Entry) -> Entry | None:
    """The message of the framework's summary under an exception printed empty: the first
    line with words under the summary's own exception line."""
    at = entries.index(root)
    header = next(
        (
            index for index in range(at + 1, len(entries))
            if entries[index].line.number - root.line.number > SUMMARY_REACH_LINES
            or _ERROR_SUMMARY.match(entries[index].content)
        ),
        None,
    )  # fmt: skip
    if header is None or not _ERROR_SUMMARY.match(entries[header].content):
        return None
    below = [e for e in entries[header + 1 : header + 8] if e.content.strip("-= ")]
    if len(below) < 2 or not _EMPTY_EXCEPTION.match(below[0].content):
        return None
    message = below[1]
    if message.line.number - below[0].line.number > 2 or rules.EXCEPTION_LINE.match(
        message.content
    ):
        return None
    return message


# An exception whose message ends by introducing the error it wraps on the next line
# ("RuntimeError: Failed to import x because of the following error (look up to see its
# traceback):", transformers' lazy import)
_INTRODUCES_ERROR = re.compile(r"\bthe following error\b[^:]*:\s*$")


def _introduced_below(entries: list[Entry], root: Entry) -> Entry | None:
    """The line right below an exception that introduces it: the error it wraps, said there
    even where the traceback above that told it was cut."""
    if not rules.EXCEPTION_LINE.match(root.content) or not _INTRODUCES_ERROR.search(root.content):
        return None
    index = entries.index(root)
    if index + 1 >= len(entries):
        return None
    said = entries[index + 1]
    if (
        said.line.number != root.line.number + 1
        or not re.search(r"[^\W\d_]{2}", said.content)
        or rules.FRAME.search(said.content)
        or rules.TRACEBACK in said.content
    ):
        return None
    said.strength = max(said.strength, 3)
    return said


def _reason_below(entries: list[Entry], root: Entry, at: int | None = None) -> Entry | None:
    """A failure's header whose next line gives the reason ("LLVM Fatal Error while compiling
    target binary for module: jit_iota", then "Reason: PTX version 8.8 does not support target
    'sm_107a'."), or an exception whose message starts on the next line, indented
    ("RuntimeError: ", then "    Some tensors share memory, ..."): that line says what failed.
    (`at`: the root's position where the caller knows it, asking for many roots.)"""
    index = (entries.index(root) if at is None else at) + 1
    if index < len(entries):
        below = entries[index]
        if below.line.number == root.line.number + 1 and (
            _REASON.match(below.content)
            or (_MESSAGE_BELOW.fullmatch(root.content) and _INDENTED.match(below.text))
        ):
            below.strength = max(below.strength, 3)
            return below
    return None


_MESSAGE_BELOW = re.compile(r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\s*")
_INDENTED = re.compile(r"\s+[^\s\^~]")


_REASON = re.compile(r"^Reason:\s+\S")
_CAUSED_BY = re.compile(r"Caused by:")
# C's assert on a constant ("CheckStatusValid(): Assertion `false' failed."): it says where,
# and the message the code printed just before it says what
_ASSERTED_NOTHING = re.compile(r"\bAssertion [`'](?:false|0)' failed")


def _said_before_asserting_nothing(entries: list[Entry], root: Entry) -> Entry | None:
    index = entries.index(root)
    if index == 0 or not _ASSERTED_NOTHING.search(root.content):
        return None
    said = entries[index - 1]
    if (
        said.line.number == root.line.number - 1
        and said.content
        and not said.noise
        and said.in_traceback is None
        and not said.strength
    ):
        said.strength = 3
        return said
    return None


QUOTED_FIRST_LINES = 20


def _quoted_first(entries: list[Entry], root: Entry) -> Entry | None:
    """Records quoting one exception ("Failed to create instance: TypeError: ...", logged
    after the stub's own "Failed to initialize Python stub: TypeError: ..." at INFO): the first
    in time, whatever severity its logger gave it."""
    index = entries.index(root)
    before = [
        e for e in entries[max(0, index - QUOTED_FIRST_LINES) : index]
        if root.line.number - e.line.number <= QUOTED_FIRST_LINES
    ]  # fmt: skip
    quoted = _QUOTED_RAISE.search(root.content)
    if quoted is not None and quoted.start() > 0 and len(quoted[1]) >= RAISED_MESSAGE_CHARS:
        said = quoted[0].strip(""" "':""")
        earlier = [e for e in before if e.content.find(said) > 0]
        if earlier:
            return earlier[0]
    # A handler relaying an error record whole ("Failed to initialize MLX handler: Error
    # loading model: Model type x not supported." after "ERROR:root:Model type x not
    # supported."): the record it relays said it first. (An exception raised with a record's
    # words is the failure that record announced.)
    if rules.EXCEPTION_LINE.match(root.content):
        return None
    relayed = [
        e for e in before
        if e.strength >= 2
        and len(message := _BASIC_LOGGING.sub("", e.content)) >= RAISED_MESSAGE_CHARS
        and root.content.endswith(message)
        and len(root.content) > len(message)
    ]  # fmt: skip
    return relayed[0] if relayed else None


# Python's logging in its basic format ("ERROR:root:"), before the message
_BASIC_LOGGING = re.compile(r"^(?:CRITICAL|ERROR|WARNING|INFO|DEBUG):[\w.]*:")


_EXIT_SUMMARY = re.compile(r"^Error: \S")
EXIT_SUMMARY_LINES = 10


def _summarised_at_exit(entries: list[Entry], root: Entry) -> Entry | None:
    """A command-line program's last word ("Error: Could not create backend", anyhow's in
    Rust, Go's) sums up what its logger recorded as an error just before: that record says
    which."""
    if not _EXIT_SUMMARY.match(root.content):
        return None
    index = entries.index(root)
    logged = [
        e for e in entries[max(0, index - EXIT_SUMMARY_LINES) : index]
        if e.strength >= 2 and e.level == "error" and not e.warning and not e.noise
        and root.line.number - e.line.number <= EXIT_SUMMARY_LINES
    ]  # fmt: skip
    if logged:
        return logged[0]
    deepest = _deepest_cause(entries, index)
    message = root.content.removeprefix("Error: ")
    if deepest is None or any(message in e.content for e in entries[:index]):
        return None  # (logged whole before: that record is the one to read)
    deepest.strength = max(deepest.strength, 3)
    return deepest


def _deepest_cause(entries: list[Entry], index: int) -> Entry | None:
    """anyhow's report under the program's last word: "Caused by:", then the causes indented,
    outermost first: the last one is where it started."""
    at = next(
        (i for i in range(index + 1, min(index + 3, len(entries))) if entries[i].content), None
    )
    if at is None or entries[at].line.number > entries[index].line.number + 2:
        return None
    if not _CAUSED_BY.fullmatch(entries[at].content):
        return None
    last = entries[at]
    for cause in entries[at + 1 :]:
        if cause.line.number != last.line.number + 1 or not _INDENTED.match(cause.text):
            break
        last = cause
    return None if last is entries[at] else last


RAISED_MESSAGE_CHARS = 20  # a message long enough to be the same error's, not a word
RAISED_REACH_LINES = 300  # how far below its logged message an exception's traceback may end
# another record quoting an exception with its message ('stub: "ValueError: <message>')
_QUOTED_RAISE = re.compile(
    r"""(?:^|[\s"':])(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): (.+?)["']?$"""
)
_NATIVE_RECORD = re.compile(r"\.(?:cpp|cc|cu|h):\d+\]")  # glog's and c10's "file.cpp:12] "


def _raised_below(entries: list[Entry], root: Entry) -> Entry | None:
    """A program's own word that something failed, quoting the exception's message
    ("Training failed: CUDA out of memory. Tried to allocate ..."), then that exception's
    traceback (logging.exception): the exception's own line names it."""
    if (
        rules.EXCEPTION_LINE.match(root.content)
        or _QUOTED_RAISE.search(root.content)
        or _NATIVE_RECORD.search(root.prefix)
    ):
        return None  # (a C++ library's own record of the fault is no program's word on it)
    for entry in entries[entries.index(root) + 1 :]:
        if entry.line.number - root.line.number > RAISED_REACH_LINES:
            break
        raised = rules.EXCEPTION_LINE.match(entry.content)
        message = raised[2] if raised else None
        if message is None and (quoted := _QUOTED_RAISE.search(entry.content)):
            message = quoted[1]
        if message and len(message) >= RAISED_MESSAGE_CHARS and message in root.content:
            return entry
    return None


_DEVICE_ASSERT = re.compile(r"device-side assert(?:ion)? triggered")
# (a CUDA source's, or a generated Triton kernel's that names its block and thread)
_KERNEL_ASSERTION = re.compile(
    r"(?:\.(?:cu|cuh|hip)(?::\d+)?: .*|\bblock: \[[\d,]+\],? thread: \[[\d,]+\],? )"
    r"\b[Aa]ssertion [`'].*[`'] failed"
)


def _asserted(entries: list[Entry], root: Entry) -> Entry | None:
    """ "CUDA error: device-side assert triggered" only reports a kernel's assertion: the
    kernel's own line ("IndexKernel.cu:402: ... Assertion `totalElements <= srcSize` failed.")
    says which, wherever the asynchronous error surfaced (even in a request it had set aside),
    and whether the kernel's output reached the log before the exception or just after it."""
    if not _DEVICE_ASSERT.search(root.content):
        return None
    index = entries.index(root)
    before = reversed(entries[:index])
    assertion = next((e for e in before if _KERNEL_ASSERTION.search(e.content)), None)
    if assertion is None:
        assertion = next(
            (
                e for e in entries[index + 1 :]
                if e.line.number - root.line.number <= FOLLOW_UP_LINES
                and _KERNEL_ASSERTION.search(e.content)
            ),
            None,
        )  # fmt: skip
    if assertion is not None:
        assertion.strength = max(assertion.strength, 3)
    return assertion


# An assertion that a handle exists ("GGML_ASSERT(device) failed"), and a component's word
# that creating it failed with a code ("ggml-hex: failed to open session 0 : error 0x72").
_NULL_ASSERTED = re.compile(r"ASSERT\(\s*\w+\s*(?:!=\s*(?:nullptr|NULL)\s*)?\) failed")
_FAILED_WITH_CODE = re.compile(r"\bfailed to \w+\b.*:\s*error (?:0x[0-9a-fA-F]+|-?\d+)\s*$")
NULL_ASSERT_LOOKBACK = 8


def _null_asserted(entries: list[Entry], root: Entry) -> Entry | None:
    """An assert that a handle exists only says it does not: a component's word just before
    it that creating it failed, with its code, says why."""
    if not _NULL_ASSERTED.search(root.content):
        return None
    at = entries.index(root)
    before = entries[max(0, at - NULL_ASSERT_LOOKBACK) : at]
    failed = next((e for e in before if _FAILED_WITH_CODE.search(e.content)), None)
    if failed is not None:
        failed.strength = max(failed.strength, 3)
    return failed


_WRITE_FAILED = re.compile(r"\b(?:[Ww]rit\w*|save|saving)\b.*\bfail|\bfail\w* (?:to )?(?:writ|sav)")
_DISK_FULL = re.compile(rules.DISK_FULL)


def _disk_full(entries: list[Entry], root: Entry) -> Entry | None:
    """A write that failed ("PytorchStreamWriter failed writing file data/5") is explained by
    a full disk anywhere in the log, before or after it (tee's own write failing too)."""
    if not _WRITE_FAILED.search(root.content) or _DISK_FULL.search(root.content):
        return None
    return next((e for e in entries if e.strength >= 2 and _DISK_FULL.search(e.content)), None)


_IMPORT_FAILED = re.compile(
    r"[Ff]ailed to import\b|\bImportError\b|\bNo module named\b|cannot open shared object file"
)
# A module's own name: with an underscore or a dot in it ("_core_C", "vllm._C"), not a word.
_MODULE_NAME = re.compile(r"\b[A-Za-z_][\w]*(?:_\w+|\.\w+)+\b")


def _failed_import_behind(entries: list[Entry], root: Entry) -> Entry | None:
    """An earlier line saying that importing a module failed (often only a warning, the
    program going on without it), when the failure names that module: why it failed."""
    if _IMPORT_FAILED.search(root.content):
        return None
    parts = {part for name in _MODULE_NAME.findall(root.content) for part in name.split(".")}
    names = {part for part in parts if "_" in part.strip("_")}
    if not names:
        return None
    for entry in entries[: entries.index(root)]:
        if _IMPORT_FAILED.search(entry.content) and any(
            re.search(rf"\b{re.escape(name)}\b", entry.content) for name in names
        ):
            entry.strength = max(entry.strength, 3)
            return entry
    return None


def _forget_installs_gone_past(entries: list[Entry], lines_total: int) -> None:
    """pip's failures that the log shows gone past: one just before its word that every
    package is in place (a wheel it then installed another way), and one with a long stretch
    of the program's work after it (a notebook's install cell, then its other cells)."""
    installed_at = [e.line.number for e in entries if _INSTALLED.search(e.content)]
    for entry in entries:
        if not entry.strength:
            continue
        if _PIP_FAILED.match(entry.content) and lines_total - entry.line.number > PIP_WENT_ON_LINES:
            entry.strength, entry.set_aside = 0, "an install the program went on past"
        elif _INSTALLER_ERROR.match(entry.content) and any(
            0 < at - entry.line.number <= FOLLOW_UP_LINES for at in installed_at
        ):
            entry.strength, entry.set_aside = 0, "an error the installer went past"


def _finished(entries: list[Entry]) -> Entry | None:
    """The job's own word that it did its work to the end, when nothing failed after it: the
    errors it logged before are ones it lived through."""
    for entry in reversed(entries):
        if _FINISHED.search(entry.content):
            return entry
        if entry.strength and not entry.noise:
            return None
    return None


_TIMED_OUT_AFTER = re.compile(r"\btimed out after\b")
_NATIVE_FRAME = re.compile(r"^frame #\d+: ")
_RETRY_OR_STACK = re.compile(rf"\b[Rr]etrying\b|{_NATIVE_FRAME.pattern}|^Exception raised from ")


def _retried_until_the_end(entries: list[Entry], lines_total: int) -> Entry | None:
    """A wait that timed out and is retried where the log ends, nothing after it but the
    retries and their native stacks: the process hangs in the retry, and the timeout says
    why (a store nobody answers). Its first time is the root cause."""
    last = len(entries) - 1
    while last >= 0 and not entries[last].set_aside:
        if not (_RETRY_OR_STACK.search(entries[last].content) or not entries[last].content):
            return None
        last -= 1
    # (the scanner keeps a stretch after an error: a native stack can run past it, but not
    # far past)
    unseen = lines_total - entries[-1].line.number if entries else 0
    if last < 0 or (unseen > 0 and not _NATIVE_FRAME.match(entries[-1].content)) or unseen > AFTER:
        return None
    timed_out = entries[last]
    if timed_out.set_aside != LIVED_THROUGH or not _TIMED_OUT_AFTER.search(timed_out.content):
        return None
    first = next(e for e in entries if e.content == timed_out.content)
    first.strength, first.set_aside = 2, ""
    return first


def _ends_waiting(entries: list[Entry], lines_total: int) -> Entry | None:
    """Where the log ends saying again and again that the process is still waiting on others
    (once is a slow step, a compile or a load; said again with nothing else between, a hang):
    the first time of that last run, when the hang began."""
    if len(entries) < 2 or entries[-1].line.number < lines_total:
        return None
    if not (_WAITING.search(entries[-1].content) and _WAITING.search(entries[-2].content)):
        return None
    first = entries[-1]
    for entry in reversed(entries[:-1]):
        if first.line.number - entry.line.number > WAITING_GAP_LINES:
            break
        if _WAITING.search(entry.content):
            first = entry
    return first


def _crashed(entries: list[Entry], root: Entry, unseen_after: int) -> tuple[bool | None, str]:
    """The end of the story decides: a fatal error with nothing after it but teardown is a
    crash; a warning-shaped error (NCCL's WARN) explains a hang unless something fatal or an
    error code passed up follows it; an error-severity line after which the process went on
    logging may or may not have been fatal (None: nothing in the log tells)."""
    where = f"line {root.line.number}"
    later = entries[entries.index(root) + 1 :]
    if root.warning:
        opener = next(
            (
                e for e in reversed(entries[: entries.index(root)])
                if e.strength >= 2 and not e.warning and not e.noise
                and root.line.number - e.line.number <= INCIDENT_LINES
            ),
            None,
        )  # fmt: skip
        if opener is not None:
            # The warning says what the error just before it was about: that error decides.
            return _crashed(entries, opener, unseen_after)
        fatal = next((e for e in later if e.strength and not e.warning and not e.noise), None)
        if fatal is not None:
            return True, f"a warning at {where}, then a fatal error at line {fatal.line.number}"
        aborted = next((e for e in later if _ABORT_FRAME.search(e.content)), None)
        if aborted is not None:
            frame = aborted.line.number
            return True, f"a warning at {where}, then a backtrace through an abort (line {frame})"
        # (an error that stays in NCCL's proxy thread leaves the caller waiting: a hang)
        passed_up = [e for e in later if rules.NCCL_PROPAGATION.search(e.content)]
        if passed_up and not rules.NCCL_PROXY.search(passed_up[-1].content):
            return True, f"a warning at {where}, then NCCL passes its error code up"
        return False, f"a warning at {where}, then nothing fatal: a hang, not a crash"
    if root.strength != 2:
        return True, f"a fatal error at {where}, then nothing but teardown"
    died = next((e for e in later if rules.SHELL_JOB.search(e.content)), None)
    if died is not None:
        shell = died.line.number
        return True, f"an error-severity line at {where}, then its shell saw it die (line {shell})"
    raised = next(
        (e for e in reversed(later)
         if e.strength == 3 and not e.noise and e.in_traceback is not None),
        None,
    )  # fmt: skip
    if raised is not None and not _went_on(entries[entries.index(raised) + 1 :], raised):
        # (the record, then the exception it announced, uncaught where the log ends)
        failed = raised.line.number
        return (
            True,
            f"an error-severity line at {where}, then an uncaught exception (line {failed})",
        )
    if len(_went_on(later, root)) + unseen_after >= WENT_ON_LINES:
        return None, (
            f"an error-severity line at {where}, then the process went on logging: "
            "the log does not tell whether it was fatal"
        )
    return True, f"an error-severity line at {where}, then nothing but teardown"


# A native backtrace's frame in an abort handler ("[0x1507...] Kokkos::Impl::host_abort(char
# const*)", "#3 0x... in abort () from libc.so.6"): the process is going down.
_ABORT_FRAME = re.compile(r"^(?:\[0x[0-9a-f]+\]|#\d+\s|frame #\d+:).*abort\w*\s*\(")
# glog's error record ("E0528 06:32:54.247958 735764 tcp_transport.cpp:170] "): a C++
# library's, not a fatal one (those are "F...").
_GLOG_ERROR = re.compile(r"(?:^|[\s:>|])E\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.-]+:\d+\]\s*$")


def _library_errors_only(entries: list[Entry], root: Entry) -> bool:
    """Whether the root and every failure after it are a C++ library's glog error records."""
    later = [e for e in entries[entries.index(root) :] if e.strength and not e.noise]
    return all(e.strength == 2 and not e.warning and _GLOG_ERROR.search(e.prefix) for e in later)


def _forget_survived(entries: list[Entry], last_serving_line: int | None) -> Entry | None:
    """The engine went on serving after a failure (a bad request, a client gone): the
    server lived through it, so it is not why the server died. Returns the last such failure."""
    serving_after = 0
    last: Entry | None = None
    for entry in reversed(entries):  # in time order, newest last
        if _ENGINE_GONE.search(entry.content):
            # What a front end answers after the engine said it was shutting down (requests
            # accepted that will never be served) is no proof the engine lived.
            serving_after, last_serving_line = 0, None
        if _ENGINE_SERVING.search(entry.content) and not _IDLE_STATS.search(entry.content):
            serving_after += 1
        elif entry.strength and (
            serving_after >= SERVED_AFTER
            or (
                last_serving_line is not None
                and last_serving_line - entry.line.number > SERVED_GAP_LINES
            )
        ):
            if entry.strength >= 2 and not entry.noise and last is None:
                last = entry
            entry.set_aside_strength, entry.strength = entry.strength, 0
            entry.set_aside = SERVED_ON
    return last


def _forget_recurring(entries: list[Entry]) -> None:
    """An error the server went on serving after, logged again word for word (the next
    request refused the same way): lived through again, unless something else follows it.
    (An error it said it would retry, logged again, is the retries running out.)"""
    served_on: dict[str, Entry] = {}
    for entry in entries:
        if entry.noise or entry.in_traceback is not None:
            continue
        if entry.set_aside == SERVED_ON:
            served_on.setdefault(entry.content, entry)
        elif entry.strength >= 2 and (first := served_on.get(entry.content)) is not None:
            entry.strength = 0
            entry.set_aside = f"an error the server went on past at line {first.line.number}"


def _confirmed(text: str) -> bool:
    """Whether a readiness line says ready: every row that finds it more broadly than it
    means it finds what it needs too."""
    return all(confirm.search(text) for found, confirm in _CONFIRMED if found.search(text))


def _before(first: Line, second: Line, newest_first: bool) -> bool:
    return _offset_before(first.offset, second.offset, newest_first)


def _offset_before(first: int, second: int, newest_first: bool) -> bool:
    return first > second if newest_first else first < second
