"""A benchmark run's figures: from the result file its command writes (sglang's
`--output-file` JSONL, vLLM's `--save-result` JSON) when the host could read it back, else
from its printed result; the campaign's own pattern, when it has one, gives the metric."""

import posixpath
import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from app.benchparse import BenchResult, ParseFailure, parse_json, parse_output
from app.runner.answers import ResultFileRead

# What ends one shell command and starts the next: a `cd` there moves the ones after it.
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "\n"})
# A path the shell would expand: the runner cannot know which file it names.
_EXPANDED = re.compile(r"[$`*?\[]")
# vLLM names its file `{label}-{rate}qps-{model}-{date}.json` unless told; beside it may lie
# `.pytorch.json` copies, which are not results.
VLLM_SUFFIX, VLLM_SKIP = ".json", (".pytorch.json",)


@dataclass(frozen=True)
class ResultFile:
    """Where a benchmark command writes its result, as its own flags say: one path, or (vLLM
    without --result-filename) a folder where it picks the name. Relative paths are the
    command's: after its leading `cd`, from the home directory the runner starts it in."""

    flag: str  # the flag that asks for the file, named in what the run says
    path: str | None = None
    folder: str | None = None
    append: bool = False  # each run adds to the file: only its own part is read
    problem: str | None = None  # why the file cannot be found (a shell variable in its path)

    @property
    def source(self) -> str:
        """What its figures are called (app/benchparse's names): sglang's JSONL or vLLM's JSON,
        however many lines this run's part of it has."""
        return "jsonl" if self.flag == "--output-file" else "json"

    def watch(self) -> dict[str, Any] | None:
        """What the host program notes before the run (app/runner/host_results.py `_watch`)."""
        if self.problem:
            return None
        if self.path is not None:
            return {"path": self.path, "append": self.append}
        return {"dir": self.folder, "suffix": VLLM_SUFFIX, "skip_suffixes": list(VLLM_SKIP),
                "append": self.append}  # fmt: skip


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the shell will say so
        return command.split()


def _flags(command: str) -> tuple[dict[str, str | None], str]:
    """The long flags of the command (`--a_b` as `--a-b`, as vLLM reads them; the last one
    wins, as argparse does) and the directory its leading `cd`s lead to."""
    words = _tokens(command)
    flags: dict[str, str | None] = {}
    cwd = ""
    at_start = True
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        if word in _SEPARATORS:
            at_start = True
            continue
        if at_start and word == "cd" and not flags:
            target = following if following not in _SEPARATORS else None
            target = target or "~"
            cwd = target if target.startswith("~") else posixpath.join(cwd, target)
        at_start = False
        if not word.startswith("--"):
            continue
        name, equals, value = word.partition("=")
        name = "--" + name[2:].replace("_", "-")
        if equals:
            flags[name] = value
        elif following is None or following in _SEPARATORS or following.startswith("-"):
            flags[name] = None  # a switch: --save-result
        else:
            flags[name] = following
    return flags, cwd


def result_file(bench: str) -> ResultFile | None:
    """The result file `bench` writes, or None when its flags ask for none."""
    flags, cwd = _flags(bench)
    if flags.get("--output-file"):
        found = ResultFile("--output-file", path=flags["--output-file"], append=True)
    elif "--save-result" in flags or "--append-result" in flags:
        flag = "--append-result" if "--append-result" in flags else "--save-result"
        folder = flags.get("--result-dir") or ""
        name = flags.get("--result-filename")
        found = ResultFile(
            flag,
            path=posixpath.join(folder, name) if name else None,
            folder=None if name else folder or ".",
            append="--append-result" in flags,
        )
    else:
        return None
    if cwd:
        found = replace(
            found,
            path=posixpath.join(cwd, found.path) if found.path is not None else None,
            folder=posixpath.join(cwd, found.folder) if found.folder is not None else None,
        )
    named = found.path if found.path is not None else found.folder or ""
    if _EXPANDED.search(named):
        problem = f"its {found.flag} file is at {named!r}, which the shell expands: not read"
        return replace(found, problem=problem)
    return found


@dataclass(frozen=True)
class RunFigures:
    """What one finished benchmark run measured, and where that was read."""

    result: BenchResult | ParseFailure
    metric: float | None  # the campaign's figure: the pattern's, else output tok/s
    result_file: str | None  # the file on the host its figures came from
    file_note: str | None  # why its result file's figures were not used


def _from_file(spec: ResultFile, found: ResultFileRead | None) -> tuple[BenchResult | None, str]:
    """The run's record in the file the host read back, or why there is none."""
    if spec.problem:
        return None, spec.problem
    if not found:
        return None, f"the host did not read back its {spec.flag} file"
    where = found.get("path") or "its result file"
    if found.get("problem"):
        return None, str(found["problem"])
    text = str(found.get("text") or "")
    if not text.strip():
        return None, f"{where}: nothing was added by this run"
    results = parse_json(text)
    if not results:
        return None, f"{where} holds no result JSON"
    last = results[-1]  # a command that ran the benchmark twice: its last record, as printed
    if isinstance(last, ParseFailure):
        return None, f"{where}: {last.reason}"
    return last, where


def run_figures(
    output: str, spec: ResultFile | None, found: ResultFileRead | None, pattern: str | None
) -> RunFigures:
    """The run's result file preferred over its printed block; a campaign's pattern, matched
    in the printed output, gives the metric beside the other figures, and a run whose file
    or block counts failed requests stays invalid all the same."""
    result: BenchResult | ParseFailure = parse_output(output)
    path = note = None
    if spec is not None:
        from_file, said = _from_file(spec, found)
        if from_file is not None:
            result, path = replace(from_file, source=spec.source), said
        else:
            note = f"{said}: figures from the printed result"
    if not pattern:
        metric = result.output_tok_s if isinstance(result, BenchResult) else None
        return RunFigures(result, metric, path, note)
    own = parse_output(output, pattern=pattern)
    if isinstance(own, ParseFailure):
        return RunFigures(own, None, path, note)
    value = own.figures["value"]
    if isinstance(result, BenchResult):
        merged = replace(result, figures={**result.figures, "value": value})
        return RunFigures(merged, value, path, note)
    return RunFigures(own, value, path, note)
