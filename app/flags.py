"""An attempt's flag set, from its launch command and from the engine's own echo of its
arguments in the log (sglang `server_args=ServerArgs(...)`, vLLM `non-default args: {...}`),
and what differs from the baseline attempt's. Pure: text in, values out; secrets masked."""

import ast
import functools
import math
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.credentials import SECRET, is_secret_name, mask_secrets

# True for a switch given bare (`--enable-torch-symm-mem`), False where an engine says a
# switch is off, the text of a value otherwise.
FlagValue = bool | str
Flags = dict[str, FlagValue]

SGLANG = "sglang"
VLLM = "vllm"

# Several spellings, one argparse dest: the name the engine's echo of its arguments uses,
# so the command's flags and the log's line say the same thing in the same words.
_ALIASES = {
    SGLANG: {
        "tp": "tp_size", "tensor_parallel_size": "tp_size", "dp": "dp_size",
        "data_parallel_size": "dp_size", "pp": "pp_size", "pipeline_parallel_size": "pp_size",
        "ep": "ep_size", "expert_parallel_size": "ep_size", "model": "model_path",
        "tokenizer": "tokenizer_path",
    },
    VLLM: {
        "tp": "tensor_parallel_size", "pp": "pipeline_parallel_size",
        "dp": "data_parallel_size", "O": "compilation_config", "q": "quantization",
    },
}  # fmt: skip
# Set by the engine for every run, not by the engineer: no difference between two attempts.
_PER_RUN = {SGLANG: {"random_seed"}, VLLM: set()}

_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# -O3, and -p[secret]: a password glued to its option, masked before the parse.
_SHORT_WITH_VALUE = re.compile(rf"([A-Za-z])(\d+|{re.escape(SECRET)})")
# Programs that run the next word as the command: their own words are no server flag.
_WRAPPERS = {"nohup", "exec", "setsid", "time", "env", "command", "builtin", "sudo"}
_SEPARATORS = {";", "&&", "||", "|", "|&", "&", "(", ")", "\n"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def normalise(name: str) -> str:
    """`--enable-torch-symm-mem`, `enable_torch_symm_mem` and `--Enable_Torch-Symm-Mem` are
    one key; a one-letter short flag keeps its case (`-O` is not `-o`)."""
    bare = name.lstrip("-")
    if len(bare) == 1:
        return bare
    return bare.lower().replace("-", "_")


# --- the launch command ---------------------------------------------------------------


_SHELL = re.compile(
    r"(?P<space>[ \t\r\f\v]+)|(?P<comment>#[^\n]*)"
    r"|(?P<op>\n|&>>|&&|\|\||\|&|;;|>>|>&|<&|>\||<<|&>|<>|[;|&()<>])"
    r"|(?P<word>(?:[^\s'\"\\;&|<>()]+|'[^']*'?|\"(?:[^\"\\]|\\.)*\"?|\\.?)+)",
    re.S,
)


def _shell_tokens(command: str) -> Iterator[tuple[str, str]]:
    """("word", text) and ("op", operator) as a POSIX shell splits a command line; each
    word is unquoted by shlex. Unbalanced quotes run to the end instead of failing: the
    command is shown whatever it holds, so its flags are read whatever it holds."""
    for match in _SHELL.finditer(command):
        if match["op"]:
            yield "op", match["op"]
        elif raw := match["word"]:
            if raw.isdigit() and command[match.end() : match.end() + 1] in ("<", ">"):
                continue  # the 2 of 2>&1: a file descriptor, part of the redirection
            yield "word", _unquote(raw)


def _unquote(raw: str) -> str:
    if not any(char in raw for char in "'\"\\"):
        return raw  # most words: shlex would give them back as they are, slowly
    try:
        return " ".join(shlex.split(raw))
    except ValueError:  # a quote left open, or a backslash last: close what is open
        pass
    quote, i = "", 0
    while i < len(raw):
        if raw[i] == "\\" and quote != "'":
            i += 2
            continue
        if quote and raw[i] == quote:
            quote = ""
        elif not quote and raw[i] in "'\"":
            quote = raw[i]
        i += 1
    closed = raw[:-1] if raw.endswith("\\") and not quote else raw
    try:
        return " ".join(shlex.split(closed + quote))
    except ValueError:
        return raw


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a command line, redirections and their targets left out."""
    segments: list[list[str]] = [[]]
    skip_next = False
    for kind, text in _shell_tokens(command):
        if kind == "op":
            if text in _SEPARATORS:
                segments.append([])
            else:
                skip_next = True  # a redirection: the next word is its target
            continue
        if skip_next:
            skip_next = False
            continue
        segments[-1].append(text)
    return [s for s in segments if s]


def detect_engine(text: str) -> str | None:
    lowered = text.lower()
    if "sglang" in lowered:
        return SGLANG
    if "vllm" in lowered:
        return VLLM
    return None


def _is_flag(word: str) -> bool:
    return word.startswith("-") and word != "-" and not _NUMBER.fullmatch(word)


def _parse_words(words: list[str], flags: Flags, aliases: dict[str, str]) -> None:
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            break  # argparse: what follows is positional
        if not _is_flag(word):
            continue
        long = word.startswith("--")
        name, has_value, value = word.partition("=")
        if not long and not has_value and (short := _SHORT_WITH_VALUE.fullmatch(name[1:])):
            name, has_value, value = short[1], "=", short[2]
        key = normalise(name)
        key = aliases.get(key, key)
        # Given twice, the last one counts, as argparse stores it (`... --tp 8 --tp 4`).
        if has_value:
            flags[key] = value
            continue
        values = []
        while i < len(words) and not _is_flag(words[i]) and words[i] != "--":
            values.append(words[i])
            i += 1
        # `--cuda-graph-bs 1 2 4` is one value of three numbers; argparse alone would know
        # whether a word after a switch is positional, and servers take no positionals.
        flags[key] = " ".join(values) if values else True


def command_flags(command: str, engine: str | None = None) -> Flags:
    """A fresh dict each call: the parse itself is cached (pages read every attempt's).
    `engine` names whose aliases apply when the text does not say (typed flags alone)."""
    return dict(_command_flags(command, engine))


# Room for the commands and typed flags of a 2,000-attempt campaign: 1,024 entries were
# thrashed by a 1,000-attempt page's 2,000 strings, each parsed again at every view.
@functools.lru_cache(maxsize=4096)
def _command_flags(command: str, engine: str | None) -> tuple[tuple[str, FlagValue], ...]:
    return tuple(_parse_command(command, engine).items())


def _parse_command(command: str, engine: str | None) -> Flags:
    """The flags of a launch command line: `--flag value`, `--flag=value`, bare switches,
    `-x` short ones, the last of a repeated flag, and the environment it sets
    (`NCCL_ALGO=Tree`, kept as written). The server's own words are those of the simple
    command with most flags (not `cd`, not `| tee`); `vllm serve MODEL` gives `model`."""
    flags: Flags = {}
    segments = _segments(command)
    if not segments:
        return flags
    aliases = _ALIASES.get(detect_engine(command) or engine or "", {})
    main = max(segments, key=lambda words: sum(1 for w in words if _is_flag(w)))
    for words in segments:
        rest = words[1:] if words[0] == "export" else words
        position = 0
        while position < len(rest):
            word = rest[position]
            if _ENV.match(word):
                name, _, value = word.partition("=")
                flags[name] = value
            elif word not in _WRAPPERS:
                break
            position += 1
        if words is main:
            program = _program_words(rest[position:])
            if program[:2] == ["vllm", "serve"] and len(program) > 2 and not _is_flag(program[2]):
                flags["model"] = program[2]
            named = program and not _is_flag(program[0])
            _parse_words(program[1:] if named else program, flags, aliases)
    return flags


# Interpreters and launchers name the program; their own options are none of its flags.
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?w?")
_PYTHON_VALUED = {"-X", "-W", "-Q"}  # python -X dev -W ignore -m module
_LAUNCHERS = {
    "torchrun", "deepspeed", "mpirun", "mpiexec", "srun", "numactl", "taskset", "nsys",
    "ncu", "accelerate", "uv", "conda", "mamba", "micromamba", "pixi", "poetry",
}  # fmt: skip
_LAUNCHER_VERBS = {"launch", "run", "profile", "exec"}  # accelerate launch, uv run, ...
_LAUNCHER_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
# Launchers' switches that take no value: any other option of theirs takes the next word.
_LAUNCHER_SWITCHES = {
    "--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--module",
    "--no-capture-output", "--no-capture_output", "--allow-run-as-root", "--oversubscribe",
    "--localalloc", "--isolated", "--frozen", "--locked", "--no-sync", "--bind-to-core",
}  # fmt: skip


def _name_of(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def _starts_program(word: str) -> bool:
    name = _name_of(word)
    return bool(_PYTHON.fullmatch(name)) or name in _LAUNCHERS or name.endswith(".py")


def _program_words(words: list[str]) -> list[str]:
    """The program and its own arguments: `python3 -u -m sglang.launch_server --tp 8` is
    `sglang.launch_server --tp 8`, as are `torchrun --nproc-per-node 8 -m ...` and
    `mpirun -np 8 python -m ...`. A plain program (`vllm serve ...`) is itself."""
    i = 0
    while i < len(words):
        name = _name_of(words[i])
        if _PYTHON.fullmatch(name):
            i += 1
            while i < len(words) and _is_flag(words[i]):
                option = words[i]
                if option == "-c":
                    return []  # inline code: nothing after it is a server flag
                if option == "-m":
                    if i + 1 < len(words) and words[i + 1] in _LAUNCHER_MODULES:
                        i += 2
                        break  # python -m torch.distributed.run: a launcher's options next
                    return words[i + 1 :]
                i += 2 if option in _PYTHON_VALUED else 1
            else:
                return words[i:]  # a script and its arguments
        elif name in _LAUNCHERS:
            i += 1
            if i < len(words) and words[i] in _LAUNCHER_VERBS:
                i += 1
        else:
            return words[i:]
        # The launcher's options, up to the program it starts.
        while i < len(words) and _is_flag(words[i]):
            option = words[i]
            i += 1
            if option in ("-m", "--module") and i < len(words) and not _is_flag(words[i]):
                return words[i:]  # torchrun -m sglang.launch_server
            valued = "=" not in option and option not in _LAUNCHER_SWITCHES
            if (
                valued
                and i < len(words)
                and not _is_flag(words[i])
                and not _starts_program(words[i])
            ):
                i += 1
    return words[i:]


# --- the engine's echo of its arguments -------------------------------------------------

_SERVER_ARGS = "server_args=ServerArgs("
_NON_DEFAULT = "non-default args: {"
LOG_MARKERS = (_SERVER_ARGS, _NON_DEFAULT)  # literals the ingest can look for cheaply


@dataclass(frozen=True)
class LoggedArgs:
    engine: str
    flags: Flags
    complete: bool  # False when the line was cut before its closing bracket

    def to_json(self) -> dict[str, object]:
        return {"engine": self.engine, "flags": self.flags, "complete": self.complete}

    @classmethod
    def from_json(cls, data: object) -> "LoggedArgs | None":
        """As stored by the ingest; anything else (hand-edited, older) reads as none."""
        if not isinstance(data, dict) or not isinstance(data.get("flags"), dict):
            return None
        flags = {
            str(k): v for k, v in data["flags"].items() if isinstance(v, bool | str)
        }  # fmt: skip
        return cls(str(data.get("engine") or ""), flags, bool(data.get("complete", True)))


# What a repr's structure turns on: strings (to their closing quote, if any), brackets, commas.
_STRUCTURE = re.compile(
    r"'(?:[^'\\\n]|\\.)*(?P<sq>')?|\"(?:[^\"\\\n]|\\.)*(?P<dq>\")?|[()\[\]{}<>,]", re.S
)


def _top_level_items(text: str, start: int) -> tuple[list[str], bool]:
    """The comma-separated items of the bracket opened just before `start`, split where no
    quote, bracket or `<...>` repr is open; True when its closing bracket was found."""
    items: list[str] = []
    depth = angle = 0
    item_start = start
    for match in _STRUCTURE.finditer(text, start):
        token = match[0]
        if token[0] in "'\"":
            if match["sq"] is None and match["dq"] is None:
                break  # a string cut short: the line ends inside it
        elif token in "([{":
            depth += 1
        elif token in ")]}":
            if depth == 0 and angle == 0:
                items.append(text[item_start : match.start()])
                return [item for item in items if item.strip()], True
            depth = max(0, depth - 1)
        elif token == "<":
            before = text[max(start, match.start() - 8) : match.start()].rstrip()
            if not before or before[-1] in "=:,([{":
                angle += 1  # <Enum.X: 1>, <object at 0x...>: one value, whatever it holds
        elif token == ">":
            angle = max(0, angle - 1)
        elif depth == 0 and angle == 0:  # a comma between items
            items.append(text[item_start : match.start()])
            item_start = match.end()
    # Cut short: the last item may be half a value, so it is left out.
    return [item for item in items if item.strip()], False


_ITEM = re.compile(r"\s*(?:'([^'\\]*)'|\"([^\"\\]*)\"|([A-Za-z_]\w*))\s*[=:]\s*(.*)", re.S)


_PLAIN = {"None": None, "True": True, "False": False}
_PLAIN_STRING = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")
_INTEGER = re.compile(r"-?\d{1,30}")


def _value(text: str) -> FlagValue | None:
    text = text.strip()
    # Most of ServerArgs' hundreds of values are these: no need to compile each one.
    if text in _PLAIN:
        return _PLAIN[text]
    if _INTEGER.fullmatch(text):
        return str(int(text))
    if plain := _PLAIN_STRING.fullmatch(text):
        return plain[1] if plain[1] is not None else plain[2]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text  # CompilationConfig(...), <Enum.X: 1>, inf: kept as the engine wrote it
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return repr(value)  # numbers, lists, dicts, tuples: one canonical spelling


def parse_logged_args(line: str) -> LoggedArgs | None:
    """The arguments an engine printed on one log line, or None when the line has none.
    A 10 KB ServerArgs line takes milliseconds: parsed once by the ingest, then stored."""
    line = _ANSI.sub("", line) if "\x1b" in line else line
    at = line.find(_SERVER_ARGS)
    if at >= 0:
        engine, start = SGLANG, at + len(_SERVER_ARGS)
    else:
        at = line.find(_NON_DEFAULT)
        if at < 0:
            return None
        engine, start = VLLM, at + len(_NON_DEFAULT)
    items, complete = _top_level_items(line, start)
    flags: Flags = {}
    for item in items:
        match = _ITEM.match(item)
        if match is None:
            continue
        key = normalise(match[1] or match[2] or match[3])
        value = _value(match[4])
        # ServerArgs prints every argument: None is "not set" and False a switch left off,
        # the same as absent from a command. vLLM prints only what differs from its
        # defaults, so a False there was asked for (--no-enable-prefix-caching).
        if value is None or (engine == SGLANG and value is False):
            continue
        flags[key] = value
    return LoggedArgs(engine=engine, flags=flags, complete=complete)


def find_logged_args(text: str) -> LoggedArgs | None:
    """The last such line of a log's text (a server restarted into the same log says its
    latest arguments last)."""
    found = None
    for line in text.splitlines():
        if any(marker in line for marker in LOG_MARKERS):
            found = parse_logged_args(line) or found
    return found


MAX_ARGS_LINE = 256 << 10  # ServerArgs lines run to about 10 KB; past this, cut


class ArgsLineFinder:
    """The latest line of a log that holds the engine's echo of its arguments, from the log's
    bytes in chunks of any size: the ingest feeds it what it feeds the diagnosis, so the line
    is found once, as it arrives, at the cost of a search for two literals per chunk."""

    _MARKERS = tuple(marker.encode() for marker in LOG_MARKERS)

    def __init__(self) -> None:
        self.line: str | None = None
        self._open = b""  # the line not ended yet (its first MAX_ARGS_LINE bytes)

    def skip(self) -> None:
        """Bytes left out (a middle dropped past the cap): the open line is not whole."""
        self._open = b""

    def feed(self, data: bytes) -> None:
        end = data.rfind(b"\n")
        if end < 0:
            self._carry(data)
            return
        whole = self._open + data[:end] if self._open else data[:end]
        self._open = b""
        self._carry(data[end + 1 :])
        hits = [whole.rfind(marker) for marker in self._MARKERS]
        at = max(hits)
        if at < 0:
            return
        start = whole.rfind(b"\n", 0, at) + 1
        stop = whole.find(b"\n", at)
        raw = whole[start : stop if stop >= 0 else len(whole)][:MAX_ARGS_LINE]
        self.line = raw.decode("utf-8", "replace").replace("\x00", "").rstrip("\r")

    def _carry(self, data: bytes) -> None:
        room = MAX_ARGS_LINE - len(self._open)
        if room > 0 and data:
            self._open += data[:room]


# --- an attempt's flags and its diff ------------------------------------------------------


# A campaign's commands are masked at every view: each text once.
_clean = functools.lru_cache(maxsize=4096)(mask_secrets)


@dataclass(frozen=True)
class FlagSet:
    """`command`: read from the command with its credentials masked first, so that no part
    of one becomes a flag's name or value (`mysql -pS3cret`, a private key's lines);
    `unmasked`: read from the command as typed, only to tell whether a masked value changed."""

    command: Flags
    logged: LoggedArgs | None = None
    engine: str | None = None
    unmasked: Flags = field(default_factory=dict)

    @classmethod
    def of(
        cls, command: str, logged: LoggedArgs | None = None, *, typed: str = "",
        baseline: "FlagSet | None" = None,
    ) -> "FlagSet":  # fmt: skip
        """An attempt's flags. `typed` are flags typed beside the command (applied some other
        way: a wrapper script, a config file), laid over the command's; an attempt with no
        command of its own is the baseline's command with them."""
        engine = logged.engine if logged else detect_engine(command)
        if engine is None and baseline is not None and not command.strip():
            engine = baseline.engine
        flags, unmasked = command_flags(_clean(command)), command_flags(command)
        if not command.strip() and baseline is not None:
            # Typed flags or none: not a command that dropped every flag of the baseline's.
            flags, unmasked = dict(baseline.command), dict(baseline.unmasked)
        if typed.strip():
            flags.update(command_flags(_clean(typed), engine))
            unmasked.update(command_flags(typed, engine))
        return cls(command=flags, logged=logged, engine=engine, unmasked=unmasked)

    def effective(self, *, with_log: bool = True) -> Flags:
        """The command's flags with what the engine said it ran laid over them."""
        merged = dict(self.command)
        if with_log and self.logged is not None:
            merged.update(self.logged.flags)
        return merged


@dataclass(frozen=True)
class FlagDiff:
    added: Flags = field(default_factory=dict)
    removed: Flags = field(default_factory=dict)
    changed: dict[str, tuple[FlagValue, FlagValue]] = field(default_factory=dict)
    basis: str = "command"  # "log" when both attempts' engines echoed their arguments

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def summary(self, limit: int = 5) -> str:
        """`only change: +enable_torch_symm_mem`, or the first few changes."""
        parts = [_show_added(k, v) for k, v in self.added.items()]
        parts += [f"-{k}" for k in self.removed]
        parts += [f"{k}: {_show(a)} → {_show(b)}" for k, (a, b) in self.changed.items()]
        if not parts:
            return "no flag differs from the baseline"
        if len(parts) == 1:
            return f"only change: {parts[0]}"
        shown = ", ".join(parts[:limit])
        more = f", and {len(parts) - limit} more" if len(parts) > limit else ""
        return f"{len(parts)} changes: {shown}{more}"


def _show(value: FlagValue) -> str:
    return str(value).lower() if isinstance(value, bool) else value


def _show_added(key: str, value: FlagValue) -> str:
    return f"+{key}" if value is True else f"+{key}={_show(value)}"


def _same(a: FlagValue, b: FlagValue) -> bool:
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str) and _NUMBER.fullmatch(a) and _NUMBER.fullmatch(b):
        return float(a) == float(b)  # 0.85 and 0.850
    return False


def flag_diff(attempt: FlagSet, baseline: FlagSet) -> FlagDiff:
    """What the attempt's flags add, drop and change against the baseline's. When both
    engines echoed their arguments (the same engine), those are compared: they are what ran,
    defaults resolved; otherwise the two commands are."""
    with_log = (
        attempt.logged is not None
        and baseline.logged is not None
        and attempt.logged.engine == baseline.logged.engine
    )
    ours, theirs = attempt.effective(with_log=with_log), baseline.effective(with_log=with_log)
    if with_log:
        per_run = _PER_RUN.get(attempt.engine or "", set())
        for key in per_run - attempt.command.keys() - baseline.command.keys():
            ours.pop(key, None)
            theirs.pop(key, None)
    return FlagDiff(
        added={k: v for k, v in ours.items() if k not in theirs},
        removed={k: v for k, v in theirs.items() if k not in ours},
        changed={
            k: (theirs[k], v)
            for k, v in ours.items()
            if k in theirs
            and not (_same(theirs[k], v) and _same_unmasked(k, attempt, baseline, with_log))
        },
        basis="log" if with_log else "command",
    )


def _same_unmasked(key: str, attempt: FlagSet, baseline: FlagSet, with_log: bool) -> bool:
    """Whether two values the mask made alike were alike as typed: a new API key is a
    change, shown masked on both sides."""
    if with_log and any(key in s.logged.flags for s in (attempt, baseline) if s.logged):
        return True  # the engine's echo: stored as it came, masked when shown
    ours, theirs = attempt.unmasked.get(key), baseline.unmasked.get(key)
    return ours is None or theirs is None or _same(theirs, ours)


# --- secrets --------------------------------------------------------------------------------


def mask_value(key: str, value: FlagValue) -> FlagValue:
    """A flag's value as it may be shown: `--api-key sk-...` and `HF_TOKEN=hf_...` hidden."""
    if isinstance(value, bool):
        return value
    return _masked_text(key, value)


# A campaign's attempts repeat the same flags: a page masks each pair once, not per attempt.
@functools.lru_cache(maxsize=8192)
def _masked_text(key: str, value: str) -> str:
    if is_secret_name(key) and value and value not in ("***", SECRET):
        return SECRET
    return mask_secrets(value)


def masked(flags: Flags) -> Flags:
    return {key: mask_value(key, value) for key, value in flags.items()}


def masked_diff(diff: FlagDiff) -> FlagDiff:
    """The diff with secrets hidden; a changed key stays listed (`api_key` changed), both
    of its values masked."""
    return FlagDiff(
        added=masked(diff.added),
        removed=masked(diff.removed),
        changed={k: (mask_value(k, a), mask_value(k, b)) for k, (a, b) in diff.changed.items()},
        basis=diff.basis,
    )
