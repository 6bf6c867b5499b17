"""A stand-in for `python -m sglang.bench_serving`: sends requests to --port and prints
bench_serving's result block, figures measured from the requests it made."""

import argparse
import json
import statistics
import sys
import time
import urllib.error
import urllib.request


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--num-prompts", type=int, default=8)
    parser.add_argument("--output-file", default="")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between requests")
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
    lines = [
        "============ Serving Benchmark Result ============",
        f"{'Backend:':<40} sglang",
        f"{'Successful requests:':<40} {done}",
        f"{'Failed requests:':<40} {failed}",
        f"{'Benchmark duration (s):':<40} {duration:.2f}",
        f"{'Total generated tokens:':<40} {tokens}",
        f"{'Request throughput (req/s):':<40} {done / duration:.2f}",
        f"{'Output token throughput (tok/s):':<40} {tokens / duration:.2f}",
        f"{'Total token throughput (tok/s):':<40} {2 * tokens / duration:.2f}",
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
    if args.output_file:
        with open(args.output_file, "a") as f:
            f.write(json.dumps({"completed": done, "output_throughput": tokens / duration}) + "\n")


if __name__ == "__main__":
    main()
