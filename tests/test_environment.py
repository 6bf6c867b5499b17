"""What ran underneath, read from real start-up lines (tests/corpus/environment: sglang's
check_env, vLLM's and PyTorch's collect_env, vLLM's and TensorRT-LLM's start-up lines, TGI's
launcher, nvidia-smi tables, NCCL's own lines, each from a public thread), fed as the ingest
feeds it; and the diff of two environments."""

import json
import threading
from pathlib import Path

import pytest

from app import environment as env
from app.environment import FIELDS, EnvironmentReader, diff, from_probe, merged, read_environment

CORPUS = Path(__file__).parent / "corpus" / "environment"
LABELS = json.loads((CORPUS / "labels.json").read_text())
# The libraries a campaign's diff names: each labelled one must be read.
LIBS = ("flashinfer", "triton", "nccl", "sgl-kernel", "transformers")


def misses(label: dict, found: dict) -> list[str]:
    expected = label["expected"]
    wrong = [
        f"{name}: {expected.get(name)!r} read as {found.get(name)!r}"
        for name in FIELDS
        if str(expected.get(name)) != str(found.get(name))
    ]
    for name, version in (expected.get("libs") or {}).items():
        if name in LIBS and found["libs"].get(name) != version:
            wrong.append(f"{name}: {version!r} read as {found['libs'].get(name)!r}")
    return wrong


def test_every_engines_real_start_up_lines_are_read() -> None:
    """Every labelled field of 42 real excerpts, bar the few an expert reads from what is
    no line of a log (a thread's prose, the /info JSON), each one listed."""
    assert {label["engine_family"] for label in LABELS} == {"sglang", "vllm", "tensorrt_llm",
                                                           "tgi"}  # fmt: skip
    wrong = {}
    fields = 0
    for label in LABELS:
        found = read_environment((CORPUS / label["case"]).read_text())
        assert found is not None, label["case"]
        fields += len(FIELDS) + len(label["expected"].get("libs") or {})
        if found_wrong := misses(label, found):
            wrong[label["case"]] = found_wrong
    assert wrong == {
        "env-040.log": ["engine_version: '1.3.4' read as None"],  # TGI's /info JSON, not a log line
    }, wrong
    assert fields > 400


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_fed_in_chunks_of_any_size_it_reads_what_it_reads_at_once(size: int) -> None:
    for label in LABELS[::5]:
        data = (CORPUS / label["case"]).read_bytes()
        reader = EnvironmentReader()
        for start in range(0, len(data), size):
            reader.feed(data[start : start + size])
        reader.feed(b"\n")
        assert reader.environment.as_json() == read_environment(data.decode()), label["case"]


def test_only_the_logs_first_bytes_are_read_and_nothing_unreadable_breaks_it() -> None:
    reader = EnvironmentReader()
    reader.feed(b"\xff\xfe\x00 NCCL INFO NCCL version \x1b[31m2.21.5\n" + b"x" * (9 << 20))
    reader.feed(b"\nINFO 05-12 10:00:02 [api_server.py:1043] vLLM API server version 0.8.5\n")
    assert reader.environment.as_json() is None  # past READ_FIRST: not looked at
    assert read_environment("x" * 100_000 + "\n" + "NCCL INFO NCCL version " * 5000) is None


def test_the_diff_names_what_changed_underneath_as_the_seeds_pivot_did() -> None:
    before = read_environment((CORPUS / "env-001.log").read_text())  # sglang on CUDA 12.6
    assert before is not None
    after = {**before, "cuda": "13.0", "torch": "2.9.1",
             "libs": {**before["libs"], "flashinfer": "0.6.4"}}  # fmt: skip
    found = diff(before, after)
    assert found["changed"]["cuda"] == {"baseline": before["cuda"], "attempt": "13.0"}
    assert f"CUDA {before['cuda']} → 13.0" in found["summary"]
    assert "flashinfer" in found["summary"]
    # A field one of them does not know is no change.
    assert diff(before, {**after, "driver": None})["changed"].get("driver") is None
    same = diff(before, before)
    assert same["changed"] == same["added"] == same["removed"] == {}


def test_what_the_log_says_wins_over_what_the_host_said_before_the_launch() -> None:
    probed = from_probe(
        {"gpus": ["NVIDIA H200"] * 8, "driver": "580.95.05", "python": "3.12.3",
         "packages": {"torch": "2.9.1+cu130", "sglang": "0.5.9", "vllm": "0.11.0"}},
        "sglang",
    )  # fmt: skip
    assert probed is not None
    assert (probed["engine"], probed["engine_version"], probed["cuda"]) == (
        "sglang",
        "0.5.9",
        "13.0",
    )
    logged = read_environment(
        "INFO 05-12 10:00:02 [api_server.py:1043] vLLM API server version 0.8.5"
    )
    both = merged(logged, probed)
    assert both is not None
    assert (both["engine"], both["engine_version"], both["gpu_count"]) == ("vllm", "0.8.5", 8)


def test_ingests_on_many_threads_read_environments_at_once() -> None:
    """Each tail's ingest runs on a thread of its own: a Hyperscan database's scratch space
    serves one scan at a time (`ScratchInUseError` when two logs arrive together)."""
    block = b"".join(
        f"[2026-02-27 13:00:{i % 60:02d}] torch 2.9.1+cu130, CUDA 13.0, NCCL 2.27.3\n".encode()
        for i in range(2000)
    )
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        try:
            for _ in range(40):
                assert env._worth_reading(block)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_page_lists_what_is_known_with_no_separator_before_the_first() -> None:
    from app.schemas import EnvironmentOut

    assert EnvironmentOut(python="3.11.7").facts() == ["Python 3.11.7"]
    known = {"gpu": "NVIDIA H200", "gpu_count": 8, "cuda": "12.8", "engine": "sglang",
             "engine_version": "0.5.3", "libs": {"flashinfer": "0.4.1"}}  # fmt: skip
    listed = EnvironmentOut(**known).facts()
    assert listed == ["8 \u00d7 NVIDIA H200", "CUDA 12.8", "sglang 0.5.3", "flashinfer 0.4.1"]
    assert EnvironmentOut(engine_version="0.5.3", gpu="H100").facts() == ["H100"]
