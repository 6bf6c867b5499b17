"""A benchmark run's output read into figures: the real blocks and files of sglang and vLLM,
a campaign's own pattern, and whatever else a run may print, never an exception."""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from app.benchparse import BenchResult, ParseFailure, parse_blocks, parse_output
from tests.helpers import corpus_log


def _result(text: str, **kwargs: str) -> BenchResult:
    result = parse_output(text, **kwargs)
    assert isinstance(result, BenchResult), result
    return result


def sglang_block(**figures: float) -> str:
    """A block as sglang's bench_serving prints it (`{:<40} {:<10.2f}` lines, its rules)."""
    values = {
        "Successful requests:": 1000,
        "Benchmark duration (s):": 23.73,
        "Total input tokens:": 79807,
        "Total generated tokens:": 255726,
        "Total generated tokens (retokenized):": 255700,
        "Request throughput (req/s):": 42.15,
        "Input token throughput (tok/s):": 3363.11,
        "Output token throughput (tok/s):": 10777.64,
        "Total token throughput (tok/s):": 14141.12,
        "Concurrency:": 812.3,
        "Mean E2E Latency (ms):": 19263.02,
        "Median E2E Latency (ms):": 19815.44,
        "Mean TTFT (ms):": 9408.2,
        "Median TTFT (ms):": 6866.08,
        "P99 TTFT (ms):": 18164.16,
        "Mean ITL (ms):": 40.12,
        "Median ITL (ms):": 31.9,
        "P95 ITL (ms):": 88.2,
        "P99 ITL (ms):": 141.5,
        "Max ITL (ms):": 902.7,
    }
    values.update({label: value for label, value in figures.items()})
    lines = ["", "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]
    lines += ["{:<40} {:<10}".format("Backend:", "sglang")]
    lines += ["{:<40} {:<10}".format("Traffic request rate:", "inf")]
    lines += ["{:<40} {:<10}".format("Max request concurrency:", "not set")]
    for label, value in values.items():
        if label == "Mean E2E Latency (ms):":
            lines.append("{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"))
        text = f"{value:<10.2f}" if isinstance(value, float) else f"{value:<10}"
        lines.append(f"{label:<40} {text}")
    lines.append("=" * 50)
    return "\n".join(lines) + "\n"


def test_sglang_block_as_bench_serving_prints_it() -> None:
    result = _result("Starting warmup with 1 sequences...\n" + sglang_block())
    assert result.valid and result.complete and result.source == "block"
    assert result.completed == 1000 and result.failed is None  # sglang prints no failures
    assert result.output_tok_s == 10777.64
    assert result.figures["ttft_ms"] == 9408.2 and result.figures["itl_ms"] == 40.12
    assert result.figures["request_throughput"] == 42.15
    assert result.figures["p99_itl_ms"] == 141.5 and result.figures["e2e_ms"] == 19263.02
    assert "traffic_request_rate" not in result.figures  # a setting, `inf`, no figure


def test_vllm_block_with_failed_requests_is_invalid() -> None:
    # vLLM's block since its pull request 26478, the failed count set to what a crash gives.
    text = (
        corpus_log("017")
        .decode()
        .replace(
            "Failed requests:                         0",
            "Failed requests:                         7",
        )
    )
    result = _result(
        "Failed requests during benchmark run detected (capping to 10):\n"
        "Error 0: Server disconnected\n" + text
    )
    assert not result.valid and result.failed == 7 and result.completed == 1000
    assert result.problems == ("7 requests failed",)
    assert result.output_tok_s == 10777.64  # kept, to be shown, not averaged in


def test_real_blocks_from_the_corpus() -> None:
    vllm = _result(corpus_log("017").decode())
    assert vllm.valid and vllm.failed == 0 and vllm.completed == 1000
    assert vllm.figures["peak_output_tok_s"] == 14046.0 and vllm.figures["ttft_ms"] == 9408.2
    assert not vllm.complete  # the issue quoted the block cut after TTFT
    sglang = _result(corpus_log("M012").decode())
    assert sglang.output_tok_s == 1915.4 and sglang.figures["e2e_ms"] == 80126.93
    # A log with two runs, each line prefixed with `# `: both read, the last one returned.
    text = corpus_log("548").decode()
    runs = parse_blocks(text)
    assert [r.output_tok_s for r in runs if isinstance(r, BenchResult)] == [434.4, 329.86]
    assert _result(text).figures["itl_ms"] == 93.85


def test_sglang_output_file_jsonl_appended_per_run() -> None:
    row = {
        "backend": "sglang",
        "request_rate": float("inf"),
        "duration": 23.7,
        "completed": 1000,
        "request_throughput": 42.15,
        "output_throughput": 10777.64,
        "mean_ttft_ms": 9408.2,
        "median_ttft_ms": 6866.0,
        "p99_ttft_ms": 18164.1,
        "mean_itl_ms": 40.1,
        "p95_itl_ms": 88.2,
        "concurrency": 812.3,
        "accept_length": None,
    }
    second = {**row, "output_throughput": 10801.5}
    text = json.dumps(row) + "\n" + json.dumps(second) + "\n"  # json writes inf as Infinity
    result = _result(text)
    assert result.source == "jsonl" and result.valid and result.output_tok_s == 10801.5
    assert result.figures["ttft_ms"] == 9408.2 and result.figures["p95_itl_ms"] == 88.2
    assert "request_rate" not in result.figures  # a setting again
    details = {**row, "errors": ["", "", "ClientConnectorError: refused"]}
    failed = _result(json.dumps(details))
    assert not failed.valid and failed.failed == 1


def test_vllm_save_result_json() -> None:
    saved = {
        "date": "20251009-101500",
        "backend": "vllm",
        "num_prompts": 1000,
        "duration": 23.73,
        "completed": 1000,
        "failed": 0,
        "total_input_tokens": 79807,
        "total_output_tokens": 255726,
        "request_throughput": 42.15,
        "request_goodput": None,
        "output_throughput": 10777.64,
        "total_token_throughput": 14141.12,
        "max_output_tokens_per_s": 14046.0,
        "mean_ttft_ms": 9408.2,
        "median_ttft_ms": 6866.08,
        "p99_ttft_ms": 18164.16,
        "mean_tpot_ms": 70.1,
        "mean_itl_ms": 70.14,
        "p99_itl_ms": 72.47,
    }
    result = _result(json.dumps(saved, indent=2))
    assert result.source == "json" and result.valid and result.failed == 0
    assert result.figures["itl_ms"] == 70.14 and result.figures["total_tok_s"] == 14141.12
    assert result.figures["peak_output_tok_s"] == 14046.0
    none = _result(json.dumps({**saved, "completed": 0, "failed": 1000}))
    assert not none.valid and "no request completed" in none.problems


def test_a_campaigns_own_pattern() -> None:
    text = "step 1: 81.2 tok/s\nstep 2: 82,004.5 tok/s\n"
    result = _result(text, pattern=r"(?P<value>[\d,.]+) tok/s")
    assert result.source == "pattern" and result.figures == {"value": 82004.5}
    assert _result("x=7\n", pattern=r"x=(\d+)").figures == {"value": 7.0}
    assert isinstance(parse_output(text, pattern="("), ParseFailure)
    missed = parse_output(text, pattern=r"req/s: (\d+)")
    assert isinstance(missed, ParseFailure) and "matched nothing" in missed.reason
    word = parse_output("rate: fast", pattern=r"rate: (\w+)")
    assert isinstance(word, ParseFailure) and "no number" in word.reason


def test_outputs_with_no_result_say_why() -> None:
    for text in ("", "Traceback (most recent call last):\nConnectionRefusedError\n", "{}", "[1]"):
        failure = parse_output(text)
        assert isinstance(failure, ParseFailure) and not failure.valid
        assert failure.reason
    header_only = parse_output("============ Serving Benchmark Result ============\n")
    assert isinstance(header_only, ParseFailure) and "cut short" in header_only.reason


def test_infinite_nan_negative_and_huge_figures_are_invalid() -> None:
    for bad in ("inf", "nan", "-5.00", "1" + "0" * 400):
        text = sglang_block().replace("10777.64  ", f"{bad}  ")
        result = _result(text)
        assert not result.valid, bad
        assert any("output_tok_s" in p for p in result.problems), result.problems
    nan_json = _result('{"completed": 10, "output_throughput": NaN}')
    assert not nan_json.valid


# --- whatever a run prints --------------------------------------------------------------------

labels = st.sampled_from(
    [
        "Successful requests:",
        "Failed requests:",
        "Output token throughput (tok/s):",
        "Mean TTFT (ms):",
        "Mean ITL (ms):",
        "Request throughput (req/s):",
        "Backend:",
    ]
)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**400), max_value=10**400).map(str),
    st.text(max_size=12),
)
junk_lines = st.one_of(
    st.text(max_size=80),
    st.tuples(labels, numbers).map(lambda p: f"{p[0]:<40} {p[1]}"),
    st.just("============ Serving Benchmark Result ============"),
    st.just("=" * 50),
    st.just('{"completed": 3, "output_throughput": 1e999}'),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(junk_lines, max_size=30), st.sampled_from([None, r"(\d+)", r"(?P<value>.*)"]))
def test_any_output_gives_a_result_or_a_reason_never_an_exception(
    lines: list[str], pattern: str | None
) -> None:
    result = parse_output("\n".join(lines), pattern=pattern)
    if isinstance(result, ParseFailure):
        assert result.reason and not result.valid
        return
    # Whatever was read: a valid result holds only finite, non-negative figures, no failure.
    if result.valid:
        assert result.figures
        assert all(math.isfinite(v) and v >= 0 for v in result.figures.values())
        assert not result.failed and result.completed != 0


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0, max_value=1e12, allow_nan=False),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
    st.integers(min_value=1, max_value=10**9),
)
def test_a_printed_block_gives_its_figures_back(tok_s: float, ttft: float, done: int) -> None:
    text = sglang_block(
        **{
            "Output token throughput (tok/s):": tok_s,
            "Mean TTFT (ms):": ttft,
            "Successful requests:": done,
        }
    )
    result = _result(text)
    assert result.valid and result.completed == done
    assert result.output_tok_s == float(f"{tok_s:.2f}")
    assert result.figures["ttft_ms"] == float(f"{ttft:.2f}")


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["completed", "failed", "output_throughput", "mean_ttft_ms", "errors", "x"]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=10,
    )
)
def test_any_json_never_raises(value: object) -> None:
    text = json.dumps(value)
    result = parse_output(text)
    assert isinstance(result, BenchResult | ParseFailure)
    if isinstance(result, BenchResult) and result.valid:
        assert all(math.isfinite(v) and v >= 0 for v in result.figures.values())
