"""An attempt's flag set, from its launch command and from the engine's own echo of its
arguments in the log (sglang `server_args=ServerArgs(...)`, vLLM `non-default args: {...}`),
and what differs from the baseline attempt's. Pure: text in, values out; secrets masked."""

import ast
import math
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.redact import SECRET, is_secret_name, mask_secrets

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
_SHORT_WITH_VALUE = re.compile(r"([A-Za-z])(\d+)")  # -O3
# Programs that run the next word as the command: their own words are no server flag.
_WRAPPERS = {"nohup", "exec", "setsid", "time", "env", "command", "builtin", "sudo"}
_SEPARATORS = {";", "&&", "||", "|", "|&", "&", "(", ")", "\n"}
_OPERATORS = sorted(
    ["&&", "||", "|&", ";;", ">>", ">&", "<&", ">|", "<<", "&>>", "&>", "<>",
     ";", "|", "&", "(", ")", "<", ">"],
    key=len, reverse=True,
)  # fmt: skip
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def normalise(name: str) -> str:
    """`--enable-torch-symm-mem`, `enable_torch_symm_mem` and `--Enable_Torch-Symm-Mem` are
    one key; a one-letter short flag keeps its case (`-O` is not `-o`)."""
    bare = name.lstrip("-")
    if len(bare) == 1:
        return bare
    return bare.lower().replace("-", "_")


# --- the launch command ---------------------------------------------------------------


def _shell_tokens(command: str) -> Iterator[tuple[str, str]]:
    """("word", text) and ("op", operator) as a POSIX shell splits a command line; each
    word is unquoted by shlex. Unbalanced quotes run to the end instead of failing: the
    command is shown whatever it holds, so its flags are read whatever it holds."""
    i, n = 0, len(command)
    while i < n:
        char = command[i]
        if char == "\n":
            yield "op", "\n"
            i += 1
            continue
        if char.isspace():
            i += 1
            continue
        if char == "#":  # a comment runs to the end of the line
            end = command.find("\n", i)
            i = n if end < 0 else end
            continue
        op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        if op is not None:
            yield "op", op
            i += len(op)
            continue
        start = i
        while i < n:
            char = command[i]
            if char == "\\":
                i += 2
            elif char in "'\"":
                close = _closing_quote(command, i)
                i = n if close < 0 else close + 1
            elif char.isspace() or any(command.startswith(o, i) for o in _OPERATORS):
                break
            else:
                i += 1
        raw = command[start:i]
        if raw.isdigit() and i < n and command[i] in "<>":
            continue  # the 2 of 2>&1: a file descriptor, part of the redirection
        yield "word", _unquote(raw)


def _closing_quote(text: str, at: int) -> int:
    quote, i = text[at], at + 1
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


def _unquote(raw: str) -> str:
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


def command_flags(command: str) -> Flags:
    """The flags of a launch command line: `--flag value`, `--flag=value`, bare switches,
    `-x` short ones, the last of a repeated flag, and the environment it sets
    (`NCCL_ALGO=Tree`, kept as written). The server's own words are those of the simple
    command with most flags (not `cd`, not `| tee`); `vllm serve MODEL` gives `model`."""
    flags: Flags = {}
    segments = _segments(command)
    if not segments:
        return flags
    engine = detect_engine(command)
    aliases = _ALIASES.get(engine or "", {})
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
            program = rest[position:]
            if program[:2] == ["vllm", "serve"] and len(program) > 2 and not _is_flag(program[2]):
                flags["model"] = program[2]
            _parse_words(program, flags, aliases)
    return flags


# --- the engine's echo of its arguments -------------------------------------------------

_SERVER_ARGS = "server_args=ServerArgs("
_NON_DEFAULT = "non-default args: {"
LOG_MARKERS = (_SERVER_ARGS, _NON_DEFAULT)  # literals the ingest can look for cheaply


@dataclass(frozen=True)
class LoggedArgs:
    engine: str
    flags: Flags
    complete: bool  # False when the line was cut before its closing bracket


def _top_level_items(text: str, start: int) -> tuple[list[str], bool]:
    """The comma-separated items of the bracket opened just before `start`, split where no
    quote, bracket or `<...>` repr is open; True when its closing bracket was found."""
    items: list[str] = []
    depth, angle, quote = 0, 0, ""
    item_start, i, n = start, start, len(text)
    previous = "("
    while i < n:
        char = text[i]
        if quote:
            if char == "\\":
                i += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0 and angle == 0:
                items.append(text[item_start:i])
                return [item for item in items if item.strip()], True
            depth = max(0, depth - 1)
        elif char == "<" and previous in "=:,([{":
            angle += 1  # <Enum.X: 1>, <object at 0x...>: one value, whatever it holds
        elif char == ">" and angle:
            angle -= 1
        elif char == "," and depth == 0 and angle == 0:
            items.append(text[item_start:i])
            item_start = i + 1
        if not char.isspace():
            previous = char
        i += 1
    # Cut short: the last item may be half a value, so it is left out.
    return [item for item in items if item.strip()], False


_ITEM = re.compile(r"\s*(?:'([^'\\]*)'|\"([^\"\\]*)\"|([A-Za-z_]\w*))\s*[=:]\s*(.*)", re.S)


def _value(text: str) -> FlagValue | None:
    text = text.strip()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text  # CompilationConfig(...), <Enum.X: 1>, inf: kept as the engine wrote it
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return text
    if isinstance(value, int | float):
        return repr(value)
    return repr(value)  # lists, dicts, tuples: one canonical spelling


def parse_logged_args(line: str) -> LoggedArgs | None:
    """The arguments an engine printed on one log line, or None when the line has none."""
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


# --- an attempt's flags and its diff ------------------------------------------------------


@dataclass(frozen=True)
class FlagSet:
    command: Flags
    logged: LoggedArgs | None = None
    engine: str | None = None

    @classmethod
    def of(cls, command: str, log_line: str | None = None) -> "FlagSet":
        logged = parse_logged_args(log_line) if log_line else None
        engine = logged.engine if logged else detect_engine(command)
        return cls(command=command_flags(command), logged=logged, engine=engine)

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
            k: (theirs[k], v) for k, v in ours.items() if k in theirs and not _same(theirs[k], v)
        },
        basis="log" if with_log else "command",
    )


# --- secrets --------------------------------------------------------------------------------


def mask_value(key: str, value: FlagValue) -> FlagValue:
    """A flag's value as it may be shown: `--api-key sk-...` and `HF_TOKEN=hf_...` hidden."""
    if isinstance(value, bool):
        return value
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
