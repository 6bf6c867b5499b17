"""How strongly each kept line says "failed": tracebacks, chains, logging's own error blocks,
loggers' severities (unless a viewer stamps every line), error shapes, wrappers and noise."""

import itertools
import re
from collections import Counter

from app.diagnosis import burst, rules
from app.diagnosis.entry import Entry
from app.diagnosis.frames import raised_in_logging
from app.diagnosis.knowledge.lifecycle import (
    ENGINE_GONE,
    REQUEST_ANSWERED,
    REQUEST_REFUSED,
    SKIPPED,
)
from app.diagnosis.knowledge.ready import READY_LINES

# (glog's "E0720 03:42:54.944486 1 file.cc:810] ", "E20250720 ..." with the year, may follow a
# container's or a launcher's prefix)
_INFO_LEVEL = re.compile(
    # the HIP runtime's trace below its error level (":4:command.cpp  :357 : 38724 us: ")
    r"(?:^|\s):[2-4]:[\w./-]+\s*:\s*\d+\s*:\s*(?:\d+ us:|\.\.\.\s)"
    r"|(?:^|[\s\[(|])(?:INFO|WARNING|WARN|DEBUG|NOTICE)(?:[\s\]:|]|$)|\[[IW]\d{3,4}\s"
    r"|(?:^|[\s:>])[IW](?:\d{4})?\d{4}\s+\d|:\s[IW]\s+(?:\d+\s)?[\w/.-]+:\d+\]|^\d+\.\d\d\.\d{3}\.\d{3}\s[IWDN]\s"
    r"|\[(?:trace|debug|info|warning)\]\s"  # spdlog's
)
_ERROR_LEVEL = re.compile(
    r"(?:^|[\s\[(|])(?:ERROR|CRITICAL|FATAL|E)(?=[\s\]:|]|$)|\[F\s|(?:^|[\s:>])[EF](?:\d{4})?\d{4}\s|\[[EF]\d{3,4}\s"
    r"|:\s[EF]\s+(?:\d+\s)?[\w/.-]+:\d+\]|\[(?:error|critical)\]\s"  # (spdlog's, lower case)
    # the HIP runtime's trace at its error level (":1:rocdevice.cpp  :3434: 38724 us: "), or
    # at the level it prints a broken guarantee at before it aborts (":0:")
    r"|(?:^|\s):[01]:[\w./-]+\s*:\s*\d+\s*:\s*(?:\d+ us:|\.\.\.\s)"
)
# The error level said as a word ("ERROR", not glog's "E0407"): what a relayed logger's
# record starts with.
_ERROR_WORD = re.compile(r"(?:^|[\s\[(|])(?:ERROR|CRITICAL|FATAL)(?=[\s\]:|]|$)")
# A program's word that it goes on without what failed ("Falling back to cpu.")
_FELL_BACK = re.compile(r"\b[Ff]alling back to\b")
# glog names its source file and line: a logger's own severity, never a viewer's stamp, even
# where most lines carry it (a short log of one repeated "E1027 ... cuda_dnn.cc:456] ...").
# llama.cpp's logger the same: "0.00.065.436 E srv  start: ...".
_GLOG = re.compile(
    r"(?:^|[\s:>|])[EF](?:\d{4})?\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.-]+:\d+\]\s*$"
    # PyTorch's c10 logging: "[rank1]:[E ProcessGroupNCCL.cpp:1316] ", "[F217 ... f.cpp:9] "
    r"|\[[EF](?:\d{3,4}\s+[\d:.]+)?\s+[\w.-]+:\d+\]\s*$"
    r"|^\d+\.\d\d\.\d{3}\.\d{3}\s[EF]\s*$"
)
# A C program's own word that what follows is a warning (gcc's, llama.cpp's "warning: failed
# to munlock buffer: ..."): it says itself that it goes on.
_OWN_WARNING = re.compile(r"warning:\s")
# libfabric's own record ("libfabric:1680522:1726870657::core:core:ofi_hmem_init():339<warn>
# Failed to initialize hmem iface FI_HMEM_ZE: ..."): a provider it probed and went on without.
_LIBFABRIC_INFO = re.compile(r"^libfabric:\d+:\d+:[\w:;-]*\(\):\d+<(?:warn|info|debug|trace)> ")
# onnxruntime's own record below its error level ("[W:onnxruntime:Default, ...] Failed to
# create CUDAExecutionProvider. ...": a provider it fell back from)
_ONNXRUNTIME_INFO = re.compile(r"^\[[VIW]:onnxruntime:")
_LOGFMT_LEVEL = re.compile(r"(?:^|\s)level=\"?([A-Za-z]+)")
_LOGFMT_ERRORS = {"error", "err", "fatal", "panic", "critical", "crit"}
_LOGFMT_INFO = {"info", "warn", "warning", "debug", "trace", "notice"}
_ERRORISH = re.compile(r"[Ee]rror|[Ff]ail|ERROR|FAIL")
_REQUEST_REFUSED = rules.Alternatives(tuple(row.pattern for row in REQUEST_REFUSED))
_REQUEST_ANSWERED = rules.Alternatives(tuple(row.pattern for row in REQUEST_ANSWERED))
_SKIPPED = re.compile("|".join(f"(?:{row.pattern})" for row in SKIPPED))  # (a few rows)
_CODE_FRAME = re.compile(r'File "[^"]+", line \d+')
_AGENT_CLOSES = re.compile(r"\bSending process (\d+) closing signal SIG(?:TERM|KILL|INT)\b")
_SIGNAL_RECEIVED = re.compile(
    r"\bSignal \d+ \(SIG\w+\) received by PID (\d+)|\bexitcode\s*:\s*-\d+ \(pid: (\d+)\)"
)
# warnings' "file:line: Category: " (code run from a string: "<string>:56: RuntimeWarning: ")
_PYTHON_WARNING = re.compile(r"(?:\.py|<[\w -]+>):\d+: \w*Warning: ")
# Why an exception asyncio's loop logged ("Task exception was never retrieved") was set aside.
LOOP_RAN_ON = "an exception asyncio's event loop logged and ran on past"
THREAD_RAN_ON = "an exception of a background thread the process ran on past"
LIVED_THROUGH = "an error the program says it lived through"
REQUEST_SERVED_ON = "a request's handler failed: the server printed it and served on"
_EXIT_HANDLER_FRAME = re.compile(
    r'^File ".*(?:weakref|atexit)\.py", line \d+, in _(?:exitfunc|run_exitfuncs)$'
)
# IPython's traceback header names what it raised ("OutOfResources   Traceback (most recent
# call last)"): the line that starts with that name ends the traceback, named like an error or not.
IPYTHON_HEADER = re.compile(r"^([A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)")
# c10's line under an error's message, its C++ frames below ("Exception raised from recvBytes
# at .../c10d/Utils.hpp:605 (most recent call first):")
_CXX_RAISED_FROM = re.compile(r"^Exception raised from \S+ at \S+ \(most recent call first\):")
BARE_MESSAGE_REACH = 8  # the lines above a message where a header naming it would stand
_IGNORED = re.compile(r"Exception ignored (?:in|on calling|while)\b")
_RAISE_STATEMENT = re.compile(r"raise [\w.]+(?:\(.*)?$")
# A heading with no message of its own ("Error:", its message on the lines below it, as a
# wrapper library prints an exception it caught and retries after; pip's "ERROR: Exception:"
# over the traceback of its own crash).
# (a banner too: bitsandbytes' "=====ERROR=====" over the setup report it heads)
_HEADING = re.compile(r"(?:ERROR: )?(?:Error|ERROR|Exception):\s*$|={3,}\s*(?:ERROR|Error)\s*={3,}")
_TRACEBACK_FRAME = re.compile(r'File "[^"]+", line \d+, in ')
_OWN_ERROR_RECORD = re.compile(r"(?:ERROR|FATAL|CRITICAL): \S")
# IPython's arrow at the source line a frame ran ("---> 12 raise RuntimeError(...)"): code
_IPYTHON_SOURCE = re.compile(r"-+> ?\d+\s")
# pytest's long report of a failing frame, after its separator ("_ _ _ _ ..." or "____ test_x
# ____"): the frame's locals and its source (docstrings and all) until the "E   " lines that
# say what was raised.
_PYTEST_LONG_ENTRY = re.compile(r"^(?:_ ){10,}_?$")
_PYTEST_TEST_HEADER = re.compile(r"^_{3,} \S.* _{3,}$")  # (only under pytest's FAILURES)
_PYTEST_FAILURES = re.compile(r"^={3,} (?:FAILURES|ERRORS) ={3,}$")
_PYTEST_RAISED = re.compile(r"(?:^|\s)E {3,}$")  # (the prefix pytest puts before them)
MESSAGE_LINES = 8  # how far an exception's message may run below its line
PYTEST_ENTRY_LINES = 400  # how far a long entry's source may run before its "E" lines
ANSWERED_REACH = 30  # how far before a handler's answer the exception it repeats may be
HANDLER_TRACEBACK_LINES = 300  # how far a request handler's traceback may run
CUT_REPORT_LINES = 12  # how far past a handler's word a log cut in its report may end
SAME_ENDING_CHARS = 15  # how long a message two lines end in must be to be the same one
NODE_DUMP_LINES = 200  # how far a parser's description of a failed node may run
RECOVERY_REACH = 8  # how many kept lines a word of recovery may come after its error
_RETRYING = re.compile(r"\b[Rr]etrying\b")
# An access log's answer with a server error: "POST /v1/completions HTTP/1.1" 500 Internal ...
_ANSWERED_5XX = re.compile(r'" 5\d\d\b')
_READY = rules.Alternatives(tuple(row.pattern for row in READY_LINES))
_ENGINE_GONE = rules.Alternatives(tuple(row.pattern for row in ENGINE_GONE))
_VALIDATION_DETAIL = re.compile(rules.VALIDATION_DETAIL)
VALIDATION_DETAIL_LINES = 30  # three lines each (path, error, link) for ten errors
# a warning's stamp: a logger's word, or glog's and c10's letter ("W0530 14:48:26.433000 2622492
# site-packages/torch/_dynamo/convert_frame.py:1233] ")
_WARNING_STAMP = re.compile(
    r"\bWARN(?:ING)?\b|(?:^|[\s:>|])W\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]"
)
_GPU_FAULTS = frozenset(("oom_gpu", "cuda_runtime", "cuda_graph", "nccl_comm"))
_GROUP_BORDER = re.compile(r"\+-{8,}$")  # where an exception group's printout closes
# a server's word that a request's handler failed (Uvicorn's, aiohttp's), its traceback below
_A_HANDLER_FAILED = re.compile(
    r"\bException in ASGI application\b|\bError handling request from \S"
)
# vLLM's engine loop failing inside a request's traceback: the engine's failure, not the request's
_ENGINE_STEP_FRAME = re.compile(r"\bin (?:run_engine_loop|engine_step|step_async|execute_model)$")


def _access_record(status: str) -> re.Pattern[str]:
    """A front end's access record of a request answered with `status` (a regex of the
    first digit): Uvicorn's, Gin's."""
    return re.compile(rf'HTTP/[\d.]+" {status}\d\d\b|^\[GIN\] .*\| {status}\d\d \|')


_ANSWERED_ERROR = _access_record("[45]")
_ANSWERED_5XX_RECORD = _access_record("5")


def mark(entries: list[Entry]) -> None:
    """Tracebacks, logging-error blocks, chains, and how strongly each line says 'failed'."""
    levels = [_level(entry) for entry in entries]
    # A log viewer that stamps ERROR on every line says nothing by it; a logger's own
    # severity inside that stamp still does.
    error_stamps = [stamped_errors(entry) for entry in entries]
    # Counted by physical line: a log that lost its newlines is one stamped line.
    by_line: dict[int, int] = {}
    for entry, stamps in zip(entries, error_stamps, strict=True):
        by_line[entry.line.offset] = max(stamps, by_line.get(entry.line.offset, 0))
    stamped = Counter(by_line.values())
    # A stream's tag, not a severity: a supervisor that stamps [ERROR] on all its child's
    # stderr stamps its ready line and its access log too.
    on_healthy_lines = max(
        (n for e, n in zip(entries, error_stamps, strict=True)
         if n and (rules.SERVING.search(e.content) or _READY.search(e.content))),
        default=0,
    )  # fmt: skip

    def informs(stamps: int) -> bool:
        return stamps > on_healthy_lines and 2 * sum(
            n for k, n in stamped.items() if k >= stamps
        ) < len(by_line)

    # Loggers that stamp ERROR on some lines and less on others say by it what was fatal; a
    # viewer that stamps every line alike says nothing.
    severities_inform = "error" in levels and "info" in levels
    traceback_start: int | None = None
    logging_block = False
    # The current traceback's innermost frame is logging's: logging's own failure (a record
    # it cannot format), not the failure of the code it called.
    logging_raised = False
    chain_pending = False
    framed = False  # a frame of the current traceback was seen: its exception comes next
    source_next = False  # the line after a frame quotes its source
    panic_message_next = False  # a Rust panic's header, its message on the next line
    warned_at: int | None = None  # the line of a Python warning's record, its source next
    quoting: Entry | None = None  # "... raised:", the exception it quotes on the next line
    raised_name: str | None = None  # IPython names the exception in its traceback's header
    pytest_entry: int | None = None  # where pytest's long report of a frame began
    pytest_failures = False  # pytest's FAILURES or ERRORS section seen
    for index, entry in enumerate(entries):
        content = entry.content
        entry.level = levels[index]
        if pytest_entry is not None:
            if (
                _PYTEST_RAISED.search(entry.prefix)
                or rules.TRACEBACK in content  # (--tb=native: Python's own report instead)
                or index - pytest_entry > PYTEST_ENTRY_LINES
            ):
                pytest_entry = None
            else:
                continue  # its locals and source: code, whatever words it holds
        pytest_failures = pytest_failures or _PYTEST_FAILURES.match(content) is not None
        if _PYTEST_LONG_ENTRY.match(content) or (
            pytest_failures and _PYTEST_TEST_HEADER.match(content)
        ):
            pytest_entry = index
            continue
        if _CXX_RAISED_FROM.match(content) and _bare_cxx_message(entries, index):
            entries[index - 1].strength = 3
        if quoting is not None and content:
            # the exception a "... raised:" line quotes, named like one or not
            # ("OutOfResources: out of resource: shared memory, ...")
            quotes = rules.TRACEBACK_END.match(content) or rules.EXCEPTION_REPR.match(content)
            if quotes and not rules.HARD_NOISE.search(content):
                entry.strength = 3
                if quoting.set_aside:  # (quoted in a record set aside: a warning's, lived through)
                    entry.strength, entry.set_aside = 0, quoting.set_aside
                quoting = None
                continue
        quoting = entry if rules.QUOTES_NEXT.search(content) else None
        if panic_message_next and content:
            # A Rust panic's message, under its header (the root cause, as the corpus reads
            # it): the runner-up. A channel found closed only says that the thread on its
            # other end died first: both lines are that failure's consequence.
            panic_message_next = False
            entry.strength = 2
            if rules.CHANNEL_CLOSED.search(content):
                entry.consequence = entries[index - 1].consequence = True
            elif rules.PANIC_CARRIES_ERROR.search(content):
                # an unwrapped error's own words: the header only says where it was unwrapped
                entry.strength, entries[index - 1].strength = 3, 1
            continue
        # "thread 'main' panicked at src/main.rs:406:19:", its message on the next line
        panic_message_next = rules.PANIC_HEADER.search(content) is not None
        if warned_at == entry.line.number - 1 and entry.prefix.endswith("  ") and content:
            # The source line Python's warnings module quotes under its record
            # ('  warnings.warn(f"Failed to create processor: {e}")'): code, not a failure.
            warned_at = None
            entry.noise = True
            continue
        warned_at = (
            entry.line.number
            if "Warning: " in entry.text and _PYTHON_WARNING.search(entry.text)
            else None
        )
        if rules.LOGGING_ERROR in content:
            logging_block, traceback_start = True, None
            entry.noise = True
            continue
        if logging_block:
            entry.noise = True
            entry.set_aside = "an error the logging module raised and lived through"
            if rules.TRACEBACK in content:
                logging_raised = False
            elif rules.EXCEPTION_LINE.match(content):
                entry.quoted, entry.strength = not logging_raised, 3
            else:
                logging_raised = raised_in_logging(content, logging_raised)
            # The block ends after logging's "Arguments: (...)" line.
            if content.startswith("Arguments:"):
                logging_block = False
            continue
        if rules.CHAINED.search(content):
            chain_pending = True
            entry.noise = True
            continue
        if rules.TRACEBACK in content or rules.RAY_TASK_HEADER.match(content):
            traceback_start, framed, logging_raised = index, False, False
            entry.in_traceback = index
            entry.strength = 1
            named = IPYTHON_HEADER.match(content)
            raised_name = f"{named[1]}: " if named else None
            continue
        if traceback_start is not None and rules.FRAME.search(content):
            entry.in_traceback = traceback_start
            framed = source_next = True
            logging_raised = raised_in_logging(content, logging_raised)
            continue
        if _CODE_FRAME.match(content) or (
            _frame_follows(entries, index)
            and not rules.EXCEPTION_LINE.match(content)
            # (a native stack printer's banner over its frames: "!!!!!!! Segfault encountered")
            and not rules.NATIVE_FAILURE.search(content)
        ):
            # A fragment that starts inside a traceback: frames all the same, and the source
            # line of a frame cut off above them ("subprocess.check_call(cc_cmd)", then
            # 'File "subprocess.py" ...') is code, whatever its severity.
            entry.in_traceback = index if traceback_start is None else traceback_start
            framed = True
            # (faulthandler's frames, "line 12 in f", quote no source)
            source_next = _TRACEBACK_FRAME.match(content) is not None
            continue
        if _IPYTHON_SOURCE.match(content):
            entry.in_traceback = traceback_start
            continue
        if source_next and not content:
            continue  # (a paste with a blank line after each line: the source comes next)
        if source_next and not (
            rules.EXCEPTION_LINE.match(content)
            or rules.TRACEBACK_END.match(content)
            # (a tool's own error record, its line interleaved with another's traceback:
            # no source line starts so)
            or _OWN_ERROR_RECORD.match(content)
            # (a binding's own, lower-case, after a frame's carets)
            or rules.QUALIFIED_EXCEPTION.match(content)
        ):
            # The source line a frame quotes ("raise NotImplementedError") is code, not a
            # failure, whatever severity a log viewer stamped on it.
            source_next = False
            entry.in_traceback = index if traceback_start is None else traceback_start
            continue
        source_next = False
        level = levels[index]
        if not content:
            continue  # a logger's prefix with no message ("... - ERROR - ") says nothing
        if traceback_start is None and _HEADING.fullmatch(content):
            entry.strength = 1  # it points to its message, or to the exception restating it
            continue
        if rules.HARD_NOISE.search(content) or _RAISE_STATEMENT.match(content):
            # (a traceback's source line cut from its frame: "raise RuntimeError(f'NCCL error:
            # {error_str}')" is code, whatever words it holds)
            entry.noise = True
            continue
        if (
            rules.EXCEPTION_LINE.match(content)
            or rules.QUALIFIED_EXCEPTION.match(content)
            or (framed and rules.TRACEBACK_END.match(content))
            or (raised_name is not None and content.startswith(raised_name))
        ):
            entry.in_traceback = traceback_start
            entry.strength = 3
            entry.consequence = chain_pending and traceback_start is not None
            if logging_raised and traceback_start is not None:
                for noise in entries[traceback_start:index]:
                    noise.noise = True
            if traceback_start is not None and entries[traceback_start].noise:
                entry.noise = True
            # (each line stamped WARNING where the log has no error records to compare: a
            # logger that puts all it captures at INFO says nothing by it)
            warned_throughout = traceback_start is not None and all(
                _WARNING_STAMP.search(e.prefix) for e in entries[traceback_start : index + 1]
            )
            if level == "info" and (severities_inform or warned_throughout):
                # a traceback the logger itself put at WARNING or below: lived through
                entry.strength = 0
                entry.set_aside = "an exception its logger reported as a warning"
            traceback_start, chain_pending, framed, logging_raised = None, False, False, False
            raised_name = None
        elif (
            rules.ASSERTION_MACRO.search(content)
            or rules.CHECK_MACRO.search(content)
            or rules.TF_OP_FAILED.search(content)
        ):
            # an assert that aborts, a check or an op that failed with its status: a failure,
            # whatever severity the logger gave it
            entry.strength = 3
        elif level == "info" and rules.MEMORY_RAN_OUT.search(content):
            # an allocator's warning, sometimes the only trace of an OOM: the process may live
            entry.strength, entry.warning = 2, True
        elif level == "info" and rules.RUNNER_DIED_AT_INFO.search(content):
            entry.strength = 2
        elif level == "info" or rules.SERVING.search(content) or rules.NOISE.search(content):
            entry.noise = True
            continue
        elif rules.NATIVE_FAILURE.search(content):
            entry.strength = 3
        elif rules.WARNING_ERROR.search(content):
            # (a CUDA error code under glog's fatal severity: the process aborts on it)
            fatal = rules.FATAL_LEVEL.search(entry.prefix) is not None
            entry.strength, entry.warning = (3, False) if fatal else (2, True)
        elif (tagged := rules.TAGGED_ERROR.match(content)) and tagged["fatal"]:
            entry.strength = 3
        elif (
            (level == "error" and (informs(error_stamps[index]) or _GLOG.search(entry.prefix)))
            or (rules.SEVERITY_ERROR.search(content) and _ERRORISH.search(content))
            or rules.TAGGED_ERROR.match(content)
            or rules.ERROR_IN_A_STEP.match(content)
        ):
            entry.strength = 2
        if entry.strength >= 2 and rules.INTERLEAVED.search(content):
            entry.consequence = True  # a garbled copy: the clean one says the same
        if rules.SHELL_JOB.search(content):
            entry.strength = 3  # the shell saw its child die: a fact, not a wrapper
        elif rules.WRAPPERS.search(content):
            entry.strength = 1
        if entry.strength >= 2 and rules.PEER_GONE.search(content):
            entry.peer_gone = True
        if traceback_start is not None and not rules.FRAME.search(content) and entry.strength == 0:
            # Source lines under a frame belong to the traceback too.
            entry.in_traceback = traceback_start
    _cut_tracebacks(entries, levels)
    _errors_only(entries, levels)
    _closed_by_the_agent(entries)
    _node_dumps(entries)
    _hydra_reports(entries)
    _details_and_recoveries(entries)


def _hydra_reports(entries: list[Entry]) -> None:
    """Hydra's word under the error it reported with no traceback ("Could not override 'x'.",
    its details, a blank line, then "Set the environment variable HYDRA_FULL_ERROR=1 ..."):
    the first line of the block above it is that error."""
    for index, entry in enumerate(entries):
        if not rules.HYDRA_REPORTED.search(entry.content):
            continue
        entry.strength = min(entry.strength, 1)
        block: list[Entry] = []
        below = entry.line.number
        for above in reversed(entries[:index]):
            if above.line.number != below - 1:
                break
            below = above.line.number
            if not above.content.strip():
                if block:
                    break
                continue  # (the blank line between the block and Hydra's word)
            if above.prefix.strip():
                break  # (a logger's record above it: the message starts below it)
            block.insert(0, above)
        if block and not any(e.strength >= 2 or e.in_traceback is not None for e in block):
            block[0].strength = 3


def _node_dumps(entries: list[Entry]) -> None:
    """A parser's description of the node it failed on points to the error after it."""
    for index, entry in enumerate(entries):
        if not rules.NODE_DUMP_START.search(entry.content):
            continue
        entry.strength = min(entry.strength, 1)
        dump = entries[index + 1 : index + 1 + NODE_DUMP_LINES]
        end = next((i for i, e in enumerate(dump) if rules.NODE_DUMP_END.search(e.content)), None)
        if end is None:
            continue
        for described in dump[: end + 1]:
            described.noise = True
        # "ERROR: builtin_op_importers.cpp:4793 In function importSqueeze:" and, on the next
        # line, the rest of its message ("[8] Assertion failed: ..."): one failure, its first line
        said = dump[end + 1 : end + 3]
        if len(said) == 2 and rules.IN_FUNCTION.search(said[0].content):
            said[1].noise = True


def _closed_by_the_agent(entries: list[Entry]) -> None:
    """torchrun's agent stops the other workers once one failed ("Sending process 164888
    closing signal SIGTERM"): their end, in its summary or their own words, is its doing."""
    closed = {
        m[1]
        for e in entries
        if "closing signal" in e.content
        for m in _AGENT_CLOSES.finditer(e.content)
    }
    if not closed:
        return
    for entry in entries:
        ended = _SIGNAL_RECEIVED.search(entry.content)
        if entry.strength >= 2 and ended and (ended[1] or ended[2]) in closed:
            entry.consequence = True


def _errors_only(entries: list[Entry], levels: list[str | None]) -> None:
    """A log of nothing but error records (a grep's excerpt, a library logging only its
    failures: HCCL's `[ERROR] ... listen ... fail.`) where nothing failed by its shape: the
    records that say they failed are the failures, though their stamps cannot tell them apart.
    A traceback or a wrapper says which failed: then this has no say."""
    if any(e.strength for e in entries) or any(
        level != "error" for entry, level in zip(entries, levels, strict=True) if entry.content
    ):
        return
    said = [e for e in entries if e.content]
    failing = [
        e for e in said if not e.noise and e.in_traceback is None and _ERRORISH.search(e.content)
    ]
    # (a viewer that stamps every line of a healthy log says little of failing in most)
    if 2 * len(failing) < len(said):
        return
    for entry in failing:
        entry.strength = 2


def _cut_tracebacks(entries: list[Entry], levels: list[str | None]) -> None:
    """logging.exception's shape, the message at error severity and then its traceback under
    the same prefix, where the log ends before the traceback's exception (a paste cut short)
    and nothing else failed: the message is the exception's, whatever severity every line
    carries."""
    # (counted once: a log may hold thousands of logged tracebacks)
    failing = Counter(e.in_traceback for e in entries if e.strength)
    ended = {
        e.in_traceback
        for index, e in enumerate(entries)
        if (e.strength or e.noise) and e.in_traceback is not None and e.in_traceback != index
    }
    for index, entry in enumerate(entries[:-1]):
        following = entries[index + 1]
        if (
            levels[index] == "error"
            and not entry.strength
            and not entry.noise
            and entry.in_traceback is None
            and following.line.number == entry.line.number + 1
            and following.content.startswith(rules.TRACEBACK)
            and following.prefix == entry.prefix
            and index + 1 not in ended
            and failing.total() == failing[index + 1]
        ):
            entry.strength = 2


def _frame_follows(entries: list[Entry], index: int) -> bool:
    following = entries[index + 1] if index + 1 < len(entries) else None
    return (
        following is not None
        and following.line.number == entries[index].line.number + 1
        and _CODE_FRAME.match(following.content) is not None
    )


def _message_end(entries: list[Entry], raised_at: int) -> int:
    """Past the last line of an exception's message: the lines right below it, up to a blank
    line (torch_npu's "[ERROR] ... ERR00100 PTA call acl api failed." is its message's too),
    a traceback, or a failure of its own (another exception, a native crash)."""
    end = raised_at + 1
    while (
        end < len(entries)
        and end - raised_at <= MESSAGE_LINES
        and (said := entries[end].content)
        and entries[end].line.number == entries[end - 1].line.number + 1
        and rules.TRACEBACK not in said
        and not rules.EXCEPTION_LINE.match(said)
        and not rules.NATIVE_FAILURE.search(said)
    ):
        end += 1
    return end


def _details_and_recoveries(entries: list[Entry]) -> None:
    """The line after "Last error:" is what the exception above it summarised; an error a
    program says it lived through ("retrying", "falling back") is not why it stopped."""
    lived_through: set[str] = set()
    position = {id(entry): index for index, entry in enumerate(entries)}
    for index, entry in enumerate(entries):
        if _SKIPPED.search(entry.content):
            raised = next(
                (e for e in reversed(entries[max(0, index - 3) : index])
                 if e.strength == 3 and e.in_traceback is not None),
                None,
            )  # fmt: skip
            for line in (entry, raised):
                if line is not None:
                    line.strength = 0
                    line.set_aside = "an exception the program left a part out for, and went on"
        elif entry.content == "Error in sys.excepthook:":
            next_said = next((e for e in entries[index + 1 : index + 3] if e.content), None)
            if next_said is not None and next_said.content == "Original exception was:":
                # Python at exit, its modules torn down: the hook failed and says nothing, and
                # neither does the exception it was given
                entry.strength, entry.noise = 0, True
        elif rules.LAST_ERROR.match(entry.content):
            detail = next((e for e in entries[index + 1 : index + 3] if e.content), None)
            if detail is not None and not detail.noise:
                detail.strength, detail.detail = 3, True
        elif rules.DETAIL_BELOW.search(entry.content):
            entry.strength, entry.detail = 3, True
        elif rules.TRACEBACK in entry.content and _raised_at_exit(entries, index):
            raised = _exception_below(entries, index)
            if raised is not None and raised.in_traceback == index:
                raised.strength, raised.quoted = 0, False
                raised.set_aside = "an exception an exit handler raised, the work done"
        elif _IGNORED.match(entry.content):
            # Python's unraisable hook: an exception in a destructor or at exit, printed and
            # ignored (often the interpreter shutting down after the real failure)
            # (inside a "--- Logging error ---" block too, where no traceback is counted)
            ignored = _exception_below(entries, index) or next(
                (e for e in entries[index + 1 : index + HANDLER_TRACEBACK_LINES]
                 if rules.EXCEPTION_LINE.match(e.content)),
                None,
            )  # fmt: skip
            if ignored is not None:
                ignored.strength, ignored.quoted = 0, False
                ignored.set_aside = "an exception Python ignored (a destructor's, at exit)"
        elif (lived := rules.LOOP_LIVED_THROUGH.search(entry.content)) or (
            rules.THREAD_LIVED_THROUGH.search(entry.content)
        ):
            for line in (entry, _exception_below(entries, index)):
                if line is not None:
                    line.strength = 0
                    line.set_aside = LOOP_RAN_ON if lived else THREAD_RAN_ON
        elif rules.REQUEST_HANDLER_FAILED.search(entry.content):
            for line in (entry, _handler_exception(entries, index)):
                if line is not None:
                    line.strength = 0
                    line.set_aside = REQUEST_SERVED_ON
        elif _REQUEST_REFUSED.search(entry.content):
            refused = [entry]
            # (a handler that answers with the exception may print what it knows first:
            # ComfyUI's memory summary between its word and the traceback)
            reach = 12 if _REQUEST_ANSWERED.search(entry.content) else 3
            below = entries[index + 1 : index + reach]
            if any(rules.TRACEBACK in e.content or rules.RAY_TASK_HEADER.match(e.content)
                   for e in below):  # fmt: skip
                # the failed handler's traceback below it (Uvicorn's "Exception in ASGI
                # application"): its exception is that request's, once the server is seen
                # going on after it
                raised = _exception_below(entries, index)
                answered = any(
                    _ANSWERED_5XX.search(e.content) for e in entries[max(0, index - 2) : index]
                ) or (
                    # (an exception that only says the engine is gone is no request's own)
                    _REQUEST_ANSWERED.search(entry.content) is not None
                    and raised is not None
                    and raised.strength != 1
                )
                if raised is not None and (
                    answered
                    or _goes_on_after(entries, position[id(raised)])
                    or _a_request_s_own_end(entries, index, position)
                ):
                    chain = _chained_from(entries, raised, position)
                    # (the engine's own loop failing inside it is the engine's failure)
                    if _engine_stepped(entries, index, chain, position):
                        refused.append(raised)
                    else:  # with the exception groups and wrappers it is printed in
                        end = _message_end(entries, position[id(chain[-1])])
                        refused.extend(e for e in entries[index + 1 : end] if e.strength)
            elif _REQUEST_ANSWERED.search(entry.content) and (
                (raised := _raised_just_above(entries, index)) is not None
            ):
                refused.append(raised)
            if _REQUEST_ANSWERED.search(entry.content) and _cut_in_its_report(entries, index):
                # The log ends in the handler's report on one request (a paste cut there):
                # the server was answering it, and nothing says it stopped.
                refused.extend(e for e in entries[index + 1 :] if e.strength)
                above = entries[index - 1] if index else None
                if above is not None and above.strength >= 2 and _same_ending(above, entry):
                    refused.append(above)  # (the node's own word on the same failure)
            if entry.in_traceback is not None and entry.in_traceback > 0:
                # the handler's own word just above the traceback it logged ("Error in
                # preprocessing prompt inputs") is about the same request
                logged = entries[entry.in_traceback - 1]
                if logged.strength == 2 and not logged.warning:
                    refused.append(logged)
            if len(refused) > 1:
                # (pydantic's lines under its ValidationError, each naming a refused input)
                refused.extend(_validation_details(entries, position[id(refused[-1])]))
            for line in refused:
                line.strength = 0
                line.set_aside = "a client's request refused: the server answers it and serves on"
        elif entry.strength >= 2 and not entry.warning and entry.in_traceback is None:
            # (a native allocator's failure too: "... failed, retrying without ...")
            following = _until_fatal(entries[index : index + RECOVERY_REACH])
            # (the same error again where the log ends, cut before the program's word on it;
            # not one it said it would retry: logged again, that is the retries running out)
            cut_short = entry.content in lived_through and index >= len(entries) - len(following)
            said = [
                e.content for e in following
                if rules.RECOVERED.search(e.content) and _same_process(entry, e)
            ]  # fmt: skip
            if cut_short or said:
                if said and not any(_RETRYING.search(words) for words in said):
                    lived_through.add(entry.content)
                entry.strength = 0
                entry.set_aside = LIVED_THROUGH
            elif (
                entry.strength == 2
                and any(_ANSWERED_ERROR.search(e.content) for e in entries[index + 1 : index + 3])
                and not _ENGINE_GONE.search(entry.content)
            ):
                # an error record its front end then answers a request with (Gin's "| 500 |",
                # Uvicorn's "500 Internal Server Error"): that request's, and the server is up
                # (unless it says the engine behind it is gone)
                entry.strength = 0
                entry.set_aside = "an error answered to the request that met it"
        elif (
            entry.strength == 3
            and entry.in_traceback is not None
            and any(
                _FELL_BACK.search(e.content)
                for e in _until_fatal(entries[index : index + RECOVERY_REACH])
            )
        ):
            # A traceback the program logged and fell back from ("... a CUDA-enabled jaxlib is
            # not installed. Falling back to cpu."): the work goes on without what failed,
            # and without what caused it.
            for line in _chain_ending_at(entries, index):
                line.strength = 0
                line.set_aside = LIVED_THROUGH
        elif (
            entry.strength == 3
            and entry.in_traceback is not None
            and any(_ANSWERED_5XX_RECORD.search(e.content) for e in entries[index + 1 : index + 3])
            and not _ENGINE_GONE.search(entry.content)
        ):
            # A handler's traceback its front end then answers the request with ("POST
            # /v1/... HTTP/1.1" 500 Internal Server Error): that request's, the server up
            entry.strength = 0
            entry.set_aside = REQUEST_SERVED_ON


def _chain_ending_at(entries: list[Entry], index: int) -> list[Entry]:
    """The exception at `index` and those before it in its chain ("The above exception was
    the direct cause of the following exception:" between each and the next)."""
    chain = [entries[index]]
    start = entries[index].in_traceback
    while start:
        said = next((i for i in range(start - 1, -1, -1) if entries[i].content), None)
        if said is None or not rules.CHAINED.search(entries[said].content):
            break
        cause = next((i for i in range(said - 1, -1, -1) if entries[i].content), None)
        if cause is None or entries[cause].strength != 3:
            break
        chain.append(entries[cause])
        start = entries[cause].in_traceback
    return chain


def _same_process(failed: Entry, later: Entry) -> bool:
    """Whether a later line may speak for the process that failed: it names the same one, or
    the failure names none ("[rank0]: RuntimeError: ..." then another program's "Retrying in
    2s" is no recovery of rank 0's)."""
    for pattern in rules.PROCESS:
        if named := pattern.search(failed.text):
            said = pattern.search(later.text)
            return said is not None and said.group(1) == named.group(1)
    return True


def _until_fatal(following: list[Entry]) -> list[Entry]:
    """The lines after an error up to the first that says the process is gone: a word of
    recovery after that is another process's (a client retrying)."""
    for offset, entry in enumerate(following[1:], start=1):
        if burst.FATAL_SHAPE.search(entry.content):
            return following[:offset]
    return following


def _raised_at_exit(entries: list[Entry], index: int) -> bool:
    """A traceback whose outermost frame is Python's exit handlers' (weakref finalizers run by
    atexit): raised as the interpreter exits, after the program's work; it sets no exit status."""
    first_frame = next((e for e in entries[index + 1 : index + 3] if e.content), None)
    return first_frame is not None and _EXIT_HANDLER_FRAME.search(first_frame.content) is not None


def _exception_below(entries: list[Entry], index: int) -> Entry | None:
    """The exception that ends the traceback a handler logged under a line."""
    return next(
        (e for e in entries[index + 1 : index + HANDLER_TRACEBACK_LINES]
         if e.in_traceback is not None
         and (e.strength == 3 or rules.EXCEPTION_LINE.match(e.content))),
        None,
    )  # fmt: skip


def _handler_exception(entries: list[Entry], index: int) -> Entry | None:
    """The exception of a failed request's traceback under its header, not yet claimed by
    another header: two handler threads printing at once interleave their tracebacks line by
    line, so the second exception directly follows the first."""
    claimed_at = None
    for at in range(index + 1, min(len(entries), index + HANDLER_TRACEBACK_LINES)):
        entry = entries[at]
        if not (entry.strength == 3 or rules.EXCEPTION_LINE.match(entry.content)):
            continue
        if entry.set_aside == REQUEST_SERVED_ON:
            claimed_at = at
        elif entry.in_traceback is not None or claimed_at == at - 1:
            return entry
    return None


def _chained_from(entries: list[Entry], raised: Entry, position: dict[int, int]) -> list[Entry]:
    """An exception a handler logged, with those chained after it ("During handling of the
    above exception, another exception occurred")."""
    chain, at = [raised], position[id(raised)]
    for entry in entries[at + 1 : at + HANDLER_TRACEBACK_LINES]:
        if (
            entry.in_traceback is None
            and entry.content
            and not rules.CHAINED.search(entry.content)
            and not _GROUP_BORDER.match(entry.content)
        ):
            break
        if entry.strength == 3 or rules.EXCEPTION_LINE.match(entry.content):
            chain.append(entry)
    return chain


def _bare_cxx_message(entries: list[Entry], index: int) -> bool:
    """Whether the line above c10's "Exception raised from ..." is its error's message printed
    bare (a paste cut below the Python exception that carried it): no failure above names it."""
    if index == 0:
        return False
    message = entries[index - 1]
    if message.line.number != entries[index].line.number - 1 or not message.content:
        return False
    if message.strength >= 2 or message.noise or message.in_traceback is not None:
        return False
    first = message.line.number - BARE_MESSAGE_REACH
    above = itertools.takewhile(lambda e: e.line.number >= first, reversed(entries[:index]))
    return not any(e.strength >= 2 for e in above)


def _validation_details(entries: list[Entry], index: int) -> list[Entry]:
    """The errors pydantic lists under its ValidationError ("Field required [type=missing,
    input_value=...]"), with the field paths and links between them."""
    details = []
    for entry in entries[index + 1 : index + 1 + VALIDATION_DETAIL_LINES]:
        if _VALIDATION_DETAIL.search(entry.content):
            details.append(entry)
        elif entry.strength >= 2:
            break
    return details


def _a_request_s_own_end(entries: list[Entry], index: int, position: dict[int, int]) -> bool:
    """Uvicorn's word that a request's handler failed, its traceback ending the log, the
    engine's own loop nowhere in it: the server answered that request with a 500 and lives
    on (a log cut there shows no more of it)."""
    raised = _exception_below(entries, index)
    if raised is None or not _A_HANDLER_FAILED.search(entries[index].content):
        return False
    chain = _chained_from(entries, raised, position)
    if any(e.strength >= 2 for e in entries[position[id(chain[-1])] + 1 :]):
        return False
    # (a GPU that faulted or ran out under the request leaves nothing to serve with)
    gpu_fault = any(rules.error_class(e.content, "") in _GPU_FAULTS for e in chain)
    return not gpu_fault and not _engine_stepped(entries, index, chain, position)


def _engine_stepped(
    entries: list[Entry], index: int, chain: list[Entry], position: dict[int, int]
) -> bool:
    """Whether the engine's own loop is among the frames a handler logged under a line."""
    frames = entries[index + 1 : position[id(chain[-1])]]
    return any(_ENGINE_STEP_FRAME.search(e.content) for e in frames)


def _raised_just_above(entries: list[Entry], index: int) -> Entry | None:
    """The exception printed before a handler's line that repeats its message: just before it
    (two streams captured apart print the handler's word after its traceback), or a little
    earlier where the message is long enough to be that same failure's (ComfyUI's exception,
    then its "Prompt executed", then "!!! Exception during processing !!!" with its words)."""
    said = entries[index].content
    for back, above in enumerate(reversed(entries[max(0, index - ANSWERED_REACH) : index])):
        exception = rules.EXCEPTION_LINE.match(above.content)
        message = exception.group(2) if exception else None
        if message and said.endswith(message) and (not back or len(message) >= 30):
            return above
    return None


def _cut_in_its_report(entries: list[Entry], index: int) -> bool:
    """Whether the log ends within a handler's report: its traceback's start, or the
    exception it says it quotes next ("... raised:"), and nothing else failing after."""
    after = entries[index + 1 :]
    failures = [e for e in after if e.strength and rules.TRACEBACK not in e.content]
    quoted = 1 if rules.QUOTES_NEXT.search(entries[index].content) else 0
    return (
        bool(after)
        and entries[-1].line.number - entries[index].line.number <= CUT_REPORT_LINES
        and len(failures) <= quoted
        and all(rules.EXCEPTION_LINE.match(e.content) for e in failures)
    )


def _same_ending(first: Entry, second: Entry) -> bool:
    """Whether two lines end in the same message ("Error during sampling: Allocation on
    device", then the handler's "... !!! Allocation on device")."""
    pairs = zip(reversed(first.content.rstrip()), reversed(second.content.rstrip()), strict=False)
    return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], pairs)) >= (
        SAME_ENDING_CHARS
    )


def _goes_on_after(entries: list[Entry], index: int) -> bool:
    """Whether ordinary records follow a line (a request answered, a statistic): the
    process that logged it went on."""
    ordinary = (
        e for e in entries[index + 1 : index + 1 + HANDLER_TRACEBACK_LINES]
        if e.content and not e.strength and e.in_traceback is None
        and not rules.TEARDOWN.search(e.content)
    )  # fmt: skip
    return len(list(itertools.islice(ordinary, 2))) == 2


def stamped_errors(entry: Entry) -> int:
    """How many error severities the line's prefix carries (a viewer's and a logger's)."""
    return len(_ERROR_LEVEL.findall(entry.prefix)) + (_logfmt_level(entry) == "error")


def _level(entry: Entry) -> str | None:
    """The severity a logger put in the line's prefix, or in its logfmt `level=` key."""
    prefix = entry.prefix
    if (
        _OWN_WARNING.match(entry.content)
        or _LIBFABRIC_INFO.match(entry.content)
        or _ONNXRUNTIME_INFO.match(entry.content)
    ):
        return "info"
    # A process that relays another's lines puts its own level first, the other's after:
    # "... - __main__ - INFO - ERROR 08-13 04:39:39 engine.py:400] ..." is the engine's error.
    info = _last_at(_INFO_LEVEL, prefix)
    if _last_at(_ERROR_WORD, prefix) > info:
        return "error"
    if info >= 0:
        return "info"
    if _ERROR_LEVEL.search(prefix):
        return "error"
    return _logfmt_level(entry)


def _last_at(level: re.Pattern[str], prefix: str) -> int:
    """Where the last of these severity words starts in the prefix; -1 where none does."""
    return max((match.start() for match in level.finditer(prefix)), default=-1)


def _logfmt_level(entry: Entry) -> str | None:
    """Go's slog, logrus and the servers built on them: "time=... level=ERROR msg=..."."""
    match = _LOGFMT_LEVEL.search(entry.content[:200])
    if match is None:
        return None
    level = match.group(1).lower()
    if level in _LOGFMT_ERRORS:
        return "error"
    return "info" if level in _LOGFMT_INFO else None
