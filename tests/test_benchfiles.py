"""A benchmark's result file: where its command says it writes it, what the host program
reads back of it (only this run's part, read-only, size-capped) on a real file system, and
which figures a run then records (file over printed block, the campaign's pattern)."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.benchparse import BenchResult, ParseFailure
from app.runner import host_proc, host_results
from app.runner.benchfiles import ResultFile, result_file, run_figures

BLOCK = """============ Serving Benchmark Result ============
Successful requests:                     8
Failed requests:                         0
Output token throughput (tok/s):         100.00
Total token throughput (tok/s):          200.00
Mean TTFT (ms):                          5.00
==================================================
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m sglang.bench_serving --backend sglang --output-file r.jsonl",
         ResultFile("--output-file", path="r.jsonl", append=True)),
        ("cd /work/sglang && python3 -m sglang.bench_serving --output_file=out/r.jsonl",
         ResultFile("--output-file", path="/work/sglang/out/r.jsonl", append=True)),
        ("cd ~/bench; cd vllm && vllm bench serve --save-result --result-dir res",
         ResultFile("--save-result", folder="~/bench/vllm/res")),
        ("vllm bench serve --save-result", ResultFile("--save-result", folder=".")),
        ("vllm bench serve --append-result --result-dir /r --result-filename a.json",
         ResultFile("--append-result", path="/r/a.json", append=True)),
        ("vllm bench serve --save-result --result-dir r --result-filename /abs/a.json",
         ResultFile("--save-result", path="/abs/a.json")),
        ("cd && python bench.py --output-file 'my results.jsonl' | tee log",
         ResultFile("--output-file", path="~/my results.jsonl", append=True)),
    ],
)  # fmt: skip
def test_the_result_file_is_where_the_commands_flags_put_it(
    command: str, expected: ResultFile
) -> None:
    assert result_file(command) == expected


def test_no_result_file_flag_or_one_the_shell_expands() -> None:
    assert result_file("python -m sglang.bench_serving --port 30000") is None
    assert result_file("vllm bench serve --result-dir res") is None  # no --save-result
    expanded = result_file("python b.py --output-file $HOME/r.jsonl")
    assert expanded is not None and expanded.watch() is None
    assert expanded.problem == (
        "its --output-file file is at '$HOME/r.jsonl', which the shell expands: not read"
    )


def _watch_then(tmp_path: Path, watch: dict[str, Any]) -> dict[str, Any]:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    host_proc._write_json(
        str(run_dir / "bench-1.watch.json"), host_results._watch(str(tmp_path), watch)
    )
    return {"run_dir": str(run_dir), "name": "bench-1"}


def _read(job: dict[str, Any]) -> dict[str, Any]:
    return host_results.result_file(job["run_dir"], job["name"])


def test_an_appended_file_gives_only_the_lines_this_run_added(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text('{"output_throughput": 1}\n')
    job = _watch_then(tmp_path, {"path": "r.jsonl", "append": True})
    with results.open("a") as f:
        f.write('{"output_throughput": 2}\n')
    assert _read(job) == {"path": str(results), "offset": 25, "text": '{"output_throughput": 2}\n'}


def test_a_replaced_or_truncated_appended_file_is_this_runs_whole(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text('{"output_throughput": 1}\n' * 3)
    job = _watch_then(tmp_path, {"path": "r.jsonl", "append": True})
    results.write_text('{"output_throughput": 9}\n')  # shorter: truncated, then written
    assert _read(job)["text"] == '{"output_throughput": 9}\n'
    job = _watch_then(tmp_path, {"path": "r.jsonl", "append": True})
    replacement = tmp_path / "new.jsonl"
    replacement.write_text('{"output_throughput": 7}\n' * 2)
    os.replace(replacement, results)  # another file under the name, longer
    assert _read(job)["text"] == '{"output_throughput": 7}\n' * 2


def test_a_file_the_run_did_not_write_is_said_so(tmp_path: Path) -> None:
    job = _watch_then(tmp_path, {"path": "out/r.json"})
    missing = tmp_path / "out" / "r.json"
    assert _read(job) == {"path": str(missing), "problem": f"no file at {missing}"}
    missing.parent.mkdir()
    missing.write_text("{}")
    job = _watch_then(tmp_path, {"path": "out/r.json"})
    assert _read(job)["problem"] == f"{missing} was not written by this run"


def test_vllms_own_name_is_the_newest_json_the_run_wrote_in_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "res"
    folder.mkdir()
    (folder / "vllm-infqps-m-20260101-000000.json").write_text('{"output_throughput": 1}')
    watch = {"dir": "res", "suffix": ".json", "skip_suffixes": [".pytorch.json"]}
    job = _watch_then(tmp_path, watch)
    assert _read(job)["problem"] == f"no .json file in {folder} was written by this run"
    mine = folder / "vllm-infqps-m-20260101-000100.json"
    mine.write_text('{"output_throughput": 2}')
    (folder / "vllm-infqps-m-20260101-000100.pytorch.json").write_text("[]")
    assert _read(job) == {"path": str(mine), "offset": 0, "text": '{"output_throughput": 2}'}


def test_what_is_not_a_readable_regular_file_is_not_read(tmp_path: Path) -> None:
    job = _watch_then(tmp_path, {"path": "fifo"})
    os.mkfifo(tmp_path / "fifo")  # a read would wait for a writer forever
    assert _read(job)["problem"] == f"{tmp_path / 'fifo'} is not a regular file"
    job = _watch_then(tmp_path, {"path": "big.json"})
    (tmp_path / "big.json").write_bytes(b" " * (host_results.RESULT_FILE_BYTES + 1))
    assert "more than the 16 MiB the runner reads" in _read(job)["problem"]
    if os.geteuid() != 0:  # root reads it all the same
        job = _watch_then(tmp_path, {"path": "locked.json"})
        (tmp_path / "locked.json").write_text("{}")
        (tmp_path / "locked.json").chmod(0)
        assert _read(job)["problem"].endswith("locked.json: Permission denied")


def test_the_files_figures_are_preferred_over_the_printed_block() -> None:
    spec = ResultFile("--output-file", path="r.jsonl", append=True)
    line = {"completed": 8, "output_throughput": 123.5, "mean_ttft_ms": 4.0}
    found = {"path": "/h/r.jsonl", "text": json.dumps(line) + "\n"}
    read = run_figures(BLOCK, spec, found, None)
    assert isinstance(read.result, BenchResult) and read.result.source == "jsonl"
    assert (read.metric, read.result_file, read.file_note) == (123.5, "/h/r.jsonl", None)
    assert read.result.figures["ttft_ms"] == 4.0


@pytest.mark.parametrize(
    ("found", "note"),
    [
        (None, "the host did not read back its --output-file file"),
        ({"path": "/h/r.jsonl", "problem": "no file at /h/r.jsonl"}, "no file at /h/r.jsonl"),
        ({"path": "/h/r.jsonl", "text": ""}, "/h/r.jsonl: nothing was added by this run"),
        ({"path": "/h/r.jsonl", "text": "garbage\n"}, "/h/r.jsonl holds no result JSON"),
        ({"path": "/h/r.jsonl", "text": "{not json\n"},
         "/h/r.jsonl: a line of the JSONL file is not JSON"),
    ],
)  # fmt: skip
def test_without_a_usable_file_the_printed_block_is_used_and_says_why(
    found: dict[str, Any] | None, note: str
) -> None:
    spec = ResultFile("--output-file", path="r.jsonl", append=True)
    read = run_figures(BLOCK, spec, found, None)
    assert isinstance(read.result, BenchResult) and read.result.source == "block"
    assert read.metric == 100.0 and read.result_file is None
    assert read.file_note == f"{note}: figures from the printed result"


def test_the_campaigns_pattern_gives_the_metric_and_failed_requests_still_count() -> None:
    pattern = r"Total token throughput \(tok/s\):\s+([\d.]+)"
    read = run_figures(BLOCK, None, None, pattern)
    assert isinstance(read.result, BenchResult)
    assert read.metric == 200.0 and read.result.figures["value"] == 200.0
    assert read.result.figures["output_tok_s"] == 100.0 and read.result.valid
    failing = BLOCK.replace("Failed requests:                         0", "Failed requests: 2")
    invalid = run_figures(failing, None, None, pattern).result
    assert isinstance(invalid, BenchResult) and invalid.problems == ("2 requests failed",)
    own = run_figures("my bench: 42.5 req/s\n", None, None, r"([\d.]+) req/s")
    assert isinstance(own.result, BenchResult) and own.result.source == "pattern"
    assert own.metric == 42.5
    nothing = run_figures(BLOCK, None, None, r"goodput: ([\d.]+)").result
    assert isinstance(nothing, ParseFailure)
    assert nothing.reason == "the campaign's pattern matched nothing in the output"


def test_a_file_that_counts_failed_requests_makes_the_run_invalid() -> None:
    spec = ResultFile("--save-result", folder=".")
    saved = {"completed": 6, "failed": 2, "output_throughput": 90.0}
    read = run_figures(BLOCK, spec, {"path": "/h/x.json", "text": json.dumps(saved)}, None)
    assert isinstance(read.result, BenchResult) and read.result.source == "json"
    assert read.result.problems == ("2 requests failed",) and not read.result.valid
