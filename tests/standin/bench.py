"""A stand-in for `python -m sglang.bench_serving` and `vllm bench serve`: sends requests to
--port and prints bench_serving's result block, figures measured from the requests it made;
writes sglang's `--output-file` JSONL line and vLLM's `--save-result` JSON as they do."""

import argparse
import json
import os
import random
import statistics
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--num-prompts", type=int, default=8)
    parser.add_argument("--output-file", default="")
    parser.add_argument("--save-result", action="store_true")
    parser.add_argument("--append-result", action="store_true")
    parser.add_argument("--result-dir", default=None)
    parser.add_argument("--result-filename", default=None)
    parser.add_argument("--backend", default="vllm")
    parser.add_argument("--model", default="models/standin-8b")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between requests")
    parser.add_argument(
        "--printed-scale", type=float, default=1.0,
        help="the printed block's throughputs times this: a test can tell which it read",
    )  # fmt: skip
    parser.add_argument(
        "--no-result-file", action="store_true", help="print the block, write no file"
    )
    parser.add_argument(
        "--fixed-mean", type=float, default=0.0,
        help="output tok/s drawn around this mean instead of measured: a benchmark of known "
        "noise (--noise-pct), the same draws in the same order each time (--draws)",
    )  # fmt: skip
    parser.add_argument("--noise-pct", type=float, default=0.0)
    parser.add_argument("--draws", default="", help="a file counting the draws made so far")
    args = parser.parse_args()
    url = f"http://{args.host}:{args.port}/generate"
    ttfts, done, failed, tokens = [], 0, 0, 0
    began = time.perf_counter()
    for _ in range(args.num_prompts):
        time.sleep(args.pause)
        start = time.perf_counter()
        try:
            request = urllib.request.Request(url, data=b"{}", method="POST")
            with urllib.request.urlopen(request, timeout=10) as reply:
                body = json.loads(reply.read())
            tokens += int(body["usage"]["completion_tokens"])
            ttfts.append((time.perf_counter() - start) * 1000)
            done += 1
        except (OSError, ValueError, KeyError):
            failed += 1
    duration = max(time.perf_counter() - began, 1e-6)
    if done == 0:
        sys.stdout.write(
            "Traceback (most recent call last):\n"
            "ConnectionRefusedError: [Errno 111] Connection refused\n"
        )
        sys.exit(1)
    mean_ttft = statistics.fmean(ttfts)
    shown = args.printed_scale
    if args.fixed_mean:
        shown = fixed_draw(args) * duration / tokens
    lines = [
        "============ Serving Benchmark Result ============",
        f"{'Backend:':<40} sglang",
        f"{'Successful requests:':<40} {done}",
        f"{'Failed requests:':<40} {failed}",
        f"{'Benchmark duration (s):':<40} {duration:.2f}",
        f"{'Total generated tokens:':<40} {tokens}",
        f"{'Request throughput (req/s):':<40} {shown * done / duration:.2f}",
        f"{'Output token throughput (tok/s):':<40} {shown * tokens / duration:.2f}",
        f"{'Total token throughput (tok/s):':<40} {shown * 2 * tokens / duration:.2f}",
        "---------------Time to First Token----------------",
        f"{'Mean TTFT (ms):':<40} {mean_ttft:.2f}",
        f"{'Median TTFT (ms):':<40} {statistics.median(ttfts):.2f}",
        f"{'P99 TTFT (ms):':<40} {max(ttfts):.2f}",
        "---------------Inter-Token Latency----------------",
        f"{'Mean ITL (ms):':<40} {mean_ttft / 8:.2f}",
        f"{'Median ITL (ms):':<40} {mean_ttft / 8:.2f}",
        f"{'P99 ITL (ms):':<40} {mean_ttft / 4:.2f}",
        "==================================================",
    ]
    print("\n".join(lines))
    record = {
        "backend": args.backend,
        "completed": done,
        "failed": failed,
        "duration": duration,
        "total_output_tokens": tokens,
        "request_throughput": done / duration,
        "output_throughput": tokens / duration,
        "total_token_throughput": 2 * tokens / duration,
        "mean_ttft_ms": mean_ttft,
        "median_ttft_ms": statistics.median(ttfts),
        "p99_ttft_ms": max(ttfts),
        "mean_itl_ms": mean_ttft / 8,
    }
    if args.no_result_file:
        return
    if args.output_file:  # sglang: one line appended per run
        with open(args.output_file, "a") as f:
            f.write(json.dumps(record) + "\n")
    if args.save_result or args.append_result:
        write_vllm_result(args, record)


def fixed_draw(args: argparse.Namespace) -> float:
    """The next of a seeded sequence of normal draws: run N of a test always gets draw N."""
    count = 0
    if os.path.exists(args.draws):
        with open(args.draws) as f:
            count = int(f.read() or 0)
    with open(args.draws, "w") as f:
        f.write(str(count + 1))
    return random.Random(count).gauss(args.fixed_mean, args.fixed_mean * args.noise_pct / 100)


def write_vllm_result(args: argparse.Namespace, record: dict) -> None:
    """Where and how `vllm bench serve` saves it: {label}-{rate}qps-{model}-{date}.json in
    --result-dir (else the working directory) unless --result-filename names it; one object,
    or with --append-result one more after a newline."""
    now = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = args.result_filename or f"{args.backend}-infqps-{args.model.split('/')[-1]}-{now}.json"
    if args.result_dir:
        os.makedirs(args.result_dir, exist_ok=True)
        name = os.path.join(args.result_dir, name)
    with open(name, "a+" if args.append_result else "w") as f:
        if args.append_result and f.tell() != 0:
            f.write("\n")
        json.dump({"date": now, **record}, f)


if __name__ == "__main__":
    main()
