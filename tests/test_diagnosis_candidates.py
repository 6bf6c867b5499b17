"""The runners-up (`candidates`) and the frame to patch (`frame`) of a diagnosis."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.diagnosis import Candidate, Diagnoser, Frame, diagnose_bytes

SEED = (Path(__file__).parent / "data" / "seed_torch_symm_mem.log").read_bytes()
SYMM_MEM = "/root/sglang/python/sglang/srt/distributed/device_communicators/torch_symm_mem.py"


def diagnose(text: str) -> dict:
    return diagnose_bytes(text.encode()).to_dict()


def test_the_seed_names_the_symm_mem_table_as_the_frame_to_patch() -> None:
    result = diagnose_bytes(SEED)
    assert result.frame == Frame(SYMM_MEM, 56, "__init__")
    assert result.candidates[0] == Candidate("KeyError: 12", 59, SEED.index(b"KeyError: 12\n"))
    assert result.to_dict()["frame"] == {"file": SYMM_MEM, "line": 56, "function": "__init__"}


def test_candidates_are_ranked_lines_best_first_with_their_numbers() -> None:
    log = (
        "[2026-03-01 10:00:00] Loading weights\n"
        "[2026-03-01 10:00:01 TP0] NCCL WARN Cuda failure 'out of memory'\n"
        "[2026-03-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/srt/distributed/parallel_state.py", line 88, in all_reduce\n'
        "    torch.distributed.all_reduce(tensor)\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, "
        "unhandled cuda error, NCCL version 2.27.3\n"
        "[2026-03-01 10:00:02] Received sigquit from a child process. It usually means the "
        "child failed.\n"
        "Killed\n"
    )
    body = diagnose(log)
    lines = log.splitlines()
    assert 1 <= len(body["candidates"]) <= 3
    assert body["candidates"][0] == {
        "line": body["root_cause"],
        "line_no": body["root_cause_at"]["line"],
        "offset": body["root_cause_at"]["offset"],
    }
    for candidate in body["candidates"]:
        assert lines[candidate["line_no"] - 1] == candidate["line"]
        assert log.encode()[candidate["offset"] :].startswith(candidate["line"].encode())
    shown = [c["line"] for c in body["candidates"]]
    # The NCCL line and the exception that summarises it are both there, one glance apart;
    # the wrapper that points elsewhere and the traceback header are not.
    assert any("NCCL WARN Cuda failure" in line for line in shown)
    assert any("DistBackendError" in line for line in shown)
    assert not any("sigquit" in line or "Traceback" in line for line in shown)
    assert len(set(shown)) == len(shown)


def test_a_line_every_rank_repeats_is_one_candidate() -> None:
    log = "".join(
        f"[2026-03-01 10:00:0{rank} TP{rank}] RuntimeError: CUDA error: an illegal memory "
        f"access was encountered (rank {rank})\n"
        for rank in range(8)
    )
    body = diagnose(log)
    assert len(body["candidates"]) == 1
    assert body["candidates"][0]["line_no"] == 1


def test_no_failure_no_candidates_and_no_frame() -> None:
    body = diagnose("[2026-03-01 10:00:00] The server is fired up and ready to roll!\n")
    assert body["candidates"] == [] and body["frame"] is None


def test_the_frame_skips_the_standard_library_but_not_site_packages() -> None:
    body = diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/main.py", line 10, in <module>\n'
        "    run()\n"
        '  File "/opt/conda/lib/python3.11/site-packages/vllm/engine.py", line 321, in step\n'
        "    self.queue.get(timeout=5)\n"
        '  File "/opt/conda/lib/python3.11/multiprocessing/queues.py", line 114, in get\n'
        "    raise Empty\n"
        '  File "/usr/lib/python3.12/queue.py", line 179, in get\n'
        "    raise Empty\n"
        "_queue.Empty\n"
    )
    assert body["frame"] == {
        "file": "/opt/conda/lib/python3.11/site-packages/vllm/engine.py",
        "line": 321,
        "function": "step",
    }


def test_a_traceback_entirely_in_the_standard_library_has_no_frame() -> None:
    body = diagnose(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/json/decoder.py", line 355, in raw_decode\n'
        "    raise JSONDecodeError('Expecting value', s, err.value) from None\n"
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    )
    assert body["crashed"] is True and body["frame"] is None


def test_a_fragment_without_its_header_and_python_311_carets_still_give_the_frame() -> None:
    body = diagnose(
        '  File "/workspace/vllm/model_executor/layers/quantization/fp8.py", line 412, in apply\n'
        "    return deep_gemm.fp8_gemm_nt(x, w)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/usr/local/lib/python3.12/dist-packages/deep_gemm/__init__.py", line 77, '
        "in fp8_gemm_nt\n"
        "    _C.fp8_gemm_nt(a, b)\n"
        "RuntimeError: Assertion error (csrc/layout.hpp:76): Unknown recipe\n"
    )
    assert body["frame"] == {
        "file": "/usr/local/lib/python3.12/dist-packages/deep_gemm/__init__.py",
        "line": 77,
        "function": "fp8_gemm_nt",
    }


def test_an_error_logged_before_its_traceback_takes_the_frames_that_follow() -> None:
    """vLLM logs the exception's repr, then the traceback."""
    body = diagnose(
        "ERROR 10-11 12:27:29 engine.py:157] OutOfMemoryError('CUDA out of memory. Tried to "
        "allocate 138.00 MiB')\n"
        "ERROR 10-11 12:27:29 engine.py:157] Traceback (most recent call last):\n"
        'ERROR 10-11 12:27:29 engine.py:157]   File "/vllm/engine/multiprocessing/engine.py", '
        "line 218, in run_engine_loop\n"
        "ERROR 10-11 12:27:29 engine.py:157]     request_outputs = self.engine_step()\n"
    )
    assert body["error_class"] == "oom_gpu"
    assert body["frame"] == {
        "file": "/vllm/engine/multiprocessing/engine.py",
        "line": 218,
        "function": "run_engine_loop",
    }


def test_the_frames_of_a_logging_error_block_are_not_the_failure() -> None:
    """The seed: logging's own traceback sits above the real one; its frames are not it."""
    frame = diagnose_bytes(SEED).frame
    assert frame is not None and "logging" not in frame.file


def feed_in_pieces(log: bytes, cuts: list[int]) -> dict:
    diagnoser = Diagnoser()
    previous = 0
    for cut in sorted(set(cuts)):
        diagnoser.feed(log[previous:cut])
        previous = cut
    diagnoser.feed(log[previous:])
    return diagnoser.diagnosis().to_dict()


@settings(max_examples=150, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(SEED)), max_size=40))
def test_candidates_and_frame_do_not_depend_on_the_chunks(cuts: list[int]) -> None:
    whole = diagnose_bytes(SEED).to_dict()
    pieces = feed_in_pieces(SEED, cuts)
    assert pieces["candidates"] == whole["candidates"] and len(whole["candidates"]) >= 2
    assert pieces["frame"] == whole["frame"] is not None
