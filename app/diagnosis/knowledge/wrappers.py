"""Wrappers: lines a launcher, a supervisor or a runtime prints around a failure raised
elsewhere. They are never the root cause when anything more specific is in the log."""

from dataclasses import dataclass

from app.diagnosis.knowledge.fact import Fact


@dataclass(frozen=True)
class Wrapper(Fact):
    # Says nothing of its own, only that something failed elsewhere: never a runner-up, and
    # the root cause only when no other wrapper is left (DeepSpeed's "exits with return code
    # = -9" is weak: its exit code is the only information some logs hold).
    strong: bool = False
    # Says in words that another process failed (a child, an engine core, a worker): the
    # error is that process's to print, and a log that does not hold it yet is waiting for it.
    another_process: bool = False


WRAPPERS = (
    Wrapper(
        r"Received sigquit from a child process|It usually means the child failed",
        ("sglang",),
        "[2025-11-06T02:10:00.703Z] [2025-11-06 02:10:00] Received sigquit from a child "
        "process. It usually means the child failed.",
        "sglang: the launcher's SIGQUIT handler (python/sglang/srt/entrypoints/engine.py), "
        "raised by a scheduler that died; observed in corpus case 040",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"Initialization failed",
        ("sglang",),
        "[2024-12-13 01:47:34] Initialization failed. warmup error: Traceback (most recent call "
        "last):",
        "sglang: python/sglang/srt/entrypoints/http_server.py when its warm-up request fails; "
        "observed in corpus case 002",
    ),
    Wrapper(
        r"See (?:the )?root cause above",
        ("vllm",),
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause "
        "above. Failed core proc(s): {}",
        "vLLM V1: wait_for_engine_startup (vllm/v1/engine/utils.py) when an engine core died "
        "while starting",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"check the stack trace above",
        ("vllm",),
        "(EngineCore_DP0 pid=11075) RuntimeError: Worker failed with error 'CUDA error: an "
        "illegal memory access was encountered', please check the stack trace above for the "
        "root cause",
        "vLLM V1: the multiprocess executor (vllm/v1/executor/multiproc_executor.py) when a "
        "worker's call failed",
        strong=True,
    ),
    Wrapper(
        r"ChildFailedError",
        ("torchrun",),
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "torchrun (torch/distributed/elastic/multiprocessing/errors), then a table of the "
        "ranks that failed; observed in corpus case 503",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"failed! Received signal",
        ("pytorch",),
        "Oct 16 02:07:00 RuntimeError: test_c10d failed! Received signal: SIGIOT",
        "PyTorch's test runner (test/run_test.py) on a test process a signal ended; observed "
        "in corpus case 006",
        strong=True,
    ),
    Wrapper(
        r"Engine process failed to start",
        ("vllm",),
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
        "vLLM before V1: the OpenAI server (vllm/entrypoints/openai/api_server.py) when its "
        "engine process died",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"EngineDeadError",
        ("vllm",),
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
        "trace (above) for the root cause.",
        "vLLM V1: vllm/v1/engine/exceptions.py, raised to every request once the engine core died",
    ),
    Wrapper(
        r"\bCaught \w+ in DataLoader worker process \d+",
        ("pytorch",),
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.",
        "PyTorch's DataLoader (torch/_utils.py, ExceptionWrapper) re-raising a worker's "
        "exception; the worker's own traceback follows under 'Original Traceback'; observed in "
        "corpus case N216",
    ),
    Wrapper(
        r"\bRuntimeError: Executor failed\.?$",
        ("vllm",),
        "(EngineCore_DP0 pid=478560) ERROR 01-18 22:19:26 [core.py:868] RuntimeError: Executor "
        "failed.",
        "vLLM V1's engine core (vllm/v1/engine/core.py) when its executor's monitor found a "
        "worker dead: the executor's own line before it says which; observed in corpus case K082",
    ),
    Wrapper(
        r"Worker failed with error",
        ("vllm",),
        "(EngineCore_DP0 pid=9164) RuntimeError: Worker failed with error 'size_k must divisible "
        "by BLOCK_SIZE_K', please check the stack trace above for the root cause",
        "vLLM V1: the multiprocess executor (vllm/v1/executor/multiproc_executor.py), quoting "
        "the worker's error, whose own traceback is above",
    ),
    Wrapper(
        r"\(original error: ",
        ("vllm",),
        "(EngineCore_DP0 pid=1462) ERROR 03-10 07:38:43 [gpu_model_runner.py:4219] Failed to "
        "load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free "
        "memory for weights, increasing --tensor-parallel-size, or using --quantization. (original "
        "error: CUDA out of memory. Tried to allocate 260.00 MiB.)",
        "vLLM V1's model runner (vllm/v1/worker/gpu_model_runner.py) advising on an error whose "
        "own traceback is printed after it",
    ),
    Wrapper(
        r"Capture cuda graph failed: ?$",
        ("sglang",),
        "Exception: Capture cuda graph failed:",
        "sglang: python/sglang/srt/model_executor/cuda_graph_runner.py raises 'Capture cuda "
        "graph failed: {error}'; an error whose text starts with a newline leaves it bare",
    ),
    # An abort that names only the kind of error: the lines around it say which.
    Wrapper(
        r"(?:^|:\s)(?:CUDA|HIP|cuBLAS|CUBLAS|ROCm) error\s*$",
        ("llama.cpp", "ollama"),
        "opt/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:97: CUDA error",
        "ggml's CUDA backend (ggml/src/ggml-cuda/ggml-cuda.cu) aborting after it printed the "
        "error and the call; observed in corpus case 862",
    ),
    Wrapper(
        r"(?<!OOM )\bKilled\b(?! process)",  # (not "... have been OOM Killed": that says why)
        ("shell",),
        "Killed",
        "a shell's report on a child that SIGKILL ended (the OOM killer's own line, 'Killed "
        "process N', says why); observed in corpus case 002",
    ),
    Wrapper(
        r"exits? with return code = -?\d+",
        ("deepspeed",),
        "[2023-10-26 17:54:48,155] [ERROR] [launch.py:321:sigkill_handler] "
        "['/data_new/user/polyglot-ko/data-parallel/deepspeed-venv/bin/python3', '-u', "
        "'deepspeed-trainer.py', '--local_rank=3', '--deepspeed', 'deepspeed_config_2.json'] "
        "exits with return code = -9",
        "DeepSpeed's launcher (deepspeed/launcher/launch.py, sigkill_handler); observed in "
        "corpus case 578",
    ),
    Wrapper(
        r"Traceback \(most recent call",
        ("python",),
        "Traceback (most recent call last):",
        "Python: the header of every traceback; the exception it ends in says what failed",
        strong=True,
    ),
    Wrapper(
        r"Scheduler hit an exception",
        ("sglang",),
        "[2025-12-22 19:08:58] Scheduler hit an exception: Traceback (most recent call last):",
        "sglang: run_scheduler_process (python/sglang/srt/managers/scheduler.py), then the "
        "traceback; observed in corpus case 028",
    ),
    Wrapper(
        r"Exception in thread",
        ("python",),
        "Exception in thread Thread-3 (_watchdog_loop):",
        "Python: threading's excepthook (Lib/threading.py), then the thread's traceback",
    ),
    Wrapper(
        r"Exception in worker",
        ("vllm",),
        "(VllmWorkerProcess pid=2345) ERROR 10-11 12:27:29 multiproc_worker_utils.py:233] "
        "Exception in worker VllmWorkerProcess while processing method init_device.",
        "vLLM before V1: vllm/executor/multiproc_worker_utils.py, then the worker's traceback",
    ),
    Wrapper(
        r"Error in atexit",
        ("python",),
        "Error in atexit._run_exitfuncs:",
        "Python: an exit handler that raised (Modules/atexitmodule.c), then its traceback",
    ),
    Wrapper(
        r"Error in sys\.excepthook",
        ("python",),
        "Error in sys.excepthook:",
        "Python: an exception hook that raised while reporting another exception",
    ),
    Wrapper(
        r"SystemExit",
        ("python",),
        "SystemExit: 1",
        "Python: sys.exit() with a status, at the end of a traceback",
    ),
    Wrapper(
        r"KeyboardInterrupt",
        ("python",),
        "KeyboardInterrupt",
        "Python: a SIGINT (Ctrl-C, or a launcher stopping its children) ending a traceback",
    ),
    Wrapper(
        r"Terminated\b",
        ("slurm", "shell"),
        "srun: error: host-1: task 0: Terminated",
        "Slurm's srun on a task that SIGTERM ended (a shell says 'Terminated' too); observed in "
        "corpus case 596",
    ),
    Wrapper(
        r"core dumped",
        ("shell",),
        "Aborted (core dumped)",
        "a shell's report on a child that a signal ended; observed in corpus case 583",
    ),
    Wrapper(
        r"^(?:[\w.]+\.)?(?:Exception|RuntimeError): ?$",
        ("python",),
        "RuntimeError:",
        "Python: an exception whose message starts with a newline (a native library's error "
        "text) leaves its name alone on the line",
    ),
    Wrapper(
        r"ExceptionGroup: unhandled errors",
        ("python", "uvicorn"),
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
        "Python: asyncio's TaskGroup (Lib/asyncio/taskgroups.py) and anyio's, as Starlette "
        "and the servers built on it raise them",
    ),
    Wrapper(
        r"sub-exception",
        ("python",),
        "  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)",
        "Python: an exception group's summary line counts its sub-exceptions (Python 3.11+)",
    ),
    Wrapper(
        r"\bfailed to start\b",
        ("tgi", "vllm"),
        "2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start",
        "Text Generation Inference's launcher (launcher/src/main.rs) on a shard that died; "
        "vLLM's 'WorkerProc failed to start.' too; observed in corpus case 500",
    ),
    Wrapper(
        r"please check (?:the )?(?:error )?log",
        ("tensorrt-llm",),
        "AssertionError: Engine building failed, please check error log.",
        "TensorRT-LLM's trtllm-build (tensorrt_llm/commands/build.py) after a build that "
        "logged its error",
    ),
    Wrapper(
        r"\bValidationError: \d+ validation errors? for\b",
        ("pydantic", "vllm"),
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "pydantic (pydantic_core's ValidationError), as vLLM's config dataclasses raise it: the "
        "lines under it ('  Value error, ...') say which value and why",
    ),
    Wrapper(
        r"\bbuild stopped: subcommand failed\b",
        ("ninja", "pytorch"),
        "ninja: build stopped: subcommand failed.",
        "ninja (src/ninja.cc) after a build command failed, as PyTorch's cpp_extension and "
        "every JIT that builds with ninja print it: the compiler's first 'error:' line says why",
    ),
    Wrapper(
        r"\bCompilationError: at \d+:\d+:",
        ("triton",),
        "triton.compiler.errors.CompilationError: at 1:0:",
        "Triton (python/triton/compiler/errors.py): the kernel's source follows, then the "
        "error that stopped its compilation, quoted ('ValueError(\"type fp8e4nv not "
        "supported in this architecture ...\")')",
    ),
    Wrapper(
        r"^Fatal Python error: Aborted\b",
        ("python",),
        "Fatal Python error: Aborted",
        "CPython's faulthandler on SIGABRT (Modules/faulthandler.c): the abort's reason is the "
        "native error printed before it ('terminate called ...', 'what(): ...')",
    ),
    Wrapper(
        r"\bCalledProcessError\b",
        ("python",),
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        "Python's subprocess (Lib/subprocess.py): a child that failed, whose own error (an "
        "ImportError, a compiler's error) is printed around it",
    ),
    Wrapper(
        r"\bERR99999 UNKNOWN applica\w* exception\b",
        ("vllm-ascend", "torch_npu"),
        "[ERROR] 2025-07-03-15:27:10 (PID:333665, Device:-1, RankID:-1) ERR99999 UNKNOWN "
        "applicaiton exception",
        "torch_npu's exit hook (Ascend) on any Python exception that ended the process: the "
        "exception's own traceback is before it; observed in corpus case Q007",
    ),
    Wrapper(
        r"\bEngineCore encountered a fatal error\b",
        ("vllm",),
        "(EngineCore_DP0 pid=2345) ERROR 09-01 10:00:05 [core.py:710] EngineCore encountered "
        "a fatal error.",
        "vLLM V1: run_engine_core (vllm/v1/engine/core.py) logs it before the traceback of "
        "what failed, or after a worker printed its own error",
    ),
    Wrapper(
        r"\bEngine core initialization failed\b",
        ("vllm",),
        "RuntimeError: Engine core initialization failed. Failed core proc(s): {'EngineCore_0': 1}",
        "vLLM V1: wait_for_engine_startup (vllm/v1/engine/utils.py), in versions that do not "
        "say 'See root cause above': the engine core's own error is its to print",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\[TRT-LLM\] \[E\] Failed to initialize\b",
        ("tensorrt-llm",),
        "[04/30/2025-14:03:32] [TRT-LLM] [E] Failed to initialize executor on rank 6: "
        "[TensorRT-LLM][ERROR] CUDA driver error in cuDriver->cuModuleLoadData(&cuModule, "
        "kernelInfo.data): CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered. "
        "(/src/tensorrt_llm/cpp/tensorrt_llm/kernels/trtllmGenKernels/blockScaleMoe/"
        "gemmCommon.h:741)",
        "TensorRT-LLM's executor worker (tensorrt_llm/executor/worker.py) on an executor that "
        "did not start, quoting its error; observed in corpus case 042",
    ),
    Wrapper(
        r"\bERROR: (?:failed to (?:build|solve): )*process \".*\" did not complete successfully",
        ("docker",),
        "#17 ERROR: process \"/bin/sh -c python3 -c 'import vllm'\" did not complete "
        "successfully: exit code: 1",
        "Docker BuildKit: a RUN step whose command failed, after that command's own output "
        "(corpus case H062 has one, its command a whole script)",
    ),
    Wrapper(
        # (only where it says no more than how the runner ended: its reason may be the cause)
        r"\bllama runner (?:process has )?terminated\b(?::|\" error=\")\s*(?:exit status \w+"
        r"|signal: \w+|error:)",
        ("ollama",),
        'time=2025-07-16T20:07:57.610+02:00 level=ERROR source=sched.go:489 msg="error loading '
        'llama server" error="llama runner process has terminated: exit status 2"',
        "Ollama's scheduler (server/sched.go) relaying its runner's death, and the CLI relaying "
        "that; the runner's own lines say why; observed in corpus case 505",
    ),
    Wrapper(
        r"\bray\.exceptions\.RayTaskError\(\w+\): ",
        ("ray",),
        "ray.exceptions.RayTaskError(NotImplementedError): ray::main_task() (pid=19443, "
        "ip=10.0.0.1)",
        "Ray (python/ray/exceptions.py): the header of a remote task's failure, re-raised where "
        "it was awaited; the task's own traceback and exception follow",
    ),
    Wrapper(
        r"^\w+: in user code:\s*$",
        ("tensorflow",),
        "ValueError: in user code:",
        "TensorFlow's autograph: the header of an error raised inside a traced function; the "
        "frames and the exception itself follow, indented",
    ),
    Wrapper(
        r"\bfailed to import on the worker\b",
        ("ray",),
        "RuntimeError: The actor with name WorkerDict failed to import on the worker. This may be "
        "because needed library dependencies are not installed in the worker environment:",
        "Ray's function manager (python/ray/_private/function_manager.py) when an actor's class "
        "cannot be imported; the import's own error follows",
    ),
    Wrapper(
        r"because of the following error \(look up to see its traceback\)",
        ("transformers",),
        "RuntimeError: Failed to import transformers.models.mistral.modeling_mistral because of "
        "the following error (look up to see its traceback):",
        "transformers' lazy module (utils/import_utils.py) re-raising the import error above it",
    ),
    Wrapper(
        r"\bCaught \w+ in replica \d+ on device \d+",
        ("pytorch",),
        "torch.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.",
        "PyTorch's DataParallel (torch/_utils.py ExceptionWrapper) re-raising a replica's "
        "exception; its 'Original Traceback' ends in the exception itself",
    ),
    Wrapper(
        r"\bcollect2: error: ld returned \d+ exit status",
        ("gcc",),
        "collect2: error: ld returned 1 exit status",
        "GCC's driver after the linker failed: the linker's own line above says why",
    ),
    Wrapper(
        r"[Ss]ee (?:the )?stack trace above",
        ("vllm",),
        "CRITICAL 05-07 19:18:17 [core_client.py:359] Got fatal signal from worker processes, "
        "shutting down. See stack trace above for root cause issue.",
        "vLLM V1's engine client (vllm/v1/engine/core_client.py) when a worker process died",
        strong=True,
    ),
    Wrapper(
        r"Unhandled error \(suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'\)",
        ("ray",),
        "2026-05-06 11:03:10,805 ERROR worker.py:438 -- Unhandled error (suppress with "
        "'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::RayWorkerWrapper.warmup() (pid=2432)",
        "Ray's driver (python/ray/_private/worker.py) reporting an actor task's exception that "
        "nobody awaited: the task's own traceback says what it was",
    ),
    Wrapper(
        r"\bNVRTCError: NVRTC_ERROR_COMPILATION\b",
        ("cupy",),
        "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)",
        "CuPy's NVRTC binding (cupy_backends/cuda/libs/nvrtc.pyx): the CompileException raised "
        "while handling it quotes the compiler's log",
    ),
)
