"""The three rules of the method on small logs of shapes the corpus lacks: never silent on a
failure, a wrapper yields to what it wraps, and not crying wolf (a server that goes on serving,
a process an operator stopped). Over every case of the corpus: test_diagnosis_corpus.py."""

import json
from pathlib import Path

import pytest

from app.diagnosis import Diagnosis, diagnose_bytes, rules
from app.diagnosis.knowledge.lifecycle import REQUEST_REFUSED, STOPPED, WAITING
from app.diagnosis.knowledge.wrappers import WRAPPERS
from tests.helpers import corpus_log
from tests.silence import silent

CORPUS = Path(__file__).parent / "corpus"
QUIET = [f"step {n} done" for n in range(10)]


def diagnose(*lines: str) -> Diagnosis:
    return diagnose_bytes("".join(f"{line}\n" for line in lines).encode())


def _cases() -> list[dict]:
    return json.loads((CORPUS / "labels.json").read_text())


@pytest.mark.parametrize(
    "lines,root_cause,error_class,crashed",
    [
        # glog's fatal severity, and c10's error prefix, with nothing else to read
        (
            ["F1201 10:00:00.123456 1234 ProcessGroupNCCL.cpp:1300] [Rank 0] NCCL watchdog "
             "thread terminated with exception: CUDA error: an illegal memory access"],
            "F1201 10:00:00.123456 1234 ProcessGroupNCCL.cpp:1300] [Rank 0] NCCL watchdog "
            "thread terminated with exception: CUDA error: an illegal memory access",
            "cuda_runtime",
            True,
        ),
        (
            ["E1201 10:00:00.123456 1234 backend.cc:12] model load went wrong"],
            "E1201 10:00:00.123456 1234 backend.cc:12] model load went wrong",
            None,
            True,
        ),
        (
            ["rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No "
             "such file or directory"],
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No "
            "such file or directory",
            None,
            True,
        ),
        (
            ["memory allocation of 1073741824 bytes failed", "Aborted (core dumped)"],
            "memory allocation of 1073741824 bytes failed",
            "oom_host_killed",
            True,
        ),
        (
            ['/tmp/ext/kernel.cu(12): error: identifier "__hfma2" is undefined',
             '1 error detected in the compilation of "/tmp/ext/kernel.cu".',
             "ninja: build stopped: subcommand failed."],
            '/tmp/ext/kernel.cu(12): error: identifier "__hfma2" is undefined',
            "import_or_version",
            True,
        ),
        (
            ["/usr/bin/python3: Error while finding module specification for "
             "'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')"],
            "/usr/bin/python3: Error while finding module specification for "
            "'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
            "import_or_version",
            True,
        ),
        (
            ["pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
             "  Value error, Invalid repository ID or local directory specified: '/models/x' "
             "[type=value_error, input_value=ArgsKwargs((),), input_type=ArgsKwargs]"],
            "  Value error, Invalid repository ID or local directory specified: '/models/x' "
            "[type=value_error, input_value=ArgsKwargs((),), input_type=ArgsKwargs]",
            None,
            True,
        ),
        (["Segmentation fault"], "Segmentation fault", None, True),
        (
            ["kernel: [1728595.660950] traps: python3[213941] trap invalid opcode "
             "ip:7f4aa44a4e94 sp:7ffceec92e60 error:0 in libllama.so[7f4aa448a000+9f000]"],
            "kernel: [1728595.660950] traps: python3[213941] trap invalid opcode "
            "ip:7f4aa44a4e94 sp:7ffceec92e60 error:0 in libllama.so[7f4aa448a000+9f000]",
            "unsupported_arch",
            True,
        ),
    ],
)  # fmt: skip
def test_an_error_shape_that_ends_the_log_is_named(
    lines: list[str], root_cause: str, error_class: str | None, crashed: bool
) -> None:
    found = diagnose(*QUIET, *lines)
    assert found.root_cause == root_cause, found.crashed_reason
    assert found.crashed is crashed, found.crashed_reason
    if error_class is not None:
        assert found.error_class == error_class


def test_an_error_that_says_nothing_fatal_is_shown_not_called_a_crash() -> None:
    error = "[router] upstream error: connection refused by 10.0.0.2:8001"
    found = diagnose(*QUIET, error, *QUIET[:2])
    assert not silent(found)
    assert found.crashed is False and found.root_cause is None
    assert [c.line for c in found.candidates] == [error]


def test_an_error_the_logging_module_lived_through_is_explained() -> None:
    found = diagnose(
        *QUIET,
        "--- Logging error ---",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/logging/__init__.py", line 377, in getMessage',
        "    msg = msg % self.args",
        "TypeError: not all arguments converted during string formatting",
        "Call stack:",
    )
    assert found.crashed is False and found.root_cause is None
    assert "logging" in found.crashed_reason


@pytest.mark.parametrize("row", STOPPED, ids=lambda row: row.pattern[:40])
def test_a_process_an_operator_or_a_scheduler_stopped_did_not_crash(row: object) -> None:
    example = row.example  # type: ignore[attr-defined]
    traceback = [
        "Traceback (most recent call last):",
        '  File "/srv/serve.py", line 10, in <module>',
        "    loop.run_forever()",
    ]
    for lines in ([*QUIET, example], [*QUIET, *traceback, example, "Terminated"]):
        found = diagnose(*lines)
        assert found.crashed is False, (lines, found.crashed_reason)
        assert found.root_cause is None and found.error_class is None
        assert "stopped" in found.crashed_reason


@pytest.mark.parametrize("row", WAITING, ids=lambda row: row.pattern[:40])
def test_a_log_that_ends_waiting_on_others_is_a_hang_not_a_crash(row: object) -> None:
    example = row.example  # type: ignore[attr-defined]
    found = diagnose(*QUIET, example, example)
    assert found.crashed is False and found.error_class == "timeout_or_hang"
    assert found.root_cause is not None and found.root_cause in example
    assert "hang" in found.crashed_reason
    # Waiting once (a slow compile or load), or a while and then going on: nothing to say.
    assert silent(diagnose(*QUIET, example))
    assert silent(diagnose(*QUIET, example, example, *QUIET))


def test_a_hang_is_named_by_the_first_of_its_last_run_of_waiting_words() -> None:
    def waited(second: int) -> str:
        return (
            f"[2026-07-28 10:09:{second:02}] Health check failed. Server couldn't get a "
            f"response from detokenizer for last 20 seconds. tic start time: 10:08:{second:02}."
        )

    warned = "serving_chat.py:1273: FastAPIDeprecationWarning: ORJSONResponse is deprecated"
    found = diagnose(waited(1), waited(2), *QUIET, waited(10), warned, waited(20), waited(30))
    assert found.root_cause == waited(10) and found.error_class == "timeout_or_hang"


@pytest.mark.parametrize("row", REQUEST_REFUSED, ids=lambda row: row.pattern[:40])
def test_a_refused_request_is_the_client_s_failure_not_the_server_s(row: object) -> None:
    example = row.example  # type: ignore[attr-defined]
    for lines in ([*QUIET, example], [example], [*QUIET, example, *QUIET]):
        found = diagnose(*lines)
        assert found.crashed is False and found.root_cause is None, lines
        assert "request refused" in found.crashed_reason or found.crashed_reason == rules.NO_FAILURE
    # A server that dies after refusing one: the death is the failure.
    fatal = "RuntimeError: CUDA error: an illegal memory access was encountered"
    found = diagnose(*QUIET, example, fatal)
    assert found.crashed is True and found.root_cause == fatal


def test_a_failure_naming_a_module_whose_import_failed_earlier_is_explained_by_that_import() -> (
    None
):
    warned = (
        "WARNING 02-28 20:57:36 _core_ext.py:180] Failed to import from vllm._core_C with "
        "ImportError('libtorch_hip.so: cannot open shared object file: No such file or directory')"
    )
    failure = (
        "RuntimeError: Tried to instantiate class '_core_C.ScalarType', but it does not exist! "
        "Ensure that it is registered via torch::class_"
    )
    found = diagnose(warned, *QUIET, *TB, failure)
    assert found.root_cause == warned and found.error_class == "import_or_version"
    assert found.crashed is True and "import failed at line 1" in found.crashed_reason
    # A failure that names no module of the warning keeps its own line.
    other = "RuntimeError: shape '[4, 32]' is invalid for input of size 100"
    assert diagnose(warned, *QUIET, *TB, other).root_cause == other


def test_an_exception_whose_message_lists_what_failed_below_it_is_named_by_that_list() -> None:
    detail = "- ImportError: /srv/ext/common_ops.abi3.so: undefined symbol: _ZNK3c106SymInt"
    found = diagnose(
        *QUIET, *TB, "ImportError: ", "[ext] CRITICAL: Could not load any common_ops library!",
        "Attempted locations:", "1. /srv/ext/sm90/common_ops.abi3.so", "Errors:", detail,
        "- ModuleNotFoundError: No module named 'common_ops'",
    )  # fmt: skip
    assert found.root_cause == detail and found.error_class == "import_or_version"


def test_llama_cpp_s_error_severity_is_its_logger_s_even_on_a_short_log() -> None:
    line = (
        "0.00.065.436 E srv         start: couldn't bind HTTP server socket, hostname: "
        "127.0.0.1, port: 8083"
    )
    found = diagnose(
        "0.00.064.257 I cmn  common_param: verbosity = 3", line,
        "0.00.065.441 I srv    operator(): cleaning up before exit...",
        "0.00.065.581 E srv  llama_server: exiting due to HTTP server error",
    )  # fmt: skip
    assert found.root_cause == line and found.error_class == "config_or_args"
    assert found.crashed is True


def test_an_allocator_running_out_of_memory_explains_the_error_just_before_it() -> None:
    complaint = (
        "2025-03-23 20:28:49.804409: E external/xla/xla/service/gpu/gpu_hlo_schedule.cc:654] "
        "The byte size of input/output arguments (1374526449600) exceeds the base limit "
        "(25554419712). This indicates an error in the calculation!"
    )
    allocator = (
        "2025-03-23 20:28:59.832181: W external/xla/xla/tsl/framework/bfc_allocator.cc:501] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25TiB"
    )
    found = diagnose(*QUIET, complaint, allocator)
    assert found.root_cause == allocator and found.error_class == "oom_gpu"
    # The error it follows decides whether the process died: it died, nothing came after.
    assert found.crashed is True
    # Alone, the allocator's warning is one the process may live through: a hang.
    alone = diagnose(*QUIET, allocator)
    assert alone.root_cause == allocator and alone.crashed is False


def test_a_native_library_s_failure_before_its_children_died_is_why_the_parent_failed() -> None:
    # NVSHMEM's error macro on each rank, the schedulers gone, then the parent's own error
    transport = (
        "/build/main_nvshmem/src/host/transport/transport.cpp:416: non-zero status: 7 No "
        "devices selected."
    )
    found = diagnose(
        *QUIET, transport,
        "/build/main_nvshmem/src/host/init/init.cu:1045: non-zero status: 7 nvshmem setup "
        "connections failed",
        "[2026-02-25 15:04:37] Scheduler or DataParallelController 848532 terminated with 255",
        *TB, "AttributeError: 'NoneType' object has no attribute 'server_args'",
    )  # fmt: skip
    assert found.root_cause == transport and found.error_class == "nccl_comm"
    assert found.crashed is True


def test_nvshmem_s_fatal_exit_first_in_time_is_why_its_transport_failed() -> None:
    unreachable = "src/topo/topo.cpp:61: [GPU 1] Peer GPU 0 is not accessible, exiting ... "
    found = diagnose(
        "mpi_info: rank: 0, nranks: 2", "PE-0, local_gpu_num: 1, local_gpu_id: 0", "",
        unreachable, "src/init/init.cpp:276: non-zero status: 3 building transport map failed ",
        "src/mem/mem.cpp:nvshmem_malloc:342: nvshmem initialization failed, exiting ",
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (unreachable, "nccl_comm")


def test_a_stop_that_follows_a_failure_is_the_failure_s_consequence() -> None:
    # (torchrun stops the other ranks once one failed: the failure is why)
    found = diagnose(
        *QUIET,
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4321 got "
        "signal: 15",
    )
    assert found.crashed is True
    assert found.root_cause == "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_a_server_that_went_on_serving_after_an_error_did_not_crash() -> None:
    serving = (
        "[2026-03-01 10:00:40 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: "
        "0.12, gen throughput (token/s): 186.64, #queue-req: 0"
    )
    failed = "[2026-03-01 10:00:30] ERROR:    RuntimeError: sampling failed: NaN in the logits"
    found = diagnose(*QUIET, failed, serving, serving, serving)
    assert found.crashed is False and found.root_cause is None
    assert "went on serving" in found.crashed_reason


def test_every_wrapper_yields_to_the_line_it_points_to_before_or_after_it() -> None:
    failure = "RuntimeError: weights of layer 3 hold NaN"
    for row in WRAPPERS:
        for lines in ([row.example, failure], [failure, row.example]):
            found = diagnose(*QUIET, *lines)
            assert found.root_cause == failure, (row.pattern, lines)


TB = ["Traceback (most recent call last):", '  File "/srv/x.py", line 1, in run', "    run()"]


@pytest.mark.parametrize(
    "lines,root_cause",
    [
        # the error Triton quotes under its CompilationError
        (
            [*TB, "triton.compiler.errors.CompilationError: at 1:0:", "def _fwd_kernel(", "^",
             'ValueError("type fp8e4nv not supported in this architecture")'],
            'ValueError("type fp8e4nv not supported in this architecture")',
        ),
        # the child's ImportError printed before CalledProcessError
        (
            ["ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c105ErrorC2E", *TB,
             "subprocess.CalledProcessError: Command '['python3', '-c', 'import flash_attn']' "
             "returned non-zero exit status 1."],
            "ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c105ErrorC2E",
        ),
        # CuPy's CompileException raised while handling NVRTCError
        (
            [*TB, "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)", "",
             "During handling of the above exception, another exception occurred:", "", *TB,
             "cupy.cuda.compiler.CompileException: ptxas fatal   : Value 'sm_90a' is not "
             "defined for option 'gpu-name'"],
            "cupy.cuda.compiler.CompileException: ptxas fatal   : Value 'sm_90a' is not "
            "defined for option 'gpu-name'",
        ),
        # a worker's CUDACHECK before the engine core's generic failure
        (
            ["(VllmWorker rank=0 pid=1) Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:"
             "307 'invalid argument'",
             "(EngineCore_DP0 pid=2) ERROR 01-01 10:00:00 [core.py:700] EngineCore encountered a "
             "fatal error."],
            "(VllmWorker rank=0 pid=1) Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:"
            "307 'invalid argument'",
        ),
        # sglang's scheduler watchdog, then the launcher's word that a child failed
        (
            ["[2025-06-01 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300)",
             "[2025-06-01 10:00:01] Received sigquit from a child process. It usually means the "
             "child failed."],
            "[2025-06-01 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300)",
        ),
        # XLA's RESOURCE_EXHAUSTED over the execution error logged before it
        (
            ["E0101 10:00:00.000000 1234 pjrt_stream_executor_client.cc:2809] Execution of "
             "replica 0 failed: INTERNAL: Failed to execute XLA Runtime executable",
             "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
             "trying to allocate 17179869184 bytes."],
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
            "trying to allocate 17179869184 bytes.",
        ),
        # a native abort's reason before Python's "Fatal Python error: Aborted"
        (
            ["terminate called after throwing an instance of 'c10::Error'",
             "  what():  CUDA error: an illegal memory access was encountered",
             "Fatal Python error: Aborted"],
            "  what():  CUDA error: an illegal memory access was encountered",
        ),
    ],
)  # fmt: skip
def test_a_wrapper_yields_to_the_line_it_points_to(lines: list[str], root_cause: str) -> None:
    found = diagnose(*QUIET, *lines)
    assert found.root_cause == root_cause and found.crashed is True, found.candidates


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("TypeError: not a string", "model_loading"),
        ("/build/main_nvshmem/src/host/transport/transport.cpp:416: non-zero status: 7 No "
         "devices selected.", "nccl_comm"),
        ("FileNotFoundError: [Errno 2] No such file or directory: '/data/prompts.jsonl'",
         "config_or_args"),
        ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
         "collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE)", "nccl_comm"),
        ("RuntimeError: SymmetricMemory rendezvous failed: CUDA driver error: invalid argument",
         "nccl_comm"),
        ("RuntimeError: Error: accessing tensor output of CUDAGraphs that has been overwritten "
         "by a subsequent run.", "cuda_graph"),
        ("E0904 10:53:24.344123  312732 pjrt_stream_executor_client.cc:2826] Execution of "
         "replica 0 failed: INTERNAL: Failed to add kernel node to a HIP graph: hipError_t(9)",
         "cuda_graph"),
        ("AttributeError: module 'numpy' has no attribute 'float_'", "import_or_version"),
        ("vkWaitForFences failed -4", "cuda_runtime"),
        ("FileNotFoundError: [Errno 2] No such file or directory: "
         "'/opt/conda/lib/python3.10/site-packages/cuda/bin/nvcc'", "import_or_version"),
        ("RuntimeError: Some background worker is 6 feet under. Yuck. ", "oom_host_killed"),
        ("AttributeError: module 'torch._C._distributed_c10d' has no attribute "
         "'ProcessGroupNCCL'", "import_or_version"),
        ("TypeError: register_custom_call_target(): incompatible function arguments. The "
         "following argument types are supported:", "import_or_version"),
        ("  ERROR: Cannot install torch-npu==2.7.1 and torch==2.7.1 because these package "
         "versions have conflicting dependencies.", "import_or_version"),
        ("torch._inductor.exc.TritonMissing: Cannot find a working triton installation.",
         "import_or_version"),
        ("jax.errors.JaxRuntimeError: NOT_FOUND: No FFI handler registered for te_rmsnorm_fwd on "
         "a platform CUDA (canonical cuda)", "import_or_version"),
        ("argparse.ArgumentTypeError: --sweep-range min/max values must be powers of 2",
         "config_or_args"),
        ("RuntimeError: unable to allocate shared memory(shm) for file </torch_2437_7739544>: "
         "Resource temporarily unavailable (11)", "oom_host_killed"),
        ("RuntimeError: Unsupported head dimension 80 for this attention backend",
         "config_or_args"),
        ("onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: [ONNXRuntimeError] : 2 : "
         "INVALID_ARGUMENT : Got invalid dimensions for input: input_ids", "config_or_args"),
        ('ERROR:    Error loading ASGI app. Could not import module "server".', "config_or_args"),
        ("host-1:1234:1290 [0] NCCL WARN Cuda failure 2 'out of memory'", "oom_gpu"),
        ("host-1:1234:1290 [0] NCCL WARN Failed to CUDA calloc 6291456 bytes", "oom_gpu"),
        ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
         "unhandled cuda error, NCCL version 2.21.5 ... 'an illegal memory access was "
         "encountered'", "cuda_runtime"),
        ("KeyError: (9, 0)", "unsupported_arch"),
        ("KeyError: 9", "unsupported_arch"),
        ("host-1:1234:1290 [1] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
         "CUDA device 1a000", "config_or_args"),
        ("[rank0]:[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0 "
         "Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress "
         "in monitoring enqueued collectives.", "nccl_comm"),
        ("[rank3]:[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:1399] [PG ID 0 PG GUID 0 "
         "Rank 3] Heartbeat monitor timed out! Process will be terminated after dumping debug "
         "info.", "nccl_comm"),
        # memory run out in any allocator's words
        ("Aug 13 16:58:56 host-1 ollama[3010374]: ROCm error: out of memory", "oom_gpu"),
        ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device "
         "buffer: Attempting to allocate 15.65G. That was not possible.", "oom_gpu"),
        ("ggml_gallocr_reserve_n: failed to allocate Metal buffer of size 34681522080",
         "oom_gpu"),
        # NCCL's transports by name
        ("RuntimeError: NCCL communicator was aborted: NET/IB : Got completion from peer "
         "10.0.0.2<51354> with status=12 opcode=0 len=0 vendor err 129 (Recv)", "nccl_comm"),
        # the host's kill, glued to a progress bar or said by a supervisor
        ("Loading checkpoint shards:  75%|███▎ | 3/4 [01:34<00:31, 31.54s/it]Killed",
         "oom_host_killed"),
        ('level=ERROR source=sched.go:456 msg="error loading llama server" error="llama runner '
         'process has terminated: signal: killed"', "oom_host_killed"),
        # versions: ABI drift, a tokenizer file from a newer library, a newer Python's syntax
        ("ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 "
         "from C header, got 88 from PyObject", "import_or_version"),
        ("Exception: data did not match any variant of untagged enum ModelWrapper at line 1251012 "
         "column 3", "import_or_version"),
        ("TypeError: type 'array.array' is not subscriptable", "import_or_version"),
        # wrong paths and ports
        ("huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
         "'namespace/repo_name': '/root/DeepSeek-V2-Lite'.", "config_or_args"),
        ("TypeError: expected str, bytes or os.PathLike object, not dict", "config_or_args"),
        ("0.00.065.436 E srv         start: couldn't bind HTTP server socket, hostname: "
         "127.0.0.1, port: 8083", "config_or_args"),
        ("Error: listen tcp 127.0.0.1:11434: bind: address already in use", "config_or_args"),
        # kernel faults in a runtime's own words
        ("host-1:1234:1290 [0] NCCL WARN Cuda failure 999 'unknown error'", "cuda_runtime"),
        # a program's own arrays that do not fit each other: its code, not a value given it
        ("ValueError: could not broadcast input array from shape (513,) into shape (512,)",
         "other"),
        ("ERROR 09-05 17:22:27 async_llm_engine.py:63] ValueError: max() arg is an empty "
         "sequence", "other"),
        # a message that names the setting to change, options that exclude each other, a
        # device that cannot be chosen or is another's
        ("RuntimeError: (PreconditionNotMet) A serious error has occurred here. Please set "
         "find_unused_parameters=True to traverse backward graph in each step.", "config_or_args"),
        ("TypeError: Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled at "
         "the same time", "config_or_args"),
        ("[ERROR]  acl set device 0 failed, errorCode = 507033", "config_or_args"),
        ("RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by "
         "process with pid 2718466.", "config_or_args"),
        # a dtype an operation refuses on any device, a loader pinning tensors on the GPU
        ("RuntimeError: linalg.slogdet: Low precision dtypes not supported. Got Half",
         "config_or_args"),
        ("RuntimeError: cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned",
         "config_or_args"),
        # Triton's dot below the smallest tile this GPU's matrix units take
        ("AssertionError: Input shapes should have M >= 1, N >= 1 and K >= 32",
         "unsupported_arch"),
        # a Vulkan loader without a driver it can use
        ("vkCreateInstance failed -9", "import_or_version"),
        ("  what():  vk::Instance::enumeratePhysicalDevices: ErrorInitializationFailed",
         "import_or_version"),
        # a device out of memory in other allocators' and runtimes' words
        ("CuvsException: std::bad_alloc: out_of_memory: RMM failure at:/include/rmm/mr/device/"
         "pool_memory_resource.hpp:257: Maximum pool size exceeded", "oom_gpu"),
        ("RuntimeError: CUDA ERROR: 2, error code reference: https://nvidia.github.io/"
         "cuda-python/module/cudart.html#cuda.cudart.cudaError_t", "oom_gpu"),
        ("vkAllocateMemory failed -2", "oom_gpu"),
        # a model's download that failed
        ("RuntimeError: Data processing error: CAS service error : IO Error: No space left on "
         "device (os error 28)", "model_loading"),
        ("Error downloading nvidia/Cosmos-Guardrail1: Force download failed due to the above "
         "error.", "model_loading"),
        ("ValueError: Cannot find the requested files in the cached path and outgoing traffic "
         "has been disabled. To enable look-ups and downloads online, set 'local_files_only' to "
         "False.", "model_loading"),
        ("ValueError: Using `fp8` precision requires `transformer_engine` or `MS-AMP` to be "
         "installed.", "import_or_version"),
        # a runtime that asks for its own upgrade
        ("RuntimeError: Format of weight in npu_grouped_matmul is FRACTAL_NZ, current CANN "
         "version do not support with this format. Please try to update the version of CANN.",
         "import_or_version"),
        # TensorRT's kernel library without this GPU's capability
        ("[12/12/2024-10:15:17] [E] [TRT] 1: [caskUtils.cpp::trtSmToCask::147] Error Code 1: "
         "Internal Error (Unsupported SM: 0x809)", "unsupported_arch"),
        # a device ordinal past the GPUs there are, in PaddlePaddle's words
        ("E0724 21:47:30.248771  2320 pybind.cc:2330] Invalid CUDAPlace(1), must inside [0, 1), "
         "because GPU number on your machine is 1", "config_or_args"),
        # a precision this GPU has no units for
        ("RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to "
         "float16.", "unsupported_arch"),
        # ...but NCCL's own call refused is its setup on this system
        ("[rank6]: Cuda failure 1 'invalid argument'", "nccl_comm"),
        ("[1] nccl/src/register/register.cc:42 (ncclRegister) NCCL WARN Cuda failure 500 'named "
         "symbol not found'", "nccl_comm"),
        ("gguf_init_from_file: failed to open GGUF file '/models/llama.gguf' (No such file or "
         "directory)", "config_or_args"),
        ("[TensorRT-LLM][ERROR] Assertion failed: Error occurred when running GEMM! "
         "(/src/cpp/tensorrt_llm/kernels/KernelRunner.cpp:180)", "cuda_runtime"),
        (":0:rocdevice.cpp            :3587: 1012355198 us:  Callback: Queue 0x7cb113a00000 "
         "aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a "
         "hardware exception. code: 0x1016", "cuda_runtime"),
        # Habana Gaudi's device memory, a kernel module built for another kernel, an empty path
        ("RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for "
         "size::56836702208 (54203.7)MB", "oom_gpu"),
        ("modprobe: ERROR: could not insert 'ipmi_msghandler': Invalid argument",
         "import_or_version"),
        ("    gguf_init_from_file: failed to open '': 'Invalid argument'", "config_or_args"),
    ],
)  # fmt: skip
def test_the_class_names_the_fault(line: str, error_class: str) -> None:
    context = ['  File "/srv/device_table.py", line 8, in capability', "    table[cap]"]
    found = diagnose(*QUIET, *(context if line.startswith("KeyError") else []), line)
    assert found.root_cause == line and found.error_class == error_class


def test_generation_requests_answered_after_an_error_mean_the_server_lived() -> None:
    answered = 'INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    caught = [*TB, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
    found = diagnose(*QUIET, *caught, answered, answered, answered)
    assert found.crashed is False and found.root_cause is None
    assert "went on serving" in found.crashed_reason


def test_a_wrapper_yields_to_its_logger_s_line_just_before_it() -> None:
    died = (
        "ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc VllmWorker-3 died "
        "unexpectedly, shutting down executor."
    )
    found = diagnose(
        'INFO:     127.0.0.1:48802 - "GET /health HTTP/1.1" 200 OK', died,
        "ERROR 11-08 11:01:30 [core.py:502] EngineCore encountered a fatal error.",
        "ERROR 11-08 11:01:30 [core.py:502] Traceback (most recent call last):",
        'ERROR 11-08 11:01:30 [core.py:502]   File "/srv/vllm/v1/engine/core.py", line 493, in '
        "run_engine_core",
    )  # fmt: skip
    assert found.root_cause == died and found.crashed is True
    # A line of another logger, or an INFO one, is not what the wrapper reports.
    quiet = "INFO 11-08 11:01:29 [loggers.py:87] Engine 000: Running: 0 reqs"
    fatal = "ERROR 11-08 11:01:30 [core.py:502] EngineCore encountered a fatal error."
    assert diagnose(quiet, fatal).root_cause == fatal


def test_what_failed_before_a_launch_that_failed_later_was_lived_through() -> None:
    banner = "ERROR: This container was built for NVIDIA Driver Release 595.58 or later, but"
    earlier = "RuntimeError: could not reach the metrics endpoint"
    failure = "TypeError: plan() got an unexpected keyword argument 'k_data_type'"
    launch = "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)"
    found = diagnose(earlier, *QUIET, launch, *QUIET, *TB, failure)
    assert found.root_cause == failure
    # The NGC banner is benign wherever it is; an earlier failure with no later one belongs to
    # the try before the launch too: the run launched after it is healthy so far.
    assert diagnose(banner, *QUIET, *TB, failure).root_cause == failure
    found = diagnose(earlier, *QUIET, launch, *QUIET)
    assert (found.crashed, found.root_cause) == (False, None)


def test_a_terse_exception_yields_to_the_chained_one_that_explains_it() -> None:
    terse = "KeyError: 'gemma4_unified'"
    explains = (
        "ValueError: The checkpoint you are trying to load has model type `gemma4_unified` but "
        "Transformers does not recognize this architecture."
    )
    during = "During handling of the above exception, another exception occurred:"
    found = diagnose(*QUIET, *TB, terse, "", during, "", *TB, explains)
    assert found.root_cause == explains and found.error_class == "import_or_version"
    # One that does not quote the terse value, or that says as little, leaves it first.
    unrelated = "ValueError: the server could not be started because of the error above it"
    assert diagnose(*QUIET, *TB, terse, during, *TB, unrelated).root_cause == terse
    assert diagnose(*QUIET, *TB, terse, during, *TB, "KeyError: gemma4_unified").root_cause == terse


def test_a_message_ending_in_a_colon_yields_to_the_failure_it_quotes() -> None:
    ptxas = "ptxas fatal   : Value 'sm_100' is not defined for option 'gpu-name'"
    found = diagnose(
        *(f"0000-steps/0 [default6]:[rank6]: {line}" for line in (
            *QUIET, *TB, "RuntimeError: Internal Triton PTX codegen error:", ptxas,
        ))
    )  # fmt: skip
    assert found.root_cause is not None and found.root_cause.endswith(ptxas)
    assert found.error_class == "unsupported_arch" and found.crashed is True


def test_a_logged_error_the_process_went_on_past_yields_to_the_failure_after_it() -> None:
    # (a logged error the engine does not know; vLLM's own FlashAttention fallback, logged at
    # ERROR, is knowledge: a line it prints and goes on past, never a failure)
    fallback = (
        "ERROR 04-26 12:03:57 [kv_offload.py:145] Cannot open the offload file "
        "/mnt/nvme/kv.bin: offloading is off"
    )
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB."
    went_on = [f"INFO 04-26 12:04:{n:02d} [gpu.py:1] {line}" for n, line in enumerate(QUIET)]
    found = diagnose(fallback, *went_on, *TB, oom)
    assert found.root_cause == oom and found.crashed is True and found.error_class == "oom_gpu"
    # With no failure after it, it is the only one there is, fatal or not.
    alone = diagnose(fallback, *went_on)
    assert alone.root_cause == fallback and alone.crashed is None


def test_out_of_memory_is_the_telling_line_of_an_allocation_incident() -> None:
    oom = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9866.00 MiB on device 1: "
        "cudaMalloc failed: out of memory"
    )
    found = diagnose(
        *QUIET, "llama_kv_cache_update_impl: failed to allocate compute buffers", oom,
        "ggml_gallocr_reserve_n: failed to allocate CUDA1 buffer of size 10345253120",
    )  # fmt: skip
    assert found.root_cause == oom and found.error_class == "oom_gpu"


def test_a_device_side_assert_is_named_by_the_kernel_s_assertion() -> None:
    assertion = (
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:402: masked_scatter_size_check: "
        "block: [0,0,0], thread: [0,0,0] Assertion `totalElements <= srcSize` failed."
    )
    found = diagnose(
        *QUIET, assertion, *TB, "torch.AcceleratorError: CUDA error: device-side assert triggered",
        "terminate called after throwing an instance of 'c10::AcceleratorError'",
        "  what():  CUDA error: device-side assert triggered",
    )  # fmt: skip
    assert found.root_cause == assertion and found.error_class == "cuda_runtime"
    assert found.crashed is True
    # (a generated Triton kernel's, naming its block and thread, printed after the exception
    # when the kernel's output reached the log last)
    generated = (
        "/root/.cache/vllm/torch_compile_cache/inductor_cache/ii/ciil7rhth7sq.py:37: unknown: "
        "block: [8338,0,0], thread: [64,0,0] Assertion `index out of bounds: 0 <= tmp10 < 4096` "
        "failed."
    )
    found = diagnose(
        *QUIET, *TB, "torch.AcceleratorError: CUDA error: device-side assert triggered", "",
        generated, generated.replace("thread: [64,", "thread: [65,"),
    )  # fmt: skip
    assert found.root_cause == generated and found.error_class == "cuda_runtime"


def test_a_handler_s_error_above_a_refused_request_s_traceback_is_set_aside_with_it() -> None:
    found = diagnose(
        *QUIET,
        "ERROR 08-18 19:58:43 [serving_chat.py:203] Error in preprocessing prompt inputs",
        "ERROR 08-18 19:58:43 [serving_chat.py:203] Traceback (most recent call last):",
        'ERROR 08-18 19:58:43 [serving_chat.py:203]   File "/srv/serving_chat.py", line 1, in f',
        "ERROR 08-18 19:58:43 [serving_chat.py:203]     f()",
        "ERROR 08-18 19:58:43 [serving_chat.py:203] ValueError: This model's maximum context "
        "length is 2048 tokens. However, you requested 5418 tokens (4918 in the messages, 500 "
        "in the completion).",
        *QUIET,
    )
    assert found.crashed is False and found.root_cause is None


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("Error: No such option: --dataset", "config_or_args"),
        (
            "AttributeError: 'Namespace' object has no attribute 'deepspeed_config_dict'",
            "config_or_args",
        ),
        (
            "AssertionError: Gemma4 only supports ('triton', 'intel_xpu') attention backend, got "
            "prefill=flashinfer",
            "config_or_args",
        ),
        ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: cuSolver internal error", "cuda_runtime"),
        (
            "RuntimeError: NVFP4 KV cache global scales must be calibrated before CUDA graph "
            "capture. Run an eager prefill first or provide checkpoint k_scale/v_scale values.",
            "cuda_graph",
        ),
        (
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            "config_or_args",
        ),
        (
            "openai_harmony.HarmonyError: invalid tiktoken vocab file: expected token and rank",
            "model_loading",
        ),
        (
            "ValueError: Free memory on device (16.01/93.0 GiB) on startup is less than desired "
            "GPU memory utilization (0.8, 74.4 GiB).",
            "oom_gpu",
        ),
        (
            "[rank0]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
            "config_or_args",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: No visible GPU devices.",
            "config_or_args",
        ),
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
            "local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE",
            "config_or_args",
        ),
        (
            "AssertionError: KV4 MHA expects attention_backend to be one of ['triton', "
            "'flex_attention'], but got flashinfer",
            "config_or_args",
        ),
        (
            "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'",
            "nccl_comm",
        ),
        ("nixl._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND", "nccl_comm"),
        ("RuntimeError: Failed to infer device type", "config_or_args"),
        (
            "RuntimeError: CUDA error: peer access is not supported between these two devices",
            "nccl_comm",
        ),
        (
            "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error",
            "unsupported_arch",
        ),
        (
            "E0515 10:03:24.130426 19611 cuda_dnn.cc:534] Could not create cudnn handle: "
            "CUDNN_STATUS_INTERNAL_ERROR",
            "import_or_version",
        ),
        (
            "NotImplementedError: The given huggingface model architecture DeepseekV3ForCausalLM "
            "is not supported in TRT-LLM yet",
            "import_or_version",
        ),
        (
            "AssertionError: Attention sinks are only supported for TRTLLM backend.",
            "config_or_args",
        ),
        (
            "pydantic_core._pydantic_core.ValidationError: Extra inputs are not permitted",
            "config_or_args",
        ),
        (
            "OSError: Can't load tokenizer for 'qwen2llama'. Make sure that 'qwen2llama' is the "
            "correct path to a directory containing all relevant files for a LlamaTokenizerFast "
            "tokenizer.",
            "model_loading",
        ),
        # the seventh round's, from the sixth round's fresh part folded into tuning
        (
            "AssertionError: num_layers should be divisible by pipeline_model_parallel_size",
            "config_or_args",
        ),
        ("RuntimeError: rocBLAS error from hip error code: 'hipErrorInvalidImage':200",
         "unsupported_arch"),
        (
            "OSError: [WinError 1114] The dynamic layout library initialization program has "
            "failed. (DLL)",
            "import_or_version",
        ),
        ("RuntimeError: operator torchvision::nms does not exist", "import_or_version"),
        (
            "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'",
            "import_or_version",
        ),
        ("openai.NotFoundError: 404 page not found", "config_or_args"),
        (
            "AssertionError: Error in memory profiling. Initial free memory 43.4 GiB, current "
            "free memory 43.9 GiB. This happens when other processes sharing the same container "
            "release GPU memory while vLLM is profiling during initialization.",
            "config_or_args",
        ),
        (
            "E0605 10:48:27.885119 10136 rdma_context.cpp:203] Failed to register memory "
            "0x7b375b400000: Invalid argument [22]",
            "nccl_comm",
        ),
        (
            "Memory access fault by GPU node-1 (Agent handle: 0x58935a90) on address "
            "0x7fbe6a804000. Reason: Page not present or supervisor privilege.",
            "cuda_runtime",
        ),
        (
            "host-1:33207:33207 [0] allocator.cc:79 NCCL WARN Cuda failure 711 'peer mapping "
            "resources exhausted'",
            "nccl_comm",
        ),
        ("RuntimeError: Device string must not be empty", "config_or_args"),
        ("RuntimeError: No backend type associated with device type cpu", "config_or_args"),
        (
            "gguf_init_from_file: failed to open GGUF file '/home/user/models/gemma-3-12b.gguf'",
            "config_or_args",
        ),
        (
            "AssertionError: The max KV cache length of input sequences (3646) exceeds the KV "
            "cache manager's maximum supported length (2049).",
            "config_or_args",
        ),
        # the eighth round's, from the seventh round's fresh part folded into tuning
        ("RuntimeError: level_zero backend failed with error: 40 "
         "(UR_RESULT_ERROR_OUT_OF_RESOURCES)", "oom_gpu"),
        ("error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
         "oom_gpu"),
        ("RuntimeError: ACL stream synchronize failed, error code:507035", "cuda_runtime"),
        ("[1784273406.684686] [host-1:994396:0]      ib_mlx5_dv.c:452  UCX  ERROR   "
         "mlx5dv_devx_obj_create(CQ) failed on mlx5_1, syndrome 0x2aac7c: Remote I/O error",
         "nccl_comm"),
        ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
         "multiprocessing, you must use the 'spawn' start method", "config_or_args"),
        ("AssertionError: Check batch related parameters. train_batch_size is not equal to "
         "micro_batch_per_gpu * gradient_acc_step * world_size 64 != 4 * 8 * 1",
         "config_or_args"),
        ("[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration "
         "before starting a new one.", "config_or_args"),
        ("NotImplementedError: \"linalg_eigh_cuda\" not implemented for 'BFloat16'",
         "config_or_args"),
        ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Shared memory size limit exceeded: "
         "requested 524288, available: 232448, context: []", "unsupported_arch"),
        ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
         "`cublasLtMatmulAlgoGetHeuristic(ltHandle, computeDesc.descriptor())`",
         "unsupported_arch"),
        ("F1204 19:18:28.973474     531 client.h:86] Terminating process because the JAX "
         "distributed service detected fatal errors. absl::Status: DEADLINE_EXCEEDED: Deadline "
         "Exceeded", "timeout_or_hang"),
        ("host-1:56890:56890 [0] enqueue.cc:267 NCCL WARN Cuda failure 'dependency created on "
         "uncaptured work in another stream'", "cuda_graph"),
        # the ninth round's, from the eighth round's fresh part folded into tuning
        ("[TRT] [E] [virtualMemoryBuffer.cpp::resizePhysical::151] Error Code 2: OutOfMemory "
         "(Requested size was 16654532608 bytes.)", "oom_gpu"),
        ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:364 'uncorrectable ECC error "
         "encountered'", "cuda_runtime"),
        ("level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)", "cuda_runtime"),
        ("rocBLAS error from hip error code: 'hipErrorInvalidDeviceFunction':98",
         "unsupported_arch"),
        ("[TRT] [E] 9: [standardEngineBuilder.cpp::buildEngine::2266] Error Code 9: Internal "
         "Error (Networks with FP8 precision require hardware with FP8 support.)",
         "unsupported_arch"),
        ("| tts_model | 1       | UNAVAILABLE: Internal: onnx runtime error 7: Load model from "
         "/models/tts_model/1/model.onnx failed:Protobuf parsing failed. |", "model_loading"),
        ("ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to "
         "etcd server with config ClientOptions { etcd_url: [\"http://localhost:2379\"] }",
         "config_or_args"),
        ("[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] "
         "Exception (either an error or timeout) detected by watchdog at work: 32, last enqueued "
         "NCCL work: 32, last completed NCCL work: 31.", "nccl_comm"),
        ("4.45.745.058 E ggml_vulkan: device lost on Vulkan0", "cuda_runtime"),
        ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 437944320",
         "oom_host_killed"),
        ("pydantic_core._pydantic_core.ValidationError: 2 validation errors for SFTTrainerConfig",
         "config_or_args"),
        ("ValueError: Size mismatch between saved torch.Size([6561, 512]) and current: "
         "torch.Size([5533, 512]) for optimizer.state.embedding.word_embeddings.weight.exp_avg",
         "model_loading"),
        ("RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
         "\"../c10/cuda/CUDACachingAllocator.cpp\":995, please report a bug to PyTorch.",
         "oom_gpu"),
        # the fourteenth round's, from the ninth round's fresh part folded into tuning
        ("RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with "
         "multiprocessing, you must use the 'spawn' start method", "config_or_args"),
        ("RuntimeError: ExchangeDevice:../torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp:286 "
         "NPU function error: c10_npu::SetDevice(device), error code is 107001", "config_or_args"),
        ("RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
         "`--max-batch-prefill-tokens`", "oom_gpu"),
        ("AssertionError: Currently, the compatibility between 'autotp' and 'zero_stage = 3' has "
         "not been validated", "config_or_args"),
        ("OSError: We couldn't connect to 'https://huggingface.co' to load the files, and "
         "couldn't find them in the cached files.", "model_loading"),
        # the fifteenth round's, from the tenth round's fresh part folded into tuning
        ("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min "
         "capability: 75. ', 'Current capability: 70.')", "unsupported_arch"),
        ("rocBLAS error: Cannot read /opt/rocm-5.7.0/lib/rocblas/library/TensileLibrary.dat: "
         "Illegal seek for GPU arch : gfx1103", "unsupported_arch"),
        ("host-1:2699411:2699411 [0] init.cc:416 NCCL WARN Cuda failure 'operation not "
         "supported'", "nccl_comm"),
        ("tritonserver: unrecognized option '--t_exit_on_error=True'", "config_or_args"),
        ("/usr/local/lib/python3.10/dist-packages/tensorrt_llm/bin/executorWorker: error while "
         "loading shared libraries: libnvinfer.so.10: cannot open shared object file: No such "
         "file or directory", "import_or_version"),
        ("The number of work-items in each dimension of a work-group cannot exceed {512, 512, "
         "512} for this device -54 (PI_ERROR_INVALID_WORK_GROUP_SIZE)Exception caught at "
         "file:/src/ggml-sycl.cpp, line:4566", "unsupported_arch"),
        # the sixteenth round's, from the eleventh round's fresh part folded into tuning
        ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: remote process "
         "exited or there was a network error", "nccl_comm"),
        ("2025-Jan-26 10:27:42.285788  2998:2998  ERROR  TDRV:dmem_alloc_internal  Failed to "
         "alloc DEVICE memory: 536870912", "oom_gpu"),
        ("RuntimeError: Failed: CUDA error /src/DeepEP/csrc/kernels/internode_ll.cu:341 'too "
         "many blocks in cooperative launch'", "unsupported_arch"),
        # the seventeenth round's, from the twelfth round's fresh part folded into tuning
        ("python3: /project/lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp:42: int "
         "getMMAVersionSafe(int, DotOp): Assertion `false && \"computeCapability not supported\"'"
         " failed.", "unsupported_arch"),
        ("RuntimeError: Only 1 can be set between `dtype` and `quantize`, as they both decide "
         "how goes the final model.", "config_or_args"),
        ("error: a value is required for '--model-id <MODEL_ID>' but none was supplied",
         "config_or_args"),
        ("RuntimeError: synStatus=9 [Device-type mismatch] Device acquire failed.",
         "config_or_args"),
        ("error: Caused GPU Hang Error (00000003:kIOGPUCommandBufferCallbackErrorHang)",
         "cuda_runtime"),
        ("0.00.165.104 E llama_model_load: error loading model: vk::PhysicalDevice::createDevice:"
         " ErrorExtensionNotPresent", "unsupported_arch"),
        ("safetensors_rust.SafetensorError: Error while deserializing header: "
         "InvalidHeaderDeserialization", "model_loading"),
        ("[TRT-LLM] [E] Failed to initialize executor on rank 1: auto_deploy::torch_dist_all_gather"
         "() expected at most 3 argument(s) but received 5 argument(s).", "import_or_version"),
        # the eighteenth round's, from the thirteenth round's fresh part folded into tuning
        ("ptxas terminated (signal: 11)sccache: Compiler killed by signal 11", "import_or_version"),
        ("RuntimeError: Ninja is required to load C++ extensions", "import_or_version"),
        ("[rank0]: NotImplementedError: Could not run '_C_cache_ops::reshape_and_cache' with "
         "arguments from the 'CPU' backend.", "import_or_version"),
        ("  what():  this custom template is not supported", "model_loading"),
        ("ggml_backend_sycl_graph_compute: error: op not supported node_1586 (FLASH_ATTN_EXT)",
         "unsupported_arch"),
        ("alloc: can't allocate 568118476 Bytes of memory on device/GPU", "oom_gpu"),
        ("CUDA error: operation failed due to a previous error during capture", "cuda_graph"),
        # the nineteenth round's, from the eighteenth round's fresh part folded into tuning
        ("RuntimeError: RMSNorm failed with error code invalid configuration argument",
         "cuda_runtime"),
        ("huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/x/y/"
         "resolve/main/hf_quant_config.json: offline mode is enabled.", "config_or_args"),
        ("ggml_metal_init: error: load pipeline error: Error Domain=AGXMetalA14 Code=3 \"Compute "
         "function exceeds available temporary registers\"", "unsupported_arch"),
        ("dyld[18622]: Library not loaded: @rpath/libllama.dylib", "import_or_version"),
        ("UNREACHABLE executed at /work/SPIRV-LLVM-Translator/lib/SPIRV/SPIRVUtil.cpp:2037!",
         "import_or_version"),
        ("  FLASH_ATTN_EXT(hs=64,nh=32,kv=512): Unsupported KV type combination for head_size 64.",
         "config_or_args"),
        # the twentieth round's, from the nineteenth round's fresh part folded into tuning
        ("MESA: error: ../src/intel/vulkan/anv_device.c:4237: VK_ERROR_OUT_OF_DEVICE_MEMORY",
         "oom_gpu"),
        ("GGML_ASSERT: D:\\a\\llama.cpp\\ggml\\src\\ggml-backend.c:96: base != NULL && "
         "\"backend buffer base cannot be NULL\"", "oom_gpu"),
        ("RuntimeError: Error in function 'BatchPrefillWithRaggedKVCacheDispatched' at /fi/"
         "include/flashinfer/attention/prefill.cuh:2215: Unsupported max_mma_kv: 0",
         "unsupported_arch"),
        ("/sglang/srt/layers/moe/ep_moe/kernels.py:606:42: error: Unsupported conversion from "
         "'f8E4M3FN' to 'f16'", "unsupported_arch"),
        ("RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't "
         "exist", "import_or_version"),
        ("NameError: name 'check_marlin_supported' is not defined. Did you mean: "
         "'check_marlin_format'?", "import_or_version"),
        ("ValueError: too many values to unpack (expected 2)", "other"),
        ("ggml_aligned_malloc: insufficient memory (attempted to allocate 44668.09 MB)",
         "oom_host_killed"),
        ("ggml_backend_sycl_buffer_type_alloc_buffer: can't malloc 3278637056 Bytes memory on "
         "device", "oom_gpu"),
        ("mlx5: host-1: got completion with error:", "nccl_comm"),
        ("rocBLAS error: Could not initialize Tensile host: No devices found",
         "unsupported_arch"),
        ('RuntimeError: Form data requires "python-multipart" to be installed.',
         "import_or_version"),
        ("ValueError: Model architectures ['LlamaForCausalLM'] failed to be inspected. Please "
         "check the logs for more details.", "import_or_version"),
        ("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89",
         "unsupported_arch"),
        ("RuntimeError: Not enought memory. Please try to increase --mem-fraction-static.",
         "oom_gpu"),
        ("RuntimeError: Found NVIDIA GeForce GTX 1070 which is too old to be supported by the "
         "triton GPU compiler, which is used as the backend.", "unsupported_arch"),
        (" CLBlast: OpenCL error: clEnqueueNDRangeKernel: -54", "unsupported_arch"),
        ("[rank3]: RuntimeError: Rank 3 successfully reached monitoredBarrier, but received "
         "errors while waiting for send/recv from rank 0.", "timeout_or_hang"),
        ("/usr/bin/ld: ../../ggml/src/libggml.a(ggml-sycl.cpp.o): undefined reference to symbol "
         "'_ZNK4sycl3_V16device8get_infoEv'", "import_or_version"),
        ("fatal error: error in backend: Cannot select: 0x7fa6c4096f48: v8f16,ch = load",
         "import_or_version"),
        ("RuntimeError: Internal: could not parse ModelProto from /models/x/tokenizer.model",
         "model_loading"),
        ("RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 450494464 and "
         "alignment 16 in AlignedAllocator", "oom_gpu"),
        ("ggml_vulkan: Requested buffer size exceeds device buffer size limit: "
         "ErrorOutOfDeviceMemory", "oom_gpu"),
        ("llama.cpp/ggml/src/ggml-vulkan/vulkan-shaders/mul_mm.comp:195: error: 'coopmat' : "
         "undeclared identifier", "import_or_version"),
        ("ValueError: No supported config format found in mistralai/Mistral-7B-v0.1",
         "model_loading"),
        ("ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is "
         "already used by a Transformers model.", "import_or_version"),
        ("ValueError: token_to_kv_pool_allocator memory leak detected! available_size=13824256, "
         "protected_size=0", "other"),
        ("ValueError: Attempted to assign 256 + 74 = 330 multimodal tokens to 332 placeholders",
         "other"),
        # the fifty-sixth round's, from the fifty-fifth round's fresh part folded into tuning
        ("RuntimeError: You can't move a model that has some modules offloaded to cpu or disk.",
         "oom_gpu"),
        ("RuntimeError: No GPU found. A GPU is needed for quantization.", "config_or_args"),
        ("libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
         "Command buffer execution failed: Internal Error (0000000e:Internal Error)",
         "cuda_runtime"),
        ("-[_MTLCommandBuffer addCompletedHandler:]:1011: failed assertion `Completed handler "
         "provided after commit call'", "cuda_runtime"),
        ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install "
         "root.", "import_or_version"),
        ("ValueError: Failed to find a kernel that can implement the WNA16 linear layer. Reasons: ",
         "unsupported_arch"),
        ("bench: error: the following arguments are required: --base-url", "config_or_args"),
        ("ValueError: Missing parameters: lm_head.biases lm_head.scales.", "model_loading"),
        # the fifty-seventh round's, from the fifty-sixth round's fresh part
        ("2025-06-13T15:23:17.4498591Z LLVM ERROR: out of memory", "oom_host_killed"),
        ("ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
         "config_or_args"),
        ("1.717 ERROR: Could not find a version that satisfies the requirement "
         "torch==2.6.0.dev20241113+rocm6.2 (from versions: 2.5.1, 2.6.0)", "import_or_version"),
        ("jinja2.exceptions.TemplateError: System role not supported", "config_or_args"),
        ("FileNotFoundError: unsloth/qwen3-1.7b-instruct-bnb-4bit/*.json (repository not found)",
         "model_loading"),
        ("ValueError: There should be exactly one `quant_state` item with ending from "
         "['bitsandbytes__fp4', 'bitsandbytes__nf4'].", "model_loading"),
        # the sixty-third round's, from the sixty-second round's fresh part
        ("ValueError: Cannot find model module. 'MiniMaxM1ForCausalLM' is not a registered "
         "model in the Transformers library", "import_or_version"),
        ("TypeError: Descriptors cannot be created directly.", "import_or_version"),
        # the sixty-fourth round's, from the sixty-third round's fresh part
        ("/usr/bin/python: can't open file '/opt/NeMo-Aligner/examples/preprocess.py': [Errno 2] "
         "No such file or directory", "config_or_args"),
        ("CUDA platform error: Error loading CUDA module: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)",
         "import_or_version"),
        ("OSError: Cannot find empty port in range: 7860-7860. You can specify a different port "
         "by setting the GRADIO_SERVER_PORT environment variable", "config_or_args"),
        ("Error: Invalid value for '--constraint': option requires a value.", "config_or_args"),
        ("RuntimeError: _convert_weight_to_int4pack_cuda is not available for build.",
         "import_or_version"),
    ],
)  # fmt: skip
def test_the_class_names_the_fault_these_lines_state(line: str, error_class: str) -> None:
    found = diagnose(*QUIET, *TB, line)
    assert found.root_cause == line and found.error_class == error_class


def test_buildkit_s_step_prefix_is_peeled_and_its_failed_step_is_a_wrapper() -> None:
    failure = "#17 3.506 ImportError: libcuda.so.1: cannot open shared object file: No such file"
    found = diagnose(
        "#17 [13/14] RUN python3 -c 'import vllm'",
        "#17 3.506 Traceback (most recent call last):",
        '#17 3.506   File "<string>", line 1, in <module>', failure,
        "#17 ERROR: process \"/bin/sh -c python3 -c 'import vllm'\" did not complete "
        "successfully: exit code: 1",
    )  # fmt: skip
    assert found.root_cause == failure and found.crashed is True


def test_a_linker_s_own_line_is_why_the_build_failed() -> None:
    missing = "/usr/bin/ld: cannot find -lcurand: No such file or directory"
    found = diagnose(
        *QUIET, "[2/3] c++ cpu_adam.o -shared -lcurand -o cpu_adam.so", "FAILED: cpu_adam.so",
        missing, "collect2: error: ld returned 1 exit status",
        "ninja: build stopped: subcommand failed.",
    )  # fmt: skip
    assert found.root_cause == missing and found.error_class == "import_or_version"
    assert found.crashed is True


def test_a_device_allocator_s_refusal_is_a_failure_unless_it_says_it_retried() -> None:
    # (of the incident's two lines, Vulkan's own code for the refusal is the one to read)
    refused = "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"
    found = diagnose(
        *QUIET, "ggml_vulkan: Device memory allocation of size 118497280 failed.", refused
    )
    assert found.root_cause == refused and found.error_class == "oom_gpu" and found.crashed is True
    retried = diagnose(
        "1.06.520.077 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 51748.72 MiB on "
        "device 1: cudaMalloc failed: out of memory",
        "1.06.520.086 E graph_reserve: failed to allocate compute buffers",
        "1.06.520.107 W sched_reserve: compute buffer allocation failed, retrying without "
        "pipeline parallelism",
        "1.07.304.130 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = 50176",
    )
    assert retried.crashed is False and retried.root_cause is None


def test_a_failed_write_is_explained_by_a_full_disk_before_or_after_it() -> None:
    full = "tee: /runs/exp1/train.log: No space left on device"
    failed = (
        "[rank0]: RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter "
        "failed writing file data/5: file write failed"
    )
    for lines in ([failed, *QUIET, full], [full, *QUIET, failed]):
        found = diagnose(*QUIET, "saving checkpoint at iteration 20", *TB, *lines)
        assert found.root_cause == full and found.crashed is True, lines
    # A failure that is no write keeps its own line.
    other = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert diagnose(*QUIET, *TB, other, *QUIET, full).root_cause == other
    # A quota is a full disk too.
    quota = "cp: error writing '/home/user/ckpt/model.safetensors': Disk quota exceeded"
    found = diagnose(*QUIET, "saving checkpoint at iteration 20", *TB, failed, *QUIET, quota)
    assert found.root_cause == quota


@pytest.mark.parametrize(
    "line",
    ["double free or corruption (out)", "Signal (11) received."],
)
def test_a_native_abort_in_its_own_words_is_a_crash(line: str) -> None:
    found = diagnose(*QUIET, line, "0# 0x000055d5c1c4a1f9 in /opt/tritonserver/bin/tritonserver")
    assert found.root_cause == line and found.crashed is True


def test_a_fatal_c10_line_after_its_error_lines_is_a_crash_never_silence() -> None:
    found = diagnose(
        "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info. workMetaList_.size()=103",
        "[rank1]:[E ProcessGroupNCCL.cpp:1153] [PG 0 Rank 1] ProcessGroupNCCL preparing to dump "
        "debug info.",
        "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 1] ProcessGroupNCCL's watchdog got "
        "stuck for 600 seconds without making progress in monitoring enqueued collectives.",
    )
    assert found.crashed is True and found.error_class == "nccl_comm"
    assert found.root_cause is not None and "Rank 1" in found.root_cause


@pytest.mark.parametrize(
    "lines,root_cause,error_class",
    [
        (
            ["[sgl_kernel] CRITICAL: Could not load any common_ops library!",
             "Attempted locations:", "  /srv/sgl_kernel/sm90/common_ops.abi3.so"],
            "[sgl_kernel] CRITICAL: Could not load any common_ops library!",
            "import_or_version",
        ),
        (
            ["[2025-10-09 11:58:17][DEBUG] llama.cpp abort:1852: GGML_ASSERT(addr <= base + size) "
             "failed"],
            "[2025-10-09 11:58:17][DEBUG] llama.cpp abort:1852: GGML_ASSERT(addr <= base + size) "
            "failed",
            "other",
        ),
        (
            ["llm_load_tensors: ggml ctx size =    1.43 MiB",
             "GGML_ASSERT: llama.cpp/ggml-cuda.cu:727: tensor->view_src == nullptr"],
            "GGML_ASSERT: llama.cpp/ggml-cuda.cu:727: tensor->view_src == nullptr",
            "other",
        ),
        (
            ["FAILED: /srv/DeepEP/build/lib/deep_ep_cpp.so",
             "nvlink error   : Undefined reference to 'nvshmemi_ibgda_device_state_d' in "
             "'internode_ll.o'", "ninja: build stopped: subcommand failed."],
            "nvlink error   : Undefined reference to 'nvshmemi_ibgda_device_state_d' in "
            "'internode_ll.o'",
            "import_or_version",
        ),
        (
            ["*** An error occurred in MPI_Init_thread", "*** on a NULL communicator",
             "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,"],
            "*** An error occurred in MPI_Init_thread",
            "nccl_comm",
        ),
        (
            ["#  Rank  0 Group  0 Pid  42 on host-1 device  0 [0x18] NVIDIA H100 80GB HBM3",
             "host-1: Test NCCL failure common.cu:401 'remote process exited or there was a "
             "network error / '", " .. host-1 pid 42: Test failure common.cu:1234"],
            "host-1: Test NCCL failure common.cu:401 'remote process exited or there was a "
            "network error / '",
            "nccl_comm",
        ),
        (
            ["mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no device code compatible with CUDA "
             "arch 520. ggml-cuda.cu was compiled for: 610,700,750"],
            "mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no device code compatible with CUDA "
            "arch 520. ggml-cuda.cu was compiled for: 610,700,750",
            "unsupported_arch",
        ),
    ],
)  # fmt: skip
def test_failures_that_say_so_in_their_own_tool_s_words(
    lines: list[str], root_cause: str, error_class: str
) -> None:
    found = diagnose(*QUIET, *lines)
    assert found.root_cause == root_cause and found.error_class == error_class
    assert found.crashed is True


def test_tensorflow_s_plugin_registration_noise_is_no_failure() -> None:
    noise = (
        "2025-08-21 01:35:53.031618: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:"
        "9261] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN "
        "when one has already been registered"
    )
    failure = (
        "    ValueError: Length of absolute_action_mask (14) does not match action dimension (7)."
    )
    found = diagnose(noise, *QUIET, *TB, "ValueError: in user code:", "", '    File "/srv/d.py", '
                     "line 9, in f  *", "        raise ValueError()", "", failure)  # fmt: skip
    assert found.root_cause == failure  # the line as the log shows it, indented
    assert silent(diagnose(noise, *QUIET))


def test_ollama_s_runner_exit_yields_to_the_reason_its_scheduler_relays() -> None:
    reason = (
        'time=2025-02-28T13:08:38.052-08:00 level=ERROR source=sched.go:456 msg="error loading '
        'llama server" error="llama runner process has terminated: error loading model: missing '
        "tensor 'output.weight'\""
    )
    found = diagnose(
        *QUIET,
        'time=2025-02-28T13:08:37.862-08:00 level=ERROR source=server.go:421 msg="llama runner '
        'terminated" error="exit status 2"',
        reason,
    )
    assert found.root_cause == reason and found.error_class == "model_loading"


def test_a_llama_cpp_server_back_to_idle_after_failed_requests_did_not_crash() -> None:
    found = diagnose(
        "llama_decode: failed to decode, ret = -1",
        "srv  update_slots: Invalid input batch. i = 0, n_batch = 2048, ret = -1",
        "srv    send_error: task id = 327, error: Invalid input batch.",
        *["srv  update_slots: all slots are idle"] * 3,
    )
    assert found.crashed is False and found.root_cause is None
    assert "went on serving" in found.crashed_reason


def test_a_rust_panic_s_header_is_the_root_cause_and_its_message_the_runner_up() -> None:
    header = "thread '<unnamed>' (1004759) panicked at src/block_engine.rs:148:44:"
    found = diagnose(*QUIET, header, "called `Option::unwrap()` on a `None` value",
                     "stack backtrace:", "   0: __rustc::rust_begin_unwind")  # fmt: skip
    assert found.crashed is True and found.root_cause == header
    assert found.candidates[1].line == "called `Option::unwrap()` on a `None` value"


def test_a_panic_on_a_closed_channel_yields_to_the_error_that_closed_it() -> None:
    error = (
        "2025-02-06T20:17:04.634171Z ERROR mistralrs_core::engine: step - Model failed with "
        'error: DeviceMismatchBinaryOp { lhs: Cuda { gpu_id: 0 }, rhs: Cpu, op: "add" }'
    )
    found = diagnose(*QUIET, error, "thread '<unnamed>' panicked at src/engine/mod.rs:413:25:",
                     "called `Result::unwrap()` on an `Err` value: SendError { .. }")  # fmt: skip
    assert found.root_cause == error


def test_a_bare_exception_name_yields_to_the_same_exception_with_its_message() -> None:
    said = "ImportError: cannot import name '_get_submodules' from 'transformers.modeling_utils'"
    found = diagnose(*QUIET, *TB, "ImportError", ": ImportErrorcannot import name", *TB, said)
    assert found.root_cause == said and found.error_class == "import_or_version"


def test_an_empty_repr_logged_before_its_long_traceback_yields_to_its_last_line() -> None:
    prefix = "ERROR 05-02 09:48:39 [engine.py:160] "
    frames = [prefix + f'  File "/vllm/layer_{n}.py", line {n}, in forward' for n in range(90)]
    found = diagnose(*QUIET, prefix + "AssertionError()", prefix + "Traceback (most recent call "
                     "last):", *frames, prefix + "AssertionError")  # fmt: skip
    assert found.root_cause == prefix + "AssertionError"
    # its traceback naming it by its module path
    qualified = prefix + "vllm.core.block.interfaces.BlockAllocator.NoFreeBlocksError"
    found = diagnose(*QUIET, prefix + "NoFreeBlocksError()", prefix + "Traceback (most recent "
                     "call last):", *frames, qualified)  # fmt: skip
    assert found.root_cause == qualified


def test_a_shell_s_abort_yields_to_the_gpu_memory_fault_before_it() -> None:
    fault = (
        "Memory access fault by GPU node-1 (Agent handle: 0x58935a90) on address 0x7fbe6a804000."
        " Reason: Page not present or supervisor privilege."
    )
    found = diagnose(*QUIET, fault, "HW Exception by GPU node-1 (Agent handle: 0x5b522e50) "
                     "reason :GPU Hang", "./start.sh: line 22:  5255 Aborted   (core dumped) "
                     "vllm serve m")  # fmt: skip
    assert found.root_cause == fault and found.error_class == "cuda_runtime"


def test_a_tool_s_error_about_a_quoted_argument_is_the_failure() -> None:
    refused = (
        'llama-swap-1  | error while handling argument "--flash-attn": error: unkown value for '
        "--flash-attn: '--ctx-size'"
    )
    exit_ = "llama-swap-1  | [WARN] <m> ExitError >> exit status 1, exit code: 1"
    found = diagnose(*QUIET, refused, "llama-swap-1  | usage:", exit_)
    assert found.root_cause == refused and found.error_class == "config_or_args"


def test_a_segfault_beside_the_call_that_failed_yields_to_it() -> None:
    failed = "/nvshmem/src/modules/transport/ibrc/ibrc.cpp:304: NULL value cq creation failed"
    found = diagnose(*QUIET, "[host-1:5489 :0:5489] Caught signal 11 (Segmentation fault: "
                     "address not mapped to object at address 0x38)", failed)  # fmt: skip
    assert found.root_cause == failed and found.error_class == "nccl_comm"


def test_ray_s_actor_death_is_explained_by_the_reason_below_it() -> None:
    reason = (
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
        "Worker exit detail: Worker exits unexpectedly. Worker exits with an exit code None. "
        "The worker may have exceeded K8s pod memory limits."
    )
    found = diagnose(*QUIET, *TB, "ray.exceptions.ActorDiedError: The actor died unexpectedly "
                     "before finishing this task.", "        class_name: TaskRunner",
                     "        pid: 319017", reason)  # fmt: skip
    assert found.root_cause == reason and found.error_class == "oom_host_killed"


@pytest.mark.parametrize(
    "stop",
    ["KeyboardInterrupt", "RuntimeError: DataLoader worker (pid 139941) is killed by signal: "
     "Terminated."],
)  # fmt: skip
def test_a_ctrl_c_or_a_sigterm_echoed_by_wrappers_is_no_crash(stop: str) -> None:
    echo = [f'(APIServer pid=1)   File "/srv/vllm/utils.py", line {n}, in f' for n in range(60)]
    found = diagnose(*QUIET, *TB, stop, *TB, *echo,
                     "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root "
                     "cause above. Failed core proc(s): {}")  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    assert "stopped by an operator" in found.crashed_reason


def test_a_logger_s_prefix_with_no_message_is_no_failure() -> None:
    assert silent(diagnose(*QUIET, "2026-04-29 22:56:18,893 - ERROR - ", *QUIET))


@pytest.mark.parametrize(
    "line",
    [
        "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'",
        "ggml_cuda_host_malloc: failed to allocate 16408.00 MiB of pinned memory: out of memory",
    ],
)
def test_errors_a_library_prints_and_goes_on_past_are_no_failure(line: str) -> None:
    went_on = "llama_kv_cache_init:        CPU KV buffer size = 16408.00 MiB"
    found = diagnose(*QUIET, line, line, went_on, *QUIET)
    assert found.crashed is False and found.root_cause is None


def test_vllm_s_executor_failed_yields_to_the_worker_s_death_before_it() -> None:
    died = (
        "(EngineCore_DP0 pid=478560) ERROR 01-18 22:19:25 [multiproc_executor.py:231] Worker "
        "proc VllmWorker-0 died unexpectedly, shutting down executor."
    )
    prefix = "(EngineCore_DP0 pid=478560) ERROR 01-18 22:19:26 [core.py:868] "
    wrapper = [prefix + line for line in (*TB, "RuntimeError: Executor failed.")]
    found = diagnose(*QUIET, died, *wrapper)
    assert found.root_cause == died


def test_ollama_relaying_its_runner_s_error_yields_to_the_runner_s_own_line() -> None:
    runner = "ggml_gallocr_reserve_n: failed to allocate Metal buffer of size 34681522080"
    relayed = (
        "Error: 500 Internal Server Error: llama runner process has terminated: error:failed to "
        "allocate buffer, size = 33074.89 MiB"
    )
    assert diagnose(relayed, *QUIET, runner).root_cause == runner
    assert diagnose(*QUIET, relayed).root_cause == relayed  # alone, it says the most


def test_ggml_s_abort_with_its_source_location_is_the_failure() -> None:
    abort = "llama.cpp:11968: The current context does not support K-shift"
    found = diagnose(*QUIET, abort, "SIGSEGV: segmentation violation", "PC=0x7f1e3 m=4 sigcode=1")
    assert found.root_cause == abort and found.crashed is True
    warning = "ggml.c:12: warning: unused variable"
    assert diagnose(*QUIET, warning).root_cause is None


def test_a_cuda_check_s_failure_counts_at_any_severity() -> None:
    failed = (
        "2025-04-23T03:35:43.390Z  INFO dynamo_engine_vllm::worker: VLLM: Failed: "
        "/workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'"
    )
    found = diagnose(*QUIET, failed)
    assert found.root_cause == failed and found.error_class == "nccl_comm"
    assert found.crashed is True


@pytest.mark.parametrize(
    "lines,root_cause,error_class",
    [
        (
            ["RuntimeError: Failed to import trl.trainer.gkd_trainer because of the following "
             "error (look up to see its traceback):",
             "/usr/lib/python3/dist-packages/flash_attn_2_cuda.so: undefined symbol: "
             "_ZN3c105ErrorC2ENS_14SourceLocationE"],
            "/usr/lib/python3/dist-packages/flash_attn_2_cuda.so: undefined symbol: "
            "_ZN3c105ErrorC2ENS_14SourceLocationE",
            "import_or_version",
        ),
        (
            ["/usr/bin/ld: libggml.a(mmq.cu.o): in function `ggml_cuda_mul_mat_q':",
             "tmpxft_0000f476-7_mmq.cudafe1.cpp:(.text+0x120): undefined reference to "
             "`mul_mat_q_case<(ggml_type)152>'",
             "collect2: error: ld returned 1 exit status"],
            "tmpxft_0000f476-7_mmq.cudafe1.cpp:(.text+0x120): undefined reference to "
            "`mul_mat_q_case<(ggml_type)152>'",
            "import_or_version",
        ),
        (
            [":1:hip_fatbin.cpp           :687 : 114369963532 us:  No compatible code objects "
             "found for: gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0",
             "zsh: segmentation fault  ./llama-server -m model.gguf"],
            ":1:hip_fatbin.cpp           :687 : 114369963532 us:  No compatible code objects "
            "found for: gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0",
            "unsupported_arch",
        ),
        (
            ["It looks like orte_init failed for some reason; your parallel process is",
             "likely to abort.  There are many reasons that a parallel process can"],
            "It looks like orte_init failed for some reason; your parallel process is",
            "config_or_args",
        ),
    ],
)  # fmt: skip
def test_native_failures_of_this_round_s_shapes(
    lines: list[str], root_cause: str, error_class: str
) -> None:
    found = diagnose(*QUIET, *lines)
    assert found.root_cause == root_cause and found.error_class == error_class
    assert found.crashed is True


def test_a_dataloader_worker_s_error_is_read_under_its_wrapper() -> None:
    cause = (
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method"
    )
    found = diagnose(*QUIET, *TB, "RuntimeError: Caught RuntimeError in DataLoader worker "
                     "process 0.", "Original Traceback (most recent call last):",
                     '  File "/srv/w.py", line 3, in f', "    x.cuda()", cause)  # fmt: skip
    assert found.root_cause == cause and found.error_class == "config_or_args"


def test_an_exception_the_program_said_it_caught_and_went_past_was_lived_through() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.42 GiB."
    caught = "TypeError: DPOConfig.__init__() got an unexpected keyword argument 'max_length'"
    later = [f"[RESULT] Exp {n}: Macro-F1=0.1667" for n in "AB"] + ["[EVAL] Experiment C"] * 4
    found = diagnose(*QUIET, *TB, caught, "[WARN] Exp E training failed", *later, *TB, oom)
    assert (found.root_cause, found.error_class) == (oom, "oom_gpu")
    # (without its word that it went on, the first failure of the burst is why it stopped)
    found = diagnose(*QUIET, *TB, caught, *later, *TB, oom)
    assert found.root_cause == caught


def test_an_exception_its_logger_reported_as_a_warning_was_lived_through() -> None:
    fatal = (
        "(EngineCore pid=15) ERROR 06-23 15:43:19 [core.py:1195] RuntimeError: Could not find "
        "nvcc and default cuda_home='/usr/local/cuda' doesn't exist"
    )
    warned = [f"(EngineCore pid=15) WARNING 06-23 15:43:18 [import_utils.py:408] {line}"
              for line in (*TB, "AssertionError")]  # fmt: skip
    info = [f"(EngineCore pid=15) INFO 06-23 15:43:18 [gpu.py:1] step {n}" for n in range(8)]
    assert diagnose(*warned, *info, fatal).root_cause == fatal
    # A viewer that stamps every line alike says nothing by it.
    stamped = [f"INFO 2026-02-27 13:00:0{n}.000 UTC {line}" for n, line in enumerate(TB)]
    found = diagnose(*stamped, "INFO 2026-02-27 13:00:05.000 UTC AssertionError")
    assert found.crashed is True and found.root_cause is not None


def test_an_allocator_s_warning_yields_to_the_failure_it_caused() -> None:
    failed = (
        "2023-06-21 19:38:15.227864: E external/xla/pjrt/pjrt_stream_executor_client.cc:2036] "
        "Execution of replica 0 failed: Resource exhausted: Out of memory while trying to "
        "allocate 1477187472 bytes."
    )
    found = diagnose(*QUIET, "2023-06-21 19:38:15.226954: W external/tsl/bfc_allocator.cc:457] "
                     "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.38GiB", failed,
                     *TB)  # fmt: skip
    assert found.root_cause == failed and found.error_class == "oom_gpu"


def test_pytorch_s_glog_prefix_with_a_path_is_peeled() -> None:
    prefix = (
        "[rank2]:E0716 18:21:22.792000 132331 torch/_inductor/runtime/triton_heuristics.py:874] "
    )
    quota = (
        "OSError: [Errno 122] Disk quota exceeded: '/home/user/.cache/vllm/torch_compile_cache/x'"
    )
    found = diagnose(*QUIET, *[prefix + line for line in (*TB, quota)])
    assert found.root_cause == prefix + quota and found.error_class == "config_or_args"


def test_an_exception_that_goes_on_to_quote_a_tool_yields_to_the_tool_s_failure() -> None:
    prefix = "E0303 11:40:40.742000 713 site-packages/torch/_inductor/runtime/x.py:533] "
    ptxas = prefix + "ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'"
    lines = ("RuntimeError: Internal Triton PTX codegen error", "`ptxas` stderr:")
    found = diagnose(*QUIET, *[prefix + line for line in lines], ptxas, prefix + "Repro command: x")
    assert found.root_cause == ptxas and found.error_class == "unsupported_arch"


def test_threads_writing_one_failure_into_each_other_yield_to_a_clean_copy() -> None:
    where = "/src/ggml/iqk/fa/iqk_fa_templates.h:1146: "
    clean = where + "GGML_ASSERT(fms.S[j] > 0) failed"
    garbled = where + where + "GGML_ASSERT(fms.S[j] > 0) failed" + where + "GGML_ASSERT(fms."
    assert diagnose(*QUIET, garbled, clean, clean).root_cause == clean


def test_mesa_s_amdgpu_out_of_memory_is_why_the_device_was_lost() -> None:
    oom = ".radv/amdgpu: Not enough memory for command submission."
    found = diagnose(*QUIET, oom, "llama_model_load: error loading model: vk::Queue::submit: "
                     "ErrorDeviceLost", "main: exiting due to model loading error")  # fmt: skip
    assert found.root_cause == oom and found.error_class == "oom_gpu"


def test_an_exception_a_raised_line_quotes_is_the_failure_whatever_its_name() -> None:
    quoted = (
        "OutOfResources: out of resource: shared memory, Required: 196608, Hardware limit: "
        "65536. Reducing block sizes or `num_stages` may help."
    )
    found = diagnose(*QUIET, *TB, "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' "
                     "raised:", quoted, "", "Set TORCH_LOGS=\"+dynamo\" for more")  # fmt: skip
    assert found.root_cause == quoted and found.error_class == "unsupported_arch"


def test_a_request_handler_s_exception_under_uvicorn_is_no_crash() -> None:
    found = diagnose(
        "INFO:     Application startup complete.",
        'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        "ERROR:    Exception in ASGI application",
        *TB,
        "ValueError: Out of range float values are not JSON compliant",
        *['INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK' for _ in range(3)],
    )
    assert found.crashed is False and found.root_cause is None


def test_a_request_handler_s_exception_chain_ending_the_log_under_uvicorn_is_no_crash() -> None:
    # The log cut right after it: Uvicorn answered that request with a 500 and lives on,
    # whatever the handler's exception was and however many were chained or grouped in it.
    asgi = "ERROR:    Exception in ASGI application"
    during = "During handling of the above exception, another exception occurred:"
    failed = "OSError: /root/.cache/xgrammar.so: cannot open shared object file"
    found = diagnose(*QUIET, asgi, *TB, failed)
    assert found.crashed is False and found.root_cause is None
    # (aiohttp's word on a handler that failed, the same)
    aiohttp = (
        "[2025-03-24 14:30:04] | ERROR | aiohttp.server.log_exception | web_protocol.py:451 | "
        "Error handling request from 127.0.0.1"
    )
    found = diagnose(*QUIET, aiohttp, *TB, "KeyError: 'qwen'")
    assert found.crashed is False and found.root_cause is None
    group = ["  + Exception Group Traceback (most recent call last):",
             "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
             "    | AttributeError: 'bytes' object has no attribute 'get'",
             "    +------------------------------------"]  # fmt: skip
    raised = "AttributeError: 'bytes' object has no attribute 'get'"
    found = diagnose(*QUIET, asgi, *group, "", during, "", *TB, raised)
    assert found.crashed is False and found.root_cause is None
    # The engine's own loop failing inside the request's traceback is the engine's failure.
    engine = ['  File "/v/vllm/engine/async_llm_engine.py", line 600, in run_engine_loop',
              "    result = task.result()"]  # fmt: skip
    found = diagnose(*QUIET, asgi, *TB, *engine, "AssertionError")
    assert found.crashed is True and found.root_cause == "AssertionError"
    # So is a GPU that faulted or ran out under the request: nothing is left to serve with.
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    found = diagnose(*QUIET, asgi, *TB, oom)
    assert found.crashed is True and found.root_cause == oom
    # A failure logged after the request's: the log goes on, and the server died.
    fatal = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert diagnose(*QUIET, asgi, *TB, failed, fatal).crashed is True


def test_a_severity_word_after_a_traceback_s_frames_is_no_exception() -> None:
    dump = ["Fatal Python error: Segmentation fault", "", "Thread 0x00007f (most recent call "
            "first):", '  File "/srv/a.py", line 9 in run']  # fmt: skip
    warning = "[2025-03-07 11:53:29] WARNING:  Invalid HTTP request received."
    found = diagnose(*QUIET, *dump, warning)
    assert found.root_cause == "Fatal Python error: Segmentation fault"


@pytest.mark.parametrize(
    "killed,why",
    [
        ("/var/spool/slurmd/job8948752/slurm_script: line 47: 1613313 Killed    python train.py",
         "slurmstepd: error: Detected 1 oom_kill event in StepId=8948752.batch. Some of the step "
         "tasks have been OOM Killed."),
        ("Mar 12 10:00:01 host-1 systemd[1]: llama.service: Failed with result 'oom-kill'.",
         "Mar 12 10:00:01 host-1 systemd[1]: llama.service: A process of this unit has been "
         "killed by the OOM killer."),
    ],
)  # fmt: skip
def test_a_kill_yields_to_the_line_beside_it_that_says_the_oom_killer_did_it(
    killed: str, why: str
) -> None:
    for lines in ([killed, why], [why, killed]):
        found = diagnose(*QUIET, *lines)
        assert found.root_cause == why and found.error_class == "oom_host_killed", lines


def test_llama_cpp_s_refused_mlock_is_lived_through() -> None:
    failed = " llama_model_load: error loading model: read error: Bad address"
    found = diagnose(*QUIET, " warning: failed to mlock 1555828736-byte buffer (after previously "
                     "locking 0 bytes): Cannot allocate memory", *QUIET[:3], failed)  # fmt: skip
    assert found.root_cause == failed


def test_an_exception_s_repr_yields_to_its_traceback_s_own_line() -> None:
    said = "ERROR 04-23 02:30:31 [engine.py:160] ValueError: Sampling parameters are missing."
    logged = "ERROR 04-23 02:30:31 [engine.py:160] ValueError('Sampling parameters are missing.')"
    frames = [f'ERROR 04-23 02:30:31 [engine.py:160]   File "/v/engine.py", line {n}, in step'
              for n in range(30)]  # fmt: skip
    found = diagnose(*QUIET, logged, "ERROR 04-23 02:30:31 [engine.py:160] Traceback (most "
                     "recent call last):", *frames, said)  # fmt: skip
    assert found.root_cause == said


def test_a_wrapper_quoting_the_error_is_read_before_one_that_quotes_nothing() -> None:
    quoting = (
        "(EngineCore_DP0 pid=9) ERROR 01-13 14:23:52 [core.py:881] RuntimeError: Worker failed "
        "with error 'Encoder cache miss for 9def2746.', please check the stack trace above for "
        "the root cause"
    )
    found = diagnose(*QUIET, "(EngineCore_DP0 pid=9) ERROR 01-13 14:23:52 [core.py:881] "
                     "EngineCore encountered a fatal error.", *TB, quoting)  # fmt: skip
    assert found.root_cause == quoting


def test_ascend_s_unknown_application_exception_is_a_wrapper() -> None:
    failed = "OSError: We couldn't connect to 'https://huggingface.co' to load the files."
    found = diagnose(*QUIET, *TB, failed, "[ERROR] 2025-07-03-15:27:10 (PID:333665, Device:-1, "
                     "RankID:-1) ERR99999 UNKNOWN applicaiton exception")  # fmt: skip
    assert found.root_cause == failed


@pytest.mark.parametrize("number", ["34", "517 "])
def test_an_editor_s_line_numbers_before_a_rank_prefix_are_peeled(number: str) -> None:
    failed = f"{number}[rank1]: AssertionError: data_iterator is None vp_stage: None"
    found = diagnose(f"{number}[rank1]: Traceback (most recent call last):",
                     f'{number}[rank1]:   File "/x/pretrain.py", line 3, in get_batch',
                     f"{number}[rank1]:     return get_batch_func(data_iterator, vp_stage)",
                     failed)  # fmt: skip
    assert found.root_cause == failed and found.crashed is True


def test_a_transfer_failed_for_one_request_is_no_crash() -> None:
    failed = (
        "(Worker_TP1 pid=7) ERROR 03-31 02:49:30 [mooncake_connector.py:547] Mooncake transfer "
        "failed for request chatcmpl-ba310df4-f600-441c"
    )
    found = diagnose(*QUIET, failed)
    assert found.crashed is False and found.root_cause is None


def test_tensorrt_llm_s_executor_failing_one_request_is_no_crash() -> None:
    found = diagnose(*QUIET, "E0624 21:46:14.504165488  296 briton.cpp:205]  Executor "
                     "requestId=235 failed with error: Encountered an error in forwardAsync "
                     "function: [TensorRT-LLM][ERROR] Assertion failed: decoderFinishedEvent "
                     "must be nullopt.")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_an_http_exception_raised_to_answer_a_request_is_no_crash() -> None:
    raised = "fastapi.exceptions.HTTPException: 500: Briton error during inference"
    found = diagnose(*QUIET, *TB, raised, "Handled request: POST /v1/chat/completions HTTP/1.1 500")
    assert found.crashed is False and found.root_cause is None


def test_a_logged_failure_yields_to_the_exception_it_quotes_below() -> None:
    raised = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 19.21 GiB"
    found = diagnose(*QUIET, "2025-08-14 01:32:04,725 - ERROR - Training failed: CUDA out of "
                     "memory. Tried to allocate 19.21 GiB", *TB, raised)  # fmt: skip
    assert found.root_cause == raised and found.error_class == "oom_gpu"


def test_vllm_s_prefix_cut_at_its_front_is_peeled() -> None:
    failed = (
        "[multiproc_executor.py:492] ValueError: Free memory on device (31.44/47.38 GiB) on "
        "startup is less than desired GPU memory utilization (0.95, 45.01 GiB)."
    )
    found = diagnose(*QUIET, failed, "ERROR 06-30 13:53:19 [core.py:515] EngineCore failed to "
                     "start.")  # fmt: skip
    assert found.root_cause == failed and found.error_class == "oom_gpu"


def test_a_trainer_s_rank_tag_glued_to_its_severity_is_peeled() -> None:
    prefix = "[2026-12-06 13:48:50,930][rank0][ERROR] "
    failed = f"{prefix}RuntimeError: Error(s) in loading state_dict for LM:"
    found = diagnose(
        *QUIET, *(f"{prefix}{line}" for line in TB), failed,
        f"{prefix}\tMissing key(s) in state_dict: \"embed.weight\".",
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (failed, "model_loading")
    # (a library's own tag before its severity is its word, and stays)
    turbomind = "[TM][ERROR] CUDA runtime error: an illegal memory access was encountered"
    assert diagnose(*QUIET, turbomind).root_cause == turbomind


def test_vllm_s_prefix_with_its_module_s_path_is_peeled() -> None:
    # (from vLLM 0.11: its traceback's frames are frames, and its exception the failure)
    prefix = "(EngineCore_DP0 pid=2290876) ERROR 12-17 07:34:09 [v1/engine/core.py:710] "
    found = diagnose(
        *QUIET, f"{prefix}EngineCore encountered a fatal error.",
        *(f"{prefix}{line}" for line in TB), f"{prefix}RuntimeError: CUDA error: out of memory",
    )  # fmt: skip
    assert found.root_cause == f"{prefix}RuntimeError: CUDA error: out of memory"
    assert [line.line for line in found.candidates if "File" in line.line] == []


def test_a_frame_s_source_line_cut_from_its_frame_is_code() -> None:
    wrapped = (
        "ERROR 06-14 21:52:16 [core.py:515] torch._inductor.exc.InductorError: "
        "CalledProcessError: Command '['gcc', 'main.c']' returned non-zero exit status 1."
    )
    found = diagnose(
        "ERROR 06-14 21:52:16 [core.py:515]     subprocess.check_call(cc_cmd)",
        'ERROR 06-14 21:52:16 [core.py:515]   File "/usr/lib64/python3.12/subprocess.py", '
        "line 413, in check_call",
        "ERROR 06-14 21:52:16 [core.py:515]     raise CalledProcessError(retcode, cmd)",
        wrapped,
        "ERROR 06-14 21:52:16 [core.py:515] Set TORCHDYNAMO_VERBOSE=1 for the internal stack "
        "trace (please do this especially if you're reporting a bug to PyTorch).",
    )
    assert found.root_cause == wrapped


def test_an_exception_asyncio_s_loop_logged_in_a_callback_is_lived_through() -> None:
    found = diagnose(*QUIET, "Exception in callback StreamingSemaphore.release()",
                     "handle: <Handle StreamingSemaphore.release()>", *TB,
                     "asyncio.exceptions.InvalidStateError: invalid state")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_slurm_cancelling_a_whole_job_with_no_reason_is_an_operator_s_stop() -> None:
    found = diagnose(*QUIET, "slurmstepd-host-1: error: *** JOB 1495 ON host-1 CANCELLED AT "
                     "2026-04-28T15:07:03 ***")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_slurm_cancelling_a_job_after_its_tasks_exited_with_errors_stops_it_for_them() -> None:
    failed = "ModuleNotFoundError: No module named 'nemo_gym'"
    exits = [f"srun: error: host-{n}: task {n - 1}: Exited with exit code 1" for n in (1, 2)]
    cancelled = "slurmstepd: error: *** JOB 9485900 ON host-1 CANCELLED AT 2026-02-16T15:36:51 ***"
    found = diagnose(*QUIET, *TB, failed, *(QUIET * 6), *exits, cancelled)
    assert found.crashed is True and found.root_cause == failed
    # srun's word on a task's exit is no failure of its own: the exception above it is, even
    # where the exception's message goes on to a next line.
    failed = "RuntimeError: Waited for 60 seconds but could not find submitted jobs in path:"
    found = diagnose(*QUIET, *TB, failed,
                     "/work/logs/11806565_submitted.pkl", exits[0])  # fmt: skip
    assert found.root_cause == failed


def test_slurm_cancelling_a_step_with_no_reason_is_no_operator_s_stop() -> None:
    found = diagnose(*QUIET, "slurmstepd: error: *** STEP 6053.0 ON host-1 CANCELLED AT "
                     "2024-04-23T12:18:08 ***")  # fmt: skip
    assert found.crashed is not False or found.root_cause is not None


def test_an_assertion_in_argument_validation_is_the_arguments() -> None:
    found = diagnose(*QUIET, "Traceback (most recent call last):",
                     '  File "/m/megatron/training/arguments.py", line 221, in validate_args',
                     "    assert not args.bf16", "AssertionError")  # fmt: skip
    assert found.root_cause == "AssertionError" and found.error_class == "config_or_args"


def test_a_bare_exception_yields_to_the_next_of_its_chain_that_says_something() -> None:
    said = "TimeoutError: RPC call to execute_model timed out."
    found = diagnose(*QUIET, *TB, "TimeoutError", "",
                     "The above exception was the direct cause of the following exception:", "",
                     *TB, said)  # fmt: skip
    assert found.root_cause == said and found.error_class == "timeout_or_hang"
    # An object's default repr as the message quotes nothing either.
    said = "KeyError: 'Cannot find `mm_limits` for model=/models/Qwen2-VL-7B. Did you forget?'"
    found = diagnose(*QUIET, *TB, "KeyError: <vllm.config.ModelConfig object at 0x7fec41821900>",
                     "", "The above exception was the direct cause of the following exception:",
                     "", *TB, said)  # fmt: skip
    assert found.root_cause == said


def test_ninja_s_exit_yields_to_the_compiler_s_error_printed_after_it() -> None:
    error = (
        "/src/sgl_kernel/source_location.h:8:10: fatal error: version: No such file or directory"
    )
    found = diagnose(*QUIET, *TB, "RuntimeError: ninja exited with status 1", "",
                     "[1/2] /usr/local/cuda/bin/nvcc -c rope.cu", error,
                     "ninja: build stopped: subcommand failed.")  # fmt: skip
    assert found.root_cause == error and found.error_class == "import_or_version"


def test_sglang_s_error_in_a_request_answered_with_a_500_is_no_crash() -> None:
    found = diagnose(*QUIET, 'INFO:     59.82.59.90:0 - "POST /v1/chat/completions HTTP/1.1" 500 '
                     "Internal Server Error", "Error in request: ", *TB,
                     "NotImplementedError")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_request_s_validation_error_under_uvicorn_answered_500_is_no_crash() -> None:
    found = diagnose(*QUIET, 'INFO:     172.20.0.1:40106 - "POST /v1/chat/completions HTTP/1.1" '
                     "500 Internal Server Error", "ERROR:    Exception in ASGI application", *TB,
                     "pydantic_core._pydantic_core.ValidationError: 3 validation errors for "
                     "ChatCompletionRequest")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_glibc_s_heap_check_is_the_failure_not_torchrun_s_exit_code() -> None:
    found = diagnose(*QUIET, "free(): corrupted unsorted chunks",
                     "E0410 08:46:30.329000 292734 torch/distributed/elastic/multiprocessing/api.py"
                     ":874] failed (exitcode: -6) local_rank: 0 (pid: 293009) of binary: "
                     "/usr/bin/python")  # fmt: skip
    assert found.root_cause == "free(): corrupted unsorted chunks"


def test_kubectl_s_pod_prefix_is_peeled() -> None:
    failed = (
        "[pod/host-1/axlearn-fuji-model] AttributeError: module 'jax._src.tree_util' has no "
        "attribute '_registry_with_keypaths'"
    )
    found = diagnose(*QUIET, failed)
    assert found.root_cause == failed and found.error_class == "import_or_version"


def test_a_skipped_extension_import_is_lived_through() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB."
    found = diagnose("Skipping import of cpp extensions: /x/torchao/_C.abi3.so: undefined symbol: "
                     "_ZN3c105ErrorC2E", *QUIET, *TB, oom)  # fmt: skip
    assert found.root_cause == oom


@pytest.mark.parametrize(
    "frames,error_class",
    [
        (["  File \"/sglang/srt/layers/linear.py\", line 1254 in weight_loader",
          "  File \"/sglang/srt/models/qwen3.py\", line 318 in load_weights"], "model_loading"),
        (["#3  0x7f in ncclMemoryPoolAlloc() from /usr/lib/libnccl.so.2",
          "#4  0x7f in ncclAllGather() from /usr/lib/libnccl.so.2"], "nccl_comm"),
    ],
)  # fmt: skip
def test_a_signal_s_fault_is_classed_by_the_frames_it_died_in(
    frames: list[str], error_class: str
) -> None:
    found = diagnose(*QUIET, "Fatal Python error: Bus error", "",
                     "Current thread 0x000079795dbe4740 (most recent call first):",
                     *frames)  # fmt: skip
    assert found.root_cause == "Fatal Python error: Bus error"
    assert found.error_class == error_class


def test_a_native_library_s_error_records_after_the_server_was_ready_are_lived_through() -> None:
    found = diagnose("[2025-05-28 06:30:01] The server is fired up and ready to roll!", *QUIET,
                     "E0528 06:32:54.247958 735764 tcp_transport.cpp:170] Session::readBody "
                     "failed. Error: End of file (value: 2)",
                     "E0528 06:32:54.248001 735764 transfer_engine.cpp:412] Failed to complete "
                     "transfer: connection reset")  # fmt: skip
    assert found.crashed is False and found.root_cause is None and found.ready is True


def test_rsyslog_s_escaped_colours_and_a_custom_logger_prefix_are_peeled() -> None:
    failed = (
        "Apr  3 17:38:57 host-1 langmodel[140343]: #033[1;36m(VllmWorker rank=3 pid=140343)"
        "#033[0;0m OSError: /root/.cache/xgrammar/xgrammar.so: cannot open shared object file"
    )
    found = diagnose(*QUIET, failed)
    assert found.root_cause == failed.replace("#033[1;36m", "").replace("#033[0;0m", "")
    assert found.error_class == "import_or_version"
    custom = (
        "[2025-03-05 14:28:45,820] [ERROR] [MainThread] [vllm.worker.worker_base] >>> "
        "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
        '"../aten/src/ATen/cuda/CUDAContext.cpp":49'
    )
    found = diagnose(*QUIET, custom)
    assert found.root_cause == custom and found.error_class == "config_or_args"


def test_tgi_s_exit_with_the_step_s_name_yields_to_why_the_step_failed() -> None:
    killed = (
        "ERROR download: text_generation_launcher: Download process was signaled to shutdown "
        "with signal 9: "
    )
    found = diagnose(*QUIET, killed, "Error: DownloadError")
    assert found.root_cause == killed and found.error_class == "oom_host_killed"


def test_sycl_s_catch_site_yields_to_the_message_before_it() -> None:
    said = (
        "The number of work-items in each dimension of a work-group cannot exceed {512, 512, 512}"
        " for this device"
    )
    found = diagnose(*QUIET, said, "Exception caught at file:/app/ggml/src/ggml-sycl/ggml-sycl.cpp"
                     ", line:3600")  # fmt: skip
    assert found.root_cause == said and found.error_class == "unsupported_arch"


def test_no_usable_gpu_with_its_option_ignored_is_lived_through() -> None:
    found = diagnose("ggml_cuda_init: failed to initialize MUSA: system has unsupported display "
                     "driver / musa driver combination",
                     "warning: no usable GPU found, --gpu-layers option will be ignored",
                     *QUIET)  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_logged_failure_reaches_its_exception_after_a_long_traceback() -> None:
    raised = "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"
    frames = [f'  File "/v/loader.py", line {n}, in load' for n in range(120)]
    found = diagnose(*QUIET, "ERROR 03-10 21:30:59 engine.py:400] Error while deserializing "
                     "header: HeaderTooLarge", "Traceback (most recent call last):", *frames,
                     raised)  # fmt: skip
    assert found.root_cause == raised and found.error_class == "model_loading"


def test_cmake_s_missing_package_under_its_error_header_is_the_failure() -> None:
    missing = "  Could NOT find MPI (missing: MPI_C_FOUND MPI_CXX_FOUND)"
    found = diagnose(*QUIET, "CMake Error at /usr/share/cmake/Modules/FindPackageHandleStandardArgs"
                     ".cmake:230 (message):", missing, "Call Stack (most recent call first):", *TB,
                     "subprocess.CalledProcessError: Command 'cmake -DBUILD_PYT=ON' returned "
                     "non-zero exit status 1.")  # fmt: skip
    assert found.root_cause == missing and found.error_class == "import_or_version"


def test_a_rich_traceback_s_border_is_peeled() -> None:
    failed = "│ ValueError: 'type' must be a string "
    found = diagnose(*QUIET, "│ /usr/lib/python3.10/site-packages/x.py:12 in f", failed)
    assert found.root_cause == failed and found.crashed is True


@pytest.mark.parametrize(
    "noise",
    [
        "ERROR 05-28 19:38:44 [dump_input.py:68] Dumping input data",
        "[host-1:101829] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 2198",
        "ggml_backend_sched_alloc_splits: failed to allocate graph, reserving "
        "(backend_ids_changed = 1)",
    ],
)
def test_routine_records_at_error_severity_yield_to_the_failure(noise: str) -> None:
    failed = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    found = diagnose(*QUIET, noise, *TB, failed)
    assert found.root_cause == failed


def test_ggml_s_abort_in_its_sources_counts_whatever_case_it_starts_in() -> None:
    failed = (
        "llama.cpp/ggml/src/ggml-backend.cpp:748: pre-allocated tensor (blk.0.time_mix_w2.weight)"
        " in a buffer (CUDA0_Split) that cannot run the operation (RESHAPE)"
    )
    found = diagnose(*QUIET, failed, "Aborted (core dumped)")
    assert found.root_cause == failed


def test_the_op_a_backend_lacks_is_read_before_the_assert_on_its_result() -> None:
    missing = "ggml_backend_cuda_graph_compute: op not supported norm-0 (RMS_NORM_BACK)"
    found = diagnose(*QUIET, missing, "/src/llama.cpp/ggml/src/ggml-cuda.cu:2636: GGML_ASSERT(ok) "
                     "failed")  # fmt: skip
    assert found.root_cause == missing


def test_clang_s_linker_summary_yields_to_the_linker_s_own_error() -> None:
    undefined = "Undefined symbols for architecture arm64:"
    found = diagnose(*QUIET, undefined, '  "_ggml_backend_metal_init", referenced from:',
                     "ld: symbol(s) not found for architecture arm64",
                     "clang: error: linker command failed with exit code 1 (use -v to see "
                     "invocation)")  # fmt: skip
    assert found.root_cause == undefined and found.error_class == "import_or_version"


def test_apple_s_failed_assertion_and_zsh_s_abort_report_are_failures() -> None:
    failed = (
        "-[MTLComputePipelineDescriptorInternal setComputeFunction:withType:]:722: failed "
        "assertion `computeFunction must not be nil.'"
    )
    found = diagnose(*QUIET, failed, "zsh: abort      ./llama-cli -m model.gguf")
    assert found.root_cause == failed and found.crashed is True
    found = diagnose(*QUIET, "zsh: abort      ./llama-cli -m model.gguf")
    assert found.crashed is True and found.root_cause is not None


def test_a_segfault_in_a_collective_s_python_frames_is_a_communication_fault() -> None:
    found = diagnose(*QUIET, "Fatal Python error: Segmentation fault", "",
                     "Current thread 0x00007f4858f86740 (most recent call first):",
                     '  File "/sglang/srt/distributed/parallel_state.py", line 414 in all_reduce',
                     '  File "/sglang/srt/layers/linear.py", line 1254 in forward')  # fmt: skip
    assert found.error_class == "nccl_comm"


def test_llama_cpp_s_examples_failing_to_eval_have_failed() -> None:
    failed = "main : failed to eval"
    found = diagnose("llama_new_context_with_model: n_ctx      = 256", *QUIET, failed)
    assert found.crashed is True and found.root_cause == failed
    # only at a line's start: a server's per-request word is no stop
    assert silent(diagnose(*QUIET, "srv  process: the request failed to evaluate tokens"))


def test_a_front_end_that_answers_a_request_with_its_exception_has_not_crashed() -> None:
    prefix = "ERROR 03-03 19:06:24 [serving_chat.py:664] "
    handler = prefix + "Error in chat completion stream generator."
    raised = prefix + "RuntimeError: Expected there to be 1 prompt updates corresponding to 1 items"
    frames = [prefix + "Traceback (most recent call last):",
              prefix + '  File "/vllm/v1/engine/async_llm.py", line 208, in _generate',
              prefix + "    q = await self.add_request("]  # fmt: skip
    found = diagnose(*QUIET, handler, *frames, raised)
    assert found.crashed is False and found.root_cause is None
    assert "request refused" in found.crashed_reason
    # The exception only says the engine behind it is gone: the engine's failure stands.
    dead = prefix + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
    assert diagnose(*QUIET, handler, *frames, dead).crashed is True


def test_an_error_the_server_went_on_past_logged_again_at_the_end_is_lived_through_again() -> None:
    failed = ["decode: failed to initialize batch", "llama_decode: failed to decode, ret = -1"]
    went_on = ["srv  update_slots: all slots are idle",
               "srv  log_server_r: done request: POST /completion 127.0.0.1 200",
               "slot launch_slot_: id  0 | task 12 | processing task"]  # fmt: skip
    found = diagnose(*QUIET, *failed, *went_on, *failed)
    assert found.crashed is False and found.root_cause is None
    # Something else after it is a failure of its own.
    fatal = 'GGML_ASSERT: ggml-cuda.cu:100: !"CUDA error"'
    assert diagnose(*QUIET, *failed, *went_on, *failed, fatal).root_cause == fatal
    # An error it said it would retry, logged again, is the retries running out.
    timed_out = (
        "[E1120 21:53:06.140024850 socket.cpp:1019] [c10d] The client socket has timed "
        "out after 600000ms while trying to connect to (127.0.0.1, 30349)."
    )
    retried = (
        "[W1120 21:53:06.140024850 TCPStore.cpp:330] [c10d] TCP client failed to connect"
        "/validate to host 127.0.0.1:30349 - retrying (try=0, timeout=600000ms)"
    )
    found = diagnose(*QUIET, timed_out, retried, *QUIET, timed_out)
    assert found.crashed is True and found.root_cause == timed_out
    # Retried once and the log ends in the retry (nothing after it but the native stack): the
    # process hangs there, and the timeout says why.
    stack = [
        "Exception raised from throwTimeoutError at ../torch/csrc/distributed/c10d/socket.cpp:1021"
        " (most recent call first):",
        *(f"frame #{n}: <unknown function> + 0x15eb578 (0x7c73be1eb578 in libtorch_cpu.so)"
          for n in range(12)),
    ]  # fmt: skip
    found = diagnose(*QUIET, timed_out, retried, *stack)
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        timed_out,
        "timeout_or_hang",
    )
    # ...but the process carrying on after the retry lived through it.
    found = diagnose(*QUIET, timed_out, retried, *stack, *QUIET)
    assert found.crashed is False and found.root_cause is None
    # The same error printed by each rank is one failure, not one lived through.
    found = diagnose(*QUIET, *failed, *QUIET, *failed)
    assert found.crashed is True and found.root_cause == failed[0]


def test_an_assert_that_a_handle_exists_yields_to_the_failure_to_create_it() -> None:
    failed = "ggml-hex: failed to open session 0 : error 0x72"
    asserted = "C:/llama.cpp/ggml/src/ggml-backend.cpp:569: GGML_ASSERT(device) failed"
    found = diagnose(*QUIET, "ggml-hex: failed to query HTP version (err -1) defaulting to v73",
                     "ggml-hex: allocating new session: HTP0", failed,
                     "ggml-hex: releasing session: HTP0", "ggml-hex: failed to create device/"
                     "session 0", asserted)  # fmt: skip
    assert found.root_cause == failed
    # An assert of a condition, or nothing said to have failed before it: the assert.
    assert diagnose(*QUIET, failed, "ggml.c:12: GGML_ASSERT(n > 0) failed").root_cause != failed
    assert diagnose(*QUIET, asserted).root_cause == asserted


def test_a_traceback_stamped_warning_on_every_line_is_lived_through() -> None:
    stamp = "(EngineCore pid=24969) WARNING 06-25 16:32:09 [import_utils.py:408] "
    found = diagnose(*QUIET, *(stamp + line for line in TB),
                     stamp + "ImportError: libnvrtc.so.13: cannot open shared object file",
                     *QUIET)  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    # A logger that stamps all it captures INFO says nothing by it: an exception still fails.
    stamp = "2024-11-25 12:44:20,292 - sglang - INFO - "
    raised = "IndexError: list index out of range"
    found = diagnose(*(stamp + line for line in (*QUIET, *TB, raised)))
    assert found.crashed is True and found.root_cause == stamp + raised


def test_pydantic_s_line_for_a_refused_input_is_the_root_cause() -> None:
    refused = (
        "  Input should be a valid string [type=string_type, input_value=20251001065017, "
        "input_type=int]"
    )
    validation = [
        *TB,
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
        "wandb_run_id",
        refused,
        "    For further information visit https://errors.pydantic.dev/2.11/v/string_type",
    ]
    found = diagnose(*QUIET, *validation)
    assert found.root_cause == refused and found.error_class == "config_or_args"
    # A request's body refused under Uvicorn: that request's, lines and all.
    found = diagnose(*QUIET, "ERROR:    Exception in ASGI application", *validation, *QUIET)
    assert found.crashed is False and found.root_cause is None


def test_ascend_s_inner_error_yields_to_the_device_s_words_under_it() -> None:
    detail = (
        "EZ9999: 2024-10-31-12:08:42.276.420  The error from device(0), serial number is 3, "
        "there is an aivec error, core id is 0, error code = 0x10"
    )
    found = diagnose(*QUIET, "app/ggml/src/ggml-cann.cpp:63: CANN error",
                     "CANN error: EZ9999: Inner Error!", detail,
                     "        Kernel task happen error, retCode=0x31, [vector core exception].",
                     "Aborted (core dumped)")  # fmt: skip
    assert found.root_cause == detail and found.error_class == "cuda_runtime"
    # with the backend's source location first, on the same line
    found = diagnose(*QUIET, "/src/ggml/src/ggml-cann/ggml-cann.cpp:63: CANN error: E89999: "
                     "Inner Error!", detail, "Aborted (core dumped)")  # fmt: skip
    assert found.root_cause == detail


def test_a_line_a_reporter_set_in_markdown_bold_is_read_as_the_line() -> None:
    raised = "**KeyError: 'model.layers.3.mlp.shared_experts.down_proj.weight_scale'**"
    found = diagnose(*QUIET, *TB, raised)
    assert found.crashed is True and found.root_cause == raised


def test_ray_s_task_error_without_its_cause_s_name_yields_to_the_task_s_exception() -> None:
    raised = "Exception: Request error for 5 times, returning None. Please check the API server."
    found = diagnose(*QUIET, "ray.exceptions.RayTaskError: ray::remote_rm_fn_ray() (pid=25348, "
                     "ip=0.0.0.0)", '  File "/openrlhf/utils/remote_rm_utils.py", line 45, in f',
                     "    return remote_rm_fn(api_url)", raised)  # fmt: skip
    assert found.root_cause == raised


def test_jax_s_notice_that_it_hid_frames_is_not_the_failure_it_chains_to() -> None:
    cudnn = (
        "E0611 08:35:28.413281  146213 cuda_dnn.cc:535] Could not create cudnn handle: "
        "CUDNN_STATUS_INTERNAL_ERROR"
    )
    found = diagnose(*QUIET, cudnn, *TB, "jaxlib.xla_extension.XlaRuntimeError: "
                     "FAILED_PRECONDITION: DNN library initialization failed.", "",
                     "The above exception was the direct cause of the following exception:", "",
                     "jax.errors.SimplifiedTraceback: For simplicity, JAX has removed its internal "
                     "frames from the traceback of the following exception. Set "
                     "JAX_TRACEBACK_FILTERING=off to include these.")  # fmt: skip
    assert found.root_cause is not None and "SimplifiedTraceback" not in found.root_cause


def test_statistics_that_count_no_work_are_no_proof_the_engine_lived_through_a_failure() -> None:
    raised = "ModuleNotFoundError: No module named 'pyarrow'"
    idle = (
        "INFO 04-08 04:00:35 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs"
    )
    found = diagnose(*QUIET, *TB, raised, *[idle] * 6)
    assert found.crashed is True and found.root_cause == raised
    busy = idle.replace("Avg generation throughput: 0.0", "Avg generation throughput: 41.2")
    busy = busy.replace("Running: 0 reqs", "Running: 3 reqs")
    assert diagnose(*QUIET, *TB, raised, *[busy] * 6).crashed is False


def test_abseil_s_banners_are_not_read_as_markdown_bold() -> None:
    segv = "*** SIGSEGV received at time=1746566409 on cpu 131 ***"
    found = diagnose(*QUIET, segv)
    assert found.crashed is True and found.root_cause == segv


def test_a_raise_statement_cut_from_its_frame_is_code() -> None:
    raised = "RuntimeError: NCCL error: internal error - please report this issue to the NCCL team"
    found = diagnose(*QUIET, '    raise RuntimeError(f"NCCL error: {error_str}")', raised)
    assert found.root_cause == raised and found.error_class == "nccl_comm"


def test_ipython_s_arrow_at_a_raise_statement_is_code() -> None:
    raised = "RuntimeError: HIP error code 1: invalid argument"
    found = diagnose(
        *QUIET,
        "RuntimeError                              Traceback (most recent call last)",
        "Cell In[13], line 11",
        "---> 11 hip_try(",
        "",
        "File /work/python/hip.py:12, in hip_try(err)",
        '---> 12 raise RuntimeError(f"HIP error code {err}: {error_string}")',
        "",
        raised,
    )
    assert found.root_cause == raised


def test_a_tool_s_error_record_after_another_process_s_frame_is_no_source_line() -> None:
    # (a CI wrapper's traceback interleaved with pip's output: the frame's source never came)
    conflict = "ERROR: Cannot install torch==2.10.0.dev20251116+cu126 and torch==2.11.0.dev1"
    found = diagnose(
        *QUIET, "INFO: This is taking longer than usual.",
        '  File "/runner/_work/test-infra/scripts/run_with_env_secrets.py", line 39, in run_cmd',
        conflict, "", "The conflict is caused by:", "torch 2.11.0.dev1 depends on filelock",
    )  # fmt: skip
    assert (found.root_cause, found.crashed) == (conflict, True)


def test_build_tools_summaries_yield_to_the_build_s_own_error() -> None:
    failed = "      AssertionError"
    found = diagnose(*QUIET, "  error: subprocess-exited-with-error", "  ",
                     "  \u00d7 python setup.py bdist_wheel did not run successfully.",
                     '        File "/tmp/pip-install/xformers/setup.py", line 12, in <module>',
                     "          assert sources", failed,
                     "  ERROR: Failed building wheel for xformers")  # fmt: skip
    assert found.root_cause == failed
    ptx = ("ptxas /tmp/tmpmwke15zw.ptx, line 6; error   : PTX .version 8.4 does not support "
           ".target sm_120a")  # fmt: skip
    found = diagnose(*QUIET, ptx, "ptxas fatal   : Ptx assembly aborted due to errors")
    assert found.root_cause == ptx and found.error_class == "unsupported_arch"


def test_libcxx_s_terminate_is_a_native_abort() -> None:
    abort = "libc++abi: terminating due to uncaught exception of type std::length_error: vector"
    found = diagnose(*QUIET, "slot update_slots: id  0 | task 5 | slot context shift", abort)
    assert found.crashed is True and found.root_cause == abort


def test_a_cancelled_task_yields_to_what_cancelled_it() -> None:
    timed_out = "asyncio.exceptions.TimeoutError"
    found = diagnose(*QUIET, *TB, "asyncio.exceptions.CancelledError", "",
                     "During handling of the above exception, another exception occurred:", "",
                     *TB, timed_out)  # fmt: skip
    assert found.root_cause == timed_out and found.error_class == "timeout_or_hang"


def test_a_worker_the_engine_terminated_yields_to_the_engine_s_failure() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.59 GiB."
    found = diagnose(*QUIET, "ERROR 10-15 02:47:20 multiproc_worker_utils.py:117] Worker "
                     "VllmWorkerProcess pid 1017165 died, exit code: -15", *TB, oom)  # fmt: skip
    assert found.root_cause == oom and found.error_class == "oom_gpu"


def test_a_logged_exception_whose_traceback_the_paste_cut_is_the_failure() -> None:
    prefix = "ERROR 05-26 00:17:47 [engine.py:448] "
    message = prefix + "'ColumnParallelLinear' object has no attribute 'input_scale'"
    frames = [prefix + "Traceback (most recent call last):",
              prefix + '  File "/vllm/engine/engine.py", line 436, in run_mp_engine',
              prefix + "    engine = MQLLMEngine.from_vllm_config("]  # fmt: skip
    found = diagnose(message, *frames)
    assert found.crashed is True and found.root_cause == message
    # Its traceback's own exception, when the log holds it, is the line to read.
    raised = prefix + "AttributeError: 'ColumnParallelLinear' object has no attribute 'input_scale'"
    assert diagnose(message, *frames, raised).root_cause == raised


def test_an_exception_python_ignored_is_not_why_the_process_stopped() -> None:
    found = diagnose(*QUIET, "Exception ignored in: <function AllReduceFusionWorkspace.__del__ at "
                     "0x7f1c2b5e0>", *TB, "ImportError: sys.meta_path is None, Python is likely "
                     "shutting down")  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    raised = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    found = diagnose(*QUIET, *TB, raised, "Exception ignored in: <function Worker.__del__ at "
                     "0x7f1c2b5e0>", *TB, "ImportError: sys.meta_path is None")  # fmt: skip
    assert found.root_cause == raised


def test_vllm_s_model_execution_wrapper_yields_to_the_exception_it_re_raised() -> None:
    prefix = "ERROR 12-18 22:57:54 engine.py:135] "
    inner = prefix + "IndexError: tuple index out of range"
    wrapper = (prefix + "IndexError: Error in model execution (input dumped to /tmp/err_execute_"
               "model_input_20241218-225754.pkl): tuple index out of range")  # fmt: skip
    assert diagnose(*QUIET, *TB, inner, "", *TB, wrapper).root_cause == inner
    # alone, it is the line that says what failed
    assert diagnose(*QUIET, *TB, wrapper).root_cause == wrapper
    # under a logging format that puts the process id before vLLM's file and line
    own = "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] "
    found = diagnose(*QUIET, own + '    raise type(err)(f"Error in model execution: "',
                     own + "RuntimeError: Error in model execution: CUDA error: an illegal "
                     "memory access was encountered")  # fmt: skip
    assert found.root_cause is not None and "RuntimeError" in found.root_cause
    assert found.error_class == "cuda_runtime"


def test_buildkit_s_terminal_view_yields_to_the_failed_step_s_own_output() -> None:
    failed = (
        '0.278 CMake Error: The source directory "/app" does not appear to contain CMakeLists.txt.'
    )
    found = diagnose(*QUIET, " => [build 4/5] COPY . .                                      0.0s",
                     ' => ERROR [build 5/5] RUN cmake -B build -DGGML_CUDA=ON .              0.3s',
                     "------", " > [build 5/5] RUN cmake -B build -DGGML_CUDA=ON .:", failed,
                     "0.278 Specify --help for usage, or press the help button on the CMake GUI.",
                     "------", 'ERROR: failed to solve: process "/bin/sh -c cmake -B build" did '
                     "not complete successfully: exit code: 1")  # fmt: skip
    assert found.root_cause == failed and found.error_class == "config_or_args"


def test_llama_server_s_router_relays_a_model_s_server_with_its_process_id_first() -> None:
    missing = (
        "[47995] 0.00.023.592 E gguf_init_from_file: failed to open GGUF file "
        "'/models/mtp-Q8_0.gguf' (No such file or directory)"
    )
    found = diagnose(
        "0.00.035.881 I srv  llama_server: listening on http://0.0.0.0:9393",
        "[47995] 0.00.022.164 I srv          init: The UI is disabled", missing,
        "[47995] 0.00.023.697 E llama_model_load: error loading model: llama_model_loader: "
        "failed to load model from /models/mtp-Q8_0.gguf",
        "[47995] 0.00.023.704 E llama_model_load_from_file_impl: failed to load model",
        "[47995] 0.02.001.935 E srv  llama_server: exiting due to model loading error",
    )  # fmt: skip
    assert found.root_cause == missing and found.error_class == "config_or_args"


def test_a_caller_s_check_on_an_nccl_call_outranks_the_abort_that_follows_it() -> None:
    failed = "ggml_cuda_op_reduce: ncclAllReduce failed with status 1"
    found = diagnose(
        "ggml_cuda_init: found 2 CUDA devices:", failed,
        "=============================== NCCL main communicator initialized",
        "| model                          |       size |     params | backend    | ngl |",
        "| ------------------------------ | ---------: | ---------: | ---------- | --: |",
        "/root/ik_llama.cpp/ggml/src/ggml-cuda/reduce.cu:169: Fatal error",
        "[New LWP 52985]",
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "nccl_comm"
    assert found.crashed is True


def test_localai_s_relay_prefix_is_peeled_and_enomem_is_host_memory() -> None:
    relay = "8:59PM DBG GRPC(c0c3c83d0ec3-127.0.0.1:45725): stderr "
    refused = relay + "oneapi::mkl::oneapi::mkl::blas::gemm: cannot allocate memory on host"
    caught = relay + "Exception caught at file:/build/ggml-sycl.cpp, line:13449, func:operator()"
    asserted = relay + 'GGML_ASSERT: /build/ggml-sycl.cpp:2891: !"SYCL error"'
    found = diagnose(*QUIET, refused, caught, asserted)
    assert found.root_cause == refused and found.error_class == "oom_host_killed"


@pytest.mark.parametrize(
    "report",
    ["段错误 (核心已转储)", "Speicherzugriffsfehler (Speicherabzug geschrieben)",
     "Erreur de segmentation (core dumped)", "Violación de segmento (`core' generado)"],
)  # fmt: skip
def test_a_shell_s_segfault_report_in_another_locale_is_a_crash(report: str) -> None:
    found = diagnose("llama_new_context_with_model: n_ctx = 4096", *QUIET, report)
    assert found.crashed is True and found.root_cause == report


def test_hip_s_device_side_assertion_and_clblast_s_error_are_failures() -> None:
    hip = ("/pytorch/aten/src/ATen/native/hip/Indexing.hip:1294: indexSelectLargeIndex: "
           "Device-side assertion `srcIndex < srcSelectDimSize' failed.")  # fmt: skip
    found = diagnose(*QUIET, hip, ":0:rocdevice.cpp            :2726: 1292301652939 us: Callback: "
                     "Queue 0x7eeb aborting with error : HSA_STATUS_ERROR_EXCEPTION")  # fmt: skip
    assert found.root_cause == hip and found.error_class == "cuda_runtime"
    clblast = " CLBlast: OpenCL error: clEnqueueNDRangeKernel: -54"
    found = diagnose(*QUIET, clblast, "GGML_ASSERT: ggml-opencl.cpp:1747: false")
    assert found.root_cause == clblast


@pytest.mark.parametrize(
    ("report", "error_class"),
    [("[1]    34950 segmentation fault  ./llama-infill -m model.gguf", "other"),
     ("[2]  + 4242 killed     python train.py", "oom_host_killed"),
     ("[   1/ 363]  token_embd.weight - [ 5120, 32000], quantizing to q5_K .. zsh: illegal "
      "hardware instruction  ./quantize model.gguf out.gguf 17", "unsupported_arch")],
)  # fmt: skip
def test_zsh_s_job_reports_are_crashes_and_the_command_is_not_the_fault(
    report: str, error_class: str
) -> None:
    found = diagnose("llama_model_loader: - type  f16:  282 tensors", *QUIET, report)
    assert found.crashed is True and found.root_cause == report
    assert found.error_class == error_class


def test_an_arena_too_small_for_a_tensor_is_read_before_the_segfault_it_causes() -> None:
    refused = (
        "ggml_new_tensor_impl: not enough space in the context's memory pool (needed 268478672, "
        "available 268435456)"
    )
    found = diagnose(*QUIET, refused, "[1]    54172 segmentation fault  ./main -m 65B.bin")
    assert found.root_cause == refused and found.crashed is True


def test_the_last_error_nccl_repeats_yields_to_its_first_warn() -> None:
    warn = (
        "host-1:34610:36821 [4] ib_plugin.c:1673 NCCL WARN NET/IB: Got completion from peer "
        "10.0.1.23<34696> with status=5 opcode=0 len=0 vendor err 249 (Recv) hca ibp152s0"
    )
    found = diagnose(*QUIET, warn, "host-1:34610:36821 [4] NCCL INFO proxy.cc:638 -> 6",
                     "[rank4]:[E1229 16:47:25.333820755 ProcessGroupNCCL.cpp:541] [Rank 4] found "
                     "async exception when checking for NCCL errors: NCCL error: remote process "
                     "exited or there was a network error, NCCL version 2.22.3",
                     "ncclRemoteError: A call failed possibly due to a network error or a remote "
                     "process exiting prematurely.", "Last error:",
                     warn.split("NCCL WARN ")[1])  # fmt: skip
    assert found.root_cause == warn and found.error_class == "nccl_comm"


def test_a_logged_failure_yields_to_another_record_quoting_the_exception_below() -> None:
    quoting = (
        'pb_stub.cc:366] "Failed to initialize Python stub: ValueError: signal only works in '
        "main thread of the main interpreter"
    )
    found = diagnose(*QUIET, 'model.py:244] "[vllm] Failed to start engine: signal only works '
                     'in main thread of the main interpreter"', quoting)  # fmt: skip
    assert found.root_cause == quoting and found.error_class == "config_or_args"
    # an exception already named on the chosen line stays the one chosen
    named = "ERROR [core.py:1136] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2G"
    found = diagnose(*QUIET, named, "EngineCore: torch.OutOfMemoryError: HIP out of memory. Tried "
                     "to allocate 2G")  # fmt: skip
    assert found.root_cause == named


def test_cann_s_error_record_says_what_the_npu_warning_only_numbers() -> None:
    record = (
        "EE1002: 2024-09-03-16:50:00.041.231 Stream synchronize timeout. rtDeviceSynchronize "
        "execute failed, reason=[stream sync timeout]"
    )
    found = diagnose(*QUIET, "W NPUStream.cpp:409] Warning: NPU warning, error code is "
                     "507046[Error]: ", "[Error]: In the specified timeout waiting event, all "
                     "tasks in the specified stream are not completed.", record)  # fmt: skip
    assert found.root_cause == record and found.error_class == "timeout_or_hang"
    # its "Inner Error!" only points to the device's words below
    found = diagnose(*QUIET, "EZ9999: Inner Error!", record)
    assert found.root_cause == record


def test_ggml_s_early_loader_refusing_a_tensor_s_size_is_a_model_loading_crash() -> None:
    refused = "stablelm_model_load: tensor 'gpt_neox.embed_in.weight' has wrong size in model file"
    found = diagnose("stablelm_model_load: n_layer = 32", *QUIET, refused)
    assert found.root_cause == refused and found.error_class == "model_loading"
    assert found.crashed is True


def test_a_command_line_program_s_last_error_yields_to_the_record_it_sums_up() -> None:
    logged = (
        "2026-01-23T13:41:25.805694Z ERROR text_embeddings_backend: backends/src/lib.rs:491: "
        "Could not start Candle backend: Could not start backend: Runtime compute cap 120 is not "
        "compatible with compile time compute cap 80"
    )
    found = diagnose(*QUIET, logged, "Error: Could not create backend", "", "Caused by:",
                     "    Could not start backend: Could not start a suitable backend")  # fmt: skip
    assert found.root_cause == logged and found.error_class == "unsupported_arch"
    # alone, it is the failure
    found = diagnose(*QUIET, "Error: listen tcp 127.0.0.1:11434: bind: address already in use")
    assert found.root_cause == "Error: listen tcp 127.0.0.1:11434: bind: address already in use"


def test_a_rust_program_s_error_yields_to_the_last_of_the_causes_it_lists() -> None:
    cause = (
        "    Could not start backend: cannot find tensor encoder.layer.0.mlp.gated_layers.weight"
    )
    found = diagnose(*QUIET, "Error: Could not create backend", "", "Caused by:", cause)
    assert found.root_cause == cause and found.error_class == "model_loading"
    # numbered, outermost first: the last is where it started
    deepest = "    1: No such file or directory (os error 2)"
    found = diagnose(*QUIET, "Error: failed to read config", "Caused by:",
                     "    0: reading /models/x/config.json", deepest)  # fmt: skip
    assert found.root_cause == deepest and found.crashed is True
    # logged whole before its causes, that record is the line to read
    logged = "ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect"
    found = diagnose(*QUIET, logged, "", "Caused by:", "    0: creating primary lease",
                     "Error: Failed to connect", "", "Caused by:",
                     "    0: creating primary lease")  # fmt: skip
    assert found.root_cause in (logged, "Error: Failed to connect")


def test_bitsandbytes_s_setup_failure_yields_to_the_library_its_report_could_not_find() -> None:
    missing = (
        "CUDA SETUP: Required library version not found: libbitsandbytes_cuda124_nocublaslt.so. "
        "Maybe you need to compile it from source?"
    )
    found = diagnose(
        *QUIET, "CUDA SETUP: PyTorch settings found: CUDA_VERSION=124.",
        missing, "CUDA SETUP: Defaulting to libbitsandbytes_cpu.so...", "",
        "================================================ERROR=====================================",
        "CUDA SETUP: CUDA detection failed! Possible reasons:", "1. CUDA driver not installed",
        "CUDA SETUP: Setup Failed!", *TB, "    raise RuntimeError(\'\'\'", "RuntimeError: ",
        "        CUDA Setup failed despite GPU being available. Please run the following command "
        "to get more information:",
    )  # fmt: skip
    assert found.root_cause == missing and found.error_class == "import_or_version"


def test_vulkan_s_own_code_for_a_refused_allocation_says_more_than_ggml_s_word() -> None:
    refused = "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"
    found = diagnose(*QUIET, "ggml_vulkan: Device memory allocation of size 985489412 failed.",
                     refused, "main: error: failed to create context")  # fmt: skip
    assert found.root_cause == refused and found.error_class == "oom_gpu"
    # the driver's own word first in time says it already
    driver = "MESA: error: ../src/intel/vulkan/anv_device.c:4237: VK_ERROR_OUT_OF_DEVICE_MEMORY"
    found = diagnose(*QUIET, driver, "ggml_vulkan: Device memory allocation of size 9 failed.",
                     refused, "main: error: unable to load model")  # fmt: skip
    assert found.root_cause == driver


def test_a_child_s_watchdog_then_the_parent_s_sigquit_is_the_crash_whatever_was_answered() -> None:
    watchdog = (
        "[2026-12-06 20:55:07 TP1] Scheduler watchdog timeout (self.watchdog_timeout=12, "
        "self.soft=False)"
    )
    answered = [
        f'INFO:     10.0.7.21:{41375 + n} - "POST /generate HTTP/1.1" 200 OK' for n in range(16)
    ]
    found = diagnose(
        "[2026-12-06 20:54:40] The server is fired up and ready to roll!",
        *[f'INFO:     10.0.7.21:{41300 + n} - "POST /generate HTTP/1.1" 200 OK' for n in range(5)],
        "[2026-12-06 20:55:07 TP0] Decode batch. #running-req: 4, #token: 2532, token usage: "
        "0.01, cuda graph: True, gen throughput (token/s): 255.84, #queue-req: 0",
        watchdog, "Current thread 0x00007f185d5e16c0 (most recent call first):",
        '  File "/sgl/scheduler.py", line 73 in watchdog', "",
        "Thread 0x00007f1baa9cb140 (most recent call first):",
        '  File "/torch/cuda/__init__.py", line 1162 in synchronize', *answered,
        "[2026-12-06 20:55:08] Received sigquit from a child process. It usually means the child "
        "failed.",
    )  # fmt: skip
    assert found.root_cause == watchdog and found.crashed is True
    assert found.error_class == "timeout_or_hang"


def test_vllm_s_usage_report_thread_dying_offline_is_lived_through() -> None:
    core, logged = (
        "(EngineCore pid=130) ",
        "(EngineCore pid=130) ERROR 05-09 20:08:02 [core.py:1136] ",
    )
    failed = logged + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    found = diagnose(
        core + "Exception in thread Thread-1 (_report_usage_worker):",
        core + "Traceback (most recent call last):",
        core + '  File "/usr/lib/python3.12/threading.py", line 1073, in _bootstrap_inner',
        core + "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        core + "INFO 05-09 20:06:54 [default_loader.py:391] Loading weights took 14.48 seconds",
        *QUIET, logged + "EngineCore failed to start.",
        logged + "Traceback (most recent call last):",
        logged + '  File "/vllm/core.py", line 1110, in run_engine_core', failed,
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "cuda_runtime"


def test_a_scheduler_s_stop_read_newest_first_is_no_crash() -> None:
    # corpus case AH064 (a client's answered requests, failures among them, then Slurm's
    # cancel) as a cloud viewer exports it: newest first, each line stamped E
    lines = corpus_log("AH064").split(b"\n")
    stamped = [b"E 2026-02-27T13:%02d:%02d.000Z " % (n // 60 % 60, n % 60) + line
               for n, line in enumerate(lines)]  # fmt: skip
    found = diagnose_bytes(b"\n".join(reversed(stamped)))
    assert found.crashed is False and found.root_cause is None


def test_glog_s_prefix_with_the_year_carries_its_severity() -> None:
    refused = (
        "E20250522 23:38:30.164904 764015 transfer_metadata_plugin.cpp:235] Unexpected code in "
        "http response, PUT http://127.0.0.1:2379?key=rpc_meta response code: 404 response body: "
        "404 page not found"
    )
    found = diagnose("I20250522 23:38:30.162225 764015 transfer_engine.cpp:91] Transfer Engine "
                     "uses port 16702", refused, "E20250522 23:38:30.164921 764015 "
                     "transfer_metadata.cpp:453] Failed to set location of 156:2345",
                     "F20250522 23:38:30.165388 764015 bench.cpp:291] Assert failed: xport",
                     "*** Check failure stack trace: ***", "Aborted (core dumped)")  # fmt: skip
    assert found.root_cause == refused and found.error_class == "config_or_args"


@pytest.mark.parametrize(
    ("code", "error_class"), [("0xC0000005", "other"), ("0xC000001D", "unsupported_arch")]
)
def test_windows_report_of_a_hardware_exception_is_a_crash(code: str, error_class: str) -> None:
    report = f"2026-03-17 22:57:10.978 [Info] (Process) Exception Code: {code}"
    found = diagnose("2026-03-17 22:56:55.653 [Info] (Server) POST /api/v1/chat/completions",
                     *QUIET, report)  # fmt: skip
    assert found.crashed is True and found.root_cause == report
    assert found.error_class == error_class


def test_torch_spawn_s_re_raise_yields_to_the_child_s_own_exception() -> None:
    child = "ValueError: Specified device cuda:1 does not match device of data cuda:0"
    found = diagnose(*QUIET, "Traceback (most recent call last):",
                     '  File "/torch/multiprocessing/spawn.py", line 215, in join',
                     "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
                     "torch.multiprocessing.spawn.ProcessRaisedException:", "",
                     "-- Process 1 terminated with the following error:",
                     "Traceback (most recent call last):",
                     '  File "/torch/multiprocessing/spawn.py", line 90, in _wrap',
                     "    fn(i, *args)", child)  # fmt: skip
    assert found.root_cause == child and found.crashed is True


def test_a_rocm_library_s_error_tag_is_a_failure_and_its_missing_kernels_the_arch() -> None:
    missing = (
        "hipsparselt_error: Cannot read /opt/rocm/lib/hipsparselt/library/"
        "TensileLibrary_lazy_gfx950.dat: No such file or directory"
    )
    found = diagnose("[ RUN      ] compress/0", missing, "hipsparselt_error: Could not load "
                     "/opt/rocm/lib/hipsparselt/library/TensileLibrary_lazy_gfx950.dat",
                     " error: file not found", " error: file not found")  # fmt: skip
    assert found.root_cause == missing and found.error_class == "unsupported_arch"


def test_nccl_s_name_for_an_internal_error_is_no_advice() -> None:
    failed = (
        "host-2: Test NCCL failure common.cu:959 'internal error - please report this issue to "
        "the NCCL developers / '"
    )
    found = diagnose("#  Rank  2 Group  0 Pid 3164639 on host-2 device  0 NVIDIA RTX A6000", failed,
                     " .. host-2 pid 3164639: Test failure common.cu:844")  # fmt: skip
    assert found.root_cause == failed and found.error_class == "nccl_comm"


@pytest.mark.parametrize(
    "header",
    ["ERROR: test_chunked_prefill (test_vision.TestVision.test_chunked_prefill)",
     "\tFAIL: test_all_gather (__main__.AllGatherTest.test_all_gather) (count=1048576)"],
)  # fmt: skip
def test_unittest_s_header_of_a_failed_test_yields_to_its_exception(header: str) -> None:
    raised = "AssertionError: Lists differ: ['a'] != ['b']"
    found = diagnose(*QUIET, header, "-" * 70, "Traceback (most recent call last):",
                     '  File "/tests/test_vision.py", line 12, in test_chunked_prefill',
                     "    self.assertEqual(a, b)", raised)  # fmt: skip
    assert found.root_cause == raised


def test_a_superbuild_s_stage_prefix_is_peeled() -> None:
    failed = (
        "[hipSPARSELt configure] CMake Error at /therock/cmake/therock_subproject_dep_provider"
        ".cmake:64 (message):"
    )
    found = diagnose("[hipSPARSELt configure] -- The CXX compiler identification is Clang 20",
                     failed, '[hipSPARSELt configure]   Could not find a package configuration '
                     'file provided by "rocsparse"')  # fmt: skip
    assert found.root_cause == failed and found.crashed is True


def test_mpich_s_abort_and_a_test_runner_s_segfault_report_are_crashes() -> None:
    abort = (
        "Abort(1090447) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Unknown "
        "error class, error stack:"
    )
    found = diagnose("Running: pytest tests/comm/test_allreduce.py", abort,
                     "MPIR_Init_thread(192)........:", "MPID_Init(1665)..............:",
                     "MPIDI_OFI_mpi_init_hook(1586):", "(unknown)(): Unknown error class",
                     "[unset]: write_line error; fd=-1 buf=:cmd=abort exitcode=1090447",
                     "system msg for write_line failure : Bad file descriptor",
                     "!!!!!!! Segfault encountered !!!!!!!", "...",
                     "FAILED: tests/comm/test_allreduce.py")  # fmt: skip
    assert found.root_cause == abort and found.crashed is True


def test_compute_sanitizer_s_finding_is_a_kernel_fault() -> None:
    race = (
        "========= Error: Race reported between Read access at void topk_kernel<float>(const "
        "float *, int *)+0x111e0"
    )
    found = diagnose("========= COMPUTE-SANITIZER", race, "=========     and Write access at "
                     "void topk_kernel<float>(const float *, int *)+0x11100", "completed",
                     "========= RACECHECK SUMMARY: 1 hazard displayed (1 error)")  # fmt: skip
    assert found.root_cause == race and found.error_class == "cuda_runtime"
    assert found.crashed is True


def test_cublas_s_own_word_on_the_argument_it_refused_is_read_before_its_status() -> None:
    refused = " ** On entry to SGEMM  parameter number 10 had an illegal value"
    status = "cupy_backends.cuda.libs.cublas.CUBLASError: CUBLAS_STATUS_INVALID_VALUE"
    found = diagnose(*QUIET, refused, *TB, status)
    assert found.root_cause == refused and found.error_class == "cuda_runtime"


@pytest.mark.parametrize(
    "report",
    ["Timeout (0:00:25)!",
     "Training:  16%|█▌        | 80/512 [00:00<00:03, 141.79it/s, loss=9.3018]Timeout (0:00:15)!",
     # (pytest-timeout's banner, after the test's name)
     "tests/test_barrier.py::test_barrier_two_arrivals " + "+" * 35 + " Timeout " + "+" * 36],
)  # fmt: skip
def test_faulthandler_s_timer_on_a_process_that_stopped_moving_is_a_hang(report: str) -> None:
    found = diagnose(*QUIET, report, "", "Thread 0x00007f5e (most recent call first):",
                     '  File "/train.py", line 88 in maybe_save')  # fmt: skip
    assert found.root_cause == report and found.error_class == "timeout_or_hang"
    assert found.crashed is True


def test_an_exception_named_with_a_leading_underscore_is_one() -> None:
    raised = (
        "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 47.4 GiB for an array "
        "with shape (1552592, 4096) and data type int64"
    )
    found = diagnose(*QUIET, *TB, raised)
    assert found.root_cause == raised and found.error_class == "oom_host_killed"


def test_a_status_code_alone_yields_to_the_chained_exception_that_says_why() -> None:
    said = "cupy.cuda.compiler.CompileException: nvrtc: error: unrecognized option -O3 found"
    found = diagnose(*QUIET, *TB, "cupy_backends.cuda.libs.nvrtc.NVRTCError: "
                     "NVRTC_ERROR_INVALID_OPTION (5)", "",
                     "During handling of the above exception, another exception occurred:", "",
                     *TB, said)  # fmt: skip
    assert found.root_cause == said and found.error_class == "import_or_version"


@pytest.mark.parametrize(
    ("raised", "error_class"),
    [("NotImplementedError: The head dim must be <= 256 and a multiple of 8, but got 320.",
      "config_or_args"),
     ("lightning.fabric.utilities.exceptions.MisconfigurationException: You requested gpu: "
      "[0, 1]", "config_or_args"),
     ("RuntimeError: CUDA graphs must be captured on a non-default stream. (However, after "
      "capture, it's ok to replay them on the default stream.)", "cuda_graph"),
     ("RuntimeError: Number of heads in key and value must divide the number of heads in ",
      "config_or_args"),
     ("RuntimeError: jaxlib/cuda/versions_helpers.cc:135: operation cuInit(0) failed: "
      "CUDA_ERROR_NO_DEVICE", "config_or_args"),
     ("json.decoder.JSONDecodeError: Unterminated string starting at: line 182 column 18 "
      "(char 4094)", "model_loading"),
     ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with "
      "inputs:", "unsupported_arch"),
     ("RuntimeError: Configured CUDA binary not found at /usr/lib/python3/dist-packages/"
      "bitsandbytes/libbitsandbytes_cuda129.so", "import_or_version"),
     ("/nvshmem/src/host/mem/mem_heap.cpp:1509: non-zero status: 2 cuMemCreate failed ",
      "oom_gpu"),
     ("ptxas-blackwell fatal   : Value 'sm_110a' is not defined for option 'gpu-name'",
      "unsupported_arch"),
     ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate("
      "handle)`", "oom_gpu"),
     ("RuntimeError: Triton Error [CUDA]: device kernel image is invalid", "import_or_version"),
     ("RuntimeError: start (0) + length (155582464) exceeds dimension size (74499072).",
      "model_loading"),
     ("RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasSgemm( handle, "
      "opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`", "import_or_version"),
     ("/sgl-workspace/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:90: non-zero status: "
      "-6 allgather of ipc handles failed", "nccl_comm"),
     ("FileNotFoundError: Could not find module 'D:\\venv\\Lib\\site-packages\\rocm\\bin\\"
      "hipfft.dll' (or one of its dependencies). Try using the full path with constructor "
      "syntax.", "import_or_version"),
     ("AttributeError: <function standalone_compile at 0x7faca423a8c0> does not have the "
      "attribute 'FakeTensorMode'", "import_or_version"),
     ("AssertionError: microbatch overlap requires even batch_size", "config_or_args"),
     ("RuntimeError: Insufficient disk on 12D3KooWE2C7: need 65GB, have 55GB. Use "
      "--danger-delete-downloads to free space.", "config_or_args"),
     # a program's own tensors on two devices: no setting of the operator's
     ("RuntimeError: Expected all tensors to be on the same device, but found at least two "
      "devices, cuda:0 and cpu!", "other"),
     ("RuntimeError: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
      "config_or_args"),
     ("RuntimeError: Configured ROCm binary not found at /srv/bitsandbytes/"
      "libbitsandbytes_rocm80.so", "import_or_version")],
)  # fmt: skip
def test_the_class_of_a_library_s_own_words_on_a_setting(raised: str, error_class: str) -> None:
    found = diagnose(*QUIET, *TB, raised)
    assert found.root_cause == raised and found.error_class == error_class


@pytest.mark.parametrize(
    ("said", "error_class"),
    [("Segmentation fault from GPU at 0xff00000c04e33000, ctx_id: 1 (CCS) type: 0 (NotPresent), "
      "level: 1 (PDE), access: 0 (Read), banned: 1, aborting.", "cuda_runtime"),
     ("      error: can't find Rust compiler", "import_or_version"),
     ("  build/gen_src/mha_bwd.cpp:69:9: error: use of undeclared identifier 'gfx90a'",
      "unsupported_arch"),
     (" 03-05-2025 17:17:47:536 [pid=148979 tid=148985] ERROR  cufio_core:977 cuInit Failed, "
      "error CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "import_or_version")],
)  # fmt: skip
def test_the_class_of_a_native_failure_by_its_fault(said: str, error_class: str) -> None:
    found = diagnose(*QUIET, said)
    assert found.root_cause == said and found.error_class == error_class


def test_of_records_quoting_one_exception_the_first_in_time_whatever_its_severity() -> None:
    stub = (
        "I1115 02:58:49.477216 1 pb_stub.cc:325] Failed to initialize Python stub: TypeError: "
        "'NoneType' object is not subscriptable"
    )
    found = diagnose(
        "I1115 02:58:49.401000 1 model.py:12] # GPU blocks: 2361",
        stub,
        "E1115 02:58:51.162611 1 backend_model.cc:634] ERROR: Failed to create "
        "instance: TypeError: 'NoneType' object is not subscriptable",
        "E1115 02:58:51.162838 1 model_lifecycle.cc:621] failed to load 'vllm' "
        "version 1: Internal: TypeError: 'NoneType' object is not subscriptable",
    )
    assert found.root_cause == stub and found.crashed is True


def test_an_exception_python_ignored_inside_a_logging_error_block_is_no_crash() -> None:
    found = diagnose(*QUIET, "--- Logging error ---",
                     "Exception ignored in: <function RayDistributedExecutor.__del__ at 0x7f3c>",
                     "Traceback (most recent call last):",
                     '  File "/vllm/executor/ray_distributed_executor.py", line 662, in __del__',
                     '  File "/usr/lib/python3.10/logging/__init__.py", line 1022, in handleError',
                     '  File "/exceptiongroup/_formatting.py", line 62, in emit',
                     "TypeError: 'NoneType' object is not callable")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_record_logging_could_not_encode_on_windows_is_logging_s_own_failure() -> None:
    found = diagnose(*QUIET, "--- Logging error ---", "Traceback (most recent call last):",
                     r'  File "C:\Python312\Lib\logging\__init__.py", line 1163, in emit',
                     "    stream.write(msg + self.terminator)",
                     r'  File "C:\Python312\Lib\encodings\cp1252.py", line 19, in encode',
                     "UnicodeEncodeError: 'charmap' codec can't encode character '\\uff0a' in "
                     "position 73: character maps to <undefined>", "Call stack:",
                     r'  File "D:\b\setup.py", line 1785, in <module>', "    main()")  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_another_rank_s_last_error_explains_the_first_copy_of_the_same_exception() -> None:
    raised = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.19.3"
    )
    system = (
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error. "
    )
    detail = "[Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3"
    source = "    return pg.recv([tensor], group_src_rank, tag)"
    found = diagnose(raised, system, "Last error:", "", source, source, raised, system,
                     "Last error:", detail, raised, system, "Last error:")  # fmt: skip
    assert found.root_cause == detail and found.error_class == "nccl_comm"


def test_a_shell_that_could_not_run_a_build_s_compiler_is_the_build_s_failure() -> None:
    missing = "/bin/sh: line 1: /opt/rocm/bin/hipcc: No such file or directory"
    killed = "./serve.sh: line 33: 13293 Killed   sglang serve --model-path m"
    found = diagnose(*QUIET, "[1/2] /opt/rocm/bin/hipcc -std=c++17 -O2 -fPIC -c kernel.cu",
                     "FAILED: kernel.o", missing, "ninja: build stopped: subcommand failed.", "",
                     "", "", "", killed)  # fmt: skip
    assert found.root_cause == missing and found.error_class == "import_or_version"


def test_a_log_collector_s_epoch_and_tab_are_peeled() -> None:
    raised = (
        "1779264164797\t2026-05-20T08:02:44.797Z\tRuntimeError: The size of tensor a (4) must "
        "match the size of tensor b (8) at non-singleton dimension 0"
    )
    found = diagnose(*(f"1779264164797\t2026-05-20T08:02:44.797Z\t{line}" for line in TB), raised)
    assert found.root_cause == raised and found.crashed is True


def test_a_dataloader_worker_out_of_shared_memory_is_host_memory() -> None:
    raised = (
        "RuntimeError: DataLoader worker (pid 30882) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory. Please try to raise your "
        "shared memory limit."
    )
    found = diagnose(*QUIET, *TB, raised)
    assert found.root_cause == raised and found.error_class == "oom_host_killed"


def test_a_dataloader_worker_s_exit_yields_to_the_signal_that_killed_it() -> None:
    killed = "RuntimeError: DataLoader worker (pid 1127) is killed by signal: Killed. "
    exited = "RuntimeError: DataLoader worker (pid(s) 1127) exited unexpectedly"
    found = diagnose(*QUIET, *TB, killed, "",
                     "The above exception was the direct cause of the following exception:", "",
                     *TB, exited)  # fmt: skip
    assert found.root_cause == killed and found.error_class == "oom_host_killed"


def test_dynamo_s_compiled_frame_id_is_peeled_with_its_record_s_prefix() -> None:
    record = "[rank1]:E1205 02:05:27.267000 733 torch/_guards.py:368] [0/0] "
    raised = (
        f"{record}torch.fx.experimental.symbolic_shapes.ConstraintViolationError: Constraints "
        "violated (L['ids'].size()[1])!"
    )
    found = diagnose(*QUIET, f"{record}Error while creating guard:", f"{record}Name: ''",
                     f"{record}    Source: shape_env", *(record + line for line in TB), raised,
                     f"{record}  - You marked L['ids'].size()[1] as dynamic")  # fmt: skip
    assert found.root_cause == raised


@pytest.mark.parametrize(
    ("said", "error_class"),
    [("Whisper process failed. Exit code: -1073741795", "unsupported_arch"),
     ("Process exited with code 3221225785", "import_or_version"),
     ('msg="runner terminated" error="exit status 0xc0000135"', "import_or_version")],
)  # fmt: skip
def test_a_launcher_s_word_on_a_windows_status_as_exit_code_is_a_crash(
    said: str, error_class: str
) -> None:
    found = diagnose(*QUIET, said)
    assert found.root_cause == said and found.crashed is True
    assert found.error_class == error_class


def test_a_sycl_error_glued_to_ggml_s_catch_site_is_read_and_a_missing_kernel_is_the_arch() -> None:
    glued = (
        "No kernel named _ZTSZN14bin_bcast_syclIXadL_ZL6op_mulffEEE was foundException caught "
        "at file:/root/llama.cpp/ggml/src/ggml-sycl/ggml-sycl.cpp, line:4199"
    )
    found = diagnose(*QUIET, glued, "Error OP MUL")
    assert found.root_cause == glued and found.crashed is True
    assert found.error_class == "unsupported_arch"


def test_nccl_without_its_shared_memory_segment_is_a_transport_fault() -> None:
    segment = "[rank1]: Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637)"
    found = diagnose(*QUIET, *TB, "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
                     "NCCLUtils.hpp:268, unhandled system error, NCCL version 2.21.5",
                     "[rank1]: Last error:", segment)  # fmt: skip
    assert found.root_cause == segment and found.error_class == "nccl_comm"


def test_a_job_that_says_it_finished_lived_through_the_errors_it_logged_before() -> None:
    logged = "[host-3:0:36851 unique id 0] ERROR No Aggregation Manager (sharp_am) detected"
    finished = (
        ':::MLLOG {"namespace": "", "time_ms": 1652678709789, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"status": "success", "epoch": 1320}}'
    )
    found = diagnose(*QUIET, logged, *QUIET, finished, "RESULT,image_segmentation,,332,nvidia")
    assert found.crashed is False and found.root_cause is None
    # a failure after its word still ends the story
    found = diagnose(*QUIET, "Job 'raysubmit_T3JpUGHRiC9U18UE' succeeded",
                     "Segmentation fault (core dumped)")  # fmt: skip
    assert found.crashed is True and found.root_cause == "Segmentation fault (core dumped)"


def test_a_front_end_answering_after_its_engine_said_it_goes_down_is_no_serving_on() -> None:
    raised = "ERROR 04-08 04:00:01 [core.py:390] ModuleNotFoundError: No module named 'pyarrow'"
    answered = [
        'INFO:     10.0.0.5:51022 - "GET /health HTTP/1.1" 200 OK',
        "INFO 04-08 04:00:17 [logger.py:39] Received request cmpl-4e91-0: prompt: 'Hello'",
        'INFO:     10.0.0.6:50254 - "POST /v1/completions HTTP/1.1" 200 OK',
        "INFO 04-08 04:00:17 [async_llm.py:228] Added request cmpl-4e91-0.",
    ]
    found = diagnose(
        *QUIET, "ERROR 04-08 04:00:01 [core.py:390] EngineCore hit an exception: Traceback "
        "(most recent call last):", *TB, raised,
        "CRITICAL 04-08 04:00:01 [core_client.py:361] Got fatal signal from worker processes, "
        "shutting down. See stack trace above for root cause issue.",
        *answered, *answered,
    )  # fmt: skip
    assert found.crashed is True and found.root_cause == raised


def test_a_web_page_s_no_break_spaces_read_as_spaces() -> None:
    raised = "TypeError:\xa0EngineArgs.__init__() got an unexpected keyword argument\xa0'x'"
    found = diagnose(*QUIET, *TB, raised)
    assert found.root_cause == raised.replace("\xa0", " ")
    assert found.error_class == "import_or_version"


def test_an_exception_the_loop_ran_on_past_explains_the_word_that_a_process_failed_after() -> None:
    raised = "zmq.error.ZMQError: Operation not supported"
    found = diagnose(
        *QUIET, "Task exception was never retrieved",
        "future: <Task finished name='Task-2' coro=<MQLLMEngineClient.run_output_handler_loop() "
        "done> exception=ZMQError('Operation not supported')>", *TB, raised, *TB,
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    )  # fmt: skip
    assert found.root_cause == raised and found.crashed is True


def test_a_log_of_nothing_but_error_records_fails_at_the_first_that_says_it_failed() -> None:
    record = "[ERROR] HCCL(2717288,python3):2025-07-23-03:47:57.070.{} [hccl_socket.cc:100] "
    listen = record.format(463) + (
        "[HcclSocket][Listen] socket type[1], listen on ip[10.0.0.1] and specific port[16666] "
        "fail. Please check the port status and whether the port is been using by other process."
    )
    found = diagnose(listen, record.format(466) + "[ServerInit]call trace: hcclRet -> 19",
                     record.format(470) + "[Wait][LinksEstablishCompleted] is failed.")  # fmt: skip
    assert found.root_cause == listen and found.crashed is True
    assert found.error_class == "config_or_args"
    # a viewer stamping every line of a healthy log an error says nothing of failing
    healthy = [*QUIET[:6], "Failed to import optional module flash_attn; using sdpa", *QUIET]
    found = diagnose(*(f"E 2026-02-27T13:00:{n:02}.000Z {line}" for n, line in enumerate(healthy)))
    assert found.crashed is False and found.root_cause is None
    # a traceback among them says which failed: its exception stays among the lines shown
    record = "(EngineCore_DP0 pid=262909) ERROR 01-13 14:23:52 [core.py:881] "
    raised = (
        "RuntimeError: Worker failed with error 'Encoder cache miss for 9def27.', please check "
        "the stack trace above for the root cause"
    )
    found = diagnose(*(record + line for line in ("Dumping scheduler stats: SchedulerStats("
                     "num_running_reqs=79)", "EngineCore encountered a fatal error.", *TB,
                     raised)))  # fmt: skip
    assert record + raised in [found.root_cause, *(c.line for c in found.candidates)]


def test_cuda_s_own_error_string_after_its_check_s_source_location_is_a_failure() -> None:
    said = "cuda kernels/indexer.cu:91 an illegal memory access was encountered"
    found = diagnose(*QUIET, "[spec] SPEC-DECODE: 68.9 ms/tok = 14.51 tok/s", said)
    assert found.root_cause == said and found.crashed is True
    assert found.error_class == "cuda_runtime"


def test_the_source_line_a_python_warning_quotes_is_code_not_a_failure() -> None:
    process = "(TaskRunner pid=3511571) "
    found = diagnose(
        *QUIET, f"{process}/srv/verl/utils/tokenizer.py:107: UserWarning: Failed to create "
        "processor: Unsupported processor type: Qwen2TokenizerFast.",
        f'{process}  warnings.warn(f"Failed to create processor: {{e}}.", stacklevel=1)', *QUIET,
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_torchrun_s_summary_yields_to_the_traceback_in_its_table_not_to_the_ranks_it_closed() -> (
    None
):
    agent = "E0712 11:43:59.809000 164879 torch/distributed/elastic/multiprocessing/api.py:1002] "
    raised = "  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 502.00 MiB."
    found = diagnose(
        *QUIET,
        "W0712 11:43:59.242000 164879 torch/distributed/elastic/multiprocessing/api.py:1028] "
        "Sending process 164888 closing signal SIGTERM",
        f"{agent}failed (exitcode: 1) local_rank: 1 (pid: 164889) of binary: /usr/bin/python3",
        *TB, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "Failures:", "[1]:", "  time      : 2026-07-12_11:43:59", "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -15 (pid: 164888)  (SIGTERM)", "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 164888", "[2]:",
        "  rank      : 2 (local_rank: 2)", "  exitcode  : 1 (pid: 164890) ",
        "  error_file: /tmp/torchelastic_il_xzbof/attempt_0/2/error.json",
        "  traceback : Traceback (most recent call last):",
        '    File "/srv/train.py", line 12, in step', "      optimizer.step()", raised,
        "============================================================",
    )  # fmt: skip
    assert found.root_cause == raised and found.error_class == "oom_gpu"


def test_a_handler_that_answers_with_the_exception_may_say_more_before_its_traceback() -> None:
    stamp = "[2026-02-21 23:35:37.054] "
    found = diagnose(
        *QUIET, f"{stamp}!!! Exception during processing !!! Allocation on device 0 would exceed "
        "allowed memory. (out of memory)", "Currently allocated     : 4.68 GiB",
        "Requested               : 160.00 MiB", "Device limit            : 6.00 GiB",
        "Free (according to CUDA): 0 bytes", "", f"{stamp}Traceback (most recent call last):",
        *TB[1:], "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. "
        "(out of memory)", "", f"{stamp}Got an OOM, unloading all loaded models.",
        f"{stamp}Prompt executed in 107.52 seconds",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_an_all_to_all_s_timeout_is_the_failure_unless_a_rank_ran_out_of_memory_in_it() -> None:
    waited = [
        f"DeepEP combine (scale-up wait) timeout, scale-out: 0/4, scale-up: 1/8, channel: 35, "
        f"lane: {lane}, recv: 0, tail: 0 (wait=1)"
        for lane in range(4)
    ]
    trapped = "torch.AcceleratorError: CUDA error: unspecified launch failure"
    found = diagnose(*QUIET, *waited, *TB, trapped)
    assert found.root_cause == waited[0] and found.error_class == "nccl_comm"
    starved = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 54.00 MiB."
    found = diagnose(*QUIET, *waited, *TB, starved)
    assert found.root_cause == starved and found.error_class == "oom_gpu"


@pytest.mark.parametrize(
    "said",
    ["2025-07-28T13:46:04.8671433Z B:\\src\\torch\\functorch\\csrc\\dim\\arena.h(14,21): "
     "error: functions that differ only in their return type cannot be overloaded",
     'C++ exception with description "Expected (requested_n_gpus)<=(communicator_->size()) . '
     'Found 2 vs 1. '],
)  # fmt: skip
def test_a_compiler_s_located_error_and_a_test_framework_s_caught_exception_are_failures(
    said: str,
) -> None:
    found = diagnose(*QUIET, said, *QUIET[:3])
    assert found.root_cause == said.rstrip() or found.root_cause == said
    assert found.crashed is True


def test_a_frame_s_file_word_wrapped_away_from_its_location_is_no_exception_s_name() -> None:
    # (a narrow paste wraps 'File "/srv/x.py", line 1' into "File", then the location)
    assert rules.TRACEBACK_END.match("File") is None
    assert rules.TRACEBACK_END.match("FileNotFoundError: /srv/x.py") is not None


def test_a_build_tool_s_elapsed_seconds_and_tab_are_a_prefix() -> None:
    raised = "1.7\tValueError: max() iterable argument is empty"
    found = diagnose(*QUIET, *(f"1.4\t{line}" for line in TB), raised, "1.7\t")
    assert found.root_cause == raised and found.crashed is True


def test_cuda_s_error_string_as_an_error_block_s_description_is_the_failure() -> None:
    described = "        Description:     an illegal memory access was encountered"
    found = diagnose(*QUIET, "UR CUDA ERROR:", "        Value:           700",
                     "        Name:            CUDA_ERROR_ILLEGAL_ADDRESS", described,
                     "        Function:        operator()", "", "Native API failed. Native API "
                     "returns: 2147483646 (UR_RESULT_ERROR_UNKNOWN)")  # fmt: skip
    assert found.root_cause == described and found.error_class == "cuda_runtime"


def test_spdlog_s_lowercase_error_level_is_a_severity() -> None:
    said = (
        "[2025-10-28 16:54:17.859675] [error] [41455] [hccl_runner.cpp:103] HCCL "
        "CommInitClusterInfo ERROR19 should check rankTableFile config"
    )
    found = diagnose(*(f"[2025-10-28 16:54:1{n}.000000] [info] [41455] step {n}" for n in range(5)),
                     said)  # fmt: skip
    assert found.root_cause == said and found.crashed is True


@pytest.mark.parametrize(
    "loader",
    ["Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, "
     "libcudnn_ops.so}",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot "
     "open shared object file: No such file or directory"],
)  # fmt: skip
def test_a_loader_missing_a_shared_library_then_an_abort_is_the_versions_fault(loader: str) -> None:
    for aborted in (
        "Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor",
        # the shell's word in another language: Spanish's "Aborted (core dumped)"
        """./start-webui.sh: línea 4:  6516 Abortado                (`core' generado) python3.10 """
        '''app.py "$@"''',
    ):
        found = diagnose(*QUIET, loader, aborted, "launching the app")
        assert found.root_cause == loader and found.crashed is True
        assert found.error_class == "import_or_version"


@pytest.mark.parametrize(
    "shell_said",
    ["""./start-webui.sh: línea 4:  6516 Abortado           (`core' generado) python3 app.py""",
     "Ошибка сегментирования (стек памяти сброшен на диск)",
     "./run.sh: Zeile 3:  4242 Abgebrochen (Speicherabzug geschrieben) python3 app.py"],
)  # fmt: skip
def test_a_shell_s_abort_and_segfault_in_other_languages_are_crashes(shell_said: str) -> None:
    found = diagnose(*QUIET, shell_said, "launching the app")
    assert found.root_cause == shell_said and found.crashed is True


def test_custom_nodes_that_failed_to_import_were_left_out_and_the_bind_error_is_why() -> None:
    stamp = "[2024-01-08 12:51] "
    bound = (
        f"{stamp}OSError: [Errno 10048] error while attempting to bind on address "
        "('127.0.0.1', 8188): only one usage of each socket address is normally permitted"
    )
    found = diagnose(
        *QUIET, f"{stamp}Traceback (most recent call last):", *TB[1:],
        "ModuleNotFoundError: No module named 'insightface'", "",
        f"{stamp}Cannot import D:\\comfyui\\custom_nodes\\reactor module for custom nodes: No "
        "module named 'insightface'", *QUIET, f"{stamp}Import times for custom nodes:",
        f"{stamp}   0.1 seconds (IMPORT FAILED): D:\\comfyui\\custom_nodes\\reactor", *QUIET,
        f"{stamp}Traceback (most recent call last):", *TB[1:], bound,
    )  # fmt: skip
    assert found.root_cause == bound and found.error_class == "config_or_args"


def test_a_sweep_s_case_skipped_due_to_an_error_was_lived_through() -> None:
    found = diagnose(
        *QUIET, "case causal=False: skipped due to OOM (B=16, S=8192) [CUDA out of memory. Tried "
        "to allocate 128.00 GiB. GPU 0 has a total capacity of 139.80 GiB]", *QUIET,
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_script_s_file_commands_complaining_of_a_path_yield_to_the_signal_that_ended_it() -> None:
    died = '/scripts/docker-entrypoint.sh: line 69:   134 Illegal instruction     "${LAUNCHER[@]}"'
    found = diagnose(
        "ls: cannot access '/app/training/datasets': No such file or directory",
        "cp: cannot create regular file '/app/training/datasets/': Not a directory",
        "chown: cannot access '/app/training/datasets': No such file or directory",
        "100%|██████████| 2.95G /2.95G  15.8MiB/s/s", died, "",
        "*** Initialising config for: 'loras' ***",
    )  # fmt: skip
    assert found.root_cause == died and found.error_class == "unsupported_arch"


def test_a_launcher_s_capitalised_exit_code_of_a_killed_scheduler_is_why_it_died() -> None:
    stamp = "[12-11 17:52:52] "
    killed = "[12-11 17:52:54] Exit code: -9"
    found = diagnose(
        f"{stamp}Loading safetensors checkpoint shards:   0% Completed | 0/3 [00:00<?, ?it/s]",
        f"{stamp}Rank 0 scheduler is dead. Please check if there are relevant logs.", killed,
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/sglang", line 10, in <module>', "    sys.exit(main())",
    )  # fmt: skip
    assert found.root_cause == killed and found.crashed is True
    assert found.error_class == "oom_host_killed"


def test_an_operator_s_ctrl_c_in_a_jax_host_callback_is_a_stop_not_a_crash() -> None:
    found = diagnose(
        *("global step=1024, episodic return=[-0.5]" for _ in range(3)),
        "Traceback (most recent call last):",
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CustomCall failed: CpuCallback error: "
        "Traceback (most recent call last):",
        '  File "/site-packages/jax/_src/interpreters/mlir.py", line 2776, in _wrapped_callback',
        "KeyboardInterrupt:", "--------------------",
        "For simplicity, JAX has removed its internal frames from the traceback of the following "
        "exception. Set JAX_TRACEBACK_FILTERING=off to include these.",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_rust_panic_s_unwrapped_error_is_the_root_cause_and_its_launch_limit_the_arch() -> None:
    unwrapped = (
        "called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_LAUNCH_OUT_OF_"
        'RESOURCES, "too many resources requested for launch")'
    )
    found = diagnose(
        *QUIET, "thread 'main' panicked at /cubecl-cuda/src/compute/server.rs:765:14:", unwrapped,
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    )  # fmt: skip
    assert found.root_cause == unwrapped and found.error_class == "unsupported_arch"


def test_a_rust_panic_s_bare_unwrap_leaves_the_header_as_the_root_cause() -> None:
    header = "thread '<unnamed>' panicked at src/block_engine.rs:148:44:"
    found = diagnose(*QUIET, header, "called `Option::unwrap()` on a `None` value")
    assert found.root_cause == header


def test_a_cuda_error_code_then_a_backtrace_through_an_abort_handler_is_a_crash() -> None:
    illegal = (
        "(cuda_instance->cuda_event_synchronize_wrapper(...)) error( cudaErrorIllegalAddress): "
        "an illegal memory access was encountered .../Cuda/Kokkos_Cuda_KernelLaunch.hpp:583"
    )
    found = diagnose(
        *QUIET, illegal, "Backtrace:", "[0x15073f654035] Kokkos::Impl::save_stacktrace()",
        "[0x15073f62aa3c] Kokkos::Impl::host_abort(char const*)",
    )  # fmt: skip
    assert found.root_cause == illegal and found.crashed is True
    hung = diagnose(*QUIET, illegal, *QUIET[:3])
    assert hung.root_cause == illegal and hung.crashed is False


def test_a_multiplexer_s_index_before_every_line_is_peeled_like_a_host_name() -> None:
    failed = (
        "[0] [0] RuntimeError: Data processing error: CAS service error : ReqwestMiddleware "
        "Error: Request failed after 5 retries"
    )
    found = diagnose(
        "[0] [0]     return hf_hub_download(",
        '[0] [0]   File "/site-packages/huggingface_hub/file_download.py", line 629, in xet_get',
        "[0] [0]     download_files(", failed, "[0] [0] Traceback (most recent call last):",
        '[0] [0]   File "/site-packages/monarch/_src/actor/actor_mesh.py", line 837, in handle',
    )  # fmt: skip
    assert found.root_cause == failed and found.crashed is True


def test_a_program_s_error_in_a_step_with_its_reason_is_never_silent() -> None:
    failed = "Error running job: .to() does not accept copy argument"
    found = diagnose(
        *QUIET, "Quantizing UMT5EncoderModel", failed, "=" * 40, "Result:", " - 0 completed jobs",
        " - 1 failure", "=" * 40, "Traceback (most recent call last):",
    )  # fmt: skip
    assert found.root_cause == failed and found.crashed is True
    hydra = diagnose(
        *QUIET, "Error executing job with overrides: ['data.train_batch_size=8']", *TB,
        "RuntimeError: No backend type associated with device type cpu",
    )  # fmt: skip
    assert hydra.root_cause == "RuntimeError: No backend type associated with device type cpu"


def test_a_fatal_header_s_reason_on_the_next_line_is_the_root_cause() -> None:
    reason = "Reason: PTX version 8.8 does not support target 'sm_107a'."
    found = diagnose(
        "LLVM Fatal Error while compiling target binary for module: jit_iota", reason,
        "Minimum required PTX version is 9.4.",
        "Either remove the PTX version to use the default, or increase it to at least 9.4.",
    )  # fmt: skip
    assert found.root_cause == reason and found.error_class == "unsupported_arch"
    assert found.crashed is True


@pytest.mark.parametrize(
    "failed,error_class",
    [
        ("torch._inductor.exc.InductorError: RuntimeError: No valid triton configs.",
         "unsupported_arch"),
        ("F0314 17:16:06.322534     361 stream_executor_util.cc:503] Could not create "
         "RepeatBufferKernel: INTERNAL: Failed call to hipGetFuncBySymbol: hipError_t(98)",
         "unsupported_arch"),
        ("jaxlib.xla_extension.XlaRuntimeError: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED",
         "cuda_runtime"),
        ("RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.",
         "oom_host_killed"),
        ("AssertionError: Unsupported compute capability. Supported: 9.x, 10.x, 11.x",
         "unsupported_arch"),
        ("[rank4]: AssertionError: SM100 forward with head_dim=256 does not support aux_tensors",
         "unsupported_arch"),
        ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
         "functions before calling NumCudaDevices() that might have already set an error? Error "
         "804: forward compatibility was attempted on non supported HW", "import_or_version"),
        ("RuntimeError: Error(s) in loading state_dict for ElasticDecisionTransformer:",
         "model_loading"),
        ("yaml.scanner.ScannerError: while scanning for the next token", "config_or_args"),
        ("[rank0]: AssertionError: The number of ulysses_size should be equal to the world size.",
         "config_or_args"),
        ("RuntimeError: Parent directory /home/user/rwkv-checkpoints does not exist.",
         "config_or_args"),
        ("[rank7]: RuntimeError: HIP error: capturing stream has unjoined work", "cuda_graph"),
        ("RuntimeError: captures_underway.empty() INTERNAL ASSERT FAILED at \"../c10/cuda/"
         "CUDACachingAllocator.cpp\":2967, please report a bug to PyTorch.", "cuda_graph"),
        ("[rank1]: RuntimeError: Attempting to deserialize object on CUDA device 1 but "
         "torch.cuda.device_count() is 1.", "config_or_args"),
        ("[rank1]: RuntimeError: [1]: params[0] in this process with sizes [32000, 768] appears "
         "not to match sizes of the same param in process 0.", "nccl_comm"),
        ("RuntimeError: CUDA error: the launch timed out and was terminated", "cuda_runtime"),
        ("RuntimeError: Did not receive response from front-end process within 5 minutes",
         "timeout_or_hang"),
        ("F1205 13:41:26.617297    2233 parse_flags_from_env.cc:234] Unknown flags in XLA_FLAGS: "
         "--xla_gpu_enable_async_all_gather=true", "config_or_args"),
        ("omegaconf.errors.ConfigAttributeError: Key 'I' is not in struct", "config_or_args"),
        ("RuntimeError: received 0 items of ancdata", "config_or_args"),
    ],
)  # fmt: skip
def test_the_class_of_a_failure_is_its_fault(failed: str, error_class: str) -> None:
    found = diagnose(*QUIET, *TB, failed)
    assert found.root_cause == failed and found.error_class == error_class


def test_pip_s_resolver_conflicts_before_a_successful_install_are_no_failure() -> None:
    found = diagnose(
        "ERROR: pip's dependency resolver does not currently take into account all the packages "
        "that are installed. This behaviour is the source of the following dependency conflicts.",
        "grpcio-status 1.62.3 requires protobuf>=4.21.6, but you have protobuf 3.20.3 which is "
        "incompatible.", "Successfully installed bitsandbytes-0.45.3 datasets-3.4.0", *QUIET,
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_an_autotuner_s_dropped_choices_are_lived_through_even_when_the_log_ends_on_one() -> None:
    stamp = "E1118 11:32:55.100000 503992 site-packages/torch/_inductor/select_algorithm.py:2100] "
    record = [
        f"{stamp}[0/0] Runtime error during autotuning: ",
        f"{stamp}[0/0] No valid triton configs. OutOfResources: out of resource: shared memory, "
        "Required: 131072, Hardware limit: 101376.",
        f"{stamp}[0/0] Ignoring this choice.",
    ]
    found = diagnose(*QUIET, *record, *record, record[0])
    assert found.crashed is False and found.root_cause is None


def test_a_debugger_s_device_exception_is_the_crash() -> None:
    caught = "CUDA Exception: Warp Out-of-range Address"
    found = diagnose(
        *QUIET, "", caught, "The exception was triggered at PC 0x7fff2b2e3e10",
        "Thread 1 \"llama-sweep-ben\" received signal CUDA_EXCEPTION_5, Warp Out-of-range Address.",
        "[Switching focus to CUDA kernel 0, grid 1047, block (0,0,0), thread (0,0,0), device 0]",
    )  # fmt: skip
    assert found.root_cause == caught and found.error_class == "cuda_runtime"
    assert found.crashed is True


def test_a_gpu_assert_glued_to_a_progress_bar_is_the_crash() -> None:
    glued = (
        "Loading (LS) ━━━━━━━━━━   0% 0:00:00 -:--:--GPU assert: no kernel image is available "
        "for execution on the device D:\\a\\exllamav3\\exllamav3_ext\\stloader_cu.cu 53"
    )
    found = diagnose(*QUIET, "Running on local URL:  http://127.0.0.1:7860", *QUIET, glued)
    assert found.root_cause == glued and found.error_class == "unsupported_arch"
    assert found.crashed is True


def test_a_library_falling_back_a_few_lines_after_its_errors_lived_through_them() -> None:
    found = diagnose(
        *QUIET, "2025-10-28 08:07:05 [DEBUG]",
        " rocblaslt error: Cannot read C:\\lmstudio\\bin\\/hipblaslt/library/TensileLibrary_"
        "lazy_gfx1201.dat: No such file or directory", "",
        "rocblaslt error: Could not load C:\\lmstudio\\bin\\/hipblaslt/library/TensileLibrary_"
        "lazy_gfx1201.dat", "2025-10-28 08:07:05 [DEBUG]",
        " hipBLASLt error: Heuristic Fetch Failed!",
        "This message will be only be displayed once, unless the ROCBLAS_VERBOSE_HIPBLASLT_ERROR "
        "environment variable is set.", "2025-10-28 08:07:05 [DEBUG]",
        " rocBLAS warning: hipBlasLT failed, falling back to tensile. ",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_client_retrying_after_the_server_aborted_is_no_recovery_of_the_server() -> None:
    failed = "rocBLAS error: Could not initialize Tensile host: No devices found"
    found = diagnose(
        *QUIET, failed, 'level=ERROR source=server.go:421 msg="llama runner terminated" '
        'error="signal: aborted (core dumped)"',
        "INFO [_base_client.py | _retry_request] Retrying request to /chat/completions",
    )  # fmt: skip
    assert found.crashed is True and found.root_cause == failed


def test_an_illegal_instruction_in_a_kernel_reported_by_the_watchdog_is_a_kernel_fault() -> None:
    watchdog = (
        "Train:   0%|          | 1/486820 [00:10<1425:51:54, 10.54s/it][rank2]:[E225 13:49:33.9"
        "12673914 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group "
        "watchdog thread terminated with exception: CUDA error: an illegal instruction was "
        "encountered"
    )
    found = diagnose(*QUIET, watchdog)
    assert found.root_cause == watchdog and found.error_class == "cuda_runtime"


def test_a_fatal_severity_tag_with_stamps_after_it_is_the_crash_not_its_shell_s_abort() -> None:
    fatal = (
        "[TM][FATAL][0814.22:31:20.267204][gemm.cu:327] No feasible kernel found for the "
        "problem: sm75_f16_e4m3b128_f16_ttt_fff_8x2048x1024_1"
    )
    frames = [f"  [ {n}] Layer{n}::Forward() @ layer.cc:{100 + n}" for n in range(12)]
    found = diagnose(
        *QUIET, fatal, "*** stacktrace of thread 0x7f43b1fff640 ***", *frames, fatal, *frames,
        "/root/start.sh: line 8:     7 Aborted                 (core dumped)",
    )  # fmt: skip
    assert found.root_cause == fatal and found.error_class == "unsupported_arch"
    assert found.crashed is True


def test_an_error_record_then_its_shell_seeing_the_process_die_is_a_crash() -> None:
    error = (
        "E0624 11:00:23.523427 74552 rdma_context.cpp:393] Address 0x562d8af8d700 lkey not "
        "found for mlx5_1"
    )
    found = diagnose(
        *QUIET, error, error.replace("lkey", "rkey"),
        *[f"I0624 11:00:2{n}.000000 74552 worker.cpp:12] step {n}" for n in range(8)],
        "client.sh: line 40: 74552 Segmentation fault      (core dumped) python client.py",
    )  # fmt: skip
    assert found.root_cause == error and found.crashed is True


def test_a_config_dump_s_log_level_setting_is_no_error() -> None:
    found = diagnose(
        *QUIET, "{", '    "lmdeploy_log_level": "ERROR",', '    "uvicorn_log_level": "error"', "}",
        *QUIET,
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_an_enum_s_repr_wrapped_onto_a_line_is_no_exception() -> None:
    failed = "KeyError: 'layers.0.mlp.gate_up_proj.weight'"
    found = diagnose(
        *QUIET, "'inductor_passes': {}, 'cudagraph_mode': <CUDAGraphM",
        "ode.NONE: 0>, 'cudagraph_num_of_warmups': 0, 'cudagraph_capture_sizes': [], ",
        *TB, failed,
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "model_loading"


def test_a_build_s_elapsed_seconds_with_two_decimals_are_peeled() -> None:
    failed = (
        "90.61 ImportError: libhccl.so: cannot open shared object file: No such file or directory"
    )
    found = diagnose(
        "61.88 2025-05-31 14:24:43 (3.16 MB/s) - 'download_models.py' saved [2273]", "61.88 ",
        "90.61 Traceback (most recent call last):",
        '90.61   File "/opt/venv/lib/python3.10/site-packages/torch_npu/__init__.py", line 39, '
        "in <module>",
        "90.61     import torch_npu.npu", failed,
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "import_or_version"
    assert found.crashed is True


def test_a_build_s_elapsed_seconds_before_a_subprocess_s_indented_output_are_peeled() -> None:
    # pip indents its build backend's output under BuildKit's seconds ("24.95   error: ...")
    failed = "24.95   error: can't find Rust compiler"
    found = diagnose(
        "24.95   running build_ext", "24.95   running build_rust", failed, "24.95 ",
        "24.97   error: subprocess-exited-with-error",
        "24.97   \u00d7 Building wheel for outlines_core (pyproject.toml) did not run "
        "successfully.",
        "24.97   │ exit code: 1", "24.97   ╰─> See above for output.",
        "24.97   ERROR: Failed building wheel for outlines_core",
        "24.97 Failed to build outlines_core",
        "25.00 ERROR: ERROR: Failed to build installable wheels for some pyproject.toml based "
        "projects (outlines_core)",
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "import_or_version"


def test_a_native_extension_s_checked_call_is_the_root_cause_not_the_launcher_s_summary() -> None:
    failed = "Error invalid device function at line 224 in file /src/csrc/ops.hip"
    found = diagnose(
        *QUIET, failed, "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/subprocess.py", line 526, in run',
        "    raise CalledProcessError(retcode, process.args,",
        "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'train.py']' returned "
        "non-zero exit status 1.",
    )  # fmt: skip
    assert found.root_cause == failed and found.error_class == "unsupported_arch"


def test_llama_server_s_last_words_on_a_model_it_could_not_load_beat_its_supervisor_s() -> None:
    last_words = (
        "2025-12-01T14:54:47Z gemma3.server[391350]: main: exiting due to model loading error"
    )
    found = diagnose(
        *QUIET,
        "2025-12-01T14:54:47Z gemma3.server[391350]: srv    operator(): cleaning up before exit",
        last_words, "2025-12-01T14:54:47Z gemma3.server[391330]: Error: exit status 1",
        "2025-12-01T14:54:47Z systemd[1]: snap.gemma3.server.service: Main process exited, "
        "code=exited, status=1/FAILURE",
        "2025-12-01T14:54:47Z systemd[1]: snap.gemma3.server.service: Failed with result "
        "'exit-code'.",
    )  # fmt: skip
    assert found.root_cause == last_words and found.error_class == "model_loading"


def test_an_exception_glued_to_its_own_copy_is_a_garbled_line_not_the_root_cause() -> None:
    said = (
        "Error running job: There are not any lora modules in this network. Check your config "
        "and try again"
    )
    found = diagnose(
        *QUIET, said, "Result:", " - 1 failure",
        "Traceback (most recent call last):", "Traceback (most recent call last):",
        '  File "C:\\AI-Toolkit\\toolkit\\network_mixins.py", line 727, in _update_multiplier',
        '  File "C:\\AI-Toolkit\\toolkit\\network_mixins.py", line 727, in _update_multiplier',
        "        first_module = self.get_all_modules()[0]first_module = self.get_all_modules()[0]",
        "IndexErrorIndexError: : list index out of rangelist index out of range",
    )  # fmt: skip
    assert found.root_cause == said and found.crashed is True


def test_an_assertion_of_a_constant_yields_to_the_message_printed_before_it() -> None:
    said = "Shmem state is not initialized, call ShmemInit*/shmem_init_attr first."
    asserted = (
        "python: /src/include/mori/shmem/internal.hpp:244: void mori::shmem::ShmemStates::"
        "CheckStatusValid(): Assertion `false' failed."
    )
    found = diagnose(*QUIET, said, asserted, said, asserted, "Aborted (core dumped)")
    assert found.root_cause == said and found.crashed is True


def _vllm_run(pid: int, failed: bool) -> list[str]:
    prefix = f"(EngineCore_DP0 pid={pid}) ERROR 06-27 01:37:15 [core.py:1006] "
    launched = [
        f"(APIServer pid={pid - 1}) INFO 06-27 01:37:00 [utils.py:223] non-default args: "
        "{'host': '0.0.0.0', 'port': 8080, 'model': 'google/gemma-4-12B-it'}",
        f"(EngineCore_DP0 pid={pid}) INFO 06-27 01:37:05 [core.py:93] Initializing a V1 LLM engine",
    ]
    if not failed:
        return launched
    return [
        *launched,
        prefix + "EngineCore failed to start.",
        prefix + "Traceback (most recent call last):",
        prefix + '  File "/vllm/model_executor/models/gemma4.py", line 512, in load_weights',
        prefix + "    param = params_dict[name]",
        prefix + "KeyError: 'layers.5.self_attn.qkv_proj.v_proj.weight'",
    ]


def test_a_supervisor_restarting_the_same_crash_is_a_crash_loop_not_a_fresh_start() -> None:
    found = diagnose(*_vllm_run(263, True), *_vllm_run(259, True), *_vllm_run(216, False))
    assert found.crashed is True and found.error_class == "model_loading"
    assert found.root_cause is not None and found.root_cause.endswith(
        "KeyError: 'layers.5.self_attn.qkv_proj.v_proj.weight'"
    )
    assert "restarted at line" in found.crashed_reason
    # A relaunch after one crash is the engineer's next try: nothing has failed in it yet.
    found = diagnose(*_vllm_run(263, True), *_vllm_run(216, False))
    assert found.crashed is False and found.root_cause is None


def test_a_benchmark_s_summary_after_a_failed_request_s_traceback_is_a_finished_run() -> None:
    found = diagnose(
        *QUIET, "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/site-packages/aiohttp/streams.py", line 707, in read',
        "    await self._waiter",
        "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected", "",
        "============ Serving Benchmark Result ============",
        "Successful requests:                     999       ",
        "Failed requests:                         1         ",
        "Output token throughput (tok/s):         507.01    ",
        "==================================================",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_an_exception_carrying_a_status_code_alone_yields_to_the_error_logged_first() -> None:
    logged = (
        "[1745563465.856286] [host-1:1617 :0]       ib_device.c:1332 UCX  ERROR   "
        "ibv_create_ah(dlid=49152 sl=0 port=1) for UD mlx5 connect on mlx5_3 failed: Connection "
        "reset by peer"
    )
    found = diagnose(
        *QUIET, logged,
        "2025-04-25T06:44:25.860Z ERROR client._set_errored: nixlBackendError('NIXL_ERR_BACKEND')",
        "Traceback (most recent call last):",
        '  File "/opt/dynamo/venv/lib/python3.12/site-packages/nixl/_api.py", line 513, in xfer',
        "    status = self.agent.postXferReq(handle)",
        "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND",
    )  # fmt: skip
    assert found.root_cause == logged and found.crashed is True


def test_python_s_empty_excepthook_failures_at_exit_are_no_error() -> None:
    at_exit = ["Error in sys.excepthook:", "", "Original exception was:"] * 4
    found = diagnose(*QUIET, "[rank0]: training finished, destroying process group", *at_exit)
    assert found.crashed is False and found.root_cause is None


def test_a_handler_s_error_in_request_after_the_traceback_it_logged_is_no_crash() -> None:
    # Ray captures a worker's streams apart: the handler's word lands after its traceback.
    ray = "(SGLangEngine pid=720234, ip=10.0.0.5) "
    found = diagnose(*QUIET, *(ray + line for line in TB), ray + "KeyError: 'weight_version'",
                     ray + "[2026-01-29 06:53:43] Error in request: 'weight_version'")  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    # Another message after it is another failure's word: the exception stands.
    found = diagnose(*QUIET, *TB, "KeyError: 'weight_version'",
                     "[2026-01-29 06:53:43] Error in request: connection reset")  # fmt: skip
    assert found.crashed is True and found.root_cause == "KeyError: 'weight_version'"


def test_a_program_s_own_warning_word_is_a_warning_even_on_a_memory_failure() -> None:
    table = [f"|  8192 |   2048 |  {kv:5d} |   86.135 |    95.11 |  292.227 |     7.01 |"
             for kv in range(8192, 90113, 8192)]  # fmt: skip
    found = diagnose(
        *QUIET, *table, *["warning: failed to munlock buffer: Cannot allocate memory"] * 5
    )
    assert found.crashed is False and found.root_cause is None


def test_docker_s_refusal_to_start_a_container_is_the_failure() -> None:
    refused = (
        "Error response from daemon: failed to set up container networking: driver failed "
        "programming external connectivity on endpoint tgi-server (bccd6ca7a4f5): Bind for "
        "0.0.0.0:9001 failed: port is already allocated"
    )
    found = diagnose(" Container tgi-server  Created", " Container tgi-server  Starting",
                     " Container neo4j  Started", refused)  # fmt: skip
    assert found.crashed is True and found.root_cause == refused
    assert found.error_class == "config_or_args"


def test_an_error_record_its_front_end_answers_a_request_with_is_that_request_s() -> None:
    listening = (
        'time=2026-01-01T10:00:00.000Z level=INFO source=routes.go:1200 msg="Listening on '
        '127.0.0.1:11434 (version 0.5.0)"'
    )
    error = (
        'time=2026-01-01T10:01:00.000Z level=ERROR source=routes.go:400 msg="error processing '
        'request" error="model requires more system memory (8.0 GiB) than is available (4.0 GiB)"'
    )
    answered = (
        '[GIN] 2026/01/01 - 10:01:00 | 500 |   1.2ms |       127.0.0.1 | POST     "/api/chat"'
    )
    found = diagnose(listening, error, answered)
    assert found.crashed is False and found.root_cause is None
    # Without the answer, the record is the log's last word on the server.
    found = diagnose(listening, error)
    assert found.crashed is True and found.root_cause == error
    # A front end that answers because its engine is gone says so: that is the crash.
    gone = (
        "CRITICAL 10-04 20:05:29 launcher.py:99] MQLLMEngine is already dead, terminating "
        "server process"
    )
    found = diagnose(*QUIET, gone, 'INFO:     127.0.0.1:5555 - "POST /v1/completions HTTP/1.1" 500 '
                     "Internal Server Error")  # fmt: skip
    assert found.crashed is True and found.root_cause == gone


def test_an_exception_a_handler_later_answers_a_request_with_is_that_request_s() -> None:
    message = "No operator found for `memory_efficient_attention_forward` with inputs:"
    found = diagnose(
        f"NotImplementedError: {message}",
        "     query       : shape=(1, 4006, 24, 128) (torch.float16)",
        "2025-12-14T22:36:58.418063 - Prompt executed in 0.05 seconds",
        "2025-12-14T22:38:45.690221 - got prompt",
        f"2025-12-14T22:38:45.736503 - !!! Exception during processing !!! {message}",
    )
    assert found.crashed is False and found.root_cause is None
    # A short message said again is no proof that it is the same failure.
    answered = "2025-12-14T22:38:45.736503 - !!! Exception during processing !!! 'x'"
    found = diagnose(*TB, "KeyError: 'x'", *QUIET, answered)
    assert found.crashed is True and found.root_cause == "KeyError: 'x'"


def test_a_traceback_pasted_with_a_blank_line_after_each_line_keeps_its_source_lines_code() -> None:
    prefix = "(EngineCore_DP0 pid=29) ERROR 01-12 09:26:18 [core.py:866] "
    lines = [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        'File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 857, in run_engine_core',
        "engine_core = EngineCoreProc(*args, **kwargs)",
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        *(
            line
            for depth in range(20)  # (the frames of a model loader, deep below it)
            for line in (
                f'File "/vllm-workspace/vllm/vllm/m{depth}.py", line 9, in load',
                f"return load_{depth}(weights)",
            )
        ),
        'File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 99, in load',
        "param = params_dict[name]",
        "KeyError: 'layers.0.mlp.gate_up_proj.deq_scale'",
    ]
    pasted = [f"{prefix}{line}\n" for line in lines]
    pasted.insert(2, "(EngineCore_DP0 pid=29) Process EngineCore_DP0:\n")
    found = diagnose(*QUIET, *pasted)
    assert found.root_cause == f"{prefix}KeyError: 'layers.0.mlp.gate_up_proj.deq_scale'"


def test_a_ctrl_c_echoed_by_torchrun_s_signal_exception_is_one_stop() -> None:
    found = diagnose(
        *QUIET, *TB, "KeyboardInterrupt", *TB,
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 500372 got "
        "signal: 2",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    # A failure after the interrupt is the launcher stopping its children because of it.
    found = diagnose(*QUIET, *TB, "KeyboardInterrupt", *TB, "RuntimeError: CUDA error: unknown")
    assert found.crashed is True and found.root_cause == "RuntimeError: CUDA error: unknown"


def test_a_build_driver_s_bracketed_step_name_before_each_line_is_peeled() -> None:
    error = (
        "PermissionError: [WinError 32] The process cannot access the file because it is being "
        "used by another process: 'D:\\\\build\\\\dist\\\\lib\\\\llvm.dll'"
    )
    found = diagnose(*(f"[build] {line}" for line in
                       ("[34/49  67% :: 52.394] Merging sub-project dist directory for hipcc",
                        "FAILED: compiler/hipcc/stamp/dist.stamp", *TB, error,
                        "[34/49  69% :: 55.779] Building sub-project amd-comgr")))  # fmt: skip
    assert found.root_cause == f"[build] {error}" and found.crashed is True


def test_a_wrapper_quoting_a_tool_s_output_yields_to_its_first_error_far_below() -> None:
    error = (
        "E           /flashinfer/include/attention/scheduler.cuh(571): error: no suitable "
        'conversion function from "std::tuple<int, int>" to "int" exists'
    )
    steps = [f"E           [{n}/97] c++ single_prefill_{n}.cu -o single_prefill_{n}.o"
             for n in range(1, 16)]  # fmt: skip
    found = diagnose(
        *QUIET, "E           RuntimeError: Ninja build failed. Ninja output:",
        "E           ninja: Entering directory `/root/.cache/flashinfer/90'", *steps, error,
        "E           ninja: build stopped: subcommand failed.",
    )  # fmt: skip
    assert found.root_cause == error and found.error_class == "import_or_version"


def test_lmdeploy_s_source_location_after_its_severity_is_peeled() -> None:
    found = diagnose(
        "2026-03-23 09:48:17,048 - lmdeploy - ERROR - base.py:55 - AssertionError: DeepSeek-V3.2 "
        "requires flash_mla to be available.",
        "2026-03-23 09:48:17,048 - lmdeploy - ERROR - base.py:56 - <Model> check failed!",
        "Checking failed with error DeepSeek-V3.2 requires flash_mla to be available.. Please "
        "send issue to LMDeploy with error logs.",
    )
    assert found.crashed is True and found.root_cause is not None
    assert found.root_cause.endswith(
        "AssertionError: DeepSeek-V3.2 requires flash_mla to be available."
    )


def test_the_hip_runtime_s_trace_reads_its_error_level_and_peels_its_prefix() -> None:
    trace = [
        ":4:command.cpp              :357 : 38724081028 us: [pid:92169 tid: 0x7fcd43d616c0] "
        "Command (InternalMarker) enqueued: 0x7fc9f0145e40 to queue: 0x7fc9eecf54f0",
        ":3:rocvirtual.cpp           :551 : 38724081031 us: [pid:92169 tid: 0x7fcd43d616c0] Set "
        "Handler: handle(0x7fced23fca00), timestamp(0x7fc9f0a77f90)",
    ] * 5
    fault = (
        ":1:rocdevice.cpp            :3434: 38724086971 us: [pid:92169 tid: 0x7fced21ff6c0] "
        "Memory Fault Error"
    )
    found = diagnose(*trace, fault)
    assert found.root_cause == fault and found.crashed is True
    assert found.error_class == "cuda_runtime"
    # Its debug records below the error level say nothing failed, whatever their words.
    found = diagnose(*trace, ":4:rocdevice.cpp            :2756: 38724086971 us: [pid:92169 tid: "
                     "0x7fced21ff6c0] Failed to find a free signal, retrying")  # fmt: skip
    assert found.crashed is False and found.root_cause is None
    # A build's whole path to its source, and the level a broken guarantee is printed at
    # before the runtime aborts: the record, not the abort, is the failure.
    guarantee = (
        ":0:/long_pathname_so_that_rpms_can_package_the_debug_info/src/external/clr/rocclr/"
        "device/device.cpp:324 : 429446282030 us: [pid:705815 tid:0x7ecf3954f640] Memobj map "
        "does not have ptr: 0x0"
    )
    found = diagnose(guarantee, "Fatal Python error: Aborted", "",
                     "Thread 0x00007ecf3954f640 (most recent call first):")  # fmt: skip
    assert found.root_cause == guarantee and found.crashed is True


def test_a_newest_first_log_that_ends_in_a_scheduler_s_stop_did_not_crash() -> None:
    in_time = [*QUIET, "slurmstepd: error: *** JOB 13652 ON host-1 CANCELLED AT "
               "2025-06-05T15:49:26 DUE TO TIME LIMIT ***"]  # fmt: skip
    newest_first = [f"E 2026-02-27T13:00:{n:02d}.000Z {line}" for n, line in enumerate(in_time)]
    found = diagnose(*reversed(newest_first))
    assert found.crashed is False and found.root_cause is None
    # A failure just before the stop is why it came.
    in_time[-1:-1] = [*TB, "RuntimeError: CUDA error: an illegal memory access was encountered"]
    newest_first = [f"E 2026-02-27T13:00:{n:02d}.000Z {line}" for n, line in enumerate(in_time)]
    found = diagnose(*reversed(newest_first))
    assert found.crashed is True and found.error_class == "cuda_runtime"


def test_a_supervisor_s_error_tag_on_all_its_child_s_stderr_is_no_severity() -> None:
    stamp = "[2026-01-21T04:20:06.322Z] [ERROR] "
    found = diagnose(
        "[2026-01-21T04:20:06.135Z] [INFO] Spawning: llama-server --port 8134",
        f"{stamp}load_backend: loaded BLAS backend from /opt/llama.cpp/libggml-blas.so",
        f"{stamp}main: starting router server, no model will be loaded in this process",
        # (the lines of a record after its first come through untagged)
        *[f"srv   load_models:     model-{n}.Q4_K_M.gguf" for n in range(12)],
        "start: binding port with default address family",
        f"{stamp}main: router server is listening on http://127.0.0.1:8134",
        *[f"{stamp}srv  log_server_r: request: GET /health 127.0.0.1 200"] * 3,
    )
    assert found.crashed is False and found.root_cause is None


def test_the_nccl_watchdog_s_word_that_operations_failed_or_timed_out_is_nccl_comm() -> None:
    found = diagnose(
        *QUIET,
        "[rank1]:[E307 05:30:20.036611330 ProcessGroupNCCL.cpp:744] [Rank 1] Some NCCL operations "
        "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
        "operations might run on corrupted/incomplete data.",
    )
    assert found.crashed is True and found.error_class == "nccl_comm"


def test_hccl_s_communicator_and_task_failures_are_nccl_comm() -> None:
    for failure in (
        "RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL "
        "function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
        "&(comms[i])), error code is 6",
        "EI9999: 2024-10-21-10:42:00.204.495  The error from device(chipId:2, dieId:0), serial "
        "number is 9, hccl fftsplus task timeout occurred during task execution, stream_id:5",
    ):
        found = diagnose(*QUIET, *TB, failure)
        assert found.error_class == "nccl_comm", failure


def test_aws_s_nccl_plugin_failing_to_start_on_a_host_without_efa_is_no_failure() -> None:
    plugin = [
        "host-1:168:168 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):221 NCCL "
        "WARN NET/OFI Failed to initialize sendrecv protocol",
        "host-1:168:168 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):366 NCCL "
        "WARN NET/OFI aws-ofi-nccl initialization failed",
        "host-1:168:168 [0] ncclResult_t nccl_net_ofi_init_v6(ncclDebugLogger_t):114 NCCL WARN "
        "NET/OFI Initializing plugin failed",
    ]
    found = diagnose(*plugin, *QUIET)
    assert found.crashed is False and found.root_cause is None
    oom = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current "
        "value: self.server_args.mem_fraction_static=0.817"
    )
    found = diagnose(*plugin, *QUIET, *TB, oom)
    assert found.root_cause == oom and found.error_class == "oom_gpu"


def test_cmake_s_message_block_yields_to_the_error_it_quotes_not_to_the_next_header() -> None:
    header = "CMake Error at /opt/cmake/Modules/CMakeTestCXXCompiler.cmake:73 (message):"
    quoted = (
        "    sccache: error: Server startup failed: cache storage failed to read: S3Error { code: "
        '"AuthorizationHeaderMalformed" }'
    )
    block = [
        "  The C++ compiler", '    "/usr/bin/c++"',
        "  is not able to compile a simple test program.",
        "  It fails with the following output:", "",
        "    Change Dir: '/workspace/build/CMakeFiles/CMakeScratch/TryCompile-Nx7'",
        *[f"    [{n}/2] c++ -o test{n}.o" for n in range(6)],
    ]  # fmt: skip
    found = diagnose(*QUIET, header, *block, quoted, "-- Configuring incomplete, errors occurred!")
    assert found.root_cause == quoted
    other = "CMake Error at /opt/cmake/Modules/CMakeFindDependencyMacro.cmake:76 (find_package):"
    found = diagnose(*QUIET, header, *block[:4], other, "  Could not find a package 'hip'",
                     "-- Configuring incomplete, errors occurred!")  # fmt: skip
    assert found.root_cause == header


def test_pytest_s_progress_marks_glued_to_a_worker_s_line_are_peeled() -> None:
    prefix = "(Worker_TP1 pid=11655) ERROR 11-29 12:12:24 [multiproc_executor.py:815] "
    error = f"{prefix}RuntimeError: NPU out of memory. Tried to allocate 19.09 GiB (NPU 1)"
    frames = [f'  File "/srv/vllm/worker_{n}.py", line {n}, in step_{n}' for n in range(60)]
    found = diagnose(
        "tests/e2e/test_offline_inference.py::test_e2e_deepseek ",
        f"..............{prefix}WorkerProc hit an exception.",
        *(prefix + line for line in ("Traceback (most recent call last):", *frames)),
        error,
    )  # fmt: skip
    assert found.root_cause == error and found.error_class == "oom_gpu"


def test_an_executor_s_quote_of_a_worker_s_error_beats_its_word_that_the_worker_died() -> None:
    # vllm-ascend's engine core: the worker's own traceback is not in the log, the executor's
    # quote of its error is, twice, around its monitor's word that the worker died
    found = diagnose_bytes(corpus_log("AL044"))
    assert found.root_cause is not None and found.root_cause.endswith(
        "RuntimeError: Worker failed with error ''GDNAttentionMetadataBuilder' object has no "
        "attribute 'aclgraph_support'', please check the stack trace above for the root cause"
    )
    assert found.crashed is True


@pytest.mark.parametrize(
    "lines,root_cause,error_class",
    [
        # faulthandler on Windows, glued after pytest's test id: a host instruction-set fault
        (
            ["tests/test_x.py::test_a PASSED [ 47%]",
             "tests/test_x.py::test_b[llama] Windows fatal exception: code 0xc000001d", "",
             "Thread 0x00001468 (most recent call first):",
             '  File "C:\\Python312\\Lib\\threading.py", line 359 in wait'],
            "tests/test_x.py::test_b[llama] Windows fatal exception: code 0xc000001d",
            "unsupported_arch",
        ),
        # rustc's errors carry their code: the first one is why the build failed
        (
            ["   Compiling text-generation-launcher v2.0.0 (/usr/src/launcher)",
             "error[E0432]: unresolved import `nix::sys::signal::Signal`",
             " --> launcher/src/main.rs:2:30", "  |",
             "error[E0425]: cannot find function `kill` in module `signal`",
             "error: could not compile `text-generation-launcher` due to 2 previous errors"],
            "error[E0432]: unresolved import `nix::sys::signal::Signal`",
            "import_or_version",
        ),
    ],
)  # fmt: skip
def test_native_failures_of_other_runtimes_are_never_silent(
    lines: list[str], root_cause: str, error_class: str
) -> None:
    found = diagnose(*lines)
    assert (found.root_cause, found.error_class, found.crashed) == (root_cause, error_class, True)


def test_a_launcher_s_shard_name_before_each_relayed_line_is_peeled() -> None:
    error = "TypeError: attribute name must be string, not 'NoneType'"
    found = diagnose(
        "Shard 1: Process SpawnProcess-33:",
        *(f"Shard 1: {line}" for line in (*TB, error)),
    )  # fmt: skip
    assert found.root_cause == f"Shard 1: {error}" and found.crashed is True


def test_pytest_s_summary_of_a_failed_test_is_the_failure_only_where_its_traceback_is_not() -> None:
    summary = (
        "FAILED tests/gemm/test_mm_fp4.py::test_mm_fp4[cudnn-512] - cudnn._compiled_module."
        "cudnnGraphNotSupportedError: No valid engine configs for Matmul_MUL_"
    )
    header = "=" * 30 + " test session starts " + "=" * 30
    alone = diagnose(header, "collected 3240 items", summary,
                     "=========== 180 failed, 270 passed in 8.97s ===========")  # fmt: skip
    assert alone.root_cause == summary and alone.crashed is True
    error = "E       RuntimeError: CUDA error: no kernel image is available for execution"
    kept = diagnose(header, "tests/test_a.py F", "___ test_a ___", *TB, error,
                    "=" * 28 + " short test summary info " + "=" * 28,
                    "FAILED tests/test_a.py::test_a - RuntimeError: CUDA error: no kernel image is "
                    "available for execution")  # fmt: skip
    assert kept.root_cause == error


def test_pytest_s_progress_for_a_failed_test_yields_to_what_ended_the_run() -> None:
    passed = [f"test_cost.py::test_speed[{n}] PASSED                 [ 36%]" for n in range(60)]
    fault = "Fatal Python error: Segmentation fault"
    found = diagnose(
        "test_llm.py::TestWrappers::test_packing[True] ERROR                      [ 25%]",
        "test_llm.py::TestWrappers::test_packing[False] ERROR                     [ 25%]",
        *passed[:30], "test_cost.py::test_redq_speed[reduce-overhead] FAILED [ 57%]", *passed[30:],
        fault,
    )  # fmt: skip
    assert (found.root_cause, found.crashed) == (fault, True)


def test_a_bare_exception_named_by_its_module_yields_to_the_chained_one_that_explains_it() -> None:
    explained = (
        "(APIServer pid=623) TimeoutError: Timed out waiting for engine core processes to start. "
        "This can happen if the engine is still loading or warming up"
    )
    found = diagnose(
        *(f"(APIServer pid=623) {line}" for line in (*TB, "_queue.Empty", "",
          "The above exception was the direct cause of the following exception:", "", *TB)),
        explained,
    )  # fmt: skip
    assert found.root_cause == explained and found.error_class == "timeout_or_hang"


def test_one_sigterm_echoed_by_a_second_logger_is_still_a_stop() -> None:
    found = diagnose(
        "(Llumlet pid=22645) INFO 07-16 12:30:20 metrics.py:349] Avg prompt throughput: 2.0 "
        "tokens/s, Avg generation throughput: 0.4 tokens/s, Running: 1 reqs",
        '(APIServer pid=23614) INFO:     172.23.75.208:34938 - "POST /generate HTTP/1.1" 200 OK',
        "*** SIGTERM received at time=1752669041 on cpu 12 ***",
        "PC: @     0x7fe3bf1a082d  (unknown)  select",
        "[2025-07-16 12:30:41,565 E 21841 21841] logging.cc:496: *** SIGTERM received at "
        "time=1752669041 on cpu 12 ***",
        "[2025-07-16 12:30:41,565 E 21841 21841] logging.cc:496: PC: @     0x7fe3bf1a082d  "
        "(unknown)  select",
        "(Llumlet pid=22645) INFO 07-16 12:30:41 metrics.py:349] Avg prompt throughput: 2.0 "
        "tokens/s, Avg generation throughput: 0.4 tokens/s, Running: 0 reqs",
    )  # fmt: skip
    assert found.crashed is False and found.root_cause is None


def test_a_heading_with_no_message_yields_to_the_exception_that_restates_it() -> None:
    """A wrapper library prints a caught exception as "Error:" and its message, retries, and
    dies of the same exception: the exception, named, is the root cause."""
    message = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    error = f"ValueError: {message}"
    found = diagnose(
        "Unsloth: Retrying vLLM to process 96 sequences and 256 tokens in tandem.", "Error:",
        message, *(f"INFO 02-20 18:57:{n:02d} worker.py:267] Memory profiling" for n in range(12)),
        *TB, error,
    )  # fmt: skip
    assert (found.root_cause, found.error_class, found.crashed) == (error, "oom_gpu", True)


def test_pip_s_heading_over_its_own_crash_yields_to_the_exception() -> None:
    error = "ValueError: Memoryview is too large"
    found = diagnose(*QUIET, "ERROR: Exception:", *TB, error)
    assert (found.root_cause, found.crashed) == (error, True)


def test_deepspeed_s_link_probe_for_optional_ops_is_no_failure() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB."
    found = diagnose(
        "[2025-02-24 15:50:07,025] [INFO] [real_accelerator.py:203:get_accelerator] Setting "
        "ds_accelerator to cuda (auto detect)",
        "/usr/bin/ld: cannot find -lcufile", "collect2: error: ld returned 1 exit status",
        "wandb: Using wandb-core as the SDK backend.", *TB, oom,
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (oom, "oom_gpu")


@pytest.mark.parametrize(
    "line",
    [
        "./start.sh: línea 18: ./llama_bin/build/bin/llama-server: No existe el archivo o el "
        "directorio",
        "./start.sh: line 18: ./llama_bin/build/bin/llama-server: No such file or directory",
        "run.sh: Zeile 4: /opt/venv/bin/python: Datei oder Verzeichnis nicht gefunden",
        "bash: Zeile 1: vllm: Befehl nicht gefunden",
    ],
)
def test_a_script_that_cannot_run_its_command_in_any_language_is_the_failure(line: str) -> None:
    found = diagnose("+ cd /srv/llm", line)
    assert found.root_cause == line and found.crashed is True


def test_a_batch_script_s_missing_command_it_went_on_past_is_not_the_failure() -> None:
    error = "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, invalid usage"
    found = diagnose(
        "/var/spool/slurmd/job2611382/slurm_script: line 377: python: command not found",
        *(f"[rank0] iteration {n}/100 | lm loss: 2.5" for n in range(3)), *TB, error,
    )  # fmt: skip
    assert found.root_cause == error


def test_an_exception_an_exit_handler_raised_after_the_work_is_no_crash() -> None:
    at_exit = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/weakref.py", line 666, in _exitfunc',
        "    f()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/library.py", line 663, in '
        "_del_library",
        "    _clear_torch_ops_cache(op_defs)",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xb0 in position 181: invalid "
        "start byte",
    ]
    done = diagnose("generation_seconds=0.678 prompts=4", *at_exit, "exit_code=0")
    assert (done.crashed, done.root_cause) == (False, None)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    died = diagnose(*TB, oom, *at_exit)
    assert (died.crashed, died.root_cause) == (True, oom)


@pytest.mark.parametrize(
    "line",
    [
        'host-1:5646:5646 [0] /build/hipify/src/init.cc:136 NCCL WARN Missing "iommu=pt" from '
        "kernel command line which can lead to system instablity or hang!",
        "[2026-09-09 11:29:56] host-1:321049:321049 [0] ras/client_support.cc:181 NCCL WARN Call "
        "to bind failed: Address already in use",
        "Failed to load /usr/lib/python3/dist-packages/torchao/_C.abi3.so: Could not load this "
        "library: /usr/lib/python3/dist-packages/torchao/_C.abi3.so",
        "decode: failed to find a memory slot for batch of size 1024",
    ],
)
def test_advice_and_retries_healthy_runs_print_are_no_failure(line: str) -> None:
    found = diagnose("starting", line, *QUIET)
    assert (found.crashed, found.root_cause) == (False, None)


def test_clang_s_word_that_a_tool_died_of_a_signal_yields_to_the_signal() -> None:
    killed = "clang: error: unable to execute command: Killed"
    found = diagnose(
        "[41/48] Linking HIP executable rccl-UnitTests", killed,
        "clang: error: amdgcn-link command failed due to signal (use -v to see invocation)",
        "ninja: build stopped: subcommand failed.",
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (killed, "oom_host_killed")


def test_ipython_s_header_names_the_exception_that_ends_its_traceback() -> None:
    raised = (
        "OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536."
        " Reducing block sizes or `num_stages` may help."
    )
    found = diagnose(
        "-" * 75,
        "OutOfResources                            Traceback (most recent call last)",
        "Cell In[12], line 3",
        "File ~/.venv/lib/python3.12/site-packages/triton/compiler/compiler.py:483, in "
        "CompiledKernel._init_handles(self)",
        "    482 if self.metadata.shared > max_shared:",
        "--> 483     raise OutOfResources(self.metadata.shared, max_shared, 'shared memory')",
        "",
        raised,
    )  # fmt: skip
    assert (found.root_cause, found.error_class, found.crashed) == (
        raised, "unsupported_arch", True,
    )  # fmt: skip


def test_a_log_pasted_in_a_markdown_quote_reads_as_the_log() -> None:
    found = diagnose(
        "> Traceback (most recent call last):",
        '>   File "/srv/serve.py", line 12, in <module>',
        ">     main()",
        "> ValueError: max_model_len (40960) is greater than the derived max_model_len (32768)",
    )
    assert (found.crashed, found.error_class) == (True, "config_or_args")
    assert found.root_cause == (
        "> ValueError: max_model_len (40960) is greater than the derived max_model_len (32768)"
    )


def test_the_engines_segfault_banner_over_its_frames_is_the_crash_classed_by_them() -> None:
    banner = "!!!!!!! Segfault encountered !!!!!!!"
    found = diagnose(
        "[2026-03-02 10:00:01 TP0] Init torch distributed begin.",
        banner,
        '  File "<unknown>", line 0, in cuMemCreate',
        '  File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()',
        '  File "/dvs/p4/build/sw/gpgpu/nccl/src/init.cc", line 1852, in ncclCommInitRank',
        '  File "<unknown>", line 0, in ffi_call',
    )
    assert (found.crashed, found.root_cause, found.error_class) == (True, banner, "nccl_comm")


def test_a_logged_failure_is_not_passed_over_for_the_heap_abort_after_it() -> None:
    refused = (
        ":1:rocdevice.cpp            :590 : 2345 us:  HSA device gfx1201 (PCI ID 7551) has 2 "
        "ISAs but can only support a single ISA"
    )
    found = diagnose(
        ":3:rocdevice.cpp            :442 : 2001 us:  Initializing HSA stack.",
        refused,
        ":1:rocdevice.cpp            :506 : 2346 us:  Error creating new instance of Device.",
        "free(): invalid pointer",
        "Aborted (core dumped)",
    )
    assert (found.crashed, found.root_cause) == (True, refused)


def test_a_worker_thread_s_failure_then_the_operator_s_ctrl_c_is_no_crash() -> None:
    thread_died = [
        "Exception in thread Thread-6 (generate):",
        *TB,
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
    ]
    found = diagnose(
        "Running on local URL:  http://127.0.0.1:7860",
        *thread_died,
        *thread_died,
        "Keyboard interruption in main thread... closing server.",
        *TB,
        "KeyboardInterrupt",
    )
    assert (found.crashed, found.root_cause) == (False, None)
    # the same failure in the main thread is why the operator had nothing left to stop
    died = diagnose("Running on local URL:  http://127.0.0.1:7860", *TB, thread_died[-1])
    assert (died.crashed, died.root_cause) == (True, thread_died[-1])


def test_a_request_handler_s_traceback_that_socketserver_printed_is_served_past() -> None:
    def handler_failed(port: int) -> list[str]:
        return [
            "-" * 40,
            f"Exception occurred during processing of request from ('127.0.0.1', {port})",
            *TB,
            "BrokenPipeError: [Errno 32] Broken pipe",
            "-" * 40,
        ]

    served = '127.0.0.1 - - [16/Mar/2026 21:06:56] "POST /v1/chat/completions HTTP/1.1" 200 -'
    found = diagnose("Starting httpd at 127.0.0.1 on port 8080...", *handler_failed(58545), served)
    assert (found.crashed, found.root_cause) == (False, None)
    # two handler threads printing at once: their lines interleave, and both are served past
    interleaved = [
        "-" * 40, "-" * 40,
        "Exception occurred during processing of request from ('127.0.0.1', 58545)",
        "Exception occurred during processing of request from ('127.0.0.1', 58544)",
        TB[0], TB[0], TB[1], TB[1], TB[2], TB[2],
        "BrokenPipeError: [Errno 32] Broken pipe", "BrokenPipeError: [Errno 32] Broken pipe",
        "-" * 40, "-" * 40,
    ]  # fmt: skip
    found = diagnose("Starting httpd at 127.0.0.1 on port 8080...", *interleaved, served)
    assert (found.crashed, found.root_cause) == (False, None)


def test_tensorrt_s_located_record_of_a_terse_error_is_the_line_to_read() -> None:
    located = (
        "[01/29/2024-13:52:34] [TRT] [E] 2: [shapeContext.cpp::checkVolume::2923] Error Code 2: "
        "Internal Error (Assertion bound >= 0 failed. )"
    )
    found = diagnose(
        "[01/29/2024-13:52:30] [TRT] [I] Constructing optimization profile number 0",
        "[01/29/2024-13:52:34] [TRT] [E] 2: Assertion bound >= 0 failed. ",
        located,
    )
    assert (found.crashed, found.root_cause) == (True, located)


def test_tensorrt_s_onnx_parser_s_node_description_yields_to_its_error() -> None:
    error = (
        "[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:731: ERROR: "
        "parsers/onnx/builtin_op_importers.cpp:4793 In function importSqueeze:"
    )
    found = diagnose(
        "[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:726: While parsing node "
        'number 34 [Squeeze -> "cos"]:',
        "[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:727: --- Begin node ---",
        "[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:728: input: "
        '"onnx::Squeeze_460"',
        '[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:728: output: "cos"',
        "[04/04/2023-02:33:04] [E] [TRT] parsers/onnx/ModelImporter.cpp:729: --- End node ---",
        error,
        '[8] Assertion failed: !isDynamic(shape) && "Cannot infer squeeze dimensions from a '
        'dynamic shape! Please re-export your model with the Squeeze axes input set."',
        "[04/04/2023-02:33:04] [E] Failed to parse onnx file",
        "&&&& FAILED TensorRT.trtexec [TensorRT v8501] # trtexec --onnx=model.onnx",
    )
    assert (found.crashed, found.root_cause) == (True, error)


def test_the_same_exception_raised_again_saying_what_to_raise_is_the_line_to_read() -> None:
    advice = (
        "ray.exceptions.RayChannelTimeoutError: System error: If the execution is expected to "
        "take a long time, increase RAY_CGRAPH_get_timeout which is currently 10 seconds. "
        "Otherwise, this may indicate that the execution is hanging."
    )
    found = diagnose(
        *TB,
        "ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object "
        "available to read. ObjectID: 00fc911a7833d5d08cfd39cf6b6b31a5fbea0299",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *TB,
        advice,
    )
    assert (found.root_cause, found.error_class) == (advice, "timeout_or_hang")


def test_vulkan_s_word_that_one_allocation_is_over_the_driver_s_limit_says_why() -> None:
    limit = (
        "ggml_vulkan: Requested buffer size exceeds device memory allocation limit: "
        "ErrorOutOfDeviceMemory"
    )
    found = diagnose(
        "load_tensors: offloading 28 repeating layers to GPU",
        "ggml_vulkan: Device memory allocation of size 4305588224 failed.",
        limit,
        "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 4305588224",
    )
    assert (found.root_cause, found.error_class) == (limit, "oom_gpu")


def test_pip_s_word_that_a_build_failed_yields_to_the_compiler_the_kernel_killed() -> None:
    found = diagnose(
        "  error: subprocess-exited-with-error",
        "  ",
        "  \u00d7 Building wheel for flash-attn (pyproject.toml) did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> [312 lines of output]",
        "      [1/49] /usr/local/cuda/bin/nvcc -c flash_fwd_hdim128_bf16_sm80.cu",
        "      Killed",
        "      [2/49] /usr/local/cuda/bin/nvcc -c flash_fwd_hdim64_bf16_sm80.cu",
        "      Killed",
        "      ninja: build stopped: subcommand failed.",
        "  ERROR: Failed building wheel for flash-attn",
    )
    assert (found.root_cause, found.error_class) == ("      Killed", "oom_host_killed")


def test_uv_s_word_that_a_build_failed_yields_to_the_error_it_relayed_at_debug() -> None:
    raised = "DEBUG AttributeError: module 'torch' has no attribute 'xpu'"
    found = diagnose(
        "DEBUG Traceback (most recent call last):",
        'DEBUG   File "<string>", line 315, in run',
        'DEBUG   File "/usr/lib/python3/dist-packages/torch/__init__.py", line 1833, in '
        "__getattr__",
        "DEBUG     raise AttributeError(f\"module '{__name__}' has no attribute '{name}'\")",
        raised,
        "DEBUG Released lock at `/root/.cache/uv/sdists-v9/pypi/gptqmodel/2.2.0/.lock`",
        "  x Failed to build `gptqmodel==2.2.0`",
        "  |-> The build backend returned an error",
        "  `-> Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)",
    )
    assert (found.crashed, found.root_cause) == (True, raised)
    # Without -v, uv's own words are all there is: never silent.
    alone = diagnose(
        "  x Failed to build `gptqmodel==2.2.0`", "  |-> The build backend returned an error"
    )
    assert (alone.crashed, alone.root_cause) == (True, "  x Failed to build `gptqmodel==2.2.0`")


def test_a_web_client_s_status_yields_to_what_its_caller_said_it_meant() -> None:
    # huggingface_hub turns a 401 into its own error, transformers that into the reader's words
    meaning = "OSError: You are trying to access a gated repo."
    long_traceback = [f'  File "/lib/hub.py", line {n}, in step_{n}' for n in range(40)]
    found = diagnose(
        *TB,
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/meta-llama/Meta-Llama-3-8B/resolve/main/config.json",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *TB,
        *long_traceback,
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-67a5)",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *TB,
        *long_traceback,
        meaning,
    )
    assert (found.root_cause, found.error_class) == (meaning, "model_loading")
    # (a status nobody turned into words stays the line)
    alone = diagnose(
        *TB,
        "requests.exceptions.HTTPError: 400 Client Error: Bad Request for url: "
        "http://127.0.0.1:8082/flush_cache",
    )
    assert alone.root_cause is not None and "400 Client Error" in alone.root_cause


def test_a_binding_s_lower_case_exception_under_a_frame_s_carets_is_the_line() -> None:
    raised = "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND"
    found = diagnose(
        "Loaded plugin UCX",
        "Traceback (most recent call last):",
        '  File "/srv/nixl/_api.py", line 89, in __init__',
        "    self.backends[bknd] = self.agent.createBackend(bknd, init)",
        "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        raised,
    )
    assert (found.crashed, found.root_cause) == (True, raised)


def test_an_application_answering_requests_after_one_ran_out_of_memory_served_on() -> None:
    answered = [
        f'127.0.0.1 - - [29/Sep/2025 12:3{n}:00] "POST /api/search HTTP/1.1" 200 -'
        for n in range(4)
    ]
    found = diagnose(
        '127.0.0.1 - - [29/Sep/2025 12:03:12] "POST /api/find_similar HTTP/1.1" 200 -',
        *TB,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 560.00 MiB.",
        '127.0.0.1 - - [29/Sep/2025 12:05:12] "POST /api/find_similar HTTP/1.1" 500 -',
        *answered,
    )
    assert (found.crashed, found.root_cause) == (False, None), found.crashed_reason


def test_a_handler_s_traceback_its_front_end_answers_with_a_500_is_that_request_s() -> None:
    found = diagnose(
        "00:50:19.834 [START] /v1/inference/chat-completion",
        *TB,
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'When using "
        "`tool_choice`, `tools` must be set.'}",
        'INFO:     10.0.0.7:59736 - "POST /v1/inference/chat-completion HTTP/1.1" 500 Internal '
        "Server Error",
        "00:50:20.266 [END] /v1/inference/chat-completion [StatusCode.OK] (431.99ms)",
    )
    assert (found.crashed, found.root_cause) == (False, None), found.crashed_reason


@pytest.mark.parametrize(
    "lines,root_cause,error_class",
    [
        (  # a linker that cannot write its output, under GCC's driver's summary
            ["/usr/bin/ld: cannot open output file helpers.so: Permission denied",
             "collect2: error: ld returned 1 exit status"],
            "/usr/bin/ld: cannot open output file helpers.so: Permission denied",
            "import_or_version",
        ),
        (  # offsets that overflow an object too big, under setuptools' "command failed"
            ["    (.init+0xb): relocation truncated to fit: R_X86_64_REX_GOTPCRELX against "
             "undefined symbol `__gmon_start__'",
             "    kernels.cpp:(.text+0x1d7): relocation truncated to fit: R_X86_64_PC32 against "
             "`.bss'",
             "    collect2: error: ld returned 1 exit status",
             "    error: command '/usr/bin/x86_64-linux-gnu-g++' failed with exit code 1"],
            "    (.init+0xb): relocation truncated to fit: R_X86_64_REX_GOTPCRELX against "
            "undefined symbol `__gmon_start__'",
            "import_or_version",
        ),
        (  # NVRTC's count of its errors yields to the error it counts, quoted by CuPy
            [*TB, "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)", "",
             "During handling of the above exception, another exception occurred:", "", *TB,
             "cupy.cuda.compiler.CompileException: /tmp/k.cu(4): error: identifier "
             "\"__shfl_down\" is undefined", "",
             '1 error detected in the compilation of "/tmp/k.cu".'],
            "cupy.cuda.compiler.CompileException: /tmp/k.cu(4): error: identifier "
            "\"__shfl_down\" is undefined",
            "import_or_version",
        ),
        (  # an sbatch script under `set -u` after the work was done
            ["[rank0]: saved model_final.pt", "training finished, packing artifacts",
             "/var/spool/slurmd/job48877/slurm_script: line 19: SLURM_ARRAY_TASK_ID: unbound "
             "variable"],
            "/var/spool/slurmd/job48877/slurm_script: line 19: SLURM_ARRAY_TASK_ID: unbound "
            "variable",
            "config_or_args",
        ),
        (  # transformers' pipeline, after each model class it tried failed to load
            [*TB, "ValueError: Could not load model google/gemma-2-27b-it with any of the "
             "following classes: (<class 'AutoModelForCausalLM'>,). See the original errors:",
             "", "while loading with AutoModelForCausalLM, an error is thrown:", *TB,
             "OSError: [Errno 28] No space left on device"],
            "OSError: [Errno 28] No space left on device",
            None,
        ),
    ],
)  # fmt: skip
def test_a_build_s_or_a_script_s_own_line_is_why_it_failed(
    lines: list[str], root_cause: str, error_class: str | None
) -> None:
    found = diagnose(*QUIET, *lines)
    assert (found.crashed, found.root_cause) == (True, root_cause), found.candidates
    assert error_class is None or found.error_class == error_class


def test_a_missing_module_yields_to_the_chained_word_on_what_to_install() -> None:
    install = (
        "ImportError: Please install bitsandbytes>=0.46.1 via `pip install bitsandbytes>=0.46.1` "
        "to use bitsandbytes quantizer."
    )
    found = diagnose(
        *QUIET, *TB, "ModuleNotFoundError: No module named 'bitsandbytes'", "",
        "The above exception was the direct cause of the following exception:", "", *TB, install,
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (install, "import_or_version")
    # Another module's advice says nothing of this one.
    other = "ImportError: Please install accelerate to use device_map."
    found = diagnose(
        *QUIET, *TB, "ModuleNotFoundError: No module named 'bitsandbytes'", "",
        "The above exception was the direct cause of the following exception:", "", *TB, other,
    )  # fmt: skip
    assert found.root_cause == "ModuleNotFoundError: No module named 'bitsandbytes'"


def test_an_exception_whose_message_starts_on_the_next_line_is_named_by_that_line() -> None:
    message = (
        "            Some tensors share memory, this will lead to duplicate memory on disk and "
        "potential differences when loading them again: [{'wte.weight', 'lm_head.weight'}]."
    )
    found = diagnose(
        *QUIET, *TB, "RuntimeError: ", message,
        "            A potential way to correctly save your model is to use `save_model`.",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, message)


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x12288 and 8192x4096)",
         "config_or_args"),
        ("RuntimeError: No available kernel. Aborting execution.", "config_or_args"),
        ("RuntimeError: Invalid thread config: thread_m_blocks = 1, thread_k = -1, thread_n = -1, "
         "num_threads = -1 for MKN = [24, 2880, 2880] and num_bits = 4", "config_or_args"),
        ("NotImplementedError: VLLM_USE_V1=1 is not supported with --task transcription.",
         "config_or_args"),
        ("OSError: [Errno 30] Read-only file system: '/home/app/.triton'", "config_or_args"),
        ("error: externally-managed-environment", "config_or_args"),
        ("pynvml.NVMLError_InvalidArgument: Invalid Argument", "config_or_args"),
        ("RuntimeError: Cannot install on Python version 3.14.2; only versions >=3.10,<3.14 are "
         "supported.", "import_or_version"),
        ("RuntimeError: DeepGEMM backend is not available or outdated. Please install or update "
         "the `deep_gemm` to a newer version to enable FP8 kernels.", "import_or_version"),
        ("RuntimeError: Mooncake memory registration failed.", "nccl_comm"),
        ("RuntimeError: [jaccl] Recv failed with errno=2", "nccl_comm"),
    ],
)  # fmt: skip
def test_the_class_names_the_setting_the_version_or_the_transport_at_fault(
    line: str, error_class: str
) -> None:
    found = diagnose(*QUIET, *TB, line)
    assert (found.root_cause, found.error_class) == (line, error_class)


def test_a_chain_through_ipython_s_source_context_still_ends_where_it_ends() -> None:
    # IPython's frames, each its source lines and a blank line: more than a screenful between
    # one exception and the next of its chain
    context = [
        line
        for n in range(30)
        for line in (f"/lib/hub/file_download.py in step_{n}(url)", f"--> {n}     step()", "")
    ]
    gated = "GatedRepoError: 401 Client Error. (Request ID: Root=1-66e62718-68b0f727)"
    found = diagnose(
        *QUIET,
        "HTTPError                                 Traceback (most recent call last)",
        "HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/x/config.json",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "GatedRepoError                            Traceback (most recent call last)",
        *context,
        gated,
    )
    assert (found.root_cause, found.error_class) == (gated, "model_loading")


def test_a_bare_exception_yields_to_its_chain_s_next_however_long_ipython_s_frames() -> None:
    # "StopIteration: " from importlib.metadata, then the exception raised while handling it,
    # more than sixty of IPython's source lines further on
    context = [
        line
        for n in range(30)
        for line in (f"File /lib/metadata/__init__.py:{n}, in step_{n}(name)", f"--> {n}  x()", "")
    ]
    missing = "PackageNotFoundError: No package metadata was found for bitsandbytes"
    found = diagnose(
        *QUIET,
        "StopIteration                             Traceback (most recent call last)",
        "--> 563     return next(cls.discover(name=name))",
        "",
        "StopIteration: ",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "PackageNotFoundError                      Traceback (most recent call last)",
        *context,
        missing,
    )
    assert (found.root_cause, found.error_class) == (missing, "import_or_version")


def test_pydantic_v1_s_line_for_the_refused_value_is_the_root_cause() -> None:
    message = (
        "  No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine. (type=value_error)"
    )
    found = diagnose(
        *QUIET, *TB, "ValidationError: 1 validation error for VLLM", "__root__", message
    )
    assert (found.root_cause, found.error_class) == (message, "oom_gpu")


def test_a_c10_error_s_message_printed_bare_above_its_frames_is_the_failure() -> None:
    message = (
        "[1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
        "key-value store by key '0', but store->get('0') got error: Socket Timeout"
    )
    frames = [
        f"frame #{n}: c10d::TCPStore::doGet() + 0x3a (0x7f3fc834d4ca in libtorch.so)"
        for n in range(6)
    ]
    found = diagnose(
        message,
        "Exception raised from recvBytes at /opt/pytorch/torch/csrc/distributed/c10d/Utils.hpp:605 "
        "(most recent call first):",
        *frames,
    )
    assert (found.crashed, found.root_cause) == (True, message)
    # (under its exception's own line, the message is that line's, not a second failure)
    header = f"torch.distributed.DistBackendError: {message}"
    found = diagnose(
        *QUIET, *TB, header,
        "Exception raised from recvBytes at /opt/pytorch/torch/csrc/distributed/c10d/Utils.hpp:605 "
        "(most recent call first):",
        *frames,
    )  # fmt: skip
    assert found.root_cause == header


@pytest.mark.parametrize(
    "line",
    [
        "*** Signal 8 (SIGFPE) (0x3170a51f) received by PID 1483368 (pthread TID 0x7fd11c3e3000) "
        "(linux TID 1483368) (code: integer divide by zero), stack trace: ***",
        "Floating point exception",
    ],
)
def test_a_division_by_zero_s_signal_is_a_crash(line: str) -> None:
    found = diagnose(*QUIET, line, "    @ 000000000002c717 __libc_start_main")
    assert (found.crashed, found.root_cause) == (True, line)


def _cell(name: str, message: str) -> list[str]:
    """A cell's failure as IPython saves it in a notebook's outputs."""
    return [
        f"{name}                                 Traceback (most recent call last)",
        "<ipython-input-4-5543d7013899> in <cell line: 1>()",
        "----> 1 model.save_pretrained_merged('out')",
        "",
        f"{name}: {message}",
    ]


def test_a_notebook_s_run_failed_in_the_first_cell_that_failed_of_its_own() -> None:
    # (a cell's typo is gone past: the next cell runs)
    mmap = "RuntimeError: mmap can only be used with files saved with `torch.save`"
    found = diagnose(
        *QUIET, *_cell("NameError", "name 'max_memory' is not defined"), *QUIET,
        *_cell("RuntimeError", mmap.removeprefix("RuntimeError: ")),
    )  # fmt: skip
    assert found.root_cause == mmap
    # (a later cell's failure is the earlier one's: the name was never defined, the memory is
    # still held, the adapters were never attached)
    oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB."
    for later in (
        ("NameError", "name 'trainer' is not defined"),
        ("RuntimeError", "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate`"),
        ("ValueError", "You cannot perform fine-tuning on purely quantized models."),
    ):
        found = diagnose(
            *QUIET, *_cell("OutOfMemoryError", oom.removeprefix("OutOfMemoryError: ")),
            *QUIET, *_cell(*later),
        )  # fmt: skip
        assert (found.root_cause, found.error_class) == (oom, "oom_gpu"), later
    # (what a cell printed before its traceback is its own)
    said = "ERROR: Could not install packages due to an OSError: [Errno 16] Device or resource busy"
    missing = "No module named 'vllm'"
    earlier = _cell("NameError", "name 'llm' is not defined")
    found = diagnose(*QUIET, *earlier, said, *_cell("ImportError", missing))
    assert found.root_cause in (said, f"ImportError: {missing}")


def test_hydra_s_instantiate_yields_to_the_repr_of_what_it_caught() -> None:
    caught = "P2PDaemonError('Daemon failed to start in 15.0 seconds')"
    found = diagnose(
        *QUIET,
        "hydra.errors.InstantiationException: Error in call to target "
        "'genrl_swarm.communication.hivemind.hivemind_backend.HivemindBackend':",
        caught,
        "full_key: game_manager.communication",
    )
    assert (found.crashed, found.root_cause) == (True, caught)


def test_a_warning_s_message_continued_below_it_is_not_a_failure() -> None:
    # a warning raised by code run from a string ("<string>:56:"), its message on two lines
    cmake = "      CMake Error at CMakeLists.txt:3 (project):"
    found = diagnose(
        "      <string>:56: RuntimeWarning: Failed to get commit hash:",
        "      Command '['git', 'rev-parse', 'HEAD']' returned non-zero exit status 128.",
        "      running build_ext",
        cmake,
        "        Running",
        "      -- Configuring incomplete, errors occurred!",
    )
    assert found.root_cause == cmake
    assert not [c.line for c in found.candidates if "rev-parse" in c.line]  # nor a runner-up


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("KeyError: 'SLURM_NTASKS'", "config_or_args"),
        ("RuntimeError: expected m1 and m2 to have the same dtype, but got: float != "
         "c10::BFloat16", "config_or_args"),
        ("jinja2.exceptions.TemplateSyntaxError: Unexpected end of template.", "config_or_args"),
        ("torch._dynamo.exc.Unsupported: Dynamo recompile limit exceeded", "config_or_args"),
        ("ERROR: Could not build wheels for outlines_core, which is required to install "
         "pyproject.toml-based projects", "import_or_version"),
        ("AssertionError: SM89 kernel is not available. Make sure you GPUs with compute "
         "capability 8.9.", "unsupported_arch"),
    ],
)  # fmt: skip
def test_the_class_names_the_variable_the_input_the_build_or_the_gpu_at_fault(
    line: str, error_class: str
) -> None:
    found = diagnose(*QUIET, *TB, line)
    assert (found.root_cause, found.error_class) == (line, error_class)


def test_an_exception_named_alone_is_said_by_its_indented_message_whatever_failed_after() -> None:
    # (a spawned child re-running a script with no main guard; the parent then says its
    # engine failed to start, another process's failure whose own error is that message)
    said = "        An attempt has been made to start a new process before the"
    found = diagnose(
        *QUIET, *TB, "RuntimeError: ", said,
        "        current process has finished its bootstrapping phase.", "", *TB,
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {'EngineCore_DP0': 1}",
    )  # fmt: skip
    assert (found.root_cause, found.error_class) == (said, "config_or_args")


def test_uv_s_resolver_cause_is_the_failure_and_make_s_recipe_line_its_wrapper() -> None:
    cause = (
        "  ╰─▶ Because the current Python version (3.9.2) does not satisfy Python>=3.10 and "
        "numpy==2.2.2 depends on Python>=3.10, we can conclude that numpy==2.2.2 cannot be used."
    )
    found = diagnose(
        "uv pip install -r requirements.txt",
        "  \u00d7 No solution found when resolving dependencies:", cause,
        "      And because you require numpy==2.2.2, we can conclude that your "
        "requirements are unsatisfiable.", "make[1]: *** [Makefile:19: gen-server] Error 1",
        "make[1]: Leaving directory '/data/tmp/server'",
        "make: *** [Makefile:2: install-server] Error 2",
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        cause,
        "import_or_version",
    )
    # (make's word alone still says the build failed)
    recipe = "make: *** [Makefile:2: install-server] Error 2"
    assert diagnose(*QUIET, recipe).crashed is True


def test_macos_s_bash_on_a_job_it_killed_is_the_host_s_kill() -> None:
    killed = './run_rl_swarm.sh: line 323: 23001 Killed: 9               python "swarm.py" --x a'
    found = diagnose(*QUIET, killed)
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        killed,
        "oom_host_killed",
    )


def test_a_traceback_glog_stamped_w_on_every_line_was_a_warning_lived_through() -> None:
    # torch._dynamo giving up on a frame, each line of its record stamped W: it runs on eager
    stamp = "W0530 14:48:26.433000 2622492 site-packages/torch/_dynamo/convert_frame.py:1233] "
    record = [
        "Traceback (most recent call last):",
        '  File "/lib/torch/_inductor/runtime/triton_heuristics.py", line 12, in precompile',
        "    binary._init_handles()",
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        "SystemError: PY_SSIZE_T_CLEAN macro must be defined for '#' formats",
    ]
    steps = [f"step:{n}/20000 train_loss:6.42e-02 train_time:{n}ms" for n in range(40)]
    found = diagnose(*QUIET, *(stamp + line for line in record), *steps)
    assert (found.crashed, found.root_cause) == (False, None)
    # (stamped E, the same record is the failure)
    found = diagnose(*QUIET, *(stamp.replace("W0530", "E0530") + line for line in record))
    assert found.crashed and found.root_cause is not None and "SystemError" in found.root_cause


def test_comfyui_s_prompt_that_ran_out_of_memory_is_one_it_served_past() -> None:
    # (a console's stretch that starts inside the traceback)
    found = diagnose(
        '  File "C:\\ComfyUI\\comfy\\model_management.py", line 927, in _apply',
        "    param_applied = fn(param)",
        "torch.OutOfMemoryError: Allocation on device ",
        "",
        "2025-01-17T01:27:13.751046 - Got an OOM, unloading all loaded models.",
        "2025-01-17T01:27:13.751046 - Prompt executed in 12.66 seconds",
        "2025-01-17T01:31:45.007202 - got prompt",
        "2025-01-17T01:31:45.082922 - model_type FLOW",
    )
    assert (found.crashed, found.root_cause) == (False, None)


@pytest.mark.parametrize(
    "refused",
    [
        'docker: Error response from daemon: could not select device driver "" with '
        "capabilities: [[gpu]].",
        "Starting the containerdocker: Error response from daemon: unknown or invalid runtime "
        "name: nvidia.",
        'docker: Error response from daemon: Head "https://nvcr.io/v2/nim/meta/llama3-8b-instruct'
        '/manifests/1.0.0": unauthorized: authentication required.',
    ],
)
def test_docker_s_daemon_refusing_a_start_for_the_host_s_setup_is_the_failure(
    refused: str,
) -> None:
    pulled = ["Status: Downloaded newer image for ghcr.io/open-webui/open-webui:cuda",
              "3c98cb56ea02582682429a157ae335e22bbc9fd0ac74fedf1a8c727d460b9f95"]  # fmt: skip
    found = diagnose(*pulled, refused)
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        refused,
        "config_or_args",
    )


def test_a_container_hook_s_failure_yields_to_what_the_hook_said() -> None:
    # (runc's line ends with the hook's stderr, whose next line is the toolkit's own words)
    said = (
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
        "cannot open shared object file: no such file or directory: unknown"
    )
    found = diagnose(
        "Attaching to n8n, n8n-import, ollama, qdrant",
        "Error response from daemon: failed to create task for container: failed to create shim "
        "task: OCI runtime create failed: runc create failed: unable to start container process: "
        "error during container init: error running hook #0: error running hook: exit status 1, "
        "stdout: , stderr: Auto-detected mode as 'legacy'",
        said,
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        said,
        "import_or_version",
    )


def test_unittest_s_header_of_a_failed_set_up_yields_to_the_error_logged_before_it() -> None:
    # (the log cut after the header: its traceback is not there; the transport's record is)
    gid = (
        "E0924 01:29:28.347672  2254 rdma_context.cpp:499] Failed to query GID 0 on mlx5_0/: "
        "Invalid argument [22]"
    )
    found = diagnose(
        "I0924 01:29:28.345665  2254 transfer_engine.cpp:200] Topology discovery complete. "
        "Found 1 HCAs.", gid,
        "E0924 01:29:28.348094  2254 rdma_context.cpp:70] Failed to open device mlx5_0 on port  "
        "with GID 0", "E", "=" * 70, "ERROR: setUpClass (__main__.TestVLLMAdaptorTransfer)",
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (True, gid, "nccl_comm")


def test_ollama_s_runner_dying_as_it_loads_is_the_failure_though_logged_at_info() -> None:
    died = (
        'time=2026-07-16T09:42:08.708Z level=INFO source=sched.go:651 msg="Load failed" '
        'model=/root/.ollama/models/blobs/sha256-5ee4f07c error="llama-server process has '
        'terminated: signal: segmentation fault (core dumped)"'
    )
    loading = [
        'time=2026-07-16T09:41:50.112Z level=INFO source=routes.go:1331 msg="Listening on '
        '127.0.0.1:11434 (version 0.32.0)"',
        "cmn  common_init_: warming up the model with an empty run - please wait ... "
        "(--no-warmup to disable)",
    ]
    refused = (
        '[GIN] 2026/07/16 - 09:42:08 | 500 |  8.488597609s |       127.0.0.1 | POST     "/api/chat"'
    )
    found = diagnose(*loading, died, refused)
    assert (found.crashed, found.root_cause) == (True, died)
    # (a client that gave up waiting is no runner's death)
    cancelled = died.replace(
        "llama-server process has terminated: signal: segmentation fault (core dumped)",
        "timed out waiting for llama runner to start: context canceled",
    )
    assert diagnose(*loading, cancelled, refused.replace("| 500 |", "| 499 |")).crashed is False


def test_a_peer_gone_beside_the_rank_s_death_that_explains_it_is_its_consequence() -> None:
    # rank 1 killed (the kernel's OOM killer: no words of its own); rank 0's collective then
    # finds its peer gone, two lines above torchrun's word on rank 1
    gone = (
        "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] "
        "Connection closed by peer [127.0.0.1]:7606"
    )
    killed = (
        "E1206 13:48:55.838000 909 torch/distributed/elastic/multiprocessing/api.py:986] failed "
        "(exitcode: -9) local_rank: 1 (pid: 1410) of binary: /opt/torch/.venv/bin/python"
    )
    found = diagnose(
        *QUIET, "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/app/train.py", line 41, in <module>',
        "[rank0]:     dist.all_reduce(tensor)", gone,
        "W1206 13:48:55.801000 909 torch/distributed/elastic/multiprocessing/api.py:908] Sending "
        "process 1409 closing signal SIGTERM", killed,
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        killed,
        "oom_host_killed",
    )


@pytest.mark.parametrize(
    "report",
    [
        "========= Invalid __shared__ write of size 4 bytes",
        "========= Invalid __global__ read of size 16 bytes",
        "========= Out-of-range Shared or Local Address",
    ],
)
def test_compute_sanitizer_s_report_of_a_bad_access_is_why_the_launch_failed(report: str) -> None:
    found = diagnose(
        "========= COMPUTE-SANITIZER", "config 1: 256 threads ok", report,
        "=========     at row_sum+0x230", "=========     by thread (320,0,0) in block (8,0,0)",
        "=========     Access to 0x900 is out of bounds", *TB,
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorLaunchFailure: unspecified "
        "launch failure", "========= ERROR SUMMARY: 1062 errors",
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (True, report, "cuda_runtime")


NUMPY_ADVICE = [
    "IMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!", "",
    "Importing the numpy C-extensions failed. This error can happen for",
    "many reasons, often due to issues with your setup or how NumPy was", "installed.", "",
    "We have compiled some common reasons and troubleshooting tips at:", "",
    "    https://numpy.org/devdocs/user/troubleshooting-importerror.html", "",
    "Please note and check the following:", "",
    '  * The Python version is: Python3.10 from "/usr/bin/python3"',
    '  * The NumPy version is: "1.21.5"', "",
    "and make sure that they are the versions you expect.",
    "Please carefully study the documentation linked above for further help.", "",
]  # fmt: skip


def test_numpy_s_import_error_is_said_by_its_original_error_below_its_advice() -> None:
    original = "Original error was: No module named 'numpy.core._multiarray_umath'"
    found = diagnose(*QUIET, *TB, "ImportError: ", "", *NUMPY_ADVICE, original)
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        original,
        "import_or_version",
    )
    # (chained, the advice's misleading re-raise below it: the loader's words still say why)
    original = (
        "Original error was: /lib64/libstdc++.so.6: version `CXXABI_1.3.9' not found (required by"
        " /env/lib/python3.9/site-packages/numpy/_core/_multiarray_umath.cpython-39.so)"
    )
    found = diagnose(
        *NUMPY_ADVICE, original, "",
        "The above exception was the direct cause of the following exception:", "", *TB,
        "ImportError: Error importing numpy: you should not try to import numpy from",
        "        its source directory; please exit the numpy source tree, and relaunch",
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        original,
        "import_or_version",
    )


def test_deepspeed_s_launcher_failing_in_its_ctrl_c_handler_was_stopped_by_the_operator() -> None:
    handler = [
        "[2023-05-30 20:29:14,854] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 19380",
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.8/site-packages/deepspeed/launcher/runner.py", line 556, '
        "in main",
        "    result.wait()",
        '  File "/opt/conda/lib/python3.8/subprocess.py", line 1764, in _try_wait',
        "    (pid, sts) = os.waitpid(self.pid, wait_flags)",
        '  File "/opt/conda/lib/python3.8/site-packages/deepspeed/launcher/runner.py", line 548, '
        "in sigkill_handler",
        "    result_kill = subprocess.Popen(kill_cmd, env=env)",
        "NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope",
    ]
    steps = [f"iteration {n}/1000 | lm loss: 6.4{n}" for n in range(10)]
    found = diagnose(*steps, *handler)
    assert (found.crashed, found.root_cause) == (False, None)
    # (a rank's own failure just before it: the launcher was tearing down because of it)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    found = diagnose(*steps, *TB, oom, *handler)
    assert (found.crashed, found.root_cause) == (True, oom)


def test_a_run_launched_after_a_failure_is_the_story_not_the_try_before_it() -> None:
    # (a pipeline whose first `llamafactory-cli train` died on its arguments, then a second
    # one that trains on)
    refused = "ValueError: Some keys are not used by the HfArgumentParser: ['booster']"
    found = diagnose(
        *TB, refused, "dataset_info.json already contains both entries, skipped.",
        "[INFO|2026-04-06 21:32:29] llamafactory.hparams.parser:511 >> Process rank: 0, world "
        "size: 1, device: cpu, distributed training: False, compute dtype: None",
        *(f" {n}%|#2        | {n}/230 [05:36<41:19, 12.34s/it]" for n in range(1, 31)),
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (False, None)
    # (the failure after the launch is the run's)
    found = diagnose(
        "[INFO|2026-04-06 21:32:29] llamafactory.hparams.parser:511 >> Process rank: 0, world "
        "size: 1, device: cpu, distributed training: False, compute dtype: None", *TB, refused,
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, refused)


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: Unsloth cannot find any torch accelerator? You need a GPU.",
        "NotImplementedError: Unsloth currently only works on NVIDIA GPUs and Intel GPUs.",
        'wandb.errors.CommError: 401: {"errors":[{"message":"user is not logged in"}]}',
        "botocore.exceptions.ClientError: An error occurred (ExpiredToken) when calling the "
        "AssumeRole operation: The security token included in the request is expired",
        "RuntimeError: Unable to write to NIM_CACHE_PATH (/mnt/models/cache)",
        "RuntimeError: unable to open shared memory object </torch_1876_1515375867_728> in "
        "read-write mode: Too many open files (24)",
    ],
)
def test_the_class_names_the_host_s_accelerator_credentials_or_limits(line: str) -> None:
    found = diagnose(*QUIET, *TB, line)
    assert (found.root_cause, found.error_class) == (line, "config_or_args")


def test_a_binary_or_an_image_for_another_cpu_is_unsupported_arch() -> None:
    exec_format = (
        '{"msg":"exec container process `/opt/venv/bin/vllm`: Exec format error",'
        '"level":"error","time":"2025-12-04T15:15:35.826445Z"}'
    )
    found = diagnose(
        "WARNING: image platform (linux/amd64) does not match the expected platform "
        "(linux/arm64)", exec_format,
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        exec_format,
        "unsupported_arch",
    )
    no_image = (
        "Error: choosing an image from manifest list docker://quay.io/modh/vllm:rhoai-2.18-cuda: "
        'no image found in image index for architecture "arm64", variant "v8", OS "linux"'
    )
    assert diagnose(*QUIET, no_image).error_class == "unsupported_arch"


def test_docker_s_daemon_refusing_a_start_mid_line_is_the_failure() -> None:
    # (Docker Desktop's report, its newlines lost in the paste)
    glued = (
        "Container postgres-pgvector Starting Container ollama-server Starting Container "
        "postgres-pgvector Started Error response from daemon: could not select device driver "
        '"nvidia" with capabilities: [[gpu]]'
    )
    found = diagnose("Cannot start Docker Compose application. ", glued)
    assert (found.crashed, found.root_cause, found.error_class) == (
        True,
        glued,
        "config_or_args",
    )


def test_an_older_cann_record_with_its_tag_and_no_colon_is_the_failure() -> None:
    record = (
        "EZ9999  [InferShape] The k-axis of a(64) and b(9216) tensors must be the same"
        "[FUNC:InferShape][FILE:matrix_calculation_ops.cc][LINE:1402]"
    )
    found = diagnose(
        "Loading pipeline components...: 100%|##########| 6/6 [00:01<00:00,  3.86it/s]", record,
        "        TraceBack (most recent call last):",
        "        Failed to infer output shape[FUNC:BatchMatMulInferShape][FILE:"
        "matrix_calculation_ops.cc][LINE:2455]",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, record)


def test_pytest_s_long_report_of_a_frame_is_code_until_what_it_raised() -> None:
    # (a CI console's clock before each line, too)
    raised = "11:44:55  E           AttributeError: 'function' object has no attribute '<locals>'"
    report = [
        "/usr/lib/python3.12/contextlib.py:158: in __exit__", "    self.gen.throw(value)",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
        "", "policy = <fiddle._src.experimental.serialization.DefaultPyrefPolicy object>",
        "", "    def import_symbol(policy, module, symbol):",
        '      """Returns the value obtained from importing `symbol` from `module`.', "",
        "        Raises:", "          ModuleNotFoundError: If `module` can't be found.",
        "          AttributeError: If `symbol` can't be accessed on `module`.", '        """',
        "          for attr_name in symbol.split('.'):",
        ">           value = getattr(value, attr_name)",
    ]  # fmt: skip
    found = diagnose(*(f"11:44:55  {line}" for line in report), raised)
    assert (found.crashed, found.root_cause) == (True, raised)


def test_the_lines_that_continue_a_served_request_s_exception_are_served_past_too() -> None:
    npu = (
        "copy_d2d_baseformat_opapi:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:89 NPU "
        "function error: call aclnnInplaceCopy failed, error code is 561103"
    )
    found = diagnose(
        "To see the GUI go to: http://0.0.0.0:8888", "got prompt",
        f"!!! Exception during processing !!! {npu}",
        "[ERROR] 2026-01-16-10:39:19 (PID:53, Device:0, RankID:-1) ERR00100 PTA call acl api "
        "failed.", "Traceback (most recent call last):",
        '  File "/ComfyUI/execution.py", line 516, in execute',
        "    output_data = get_output_data(obj, input_data_all)", f"RuntimeError: {npu}",
        "[ERROR] 2026-01-16-10:39:19 (PID:53, Device:0, RankID:-1) ERR00100 PTA call acl api "
        "failed.", "", "", "Prompt executed in 192.66 seconds",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (False, None)


def test_huggingface_hub_s_ignored_cache_write_is_lived_through() -> None:
    ignored = (
        "Ignored error while writing commit hash to /Users/user/.cache/huggingface/hub/models--"
        "llava-hf--llava-v1.6-vicuna-7b-hf/refs/main: [Errno 28] No space left on device: "
        "'/Users/user/.cache/huggingface/hub/models--llava-hf--llava-v1.6-vicuna-7b-hf/refs/main'."
    )
    full = (
        "RuntimeError: Data processing error: CAS service error : IO Error: No space left on "
        "device (os error 28)"
    )
    assert diagnose(*QUIET, ignored, *QUIET).crashed is False
    found = diagnose(*QUIET, ignored, "Fetching 4 files:  25%|##5       | 1/4", *TB, full)
    assert (found.crashed, found.root_cause) == (True, full)


def test_kubectl_s_refused_answer_is_the_failure_under_unittest_s_verdicts() -> None:
    refused = (
        'Error from server (BadRequest): container "ray-head" in pod "raycluster-head-hg67c" is '
        "waiting to start: ContainerCreating"
    )
    found = diagnose(
        "2023-06-12:14:21:56,768 INFO     [utils.py:163] Execute command: kubectl logs "
        "-n=pod-security -l ray.io/node-type=head --tail=-1", refused, "ERROR", "", "=" * 70,
        "ERROR: test_ray_cluster_with_security_context (__main__.PodSecurityTestCase)", "-" * 70,
        *TB, "subprocess.CalledProcessError: Command 'kubectl logs -n=pod-security -l "
        "ray.io/node-type=head --tail=-1' returned non-zero exit status 1.", "", "-" * 70,
        "Ran 2 tests in 1189.059s", "", "FAILED (errors=1)",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, refused)


def test_spdlog_s_lower_case_levels_are_read_as_severities() -> None:
    error = (
        "[2025-11-04 18:57:17.319] [error] </sdk/runtime/src/comm/socket_library.c:39> "
        "Connection failed with server: No such file or directory"
    )
    found = diagnose(
        *QUIET, error,
        "[2025-11-04 18:57:17.324394] 2720:2720 [warning] TXEManagerInterface "
        "TxeManagerInterface.cpp:102: Failed to initialize socket [socket '/opt/tsi/sock_fd/"
        "rsm_svr_socket', status: FAILED_TO_SEND_REQUEST (-3)]",
        "[2025-11-04 18:57:17.326292] 2720:2720 [critical] TsavRT-0.4.5 TsavRT.h:298: Failed "
        "to setup shared memory",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, error)
    # (a warning alone is lived through)
    warned = "[2025-11-04 18:57:17.324394] 2720:2720 [warning] Failed to get addresses"
    assert diagnose(*QUIET, warned, *QUIET).crashed is False


def test_a_generation_llama_cpp_timed_to_its_end_finished_the_work() -> None:
    # (a notebook whose download failed, then a local model's generation that completed)
    found = diagnose(
        *TB, "ConnectError: [Errno 101] Network is unreachable", "",
        "llama_model_loader: loaded meta data with 22 key-value pairs and 291 tensors",
        "llama_perf_context_print:        eval time =   31783.75 ms /  2039 runs   (   15.59 ms "
        "per token,    64.15 tokens per second)",
        "llama_perf_context_print:       total time =   36478.29 ms /  2047 tokens",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (False, None)


def test_a_help_text_listing_the_log_levels_is_no_failure() -> None:
    found = diagnose(
        "Usage: xinference [OPTIONS] COMMAND [ARGS]...", "Options:",
        "  --log-level TEXT    Set the logger level. Options listed from most log to",
        "                      least log are: DEBUG > INFO > WARNING > ERROR > CRITICAL",
        "                      (Default level is INFO)", *QUIET,
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.candidates) == (False, None, [])


def test_a_cancelled_task_as_the_last_word_is_a_stop_not_a_crash() -> None:
    cancelled = [
        "CancelledError                            Traceback (most recent call last)",
        "Cell In[3], line 40", "---> 40 await asyncio.gather(run_ollama(), run_ngrok())",
        "CancelledError: ",
    ]  # fmt: skip
    served = '[GIN] 2023/12/21 - 06:48:36 | 200 | 54.116342309s | 127.0.0.1 | POST "/api/pull"'
    found = diagnose(*QUIET, served, *cancelled)
    assert (found.crashed, found.root_cause) == (False, None)
    # (a wait cancelled, then its own timeout raised from it: the timeout is the failure)
    timeout = "asyncio.exceptions.TimeoutError"
    found = diagnose(
        *QUIET, *TB, "asyncio.exceptions.CancelledError", "",
        "During handling of the above exception, another exception occurred:", "", *TB, timeout,
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, timeout)
    # (and one just after another failure is that failure's doing)
    failure = "AssertionError: the batch is empty"
    found = diagnose(*QUIET, *TB, failure, "", *TB, "asyncio.exceptions.CancelledError")
    assert (found.crashed, found.root_cause) == (True, failure)


@pytest.mark.parametrize(
    "record",
    [
        "EZ1001: [PID: 55172] 2025-09-13-05:28:15.526.256 tensor 0 not implemented for "
        "DT_UINT64, should be in dtype support list [DT_FLOAT,DT_INT32,DT_INT64,DT_FLOAT16].",
        "E60108: 2024-09-09-06:13:16.140.829 In op[conv3d_backprop_input], [prebuild failed, not "
        "support input size's shape [-1] and [-2]]",
    ],
)
def test_an_ascend_operator_without_a_kernel_for_the_dtype_or_shape_is_unsupported_arch(
    record: str,
) -> None:
    found = diagnose(*QUIET, record)
    assert (found.root_cause, found.error_class) == (record, "unsupported_arch")


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have "
         "enough GPU RAM to fit the quantized model.", "oom_gpu"),
        ("RuntimeError: aclnnGeGluV3 or aclnnGeGluV3GetWorkspaceSize not in libopapi.so, or "
         "libopapi.sonot found.", "import_or_version"),
    ],
)  # fmt: skip
def test_the_class_names_a_model_too_big_for_the_card_or_a_library_too_old(
    line: str, error_class: str
) -> None:
    found = diagnose(*QUIET, *TB, line)
    assert (found.root_cause, found.error_class) == (line, error_class)


def test_a_viewer_s_error_stamp_on_every_line_stays_its_stamp_beside_a_logger_s_warning() -> None:
    # (a cloud viewer stamping E on each line, newest first, over llama.cpp's SYCL warnings)
    lines = [
        *["get_memory_info: [warning] ext_intel_free_memory is not supported (export/set "
          "ZES_ENABLE_SYSMAN=1 to support), use total memory as free memory"] * 4,
        *(f"llama_new_context_with_model:      SYCL{n} compute buffer size =   296.00 MiB"
          for n in range(4)),
        "llama_new_context_with_model: graph nodes  = 1030",
        "llama_new_context_with_model: graph splits = 5", "Segmentation fault (core dumped)",
    ]  # fmt: skip
    stamped = [f"E 2026-02-27T13:00:00.{n:03d}Z {line}" for n, line in enumerate(lines)]
    found = diagnose(*reversed(stamped))
    assert found.root_cause == stamped[-1]


def test_a_test_s_header_is_pytest_s_only_under_its_failures_section() -> None:
    oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    banner = "__________ Training __________"
    # (a program's own banner hides nothing after it)
    found = diagnose(*QUIET, banner, "step 1/100 loss 2.3", oom, "Exiting.")
    assert (found.crashed, found.root_cause) == (True, oom)
    # (under FAILURES, a test's report is code until what it raised)
    raised = "E       AssertionError: tolerance exceeded"
    found = diagnose(
        "=================================== FAILURES ===================================",
        "_________________________________ test_gemm _________________________________", "",
        "    def test_gemm():", '        """Raises:', "        ValueError: on a bad shape", '"""',
        ">       assert err < 1e-3", raised, "", "tests/test_gemm.py:12: AssertionError",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, raised)


def test_a_crash_right_below_a_served_request_s_exception_is_no_part_of_its_message() -> None:
    segfault = "Segmentation fault (core dumped)"
    found = diagnose(
        "To see the GUI go to: http://0.0.0.0:8888", "got prompt",
        "!!! Exception during processing !!! bad input", *TB, "ValueError: bad input", segfault,
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (True, segfault)


def test_a_ray_serve_replica_s_failed_call_is_that_call_s_and_the_replica_serves_on() -> None:
    replica = "(ServeReplica:default:Classifier pid=5184) "
    stamp = "2024-07-17 22:18:18,089 default_Classifier h79g9wc1 f2ea4f7e-a66e / replica.py"
    lines = [
        f"{replica}INFO {stamp}:373 - __CALL__ OK 84.2ms",
        f"{replica}ERROR {stamp}:359 - Request failed:",
        # Ray's report of a task's exception: its header is the task, not "Traceback"
        f"{replica}ray::ServeReplica:default:Classifier.handle_request() (pid=5184, ip=10.0.0.1)",
        f'{replica}  File "/srv/ray/serve/_private/replica.py", line 1132, in call_user_method',
        f"{replica}    await self._call_func_or_gen(",
        f'{replica}  File "/srv/app.py", line 17, in __call__',
        f"{replica}KeyError: 'text'",
        f"{replica}INFO {stamp}:373 - __CALL__ ERROR 9.8ms",
    ]
    found = diagnose(*lines)
    assert found.crashed is False and found.root_cause is None
    # The same exception with no handler's word on it is the replica's own failure.
    found = diagnose(*lines[2:7])
    assert found.crashed is True and found.root_cause == lines[6]


def test_a_job_s_last_word_that_it_completed_means_it_lived_through_what_failed_before() -> None:
    worker_failed = [
        *TB,
        "OSError: [Errno 12] Cannot allocate memory: '/srv/nnunet/training/dataloading'",
    ]
    for done in (
        "2025-10-28 02:04:39.679008: Validation complete",
        "Process 2: Training complete!",
        "[2025-08-29 18:32:00] [620cab28] COMPLETED  : Your job has been completed.",
        # (the Trainer's metrics of its whole run, logged once its last step is done)
        "{'train_runtime': 41.77, 'train_samples_per_second': 459.6, 'train_loss': 0.41}",
        "***** eval metrics *****",
    ):
        found = diagnose(*QUIET, *worker_failed, done)
        assert found.crashed is False and found.root_cause is None, done
    # Not its last word: the failure after it is why it stopped.
    found = diagnose(*QUIET, "Training complete!", *worker_failed)
    assert found.crashed is True and found.root_cause == worker_failed[-1]
    # A line that goes on past the word is no end ("training done, starting the evaluation").
    found = diagnose(*QUIET, *worker_failed, "Training done, starting the evaluation")
    assert found.crashed is True and found.root_cause == worker_failed[-1]


def test_a_handler_relaying_an_error_record_whole_is_explained_by_that_record() -> None:
    said = "ERROR:root:Model type qwen3_vl_moe not supported."
    relayed = (
        "2025-10-10 11:22:53 | ERROR    | __main__:lifespan:147 | Failed to initialize MLX "
        "handler: Error loading model: Model type qwen3_vl_moe not supported."
    )
    found = diagnose(*QUIET, said, relayed)
    assert found.root_cause == said and found.error_class == "import_or_version"
    # A record that only shares some words with an earlier one relays nothing.
    other = "ERROR:root:Model type qwen3_vl_moe loaded with warnings."
    assert diagnose(*QUIET, other, relayed).root_cause == relayed
    # An exception raised with a record's words is the failure that record announced.
    record = "[E1201 11:32:59.6 socket.cpp:1028] [c10d] The client socket has timed out after 20s"
    raised = "torch.distributed.DistNetworkError: The client socket has timed out after 20s"
    assert diagnose(*QUIET, record, *TB, raised).root_cause == raised


def test_advice_for_an_error_not_met_and_a_fallback_taken_are_no_failure() -> None:
    advice = (
        "If you get `CUDA error: invalid device function` errors, the above might be the cause "
        "and the solution is to make sure only one libcudart.so in the paths we search."
    )
    found = diagnose(*QUIET, advice, *QUIET)
    assert found.crashed is not True and found.root_cause is None
    failed = (
        "ERROR Quantization: Module `linear_attn.out_proj` -> Hessian remained non "
        "positive-definite after diagonal floor attempts. Last `damp_percent` tried = 1.00000."
    )
    fell_back = "INFO  | gptq | 0 | linear_attn.out_proj | 4096, 4096 | rtn fallback | 468028 |"
    found = diagnose(*QUIET, failed, fell_back)
    assert found.crashed is False and found.root_cause is None
    # Without the fallback the error is where it stopped.
    assert diagnose(*QUIET, failed).root_cause == failed


def test_a_ci_console_s_control_strings_before_each_line_are_not_its_text() -> None:
    # Buildkite's raw log stamps each line with an APC string ("\x1b_bk;t=<ms>\x07")
    stamped = [f"\x1b_bk;t=17781409953{n:02}\x07{line}" for n, line in enumerate([*QUIET, *TB])]
    failure = "ValueError: Actor with name 'vllm_Worker_1' already exists in the namespace ns"
    found = diagnose(*stamped, f"\x1b_bk;t=1778140995399\x07\x1b[0;36m{failure}\x1b[0m")
    assert found.root_cause == failure and found.crashed is True


def test_oneccl_s_error_record_is_a_collective_failure_and_its_uncaught_exception_the_death() -> (
    None
):
    record = (
        "2024:01:23-00:02:21:(122510) |CCL_ERROR| global.cpp:150 getenv_local_coord: condition "
        "global_data::env().ze_ipc_exchange == ccl::ze::ipc_exchange_mode::sockets failed"
    )
    # Corpus case AZ601: every rank's record, its message going on below it, then each rank
    # raises it uncaught.
    found = diagnose_bytes(corpus_log("AZ601"))
    assert found.root_cause == record and found.error_class == "nccl_comm"
    assert found.crashed is True and "uncaught exception" in found.crashed_reason
    out_of_memory = (
        "2024:05:29-19:16:18:(202165) |CCL_ERROR| worker.cpp:338 ccl_worker_func: worker 0 "
        "caught internal exception: oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at "
        "zeCommandQueueExecuteCommandLists, code: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"
    )
    aborted = "terminate called after throwing an instance of 'ccl::v1::exception'"
    found = diagnose(*QUIET, out_of_memory, aborted)
    assert found.root_cause == out_of_memory and found.error_class == "oom_gpu"


def test_a_test_s_own_exception_in_pytest_s_summary_outranks_tests_that_died_of_another() -> None:
    def failed(test: str, said: str) -> str:
        return f"[2026-07-13T19:39:36Z] FAILED v1/engine/{test} - RuntimeError: {said}"

    dead = "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    own = failed(
        "test_engine_core.py::test_engine_core",
        "CUDA driver initialization failed, you might not have a CUDA gpu.",
    )
    others = [failed(f"test_async_llm.py::test_load[{n}]", dead) for n in range(3)]
    found = diagnose(*QUIET, *others, own, *others)
    assert found.root_cause == own and found.crashed is True
    # Only tests that died of another process: that process's error is not in the log.
    found = diagnose(*QUIET, *others)
    assert found.root_cause is None and "another process failed" in found.crashed_reason


def test_a_lead_in_to_likely_reasons_is_advice_not_the_error_it_explains() -> None:
    died = "[ERROR] llama-server process has terminated with exit code: -1073740791"
    found = diagnose(
        *QUIET,
        died,
        "[ERROR] This usually means:",
        "  - Missing required drivers or dependencies",
        "  - Incompatible model file",
        "[Router] Retry also failed: llama-server failed to start",
    )
    assert found.root_cause == died and found.crashed is True


def test_a_banner_that_says_error_heads_a_report_and_is_not_the_failure() -> None:
    # Corpus case BA203: bitsandbytes' setup report under "=====ERROR=====" banners, then the
    # RuntimeError it raises, its message on the indented line below
    found = diagnose_bytes(corpus_log("BA203"))
    assert found.crashed is True and "=====ERROR=====" not in (found.root_cause or "")


def test_an_exception_that_introduces_the_error_it_wraps_is_said_by_the_line_below() -> None:
    wrapped = (
        "RuntimeError: Failed to import diffusers.pipelines.auto_pipeline because of the "
        "following error (look up to see its traceback):"
    )
    said = "No module named 'torch._C._distributed_c10d'; 'torch._C' is not a package"
    # (the reporter cut the traceback above it, where that error was raised first)
    found = diagnose(*QUIET, *TB, "...", wrapped, said)
    assert found.root_cause == said and found.error_class == "import_or_version"
    # A message that introduces nothing keeps its own line.
    plain = "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:"
    found = diagnose(*QUIET, *TB, plain, "\tMissing key(s) in state_dict: 'lm_head.weight'.")
    assert found.root_cause == plain


def test_a_task_fooocus_finished_after_an_oom_in_another_is_the_server_serving_on() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 42.00 MiB."
    served = (
        "[Fooocus] Saving image 1/1 to system ...",
        "Generating and saving time: 68.62 seconds",
    )
    found = diagnose(
        "Running on local URL:  http://127.0.0.1:7865", "[Fooocus] Preparing task 1/1 ...",
        "Traceback (most recent call last):", *TB[1:], oom, "Total time: 12.07 seconds",
        *(["[Fooocus] Preparing task 1/1 ...", "100% 60/60 [01:01<00:00,  1.02s/it]", *served] * 3),
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.ready) == (False, None, True)


def test_a_notebook_s_gradio_share_link_is_its_server_ready_past_a_bad_checkpoint() -> None:
    bad = (
        "AssertionError: /content/models/Stable-diffusion/rev.safetensors is not a safetensors file"
    )
    found = diagnose(
        "Traceback (most recent call last):", *TB[1:], bad, "",
        "Running on public URL: https://53bf2f75f7e0d4402f.gradio.live", "",
        "Startup time: 20.1s (import torch: 6.0s, import gradio: 2.0s)",
        "Model loaded in 6.1s (load weights from disk: 1.7s, create model: 0.6s).",
        "100% 20/20 [00:18<00:00,  1.08it/s]", "100% 60/60 [00:25<00:00,  2.37it/s]",
    )  # fmt: skip
    assert (found.crashed, found.root_cause, found.ready) == (False, None, True)


def test_a_wheel_pip_failed_to_build_then_installed_another_way_is_gone_past() -> None:
    pip_failed = (
        "Building wheels for collected packages: sentence-transformers",
        "  Building wheel for sentence-transformers (setup.py) ... error",
        "  ERROR: Command errored out with exit status 1:",
        "  error: invalid command 'bdist_wheel'",
        "  ERROR: Failed building wheel for sentence-transformers",
        "Failed to build sentence-transformers",
    )
    installed = "Successfully installed sentence-transformers-2.2.2 filelock-3.13.1"
    oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 6.47 GiB."
    found = diagnose(
        *pip_failed,
        "Running setup.py install for sentence-transformers ... done",
        installed,
        *QUIET,
        "Traceback (most recent call last):",
        *TB[1:],
        oom,
    )
    assert (found.root_cause, found.error_class) == (oom, "oom_gpu")
    # With no word that it installed the package after all, pip's failure is the first.
    found = diagnose(*pip_failed, *QUIET, "Traceback (most recent call last):", *TB[1:], oom)
    assert found.root_cause == pip_failed[3]
    # A program's own failure just above the installer's word is not the installer's to go past.
    found = diagnose("Traceback (most recent call last):", *TB[1:], oom, installed, *QUIET)
    assert found.root_cause == oom


def test_a_log_cut_in_a_handler_s_report_on_one_request_shows_the_server_answering_it() -> None:
    handler = "!!! Exception during processing !!! backend='inductor' raised:"
    raised = "ImportError: DLL load failed while importing cuda_utils"
    found = diagnose(*QUIET, handler, raised, "", "You can suppress this exception and fall back")
    assert (found.crashed, found.root_cause) == (False, None)
    # The node's own word on it just above, the paste cut at the traceback's first line.
    found = diagnose(
        *QUIET, "Error during sampling: Allocation on device",
        "!!! Exception during processing !!! Allocation on device",
        "Traceback (most recent call last):",
    )  # fmt: skip
    assert (found.crashed, found.root_cause) == (False, None)
    # Something failing after the report is the process's own end.
    found = diagnose(*QUIET, handler, raised, "", "Segmentation fault (core dumped)")
    assert found.crashed is True


def test_an_install_that_failed_long_before_the_end_is_one_the_program_went_on_past() -> None:
    failed = (
        "  ERROR: Failed building wheel for openfold",
        "ERROR: ERROR: Failed to build installable wheels for some pyproject.toml based projects",
    )
    work = [f"[ES step {n:03}] avg=42.91, max=45.35" for n in range(120)]
    found = diagnose(*QUIET, *failed, "openfold install failed (may still work)", *work)
    assert (found.crashed, found.root_cause) == (False, None)
    # Where the log ends soon after it, the install's failure is the story.
    found = diagnose(*QUIET, *failed, *work[:10])
    assert found.crashed is True and found.root_cause in failed


def test_a_worker_thread_dying_after_the_operator_s_ctrl_c_is_the_stop_s_teardown() -> None:
    died = [
        "Exception in thread Thread-7 (run_inference_thread):",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/multiprocessing/connection.py", line 646, in SocketClient',
        "    s.connect(address)",
        "FileNotFoundError: [Errno 2] No such file or directory",
    ]
    found = diagnose(*QUIET, "Traceback (most recent call last):", *TB[1:], "KeyboardInterrupt: ",
                     "Device cuda:0:  29%|##9       | 1746/6055", *died)  # fmt: skip
    assert (found.crashed, found.root_cause) == (False, None)
    assert "stopped" in found.crashed_reason
    # The main thread's own failure after the interrupt is a launcher's stop for it.
    raised = "RuntimeError: CUDA error: an illegal memory access was encountered"
    found = diagnose(*QUIET, "KeyboardInterrupt", *TB, raised)
    assert found.crashed is True and found.root_cause == raised
