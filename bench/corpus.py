"""Time the engine reading every log of the corpus once, with the prefilter's stand-ins for
characters outside ASCII and, side by side in the same run, without them (every pattern tried
on such a line, as before they were written).

    python bench/corpus.py [--runs 1]

Each reading runs in its own process (so neither inherits the other's remembered searches),
one after the other; prints the CPU seconds of each, the ratio, and how many answers differ
(none may: the stand-ins only narrow which patterns `re` tries).
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

READ = """
import json, sys, time
sys.path[:0] = [{root!r}]
from app.diagnosis import diagnose_bytes, rules
from tests.helpers import corpus_case_ids, corpus_log
if {plain!r}:  # as before the stand-ins: a line outside ASCII is tried on every pattern
    rules._StandIns.line = lambda self, text: text if text.isascii() else None
answers, started = [], time.process_time()
for case_id in corpus_case_ids():
    found = diagnose_bytes(corpus_log(case_id))
    answers.append([case_id, found.root_cause, found.error_class, found.crashed, found.ready])
print(json.dumps({{"seconds": time.process_time() - started, "answers": answers}}))
"""


def read_corpus(plain: bool) -> dict:
    code = READ.format(root=str(ROOT), plain=plain)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for run in range(1, args.runs + 1):
        stood_in, every_pattern = read_corpus(plain=False), read_corpus(plain=True)
        differ = sum(
            a != b for a, b in zip(stood_in["answers"], every_pattern["answers"], strict=True)
        )
        print(
            f"run {run}: {len(stood_in['answers'])} logs, with stand-ins "
            f"{stood_in['seconds']:.1f} s CPU, every pattern on non-ASCII lines "
            f"{every_pattern['seconds']:.1f} s CPU "
            f"({stood_in['seconds'] / every_pattern['seconds']:.2f}x), answers differing: {differ}"
        )


if __name__ == "__main__":
    main()
