"""Which line explains a failure when several say something, and how the end of the log
decides `crashed` (and its reason): general behaviour, each shown on a small log of its kind."""

import pytest

from app.diagnosis import diagnose_bytes


def diagnose(text: str) -> dict:
    return diagnose_bytes(text.encode()).to_dict()


@pytest.mark.parametrize(
    "log,root_cause,error_class",
    [
        # An array library's status code, the way XLA, TensorFlow and Triton print it.
        (
            "I0101 00:00:00.000000 1 server.cc:633] model status\n"
            "UNAVAILABLE: Internal: unable to create stream: the provided PTX was compiled with an "
            "unsupported toolchain.\n",
            "UNAVAILABLE: Internal: unable to create stream: the provided PTX was compiled with an "
            "unsupported toolchain.",
            "import_or_version",
        ),
        # C-style "function: what is wrong" before the generic wrappers that follow it.
        (
            "main: seed  = 1698855645\n"
            "gguf_init_from_file: invalid magic number 4f44213c\n"
            "error loading model: llama_model_loader: failed to load model from /m/x.gguf\n"
            "llama_load_model_from_file: failed to load model\n"
            "main: error: unable to load model\n",
            "gguf_init_from_file: invalid magic number 4f44213c",
            "model_loading",
        ),
        # A native library's status code with no exception type at all.
        (
            "!!!! kernel execution error. (m: 768, n: 4608, k: 3072, error: 13)\n"
            "!!!! kernel execution error. (m: 2304, n: 4608, k: 768, error: 13)\n"
            "Traceback (most recent call last):\n",
            "!!!! kernel execution error. (m: 768, n: 4608, k: 3072, error: 13)",
            "cuda_runtime",
        ),
        # The driver on a GPU it lost.
        (
            "NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "NVRM: fallen off the bus and is not responding to commands.\n"
            "NVRM: The NVIDIA probe routine failed for 1 device(s).\n",
            "NVRM: fallen off the bus and is not responding to commands.",
            "other",
        ),
        # pytest's "E   " failure lines.
        (
            "E       RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph "
            "capture. If you need this call to be captured, please file an issue.\n"
            "flash_attn/flash_attn_interface.py:285: in forward\n",
            "E       RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph "
            "capture. If you need this call to be captured, please file an issue.",
            "cuda_graph",
        ),
        # Colour codes pasted as text around a logger's severity.
        (
            "2024-05-08 16:16:10,360 - lmdeploy - ^[[31mERROR^[[0m - Engine loop failed with "
            "error: CUDA out of memory. Tried to allocate 488.00 MiB.\n"
            "Traceback (most recent call last):\n",
            # (reported as a terminal shows it)
            "2024-05-08 16:16:10,360 - lmdeploy - ERROR - Engine loop failed with "
            "error: CUDA out of memory. Tried to allocate 488.00 MiB.",
            "oom_gpu",
        ),
        # A shell's job line: the command it names is not the fault.
        (
            "ci.sh: line 4:  2369 Segmentation fault      (core dumped) python generate.py "
            "--checkpoint-path /models/x\n",
            "ci.sh: line 4:  2369 Segmentation fault      (core dumped) python generate.py "
            "--checkpoint-path /models/x",
            "other",
        ),
        # LLVM's fatal error glued to the line before it, then the abort.
        (
            "error: LLVM Translation failed for operation: builtin.unrealized_conversion_cast\n"
            "Failed to emit LLVM IR\n"
            "Translate to LLVM IR failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.\n"
            "*** SIGABRT received at time=1712361058 on cpu 4 ***\n",
            "Translate to LLVM IR failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
            "unsupported_arch",
        ),
        # C++'s abort without an exception, before the launcher's exit code.
        (
            "validation loss at iteration 150\n"
            "pure virtual method called\n"
            "terminate called without an active exception\n"
            "E1019 08:21:39.599000 3036 api.py:874] failed (exitcode: -6) local_rank: 0\n",
            "pure virtual method called",
            "other",
        ),
    ],
)
def test_the_specific_line_explains_in_logs_without_a_traceback(
    log: str, root_cause: str, error_class: str
) -> None:
    result = diagnose(log)
    assert result["root_cause"] == root_cause
    assert result["error_class"] == error_class
    assert result["crashed"] is True


def test_nccl_s_last_error_beats_the_exception_summarising_it_when_it_names_a_value() -> None:
    summary = (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1287, "
        "invalid usage, NCCL version 2.17.1\n"
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "Last error:\n"
    )
    specific = diagnose(summary + "Duplicate GPU detected : rank 3 and rank 2 both on device e2\n")
    assert specific["root_cause"] == "Duplicate GPU detected : rank 3 and rank 2 both on device e2"
    assert specific["error_class"] == "config_or_args"
    # A last error that says nothing more keeps the summary.
    vague = diagnose(summary + "Cuda failure 'initialization error'\n")
    assert vague["root_cause"].startswith("torch.distributed.DistBackendError")


def test_connection_closed_by_peer_is_blamed_on_the_peer_that_failed_first() -> None:
    result = diagnose(
        "host-1:100:200 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
        "remote peer host-2<51159>\n"
        "host-1:100:200 [0] NCCL INFO transport/p2p.cc:438 -> 3\n"
        "host-1:103:300 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
        "host-1:103:300 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes\n"
        "host-1:103:300 [3] NCCL INFO init.cc:1358 -> 1\n"
    )
    assert result["root_cause"].endswith("NCCL WARN Cuda failure 'out of memory'")
    assert result["error_class"] == "oom_gpu"
    assert result["crashed"] is True
    # Where every process only saw its peer go, the first of them stays.
    alone = diagnose(
        "host-1:15:91 [3] include/socket.h 398 NCCL WARN Call to write failed : Connection "
        "reset by peer.\n"
        "host-2:15:91 [3] include/socket.h 398 NCCL WARN Call to recv failed : Connection "
        "reset by peer.\n"
    )
    assert "host-1:15:91" in alone["root_cause"]


def test_an_nccl_warning_whose_error_code_is_passed_up_to_the_caller_is_a_crash() -> None:
    result = diagnose(
        "host-1:29880:30398 [0] transport/shm.cc:114 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-8kqTsw to 9637892 bytes\n"
        "host-1:29880:30398 [0] NCCL INFO transport/shm.cc:121 -> 2\n"
        "host-1:29880:30398 [0] NCCL INFO init.cc:916 -> 2\n"
    )
    assert result["error_class"] == "nccl_comm"
    assert result["crashed"] is True and "passes its error code up" in result["crashed_reason"]


def test_two_ranks_on_one_gpu_is_fatal_to_nccl_whatever_its_severity() -> None:
    for log in (
        "host-1:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 "
        "both on CUDA device 1000\n",
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n",
    ):
        result = diagnose(log)
        assert result["error_class"] == "config_or_args"
        assert result["crashed"] is True and result["root_cause"] == log.strip()


def test_an_error_that_stays_in_nccl_s_proxy_thread_leaves_a_hang() -> None:
    result = diagnose(
        "host-1:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.1<41468> "
        "failed : Connection timed out\n"
        "host-1:83:2526 [0] NCCL INFO misc/socket.cc:520 -> 2\n"
        "host-1:83:2520 [0] NCCL INFO proxy.cc:614 -> 2 [Proxy Thread]\n"
    )
    assert result["crashed"] is False and "a hang" in result["crashed_reason"]


def test_an_error_the_program_says_it_lived_through_is_not_the_failure() -> None:
    result = diagnose(
        "[05/25/2023-20:44:13] [E] Error[1]: Cuda Runtime (operation not permitted when stream "
        "is capturing)\n"
        "[05/25/2023-20:44:13] [W] The CUDA graph capture on the stream has failed.\n"
        "[05/25/2023-20:44:13] [W] The specified --useCudaGraph flag has been ignored.\n"
    )
    assert result["root_cause"] is None and result["crashed"] is False
    retried = diagnose(
        "[E1201 11:32:30.0 socket.cpp:1028] [c10d] The client socket has timed out after 20000ms\n"
        "[W1201 11:32:30.1 socket.cpp:1028] [c10d] TCP client failed - retrying (try=0)\n"
        "[E1201 11:32:59.6 socket.cpp:1028] [c10d] The client socket has timed out after 20000ms\n"
        "Traceback (most recent call last):\n"
        '  File "/x/train.py", line 3, in <module>\n'
        "torch.distributed.DistNetworkError: The client socket has timed out after 20000ms\n"
    )
    assert retried["root_cause"] == (
        "torch.distributed.DistNetworkError: The client socket has timed out after 20000ms"
    )


def test_an_error_line_then_teardown_is_a_crash_then_more_records_is_unknown() -> None:
    error = "ERROR 01-31 02:38:15 [worker.py:597] could not reach the metrics endpoint\n"
    stopped = diagnose(
        error + "INFO 01-31 02:38:16 [engine.py:88] Shutting down\n"
        "INFO 01-31 02:38:16 [engine.py:90] Exiting\n"
    )
    assert stopped["crashed"] is True and "nothing but teardown" in stopped["crashed_reason"]
    went_on = diagnose(
        error
        + "".join(f"INFO 01-31 02:38:{16 + n} [engine.py:88] step {n} done\n" for n in range(6))
    )
    assert went_on["crashed"] is None and "does not tell" in went_on["crashed_reason"]
    # The unprefixed lines after a logger's record are the rest of its message, not more work.
    continued = diagnose(
        "E0720 03:42:54.944486 1 model_repository_manager.cc:810] failed to load 'm' version 1: "
        "Internal: load failed for libtorch model -> 'm'\n"
        + "".join(f"  field_{n} : __torch__.Module\n" for n in range(8))
    )
    assert continued["crashed"] is True


def test_a_paste_that_lost_its_newlines_is_split_where_the_terminal_padded_it() -> None:
    oom = (
        "HIP out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 15.98 GiB "
        "of which 22.00 MiB is free. Of the allocated memory 15.69 GiB is allocated by PyTorch."
    )
    result = diagnose(
        oom
        + " " * 30
        + "ERROR 07-04 14:53:23 [engine.py:458] Traceback (most recent call last):"
        + " " * 20
        + 'ERROR 07-04 14:53:23 [engine.py:458]   File "/x/engine.py", line 446, in run\n'
    )
    assert result["root_cause"] == oom
    assert result["error_class"] == "oom_gpu" and result["crashed"] is True


def test_a_supervisor_s_restart_starts_a_new_story() -> None:
    result = diagnose(
        "Nov 15 21:48:30 host-1 systemd[1]: Started Ollama Service.\n"
        "Nov 15 21:48:40 host-1 systemd[1]: ollama.service: Failed with result 'exit-code'.\n"
        "Nov 15 21:48:43 host-1 systemd[1]: Started Ollama Service.\n"
        "Nov 15 21:48:50 host-1 systemd[1]: ollama.service: Main process exited, code=dumped, "
        "status=11/SEGV\n"
    )
    assert result["root_cause"].endswith("Main process exited, code=dumped, status=11/SEGV")
