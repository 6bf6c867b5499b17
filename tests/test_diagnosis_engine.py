"""What the engine must understand, one behaviour at a time, on logs as servers write them."""

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.diagnosis import Diagnoser, diagnose_bytes
from app.diagnosis.entry import Entry
from app.diagnosis.scanner import MAX_LINE_BYTES, Line

DATA = Path(__file__).parent / "data"


def diagnose(text: str) -> object:
    return diagnose_bytes(text.encode())


def test_the_seed_crash_is_keyerror_12_not_server_args_nor_logging_noise() -> None:
    log = (DATA / "seed_torch_symm_mem.log").read_bytes()
    result = diagnose_bytes(log)
    assert result.crashed is True and result.ready is False
    assert result.root_cause == "KeyError: 12"
    assert result.error_class == "unsupported_arch"
    assert result.root_cause_at is not None
    # The finding points at the first rank's KeyError, by byte offset and line number.
    lines = log.split(b"\n")
    assert lines[result.root_cause_at.line - 1] == b"KeyError: 12"
    assert log[result.root_cause_at.offset :].startswith(b"KeyError: 12")
    assert result.excerpt is not None and "torch_symm_mem.py" in result.excerpt
    assert "Scheduler hit an exception" in result.excerpt.splitlines()[0]
    assert "ServerArgs(" not in result.excerpt and "Logging error" not in result.excerpt


def test_the_stored_form_holds_every_field_as_asdict_would() -> None:
    log = b"[2026-02-27 13:00:00] The server is fired up and ready to roll!\n"
    log += b"Output token throughput (tok/s):          82.31\n"
    log += (DATA / "seed_torch_symm_mem.log").read_bytes()
    result = diagnose_bytes(log)
    assert result.throughput and result.root_cause_at and result.ready_at
    assert result.to_dict() == dataclasses.asdict(result)
    assert diagnose_bytes(b"").to_dict() == dataclasses.asdict(diagnose_bytes(b""))


def test_startup_lines_that_mention_errors_are_not_errors() -> None:
    result = diagnose(
        "[2026-02-27 15:58:31] WARNING model_config.py:955: DeepGemm is enabled but the scale_fmt "
        "of checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell.\n"
        "[2026-02-27 15:58:32] server_args=ServerArgs(error_on_warnings=False, "
        "enable_torch_symm_mem=True, crash_dump_folder=None, raise_on_error=False)\n"
        "[2026-02-27 15:58:40 TP0] Load weight end. type=DeepseekV3ForCausalLM, avail mem=60 GB\n"
        "[2026-02-27 15:59:02] The server is fired up and ready to roll!\n"
    )
    assert result.crashed is False and result.root_cause is None and result.error_class is None
    assert result.ready is True


def test_chained_exceptions_blame_the_first_not_the_wrapper() -> None:
    result = diagnose(
        "Traceback (most recent call last):\n"
        '  File "/sgl/cuda_graph_runner.py", line 436, in capture\n'
        "    out = run_once()\n"
        "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/sgl/scheduler.py", line 2400, in run_scheduler_process\n'
        "    scheduler = Scheduler(...)\n"
        "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream "
        "is capturing\n"
    )
    assert result.root_cause == (
        "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    )
    assert result.error_class == "cuda_graph"


def test_direct_cause_chains_and_engine_wrappers() -> None:
    result = diagnose(
        "(EngineCore_DP0 pid=812) ERROR 03-02 10:00:01 [core.py:700] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid=812) Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=812)   File "/vllm/v1/worker/gpu_worker.py", line 210, in load_model\n'
        "(EngineCore_DP0 pid=812)     self.model_runner.load_model()\n"
        "(EngineCore_DP0 pid=812) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. GPU 0 has a total capacity of 23.5 GiB of which 1.1 GiB is free.\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/vllm/entrypoints/openai/api_server.py", line 1800, in run_server\n'
        "    async with build_async_engine_client(args) as engine_client:\n"
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
    )
    assert result.root_cause is not None
    assert result.root_cause.endswith(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 0 has a total capacity of 23.5 GiB "
        "of which 1.1 GiB is free."
    )
    assert result.error_class == "oom_gpu"
    assert result.ready is False


def test_python_311_carets_and_exception_groups_do_not_end_the_trace_early() -> None:
    result = diagnose(
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/srv/app.py", line 12, in main\n'
        "  |     async with asyncio.TaskGroup() as group:\n"
        "  |                ^^^^^^^^^^^^^^^^^^^\n"
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | Traceback (most recent call last):\n"
        '    |   File "/srv/worker.py", line 40, in start\n'
        "    |     table[capability]\n"
        "    |     ~~~~~^^^^^^^^^^^^\n"
        "    | KeyError: 12\n"
        "    +------------------------------------\n"
    )
    assert result.crashed is True
    assert result.root_cause is not None and result.root_cause.strip().endswith("KeyError: 12")


def test_interleaved_ranks_blame_the_first_failure_in_time() -> None:
    result = diagnose(
        "[rank1]: Traceback (most recent call last):\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank1]:   File "/train.py", line 80, in step\n'
        '[rank0]:   File "/train.py", line 80, in step\n'
        "[rank1]:     dist.all_reduce(t)\n"
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "remote process exited or there was a network error, NCCL version 2.21.5\n"
        "[rank0]:     dist.all_reduce(t)\n"
        "[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.\n"
        "E0301 10:00:05.000000 123 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        "(exitcode: 1) local_rank: 0 (pid: 5521) of binary: /usr/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    )
    assert result.root_cause is not None
    assert "remote process exited or there was a network error" in result.root_cause
    assert result.error_class == "nccl_comm"


def test_a_watchdog_timeout_is_blamed_not_the_abort_that_quotes_it() -> None:
    """torch >= 2.3: the watchdog's line, then C++'s terminate repeating it in what()."""
    result = diagnose(
        "[I227 13:21:27.000000000 ProcessGroupNCCL.cpp:2040] [PG ID 0 Rank 0] NCCL_DEBUG: N/A\n"
        "[rank0]:[E227 13:31:27.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
        "[rank0]:[E227 13:31:27.000000000 ProcessGroupNCCL.cpp:1785] "
        "[PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error before or "
        "timeout detected by watchdog): Watchdog caught collective operation timeout\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread "
        "terminated with exception: [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600010 milliseconds before timing out.\n"
        "Fatal Python error: Aborted\n"
    )
    assert result.root_cause is not None
    assert result.root_cause.startswith(
        "[rank0]:[E227 13:31:27.000000000 ProcessGroupNCCL.cpp:616]"
    )
    # PRODUCT.md: collectives timing out in NCCL's watchdog are nccl_comm.
    assert result.error_class == "nccl_comm" and result.crashed is True


def test_newest_first_cloud_viewer_logs_are_read_in_time_order() -> None:
    result = diagnose(
        "ERROR 2026-03-01T10:00:09.300Z Killed\n"
        "ERROR 2026-03-01T10:00:09.200Z Received sigquit from a child process. It usually means "
        "the child failed.\n"
        "ERROR 2026-03-01T10:00:09.100Z RuntimeError: CUDA error: an illegal memory access was "
        "encountered\n"
        "ERROR 2026-03-01T10:00:09.050Z torch.cuda.synchronize()\n"
        'ERROR 2026-03-01T10:00:09.040Z File "/sgl/scheduler.py", line 1308, in event_loop\n'
        "ERROR 2026-03-01T10:00:09.000Z Traceback (most recent call last):\n"
        "ERROR 2026-03-01T10:00:08.000Z Decode batch. #running-req: 3, gen throughput "
        "(token/s): 81.9\n"
    )
    assert result.root_cause == (
        "ERROR 2026-03-01T10:00:09.100Z RuntimeError: CUDA error: an illegal memory access was "
        "encountered"
    )
    assert result.error_class == "cuda_runtime"


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("Killed", "oom_host_killed"),
        (
            "[ 2448.6] Out of memory: Killed process 16014 (python3) total-vm:3069420kB",
            "oom_host_killed",
        ),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB", "oom_gpu"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_runtime"),
        (
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "unsupported_arch",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "unhandled system error",
            "nccl_comm",
        ),
        (
            "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600123 milliseconds "
            "before timing out.",
            "nccl_comm",
        ),
        ("RuntimeError: Capture cuda graph failed: CUDA graph capture failed", "cuda_graph"),
        (
            "RuntimeError: No supported CUDA architectures found for major versions [9, 10].",
            "unsupported_arch",
        ),
        ("ValueError: sm_120 is not supported by this FlashInfer build", "unsupported_arch"),
        (
            "ImportError: libcudart.so.13: cannot open shared object file: No such file",
            "import_or_version",
        ),
        ("launch_server.py: error: unrecognized arguments: --enable-torch-symm", "config_or_args"),
        ("KeyError: 'model.layers.55.mlp.gate_up_proj.input_scale'", "model_loading"),
        ("AssertionError: res=<Response [502]>, res.text=''", "other"),
        # Failures without a Python exception:
        (
            "llama_model_load: error loading model: tensor 'blk.0.attn_q.weight' is missing",
            "model_loading",
        ),
        ("sglang-server exited with code 137", "oom_host_killed"),
        # a required flag left out is a wrong flag (PRODUCT.md), not "other" as it was first read
        ("error: the following arguments are required: --model-path", "config_or_args"),
    ],
)
def test_each_failure_maps_to_its_class(line: str, error_class: str) -> None:
    result = diagnose(f"[2026-03-01 10:00:00 TP0] Init torch distributed begin.\n{line}\n")
    assert result.crashed is True
    assert result.root_cause == line
    assert result.error_class == error_class


def test_ready_then_crashed_when_the_scheduler_dies_behind_a_live_front_end() -> None:
    result = diagnose(
        "[2026-03-01 10:00:00] INFO:     Uvicorn running on http://0.0.0.0:30000\n"
        "[2026-03-01 10:00:05] The server is fired up and ready to roll!\n"
        "[2026-03-01 10:01:00 TP0] Decode batch. #running-req: 8, gen throughput (token/s): 82.4\n"
        "[2026-03-01 10:02:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/scheduler.py", line 1308, in event_loop_overlap\n'
        "    self.process_batch_result(batch, result)\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        '[2026-03-01 10:02:01] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n'
    )
    assert result.ready is True and result.crashed is True
    assert result.ready_at is not None and "fired up" in result.ready_at.text
    assert result.root_cause == (
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


def test_uvicorn_alone_is_not_readiness_for_sglang_but_is_for_others() -> None:
    sglang = diagnose(
        "[2026-03-01 10:00:00 TP0] Capture cuda graph end. Time elapsed: 2.19 s\n"
        "[2026-03-01 10:00:01] INFO:     Application startup complete.\n"
    )
    assert sglang.ready is None
    vllm = diagnose("INFO:     Application startup complete.\nINFO:     Uvicorn running on x\n")
    assert vllm.ready is True


def test_a_campaign_can_teach_its_own_readiness_line() -> None:
    log = b"llama server: model loaded, accepting connections on :8080\n"
    assert diagnose_bytes(log).ready is None
    assert diagnose_bytes(log, ready_pattern=r"accepting connections on :\d+").ready is True
    with pytest.raises(ValueError, match="readiness pattern"):
        Diagnoser(ready_pattern="(unclosed")


def test_throughput_figures_of_every_kind() -> None:
    result = diagnose(
        "[2026-03-01 10:00:00 TP0] Decode batch. #running-req: 32, #token: 9000, token usage: 0.1, "
        "gen throughput (token/s): 82.41, #queue-req: 0\n"
        "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
        "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs\n"
        "Output token throughput (tok/s):         5624.71\n"
        "Request throughput (req/s):              3.75\n"
        "benchmark done: 92.6 tok/s over 3 runs\n"
        "100%|██████████| 100/100 [00:26<00:00,  3.75it/s]\n"
    )
    got = [(t.label, t.value, t.unit) for t in result.throughput]
    assert got == [
        ("gen throughput", 82.41, "token/s"),
        ("Avg prompt throughput", 1254.4, "tokens/s"),
        ("Avg generation throughput", 29.2, "tokens/s"),
        ("Output token throughput", 5624.71, "tok/s"),
        ("Request throughput", 3.75, "req/s"),
        ("benchmark done", 92.6, "tok/s"),
    ]
    assert [t.line for t in result.throughput] == [1, 2, 2, 3, 4, 5]


def test_periodic_figures_are_summarized_not_all_kept() -> None:
    line = (
        b"[2026-03-01 10:00:00 TP0] Decode batch. #running-req: 32, gen throughput (token/s): %d.5"
    )
    line += b"\n"
    log = b"".join(line % (i % 1000) for i in range(100_000))
    result = diagnose_bytes(log)
    figures = result.throughput
    assert 100 <= len(figures) < 200
    assert figures[-1].value == 999.5 and figures[-1].line == 100_000
    assert [f.value for f in figures[:3]] == [0.5, 1.5, 2.5]


def test_hostile_bytes_are_read_not_choked_on() -> None:
    log = (
        b"\x1b[31m[2026-03-01 10:00:00 TP0] Loading\x1b[0m\r\n"
        b"Capturing batches: 10%|#   |\rCapturing batches: 50%|#####|\rCapturing batches: 90%\n"
        b"\xff\xfe broken utf-8 \x00 with NUL\n"
        b"\x1b[1;31mRuntimeError: CUDA error: an illegal memory access was encountered\x1b[0m\r\n"
    )
    result = diagnose_bytes(log)
    assert result.root_cause == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert result.root_cause_at is not None and result.root_cause_at.line == 4
    assert result.lines_read == 4


def test_a_huge_line_without_newline_keeps_a_bounded_prefix() -> None:
    diagnoser = Diagnoser()
    diagnoser.feed(b"RuntimeError: CUDA error: out of memory ")
    chunk = b"x" * (1 << 20)
    for _ in range(100):  # 100 MiB with no newline
        diagnoser.feed(chunk)
    result = diagnoser.diagnosis()
    assert result.root_cause is not None and result.root_cause.startswith("RuntimeError")
    assert len(result.root_cause) <= MAX_LINE_BYTES
    assert result.bytes_read == 40 + 100 * (1 << 20)
    diagnoser.feed(b"\nKilled\n")
    after = diagnoser.diagnosis()
    assert after.lines_read == 2 and after.root_cause is not None
    assert after.root_cause.startswith("RuntimeError: CUDA error: out of memory")


def test_fingerprints_ignore_runs_hosts_ranks_and_paths_but_not_the_failure() -> None:
    def print_of(text: str) -> str | None:
        return diagnose(text).fingerprint

    a = print_of(
        "[2026-02-27 13:21:41 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/root/sglang/srt/torch_symm_mem.py", line 56, in __init__\n'
        "    self.max_size = SIZES[self.device_capability][self.world_size]\n"
        "KeyError: 12\n"
    )
    b = print_of(
        "[2026-02-28 09:02:11 TP6] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/sglang/srt/torch_symm_mem.py", line 58, in __init__\n'
        "    self.max_size = SIZES[self.device_capability][self.world_size]\n"
        "KeyError: 12\n"
    )
    other_key = print_of(
        "Traceback (most recent call last):\n"
        '  File "/sgl/models/llama.py", line 508, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'model.layers.55.mlp.gate_up_proj.input_scale'\n"
    )
    assert a is not None and a == b
    assert other_key is not None and other_key != a
    oom_1 = print_of(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 138.00 MiB. "
        "GPU 0 has a total capacity of 79.15 GiB; process 3311 has 79.12 GiB in use\n"
    )
    oom_2 = print_of(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. "
        "GPU 5 has a total capacity of 79.15 GiB; process 98121 has 77.00 GiB in use\n"
    )
    assert oom_1 == oom_2 and oom_1 != a


@pytest.mark.parametrize(
    "log,root_cause,error_class",
    [
        (
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
            "============================================================\n"
            "train.py FAILED\n"
            "Root Cause (first observed failure):\n"
            "[0]:\n"
            "  exitcode  : -9 (pid: 1234)\n"
            "  traceback : Signal 9 (SIGKILL) received by PID 1234\n",
            "  traceback : Signal 9 (SIGKILL) received by PID 1234",
            "oom_host_killed",
        ),
        (
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your Tesla T4 GPU has compute capability 7.5.\n",
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your Tesla T4 GPU has compute capability 7.5.",
            "unsupported_arch",
        ),
        (
            "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime\n",
            "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime",
            "import_or_version",
        ),
        (
            "ERROR:    Exception in ASGI application\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/api.py", line 20, in generate\n'
            "    raise ValueError(msg)\n"
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.\n",
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
            "oom_gpu",
        ),
        (
            "OSError: meta-llama/Llama-3-8B does not appear to have a file named config.json.\n",
            "OSError: meta-llama/Llama-3-8B does not appear to have a file named config.json.",
            "model_loading",
        ),
    ],
)
def test_more_failures_as_frameworks_print_them(
    log: str, root_cause: str, error_class: str
) -> None:
    result = diagnose(log)
    assert result.root_cause == root_cause
    assert result.error_class == error_class


def test_a_log_of_wrappers_only_still_says_it_crashed() -> None:
    # A word that another process failed: its error is the cause, still to come.
    result = diagnose(
        "[2026-03-01 10:00:00] Received sigquit from a child process. It usually means the child "
        "failed.\n"
    )
    assert result.crashed is True
    assert result.root_cause is None and result.fingerprint is None
    assert result.pending == "waiting for the failing process's error"
    # A wrapper that says something of its own stands in when the log holds nothing better.
    exited = (
        "[2023-10-26 17:54:48,155] [ERROR] [launch.py:321:sigkill_handler] ['python3', '-u', "
        "'trainer.py', '--local_rank=3'] exits with return code = -9"
    )
    result = diagnose(exited + "\n")
    assert result.crashed is True and result.root_cause == exited and result.pending is None


def test_an_error_the_server_survived_long_ago_is_not_the_root_cause() -> None:
    served = (
        "[2026-03-01 10:00:00 TP0] Decode batch. #running-req: 8, gen throughput (token/s): 82\n"
    )
    log = (
        "[2026-03-01 09:00:00] ERROR: request 17 failed: ValueError: prompt is too long\n"
        + served * 5000
        + "[2026-03-01 11:00:00 TP0] Scheduler hit an exception: "
        + "Traceback (most recent call last):\n"
        + '  File "/sgl/scheduler.py", line 1308, in event_loop_overlap\n'
        + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    result = diagnose(log)
    assert result.root_cause == "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_a_failure_the_server_recovered_from_before_ready_is_no_crash() -> None:
    result = diagnose(
        "[2026-03-01 10:00:00] Connecting to the metrics exporter\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/metrics.py", line 12, in connect\n'
        "ConnectionRefusedError: [Errno 111] Connection refused\n"
        "[2026-03-01 10:00:05] retrying in 1 s\n"
        "[2026-03-01 10:00:30] The server is fired up and ready to roll!\n"
    )
    assert result.ready is True and result.crashed is False and result.root_cause is None


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("NotImplementedError: FP8 block GEMM is not supported on SM 120", "unsupported_arch"),
        # (Triton's kernel the driver cannot load is its toolchain against the driver, as the
        # corpus's four labels of the line read it; ROCm's own image error stays the arch's)
        ("RuntimeError: Triton Error [CUDA]: device kernel image is invalid", "import_or_version"),
        ("ROCm error: device kernel image is invalid", "unsupported_arch"),
        # the CUDA runtime of another toolkit version is missing: a version mismatch; the
        # driver's own library missing is the environment (a container without its GPUs)
        ("OSError: libcudart.so.13: cannot open shared object file: No such file or directory",
         "import_or_version"),
        ("OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
         "config_or_args"),
        ("ValueError: The checkpoint you are trying to load has model type `qwen3_next` but "
         "Transformers does not recognize this architecture.", "import_or_version"),
        ("OSError: You are trying to access a gated repo.", "model_loading"),
        ("OSError: Can't load tokenizer for '/models/x'.", "model_loading"),
        # one library calling another with the signature of another version
        ("TypeError: get_attn_backend() got multiple values for argument 'use_mla'",
         "import_or_version"),
        ("pydantic.errors.PydanticSchemaGenerationError: Unable to generate pydantic-core schema "
         "for <class 'torch.Tensor'>.", "import_or_version"),
        ("RuntimeError: No executable batch size found, reached zero.", "oom_gpu"),
        ("RuntimeError: Calling torch.linalg.cholesky on a CUDA tensor requires compiling "
         "PyTorch with MAGMA. Please use PyTorch built with MAGMA support.", "import_or_version"),
        # (a keyword passed twice is the caller's own bug)
        ("TypeError: <lambda>() got multiple values for keyword argument 'num_warps'", "other"),
        ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients.",
         "timeout_or_hang"),
        ("RuntimeError: NCCL communicator was aborted on rank 3.", "nccl_comm"),
        ("[TensorRT-LLM][ERROR] Assertion failed: Failed to allocate memory for KV cache "
         "(kvCacheManager.cpp:1200)", "oom_gpu"),
        ("llama_model_load: error loading model: unable to allocate CUDA0 buffer", "oom_gpu"),
        ("ValueError: Model architectures ['Qwen3NextForCausalLM'] are not supported for now.",
         "import_or_version"),
        ("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
         "address already in use", "config_or_args"),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
         "oom_gpu"),
        ("RuntimeError: NVCC compilation failed: ptxas error   : Entry function '_ZN4gemm6kernelEv'"
         " uses too much shared data (0x18004 bytes, 0xc000 max)", "unsupported_arch"),
        ("AssertionError: Ulysses Attention and Ring Attention requires xfuser package.",
         "import_or_version"),
        # (what a feature needs of the settings stays theirs)
        ("AssertionError: microbatch overlap requires even batch_size", "config_or_args"),
        ("Exception: EOF while parsing an object at line 3363 column 20", "model_loading"),
        # a compiler's error in MSVC's, clang-cl's and run-time compilers' own shapes
        ("C:\\src\\cutlass\\include\\cutlass/exmy_base.h(404): error C2039: 'is_unsigned_v': is "
         "not a member of 'cutlass::platform'", "import_or_version"),
        ("  /usr/include/c++/15.1.1/type_traits(554): error: type name is not allowed",
         "import_or_version"),
        ("B:\\src\\torch\\functorch\\csrc\\dim\\arena.h(14,21): error: functions that differ only "
         "in their return type cannot be overloaded", "import_or_version"),
        ("program_source:6450:1: error: expected expression", "import_or_version"),
        ("B:/src/torch/aten/src/ATen/native/hip/int4mm.hip:585:16: error: reference to __host__ "
         "function 'memcpy' in __device__ function", "import_or_version"),
        ("EJ0003: Failed to bind the IP port. Reason: The IP address and port have been bound "
         "already.", "config_or_args"),
        # a kernel not written for a named GPU generation or accelerator, or a device kind
        ("RuntimeError: Currently, block scaled fp8 gemm is not implemented for Blackwell",
         "unsupported_arch"),
        ("CANN error: EZ9903: [PID: 71888] 2025-12-17-18:13:01.238.630 support for Ascend910 is "
         "not implemented", "unsupported_arch"),
        ("ValueError: FlexAttention is only supported on CUDA, CPU or HPU devices. Found input "
         "tensors on npu device.", "unsupported_arch"),
        ("2024-06-24 17:01:13.933585: E external/xla/xla/stream_executor/rocm/rocm_driver.cc:1268]"
         " failed to allocate 154.06GiB (165425291480 bytes) from device: hipError_t(2)",
         "oom_gpu"),
        ("RuntimeError: Called CUDAGraph::replay without a preceding successful capture.",
         "cuda_graph"),
        ("ipykernel_launcher.py: error: ambiguous option: --f=/tmp/kernel.json could match --fp16,"
         " --fp16_opt_level", "config_or_args"),
        ("RuntimeError: FlashAttention only support fp16 and bf16 data type", "config_or_args"),
    ],
)  # fmt: skip
def test_classes_of_more_framework_messages(line: str, error_class: str) -> None:
    assert diagnose(f"{line}\n").error_class == error_class


def test_the_first_native_failure_beats_messages_that_point_back_at_it() -> None:
    built = diagnose(
        "[01/15/2026-10:00:00] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 2: "
        "Internal Error (Assertion numPackets <= 1 failed. )\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/trtllm-build", line 8, in <module>\n'
        "AssertionError: Engine building failed, please check error log.\n"
    )
    assert built.root_cause is not None and "Error Code 2: Internal Error" in built.root_cause
    loaded = diagnose(
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 45000.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "alloc_tensor_range: failed to allocate CUDA0 buffer of size 47185920000\n"
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"
        "llama_model_load_from_file_impl: failed to load model\n"
    )
    assert loaded.root_cause is not None and "cudaMalloc failed" in loaded.root_cause
    assert loaded.error_class == "oom_gpu" and loaded.crashed is True


def test_a_traceback_ends_in_its_exception_whatever_its_name() -> None:
    result = diagnose(
        "[2026-02-27 13:21:27 TP0] Capture cuda graph begin.\n"
        "Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/layers/attention/triton_ops/decode_attention.py", '
        "line 400, in _decode_grouped_att_m_fwd\n"
        "    _fwd_grouped_kernel_stage1[grid](\n"
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "232448, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n"
    )
    assert result.crashed is True
    assert result.root_cause is not None
    assert result.root_cause.startswith("triton.runtime.errors.OutOfResources: out of resource")
    # 99 KiB of shared memory: a consumer Blackwell (SM120) limit, not a bug to retry.
    assert result.error_class == "unsupported_arch"


def test_a_request_that_failed_while_the_engine_served_on_is_no_crash() -> None:
    ready = "[2026-03-01 10:00:00] The server is fired up and ready to roll!\n"
    served = "".join(
        f"[2026-03-01 10:01:{i:02d} TP0] Decode batch. #running-req: 1, "
        f"gen throughput (token/s): 80.{i}\n"
        for i in range(5)
    )
    bad_request = (
        "[2026-03-01 10:00:30] ERROR:    Exception in ASGI application\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/uvicorn/protocols/http/h11_impl.py", line 403\n'
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    )
    fatal = (
        "[2026-03-01 10:02:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/sgl/scheduler.py", line 1308, in event_loop_overlap\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    survived = diagnose(ready + bad_request + served)
    assert survived.ready is True and survived.crashed is False and survived.root_cause is None
    # A front end answering health checks is no proof that the engine lives.
    health = '[2026-03-01 10:02:01] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n'
    died = diagnose(ready + bad_request + served + fatal + health * 5)
    assert died.crashed is True
    assert died.root_cause == "RuntimeError: CUDA error: an illegal memory access was encountered"


@pytest.mark.parametrize(
    "line",
    [
        "(VllmWorker rank=0 pid=2345) ERROR 09-01 10:00:05 [multiproc_executor.py:527] ",
        "(pid=123, ip=10.0.0.2) ",
        "(raylet) ",
        "[1,0]<stderr>:",
        "[default0]:",
        "[rank0]:[E227 13:31:27.000000000 ProcessGroupNCCL.cpp:616] ",
        "Feb 27 13:21:27 gpu-box python3[4242]: ",
        # (journalctl in the host's language)
        "Mär 08 11:28:25 host-1 ollama[1288]: ",
        "déc. 05 11:28:25 host-1 ollama[1288]: ",
        "(ServeReplica:default:LLMServer:llama pid=126216) ERROR 10-15 11:58:26 [chat.py:256] ",
        "E 2026-02-27T13:21:27.123Z ",
        "ERROR 2026-02-27 13:21:27.123 UTC ",
        "2026-02-27T13:21:27.123456789Z ERROR 10-11 12:27:29 engine.py:157] ",
    ],
)
def test_launcher_and_viewer_prefixes_are_peeled(line: str) -> None:
    from app.diagnosis.lines import strip_prefixes

    assert strip_prefixes(line + "ValueError: bad value") == "ValueError: bad value"


@pytest.mark.parametrize(
    "line",
    [
        "2024-05-01T10:00:41.000000Z  INFO text_generation_router::server: "
        "router/src/server.rs:2000: Connected",
        'time=2026-01-01T10:00:00.000Z level=INFO source=routes.go:1200 msg="Listening on '
        '127.0.0.1:11434 (version 0.5.0)"',
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
        "(APIServer pid=1) INFO:     Application startup complete.",
    ],
)
def test_each_server_says_ready_its_own_way(line: str) -> None:
    result = diagnose(f"{line}\n")
    assert result.ready is True and result.ready_at is not None
    assert result.ready_at.text == line


def test_a_ready_line_source_that_logs_every_request_keeps_memory_bounded() -> None:
    from app.diagnosis.scanner import MAX_READY_LINES

    diagnoser = Diagnoser()
    router = "2024-05-01T10:00:%02d.000000Z  INFO text_generation_router::server: "
    diagnoser.feed((router % 0 + "router/src/server.rs:1800: Warming up model\n").encode())
    diagnoser.feed((router % 1 + "router/src/server.rs:2000: Connected\n").encode())
    request = router % 2 + "generate{parameters=..}: router/src/server.rs:305: Success\n"
    for _ in range(50):
        diagnoser.feed(request.encode() * 100)
    result = diagnoser.diagnosis()
    assert result.ready is True and result.ready_at is not None
    assert result.ready_at.text.endswith(": Connected")
    assert len(diagnoser._scanner.ready_lines) == MAX_READY_LINES


def test_source_lines_are_code_even_when_a_viewer_marks_every_line_error() -> None:
    """GKE and friends stamp ERROR on every stderr line, newest first in their viewers; a
    fragment may start mid-traceback."""
    lines = [
        'ERROR 2026-03-01T10:00:01.000Z   File "/sgl/nsa_indexer.py", line 88, in forward',
        "ERROR 2026-03-01T10:00:01.001Z     return self.forward_native(x)",
        'ERROR 2026-03-01T10:00:01.002Z   File "/sgl/custom_op.py", line 40, in forward_native',
        "ERROR 2026-03-01T10:00:01.003Z     raise NotImplementedError",
        "ERROR 2026-03-01T10:00:01.004Z NotImplementedError",
    ]
    for shown in (lines, lines[::-1]):
        result = diagnose("\n".join(shown) + "\n")
        assert result.crashed is True
        assert result.root_cause == "ERROR 2026-03-01T10:00:01.004Z NotImplementedError"


def test_a_last_line_without_its_newline_can_say_ready() -> None:
    """Logs pasted from a viewer often lose the final newline."""
    result = diagnose("[2026-03-01 10:00:05] The server is fired up and ready to roll!")
    assert result.ready is True and result.ready_at is not None
    docker = diagnose("sglang-1  | INFO:     Uvicorn running on http://0.0.0.0:8000\n")
    assert docker.ready is True  # a container named sglang does not make the log sglang's


def test_a_servers_refused_arguments_mean_it_never_became_ready() -> None:
    # Arguments are checked while a server starts; a script's are not a readiness.
    server = diagnose(
        "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: unrecognized arguments: --temperature 0.8\n"
    )
    assert server.error_class == "config_or_args" and server.ready is False
    script = diagnose(
        "usage: bench.py [-h] [--steps STEPS]\nbench.py: error: unrecognized arguments: --lr 3\n"
    )
    assert script.error_class == "config_or_args" and script.ready is None


@pytest.mark.parametrize(
    "line",
    [
        "I1118 07:23:26.677120 28532 http_server.cc:3558] Started HTTPService at 0.0.0.0:8000",
        "I1204 08:17:45.082233 1 grpc_server.cc:1939] Started GRPCInferenceService at 0.0.0.0:8001",
        "[INFO ] main org.pytorch.serve.ModelServer - Model server started.",
        'time=2026-03-01T10:00:00Z level=INFO msg="llama runner started in 4 s"',
        "Running on local URL:  http://127.0.0.1:7860",
    ],
)
def test_the_readiness_lines_of_triton_torchserve_ollamas_runner_and_gradio(line: str) -> None:
    assert diagnose(line + "\n").ready is True


def test_threads_reading_logs_at_once_share_the_compiled_patterns_not_their_scratch() -> None:
    """One compiled database serves every scanner; a scan writes to its scratch, so threads
    reading at the same time (the tailer's, a request's) must each have their own."""
    logs = [
        (DATA / "seed_torch_symm_mem.log").read_bytes(),
        b"gen throughput (token/s): 81.5\n" * 4000 + b"RuntimeError: CUDA error: out of memory\n",
        b"INFO: Uvicorn running on http://0.0.0.0:8000\n" * 3000,
    ]
    alone = [diagnose_bytes(log) for log in logs]
    start = threading.Barrier(6)

    def read(index: int) -> list[object]:
        start.wait(timeout=30)
        return [diagnose_bytes(logs[index % len(logs)]) for _ in range(5)]

    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(read, range(6)))
    for index, found in enumerate(together):
        assert found == [alone[index % len(logs)]] * 5


def test_entries_are_compared_by_identity() -> None:
    """One entry per kept line: finding one in the list is a pointer comparison, not a field
    by field one (a server's thousands of refused requests made each diagnosis quadratic:
    bench/refused_requests.py)."""
    line = Line(offset=0, number=1, text="KeyError: 12")
    first, same = Entry(line, line.text, line.text), Entry(line, line.text, line.text)
    assert first != same and [first, same].index(same) == 1
    assert len({first, same}) == 2
