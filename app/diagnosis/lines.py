"""One log line as a person reads it: decoded, colours and progress redraws removed,
and the prefixes that loggers, launchers and log viewers put in front of it peeled off."""

import re

# (control strings too: an OSC's, and an APC's such as Buildkite's "\x1b_bk;t=1778140995379\x07"
# timestamp before each line)
ANSI = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[\]_P^X][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
# The same colour codes pasted as text ("^[[31mERROR^[[0m"), as a terminal copy shows them.
CARET_ANSI = re.compile(r"\^\[\[[0-9;]*m|#033\[[0-9;]*m")  # (rsyslog escapes it as "#033[")

_SEVERITY = (
    r"(?:DEFAULT|TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR"
    r"|CRITICAL|CRIT|FATAL|ALERT|EMERGENCY)"
)
# Prefixes seen in front of server output; peeled repeatedly, in any order.
_PREFIXES = [
    # Timestamps as loggers and log viewers print them, with a severity before or after:
    # "ERROR 2026-02-27T13:21:27.123Z ", "E 2026-02-27 13:21:27.123 UTC ",
    # "2026-02-27T13:21:27.123456789Z ", "2025-03-07 11:03:44,669 - INFO - flashinfer.jit: ".
    rf"(?:{_SEVERITY}\s+|[DIWEFC]\s+)?\d{{4}}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"
    r"(?:\s?(?:Z|UTC|GMT|[+-]\d\d:?\d\d))?"
    # (a severity followed by vLLM's own "06-16 10:03:14" is vLLM's prefix, peeled next)
    # ("... - ERROR - message": logging's "%(asctime)s - %(levelname)s - %(message)s", and
    # LMDeploy's "... - lmdeploy - ERROR - base.py:55 - message")
    rf"(?:\s+-\s+[A-Z]+\s+-\s+[\w.]+:|\s+-\s+[\w.]+\s+-\s+{_SEVERITY}\s+-(?:\s+[\w.]+:\d+\s+-)?"
    rf"|\s+-\s+{_SEVERITY}\s+-(?=\s|$)"
    rf"|\s+{_SEVERITY}\b:?(?!\s+\d\d-\d\d\s))?\s+",
    # a CI console's clock before each line and two spaces (Jenkins' timestamper: "11:44:55  ")
    r"\d\d:\d\d:\d\d(?:[.,]\d+)? {2}",
    # a log collector's export: the epoch in milliseconds, a tab, then the line's own stamp;
    # a build tool's elapsed seconds and a tab ("1.4\tTraceback (most recent call last):")
    r"\d+(?:\.\d+)?\t",
    # [2026-02-27 13:21:27 TP3], [2026-02-27 13:21:27 DP1 TP0], [2025-11-06T02:10:00.702Z]
    r"\[\d{4}-\d\d-\d\d[ T][\d:.,]+Z?(?:\s+[A-Z]+\d+)*\]\s?",
    # [11/18/2025-09:33:30] (TensorRT-LLM)
    r"\[\d\d/\d\d/\d{4}-[\d:]+\]\s?",
    # vLLM's prefix whose front the reporter cut: "[multiproc_executor.py:492] ", or a format
    # of one's own that puts the process id first: "56542 [async_llm_engine.py:64] "
    r"(?:\d+\s+)?\[[\w./-]+\.py:\d+\]\s",
    # vLLM: "INFO 06-16 10:03:14 [loggers.py:87] " and "ERROR 10-11 12:27:29 engine.py:157] "
    # (from 0.11 the module's path under vllm/: "ERROR 12-17 07:34:09 [v1/engine/core.py:710] ")
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d\s+[\d:.]+\s+(?:\[[\w./:-]+\]|[\w.-]+:\d+\])\s?",
    # TensorFlow's and XLA's logging (JAX too): "2025-03-23 20:28:49.804409: E
    # external/xla/xla/service/gpu/gpu_hlo_schedule.cc:654] ", from TSL on with the thread's
    # id: "2023-04-04 03:10:10.727618: F    7918 tensorflow/tsl/platform/statusor.cc:33] ")
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+:\s[IWEF]\s+(?:\d+\s)?[\w/.-]+:\d+\]\s?",
    # llama.cpp's logger with timestamps: "0.00.065.436 E srv  start: ..." (llama-server's
    # router relays a model's own server with its process id first: "[47995] 0.00.023.592 E ")
    r"(?:\[\d{1,7}\]\s)?\d+\.\d\d\.\d{3}\.\d{3}\s[IWEDN]\s",
    # glog: "E1103 02:59:01.152656 81041 backend_model.cc:553] "
    # (PyTorch's own: "E0716 18:21:22.792000 132331 torch/_inductor/runtime/x.py:874] ")
    # (glog 0.7 may put the year first: "E20250522 23:38:30.164904 764015 file.cpp:235] ")
    # (Dynamo's records add the compiled frame's id: "... torch/_guards.py:368] [0/0] ")
    r"[IWEF](?:\d{4})?\d{4}\s+[\d:.]+\s+\d+\s+[\w./-]+:\d+\]\s?(?:\[!?\d+/\d+(?:_\d+)?\]\s)?",
    # PyTorch's c10 logging: "[E227 13:31:27.000000000 ProcessGroupNCCL.cpp:616] ", and
    # before torch 2.3 "[E ProcessGroupNCCL.cpp:458] "
    r"\[[IWEF](?:\d{3,4}\s+[\d:.]+)?\s+[\w.-]+:\d+\]\s?",
    # syslog and journalctl: "Oct 16 02:07:00 ", then "host-1 python3[1234]: " (the month
    # in the host's language: "Mär 08 11:28:25 ", "déc. 05 ...")
    r"[^\W\d_]{3,5}\.?\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+",
    r"(?:[\w.-]+\s+)?[\w./@-]+\[\d+\]:\s",
    # the HIP runtime's trace (AMD_LOG_LEVEL): its level first, 1 an error ... 4 a debug
    # record: ":1:rocdevice.cpp            :3434: 38724086971 us: [pid:92169 tid: 0x7fce] "
    # (its time replaced by "..." where a reporter cut it; a build's whole path to its source)
    r":\d:[\w./-]+\s*:\s*\d+\s*:\s*(?:\d+ us:|\.\.\.\s)"
    r"\s*(?:\[pid:\s*\d+\s+tid:\s*0x[0-9a-f]+\]\s?)?",
    # dmesg: "[ 2448.628970] "
    r"\[\s*\d+\.\d+\]\s",
    # a trainer's own format, its rank glued before the severity: "[rank0][ERROR] " (a
    # library's own tag stays: "[TM][ERROR] " is TurboMind's word)
    r"\[(?:rank|RANK|Rank)\s?\d+\]\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]\s?",
    # DeepSpeed style: "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] "
    # (or a format of one's own: "[...] [ERROR] [MainThread] [vllm.worker.worker_base] >>> ")
    r"\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]\s+(?:\[[\w.:]+\]\s+)*(?:>>>\s+)?",
    # Ray / vLLM workers: "(EngineCore_DP0 pid=3339204) ", "(SGLangWorker pid=38138) ",
    # "(VllmWorker rank=0 pid=2345) ", "(pid=123, ip=10.0.0.2) ", "(raylet) "
    # (a Ray Serve replica's: "(ServeReplica:default:LLMServer:llama pid=126216) ", an actor
    # named with its arguments: "(EnvGroup(rank=1) pid=49603) ")
    r"\((?:[\w.:-]+(?:\([\w.=, -]*\))?(?: [\w.=-]+)* )?pid=\d+(?:, ip=[\d.]+)?\)\s+",
    r"\(raylet(?:, ip=[\d.]+)?\)\s+",
    # mpirun --tag-output: "[1,0]<stderr>:"; torchrun's per-rank tee: "[default0]:"
    r"\[\d+,\d+\]<std(?:out|err)>:\s?",
    r"\[default\d+\]:\s?",
    # torch.distributed: "[rank1]: " (an editor's line numbers before it: "34[rank1]: ",
    # "517 [rank0]: ")
    r"(?:\d{1,5} ?)?\[rank\d+\]:\s?",
    # Docker BuildKit: a step's number and its seconds, "#17 3.506 ", and in its terminal view
    # the seconds alone before a failed step's output, "0.278 CMake Error: ...", "90.61 ImportError"
    # (four figures: "297.9 error[E0433]: ...")
    r"#\d+ \d+\.\d{1,3} ",
    r"(?:\d{1,5}\.\d{2,3}|\d{3,5}\.\d) +(?=\S)",
    # NVIDIA's compute-sanitizer: "========= Error: Race reported between Read access at ..."
    r"={9} ",
    # a superbuild's subproject and stage (ROCm TheRock's): "[hipSPARSELt configure] "
    r"\[[\w.+-]+ (?:configure|build|install)\]\s?",
    # kubectl logs --prefix: "[pod/host-1/axlearn-fuji-model] "
    r"\[pod/[\w.-]+/[\w.-]+\]\s",
    # docker compose: "deepseek-v32-exp  | "
    r"[\w.-]+\s+\|\s",
    # rich's boxed tracebacks draw a border: "│ ValueError: 'type' must be a string │"
    r"[│┃]\s",
    # Exception groups draw a margin: "  | KeyError: 12"
    r"\|\s+",
    # a log pasted in a markdown quote or a mail reply: "> RuntimeError: ..."
    r">\s",
    # pytest's failure lines: "E       RuntimeError: ..."
    r"E {3,}(?=\S)",
    # pytest's progress marks with a test's own output glued on: "......(Worker_TP1 pid=11655) "
    r"[.sxFE]*\.\.[.sxFE]*"
    r"(?=\((?:[\w.-]+(?: [\w.=-]+)* )?pid=\d|\[rank\d+\]:|[A-Z]{4,7}\s+\d\d-\d\d\s)",
    # LocalAI relaying a backend's output: "8:59PM DBG GRPC(model-127.0.0.1:45725): stderr "
    r"(?:\d{1,2}:)?\d\d[AP]M\s+[A-Z]{3}\s+GRPC\([^)]*\):\s+std(?:err|out)\s",
    # spdlog's level, lower case, after its time (peeled above) and a thread's "pid:tid":
    # "[2025-11-04 18:57:17.324394] 2720:2720 [warning] "
    r"(?:\d+:\d+ )?\[(?:trace|debug|info|warning|error|critical)\]\s",
    # loguru style: "[ERROR    | TRT-LLM            ]: "
    r"\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s*\|[^\]]*\]:\s?",
]
_PREFIX = re.compile("|".join(f"(?:{p})" for p in _PREFIXES))
# "host-1: " from launchers that prefix every line with a host name: only peeled when it
# is not an exception name ("KeyError: 12" keeps its "KeyError").
_HOST_PREFIX = re.compile(r"([\w.-]+):\s")
# A job's, pod's or node's name that a launcher puts before each line with a space
# ("B-nemo-ft3/0 [default1]:..."): a word with a digit or a separator in it, never a
# timestamp (a letter in it, though it may start with a digit: "0000-steps/0 [default6]:");
# peeled only where most lines carry the same one.
_NAME_PREFIX = re.compile(r"(?=[\w.@-]*[A-Za-z])([A-Za-z0-9][\w.@-]*[\d/_.-][\w./@-]*)\s+(?=\S)")
# A process's index or name that a multiplexer puts before each of its lines ("[0] " of npm's
# concurrently, "[0] [0] " of a Monarch actor mesh, "[build] " of a build driver's steps):
# peeled only where most lines carry one.
_INDEX_PREFIX = re.compile(r"(\[(?:\d{1,4}|[a-z][\w.-]{0,24})\])\s")
# A launcher's name and number for the child whose output it relays ("Shard 1: " of Hugging
# Face text-generation-server's launcher): peeled only where most lines carry one. (Not any
# word: vLLM's statistics start "Engine 000: " and must stay whole.)
_CHILD_PREFIX = re.compile(r"((?:Shard|Worker|Rank|Node|Replica) \d{1,4}):\s")
# A tqdm bar's last state ("Training:   0%|    | 1/3000 [00:00<18:36,  2.69it/s]"), with
# another line glued after it
_GLUED_BAR = re.compile(r"[^|\n]*\d+%\|[^|]*\| *\d+/\d+ \[[^\]]*?/s(?:, [^\]]*)?\](?=[^\s|])")
_MARKDOWN_BOLD = re.compile(r"\*\*[^*\s](?:.*[^*\s])?\*\*")
_NOT_A_HOST = re.compile(r"(?:Error|Exception|Warning|Interrupt|Exit|Failure|error|warning)$")


def decode(raw: bytes) -> str:
    """Bytes of one line to the text a terminal would show last."""
    text = raw.replace(b"\x00", b"").decode("utf-8", errors="replace")
    if "\xa0" in text:
        text = text.replace("\xa0", " ")  # a web page's no-break spaces, pasted with the log
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "^[[" in text or "#033[" in text:
        text = CARET_ANSI.sub("", text)
    text = text.rstrip("\r\n")
    if "\r" in text:
        # A progress bar redraws itself with \r: the last non-empty state is what stays.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    if "/s]" in text and (bar := _GLUED_BAR.match(text)):
        # Another stream's line written after a bar that ended without a newline: the line.
        text = text[bar.end() :]
    return text


def strip_prefixes(text: str, hosts: frozenset[str] = frozenset()) -> str:
    """The message without timestamps, severities, rank/process/host prefixes."""
    previous = None
    while previous != text:
        previous = text
        text = text.lstrip()
        match = _PREFIX.match(text)
        if match and match.end() > 0:
            text = text[match.end() :]
            continue
        if hosts:
            host = (
                _HOST_PREFIX.match(text)
                or _NAME_PREFIX.match(text)
                or _INDEX_PREFIX.match(text)
                or _CHILD_PREFIX.match(text)
            )
            if host and host.group(1) in hosts:
                text = text[host.end() :]
    text = text.strip()
    # A whole line set in markdown bold by the person who pasted it ("**KeyError: 'x'**"; not
    # abseil's "*** SIGTERM received ... ***")
    if _MARKDOWN_BOLD.fullmatch(text):
        text = text[2:-2]
    return text


def host_prefix(text: str) -> str | None:
    """The 'name: ' a launcher may put before each line, if this line starts with one."""
    match = _HOST_PREFIX.match(text)
    if match and not _NOT_A_HOST.search(match.group(1)) and not match.group(1)[0].isupper():
        return match.group(1)
    named = _NAME_PREFIX.match(text) or _INDEX_PREFIX.match(text) or _CHILD_PREFIX.match(text)
    return named.group(1) if named else None
