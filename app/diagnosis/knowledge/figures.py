"""The throughput figures servers and benchmarks print, one kind a row: how the scanner finds
their lines and reads (label, value, unit) from each. Order matters: a kind that `defers`
leaves a line to an earlier kind that counts it."""

import re
from dataclasses import dataclass

PERIODIC_LINES = 100  # of a serving statistic printed all along (sglang's decode batches)
# Of a benchmark's results, each one a run the engineer asked for: all of them, in practice.
BENCHMARK_LINES = 10_000


@dataclass(frozen=True)
class FigureKind:
    literal: bytes  # searched with bytes.find
    # parses the figures of a line holding the literal: named groups `value`, `label` and
    # `unit` (the last two where the line names them)
    pattern: re.Pattern[bytes]
    engines: tuple[str, ...]  # the servers and tools that print such lines
    example: str  # a line as they print it, with at least one figure of this kind
    source: str  # where such a line comes from (see Fact.source)
    anchor: bytes | None = None  # Hyperscan expression, when sharper than the literal
    full_lines: int = BENCHMARK_LINES  # lines whose every figure is kept; then one per window
    unit: bytes = b""  # the unit a line of this kind implies without naming it
    label: bytes = b"throughput"  # the label, where the line has none
    # A line that a kind before this one counts is left to it (a figure counted once).
    defers: bool = False
    # On most lines of a log: searched with bytes.find in every window, never anchored, since
    # a literal that hits that often would only slow Hyperscan down.
    dense: bool = False
    # An engine's periodic statistic: the engine was up and serving when it printed one.
    serving: bool = False


_NUMBER = rb"(?P<value>[0-9]+(?:\.[0-9]+)?)"
# Benchmark summaries, a figure a line, the unit in brackets (a "# " before it where the
# results were commented into a file).
_SUMMARY = re.compile(
    rb"^[\s#]*(?P<label>[A-Z][\w ]*?(?:[Tt]hroughput|[Gg]oodput)(?: \[[^\]]*\])?)"
    rb" \((?P<unit>tok/s|tokens/s|token/s|req/s|tokens/sec|req/sec|tps/gpu|tps/user)\):"
    rb"\s+" + _NUMBER,
    re.M,
)


def _summary(literal: bytes, engines: tuple[str, ...], example: str, source: str) -> FigureKind:
    """A benchmark summary's kind, anchored on its bracketed unit."""
    return FigureKind(
        literal, _SUMMARY, engines, example, source, anchor=re.escape(literal.strip())
    )


FIGURE_KINDS = (
    FigureKind(
        b" throughput (token/s): ",
        re.compile(rb"(?P<label>\w+ throughput) \((?P<unit>token/s)\): " + _NUMBER),
        ("sglang",),
        "[2025-02-27 04:46:39 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: "
        "0.12, gen throughput (token/s): 186.64, #queue-req: 0",
        "sglang: the scheduler's 'Decode batch' and 'Prefill batch' statistics "
        "(python/sglang/srt/managers/scheduler.py, later scheduler_metrics_mixin.py); observed "
        "in corpus case 579",
        full_lines=PERIODIC_LINES,
        dense=True,
        serving=True,
    ),
    FigureKind(
        b"Avg prompt throughput: ",  # (": ": sglang's "gen throughput (" costs a confirm)
        re.compile(
            rb"(?P<label>Avg \w+ throughput): " + _NUMBER + rb" (?P<unit>tokens/s|tok/s|token/s)"
        ),
        ("vllm",),
        "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
        "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV "
        "cache usage: 57.9%, Prefix cache hit rate: 40.5%",
        "vLLM: its periodic stats logger (vllm/v1/metrics/loggers.py; vllm/engine/metrics.py "
        "before V1); observed in corpus case 004",
        full_lines=PERIODIC_LINES,
        serving=True,
    ),
    _summary(
        b" (tok/s):",
        ("vllm", "sglang"),
        "Output token throughput (tok/s):         1915.40",
        "the serving benchmarks' summary (vLLM's benchmark_serving, sglang's bench_serving); "
        "observed in corpus case M012",
    ),
    _summary(
        b" (req/s):",
        ("vllm", "sglang"),
        "Request throughput (req/s):              9.67",
        "the serving benchmarks' summary, as above; observed in corpus case M012",
    ),
    _summary(
        b" (tokens/sec):",
        ("tensorrt-llm",),
        "Total Output Throughput (tokens/sec):             6957.3030",
        "trtllm-bench's PERFORMANCE OVERVIEW; observed in corpus case 565",
    ),
    _summary(
        b" (req/sec):",
        ("tensorrt-llm",),
        "Request Throughput (req/sec):                     248.4751",
        "trtllm-bench's PERFORMANCE OVERVIEW; observed in corpus case 565",
    ),
    _summary(
        b" (tps/gpu):",
        ("tensorrt-llm",),
        "Per GPU Output Throughput (tps/gpu):              6957.3030",
        "trtllm-bench's PERFORMANCE OVERVIEW; observed in corpus case 565",
    ),
    _summary(
        b" (tps/user):",
        ("tensorrt-llm",),
        "Per User Output Throughput [w/ ctx] (tps/user):   0.5350",
        "trtllm-bench's PERFORMANCE OVERVIEW; observed in corpus case 565",
    ),
    # "<what> throughput: <figure> <unit>"
    FigureKind(
        b"hroughput: ",
        re.compile(
            rb"(?<![\w-])(?P<label>(?:[A-Za-z][A-Za-z ]{0,40}?)?[Tt]hroughput): "
            + _NUMBER
            + rb" ?(?P<unit>tokens/s|token/s|tok/s|requests/s|req/s)\b"
        ),
        ("jetstream", "vllm", "lmdeploy"),
        "Request throughput: 6.05 requests/s",
        "JetStream's benchmark_serving summary (observed in corpus case 831); vLLM's "
        "speculative-decoding metrics ('Accepted throughput: 76.80 tokens/s', case 851) and "
        "lmdeploy's profile_generation ('throughput: 22.93 token/s', case 818) print the same",
        defers=True,
    ),
    # (sampling time is not a rate of the model)
    FigureKind(
        b" tokens per second)",
        re.compile(
            rb"(?P<label>(?:prompt )?eval time)\s*=\s*[0-9.]+\s*ms\s*/\s*[0-9]+\s*(?:tokens|runs)"
            rb"\s*\(\s*[0-9.]+\s*ms per token,\s*" + _NUMBER + rb" tokens per second\)"
        ),
        ("llama.cpp",),
        "prompt eval time =     915.13 ms /    51 tokens (   17.94 ms per token,    55.73 "
        "tokens per second)",
        "llama.cpp's timings, per request (llama-server's print_timing, llama-cli's perf "
        "summary); observed in corpus case 517",
        unit=b"tokens/s",
    ),
    FigureKind(
        b" t/s",
        re.compile(rb"(?<![\w])(?P<label>tg|pp) = +" + _NUMBER + rb" (?P<unit>t/s)"),
        ("llama.cpp",),
        "[42027] 1.35.716.244 I slot print_timing: id  0 | task 388 | n_decoded =    172, tg =  "
        "12.00 t/s",
        "llama-server's running rate while it generates; observed in corpus case 518",
        anchor=rb"\b(?:tg|pp) = +[0-9.]+ t/s",
        full_lines=PERIODIC_LINES,
    ),
    FigureKind(
        b" \xc2\xb1 ",
        re.compile(
            rb"\|\s*(?P<label>(?:pp|tg)\d+(?:\+tg\d+)?(?: @ d\d+)?)\s*\|\s*"
            + _NUMBER
            + rb" \xc2\xb1 [0-9.]+\s*\|"
        ),
        ("llama.cpp",),
        "| llama 1B F16                   |   2.30 GiB |     1.24 B | QNN        |  99 |         "
        "pp512 |         18.46 \u00b1 1.73 |",
        "llama-bench's markdown table; observed in corpus case 556",
        unit=b"t/s",
    ),
    FigureKind(
        b"eval rate:",
        re.compile(rb"(?P<label>(?:prompt )?eval rate):\s+" + _NUMBER + rb" (?P<unit>tokens/s)"),
        ("ollama",),
        "prompt eval rate:     53.77 tokens/s",
        "`ollama run --verbose`'s timings; observed in corpus case 555",
    ),
    FigureKind(
        b"Avg bus bandwidth",
        re.compile(rb"(?P<label>Avg bus bandwidth)\s*:\s*" + _NUMBER),
        ("nccl-tests",),
        "# Avg bus bandwidth    : 95.3009",
        "nccl-tests' summary (src/common.cu); observed in corpus case 506",
        unit=b"GB/s",
    ),
    FigureKind(
        b"(TFLOP/s/GPU):",
        re.compile(rb"(?P<label>throughput per GPU) \((?P<unit>TFLOP/s/GPU)\): " + _NUMBER),
        ("megatron",),
        " [2024-04-06 02:59:36] iteration       43/     100 | consumed samples:         5504 | "
        "elapsed time per iteration (ms): 5444.9 | throughput per GPU (TFLOP/s/GPU): 239.8 | "
        "learning rate: 8.600000E-06 | global batch size:   128 | lm loss: 1.825991E+00 | "
        "load_balancing_loss: 1.019746E+00 | loss scale: 1.0 | grad norm: 1.426 | num zeros: 0.0 "
        "| number of skipped iterations:   0 | number of nan iterations:   0 |",
        "Megatron-LM's training log, a line an iteration (megatron/training/training.py); "
        "observed in corpus case 516",
        full_lines=PERIODIC_LINES,
    ),
    # Plain figures: "82 tok/s" after a label or alone
    FigureKind(
        b"tok/s",
        re.compile(
            rb"(?:(?P<label>[A-Za-z][\w /-]{0,40}?)\s*[:=]\s*)?"
            + _NUMBER
            + rb" ?(?P<unit>tok/s)\b(?!\))"
        ),
        ("mlc-llm", "scripts"),
        "prefill: 126.5 tok/s, decode: 32.3 tok/s",
        "MLC LLM's chat statistics (its /stats command), and the one-line summaries of "
        "engineers' own benchmark scripts ('benchmark done: 92.6 tok/s over 3 runs')",
        # A digit before it: "tok/s" alone is too close to sglang's dense "token/s".
        anchor=rb"[0-9] ?tok/s",
        defers=True,
    ),
)
