"""One benchmark run's output read into figures: sglang `bench_serving`'s result block and
its `--output-file` JSONL, `vllm bench serve`'s block and its `--save-result` JSON, or a
campaign's own regex. Pure: text in, a result or the reason there is none out."""

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

HEADER = "Serving Benchmark Result"
MAX_TEXT = 4 << 20  # a run's output past this is read from its end: the block is printed last

# Block labels whose figure has a name of its own; other labels get a slug of their words.
_LABELS = {
    "output token throughput (tok/s)": "output_tok_s",
    "input token throughput (tok/s)": "input_tok_s",
    "total token throughput (tok/s)": "total_tok_s",
    "peak output token throughput (tok/s)": "peak_output_tok_s",
    "request throughput (req/s)": "request_throughput",
    "request goodput (req/s)": "request_goodput",
    "benchmark duration (s)": "duration_s",
    "successful requests": "completed",
    "failed requests": "failed",
    "total input tokens": "total_input_tokens",
    "total generated tokens": "total_output_tokens",
    "total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "peak concurrent requests": "peak_concurrent_requests",
    "concurrency": "concurrency",
    "accept length": "accept_length",
    "acceptance length": "accept_length",
    "acceptance rate (%)": "acceptance_rate_pct",
}
# What the run was asked to do, not what it measured: `Traffic request rate: inf` is no figure.
_SETTINGS = ("backend", "traffic request rate", "max request concurrency",
             "max reqeuest concurrency", "maximum request concurrency",
             "request rate configured (rps)", "burstiness factor")  # fmt: skip
_LATENCY = re.compile(r"(mean|median|p\d+(?:\.\d+)?|std|max) (.+) \(ms\)")
# The JSON files' keys, sglang's and vLLM's alike.
_JSON_KEYS = {
    "output_throughput": "output_tok_s",
    "input_throughput": "input_tok_s",
    "total_token_throughput": "total_tok_s",
    "total_throughput": "total_tok_s",
    "max_output_tokens_per_s": "peak_output_tok_s",
    "request_throughput": "request_throughput",
    "request_goodput": "request_goodput",
    "duration": "duration_s",
    "total_input_tokens": "total_input_tokens",
    "total_output_tokens": "total_output_tokens",
    "max_concurrent_requests": "peak_concurrent_requests",
    "concurrency": "concurrency",
    "accept_length": "accept_length",
}
_JSON_LATENCY = re.compile(r"(mean|median|std|p\d+(?:\.\d+)?)_(\w+?)_ms")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)", re.I)
_LINE = re.compile(r"\s*([A-Za-z][^:]*?):\s*(\S+)\s*$")


@dataclass(frozen=True)
class BenchResult:
    """One run's figures. `valid` is False when a request failed, none completed or a figure
    is not a finite non-negative number: such a run is recorded, never averaged in."""

    source: str  # "block" (printed), "json" (vLLM --save-result), "jsonl" (sglang), "pattern"
    figures: dict[str, float] = field(default_factory=dict)
    completed: int | None = None
    failed: int | None = None  # None where the tool says nothing of failures (sglang's block)
    problems: tuple[str, ...] = ()
    # False when a printed block has no closing rule: the figures before the cut are kept.
    complete: bool = True

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def output_tok_s(self) -> float | None:
        return self.figures.get("output_tok_s")


@dataclass(frozen=True)
class ParseFailure:
    reason: str
    valid: bool = False


def _slug(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def _latency_key(kind: str, name: str) -> str:
    # "Mean TTFT (ms)" is ttft_ms, the figure people quote; the others say which they are.
    name = {"e2e latency": "e2e", "e2el": "e2e"}.get(name.lower(), name)
    slug = _slug(name)
    return f"{slug}_ms" if kind.lower() == "mean" else f"{kind.lower()}_{slug}_ms"


def _figure(text: str) -> float | None:
    return float(text) if _NUMBER.fullmatch(text) else None


def _judge(
    source: str, figures: dict[str, float], completed: int | None, failed: int | None,
    errors: int = 0,
) -> BenchResult:  # fmt: skip
    problems = []
    if failed is None and errors:
        failed = errors
    if failed:
        problems.append(f"{failed} request{'s' * (failed != 1)} failed")
    if completed == 0:
        problems.append("no request completed")
    bad = sorted(k for k, v in figures.items() if not math.isfinite(v) or v < 0)
    if bad:
        problems.append(f"not a finite non-negative figure: {', '.join(bad)}")
    if not figures:
        problems.append("no figure in the result")
    return BenchResult(
        source=source, figures=figures, completed=completed, failed=failed, problems=tuple(problems)
    )


def _count(value: float | None) -> int | None:
    if value is None or not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


# --- the printed block -----------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[list[str], bool]]:
    """Each result block's lines with the header's prefix (`# `, a timestamp) taken off,
    and whether the block was closed by its rule of `=`."""
    blocks: list[tuple[list[str], bool]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        at = lines[i].find(HEADER)
        if at < 0 or "=" not in lines[i][at:]:
            i += 1
            continue
        prefix = lines[i][: lines[i].index("=")] if "=" in lines[i][:at] else ""
        body: list[str] = []
        closed = False
        i += 1
        while i < len(lines):
            line = lines[i]
            line = line[len(prefix) :] if prefix and line.startswith(prefix) else line
            if HEADER in line:
                break
            if set(line.strip()) == {"="} and len(line.strip()) >= 10:
                closed = True
                i += 1
                break
            body.append(line)
            i += 1
        blocks.append((body, closed))
    return blocks


def _block_result(body: list[str]) -> BenchResult | ParseFailure:
    figures: dict[str, float] = {}
    counts: dict[str, float] = {}
    for line in body:
        match = _LINE.match(line)
        if match is None:
            continue
        label, raw = match[1].strip(), match[2]
        lowered = label.lower()
        if lowered in _SETTINGS:
            continue
        value = _figure(raw)
        if value is None:
            continue
        key = _LABELS.get(lowered)
        if key is None and (latency := _LATENCY.fullmatch(lowered)):
            key = _latency_key(latency[1], label[latency.start(2) : latency.end(2)])
        key = key or _slug(label)
        if key in ("completed", "failed"):
            counts[key] = value
        else:
            figures[key] = value
    if not figures and not counts:
        return ParseFailure("the result block holds no figure: the run was cut short?")
    return _judge_counts("block", figures, counts.get("completed"), counts.get("failed"))


def _judge_counts(
    source: str, figures: dict[str, float], completed: float | None, failed: float | None,
    errors: int = 0,
) -> BenchResult:  # fmt: skip
    result = _judge(source, figures, _count(completed), _count(failed), errors)
    bad = [
        name for name, value in (("completed", completed), ("failed", failed))
        if value is not None and _count(value) is None
    ]  # fmt: skip
    if not bad:
        return result
    problem = f"not a count of requests: {', '.join(bad)}"
    return replace(result, problems=(*result.problems, problem))


def parse_blocks(text: str) -> list[BenchResult | ParseFailure]:
    """Every result block printed, in order (a sweep prints one per request rate)."""
    results: list[BenchResult | ParseFailure] = []
    for body, closed in _blocks(text):
        result = _block_result(body)
        if isinstance(result, BenchResult) and not closed:
            result = replace(result, complete=False)
        results.append(result)
    return results


# --- the JSON files ----------------------------------------------------------------------------


def _json_result(data: dict[str, Any], source: str) -> BenchResult | ParseFailure:
    figures: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        name = _JSON_KEYS.get(key)
        if name is None and (latency := _JSON_LATENCY.fullmatch(key)):
            name = _latency_key(latency[1], latency[2])
        if name is not None:
            figures[name] = float(value)
    completed, failed = (
        float(data[k]) if _is_number(data.get(k)) else None for k in ("completed", "failed")
    )
    errors = data.get("errors")
    error_count = sum(1 for e in errors if e) if isinstance(errors, list) else 0
    if not figures and completed is None:
        return ParseFailure("the JSON holds none of the benchmark's keys")
    return _judge_counts(source, figures, completed, failed, errors=error_count)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_constant(name: str) -> float:
    return float(name)  # NaN, Infinity: kept, then judged invalid rather than refused


def parse_json(text: str) -> list[BenchResult | ParseFailure]:
    """vLLM's `--save-result` file (one object) or sglang's `--output-file` (one object a
    line, appended per run)."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped, parse_constant=_parse_constant)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        return [_json_result(whole, "json")]
    results: list[BenchResult | ParseFailure] = []
    for line in stripped.splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            data = json.loads(line, parse_constant=_parse_constant)
        except (ValueError, RecursionError):
            results.append(ParseFailure("a line of the JSONL file is not JSON"))
            continue
        if isinstance(data, dict):
            results.append(_json_result(data, "jsonl"))
    return results


# --- a campaign's own pattern -----------------------------------------------------------------


def parse_pattern(text: str, pattern: str) -> BenchResult | ParseFailure:
    """The last match of the campaign's regex: its `value` group, else its first group."""
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        return ParseFailure(f"the campaign's pattern is not a regex: {error}")
    last = None
    for last in compiled.finditer(text):  # noqa: B007 - the last match is the run's figure
        pass
    if last is None:
        return ParseFailure("the campaign's pattern matched nothing in the output")
    group = "value" if "value" in compiled.groupindex else (1 if compiled.groups else 0)
    raw = (last.group(group) or "").strip()
    value = _figure(raw.replace(",", ""))
    if value is None:
        return ParseFailure(f"the pattern matched {raw[:80]!r}, which is no number")
    return _judge("pattern", {"value": value}, None, None)


# --- one run's output -------------------------------------------------------------------------


def parse_output(text: str, *, pattern: str | None = None) -> BenchResult | ParseFailure:
    """The result of one benchmark run: the campaign's pattern when it has one, else the JSON
    the output is, else the last block printed. Never raises."""
    if len(text) > MAX_TEXT:
        text = text[-MAX_TEXT:]
    if "\x00" in text:
        text = text.replace("\x00", "")
    if pattern:
        return parse_pattern(text, pattern)
    results: list[BenchResult | ParseFailure] = []
    if text.lstrip().startswith("{"):
        results = parse_json(text)
    if not results:
        results = parse_blocks(text)
    if not results:
        return ParseFailure(
            f"no benchmark result in the output: no {HEADER!r} block and no result JSON"
        )
    return results[-1]
