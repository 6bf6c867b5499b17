"""Wrappers: lines a launcher, a supervisor or a runtime prints around a failure raised
elsewhere. They are never the root cause when anything more specific is in the log."""

from dataclasses import dataclass

from app.diagnosis.knowledge.fact import Fact
from app.diagnosis.knowledge.lifecycle import PIP_CANCELLED


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
        r"^Failed to create the dialog\.?$",
        ("qualcomm-genie",),
        "Failed to create the dialog.",
        "Qualcomm's genie-t2t-run when its dialog could not be set up: the '[ERROR] \"...\"' "
        "record before it says why; observed in corpus cases BU604, BY110 and BY111",
        strong=True,
    ),
    Wrapper(
        r"\bA fatal error happened, you can check the [\w-]+ logs? here\b",
        ("burn",),
        "A fatal error happened, you can check the experiment logs here => "
        "'/tmp/resnet-finetune\\experiment.log'",
        "Burn's training panic hook (its '=== PANIC ===' banner), printed before the panic it "
        "reports; observed in corpus case BX203",
        strong=True,
    ),
    Wrapper(
        r"\bImportError: Failed to import test module: ",
        ("python",),
        "ImportError: Failed to import test module: tests.test_data_pipeline",
        "unittest's loader over the traceback of the import that failed, printed under it; "
        "observed in corpus case BH208",
    ),
    Wrapper(
        r"\bChild process unexpectedly failed with an exit code\b",
        ("sglang",),
        "Child process unexpectedly failed with an exit code 256. pid=97721",
        "sglang's launcher on one of its child processes (a scheduler, a detokenizer) that "
        "exited; that process printed why; observed in corpus case BG705",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        # (its crate named in backticks, or bare where a report lost them)
        r"^error: failed to run custom build command for `?[\w-]+ v\d",
        ("cargo",),
        "error: failed to run custom build command for `candle-kernels v0.2.1 "
        "(https://github.com/huggingface/candle.git#84d003ff)`",
        "cargo on a crate's build script that exited non-zero: the script's own stdout and "
        "stderr follow under 'Caused by:' (a panic saying why); observed in corpus case BJ302",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"^Error response from daemon: failed to create task for container\b",
        ("docker",),
        "Error response from daemon: failed to create task for container: failed to create shim "
        "task: OCI runtime create failed: runc create failed: unable to start container process: "
        "error during container init: error running hook #0: error running hook: exit status 1, "
        "stdout: , stderr: Auto-detected mode as 'legacy'",
        "Docker's daemon on a container it could not start: where a start-up hook failed (the "
        "NVIDIA container runtime's), the hook's own error follows, 'nvidia-container-cli: "
        "initialization error: ...'; observed in corpus case AW406",
    ),
    Wrapper(
        r"\b\d+ root error\(s\) found\.?$",
        ("tensorflow",),
        "tensorflow.python.framework.errors_impl.InternalError: 2 root error(s) found.",
        "TensorFlow's session summarising the ops that failed in one step, each listed below "
        "it ('(0) Internal: ...') and logged before it ('OP_REQUIRES failed at ...'); "
        "observed in corpus case BK905",
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
        # (a positive exit code: the child raised, and its traceback says why; a signal's
        # negative one, -9 or -11, is the only word on the child's death a log may hold)
        r"\bfailed \(exitcode: [1-9]\d*\) local_rank: \d+",
        ("torchrun",),
        "E0712 11:43:59.809000 164879 /opt/pytorch/pytorch/torch/distributed/elastic/"
        "multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 164889) of "
        "binary: /usr/bin/python3",
        "torchrun's elastic agent (torch/distributed/elastic/multiprocessing/api.py) on a "
        "worker that exited; observed in corpus case AC092",
        another_process=True,
    ),
    Wrapper(
        r"^\s*exitcode\s*:\s*[1-9]\d* \(pid: \d+\)",
        ("torchrun",),
        "  exitcode  : 1 (pid: 164890)",
        "a row of torchrun's ChildFailedError table, the worker's traceback under it; observed "
        "in corpus case AC092",
    ),
    Wrapper(
        r"\bProcessRaisedException:\s*$",
        ("pytorch",),
        "torch.multiprocessing.spawn.ProcessRaisedException:",
        "torch.multiprocessing.spawn (torch/multiprocessing/spawn.py) re-raising a child's "
        "exception; the child's traceback follows '-- Process 1 terminated with the following "
        "error:'; observed in corpus case D131",
        strong=True,
    ),
    Wrapper(
        # (verbose mode's verdict on a test, on a line of its own after the test's output)
        r"^(?:ERROR|FAIL)$",
        ("python",),
        "ERROR",
        "Python's unittest in verbose mode: a test's verdict after its name ('... ERROR'), on a "
        "line of its own when the test printed; its traceback follows in the summary; observed "
        "in corpus case AX605",
        strong=True,
    ),
    Wrapper(
        # (a class's or a module's set-up failing too: "ERROR: setUpClass (__main__.TestX)", and
        # a module the loader could not import: "ERROR: tests.x (unittest.loader._FailedTest)")
        r"^\s*(?:ERROR|FAIL): (?:(?:test\w*|set[Uu]p\w*|tear[Dd]own\w*) \([\w.]+\)|"
        r"[\w.]+ \(unittest\.loader\._FailedTest\))",
        ("python",),
        "ERROR: test_chunked_prefill (test_vision_chunked_prefill.TestVisionChunkedPrefill."
        "test_chunked_prefill)",
        "Python's unittest: the header of a failed test, its traceback and exception below; "
        "observed in corpus cases O088, O096, O129, AW204 and BH208",
        strong=True,
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
        r"^\s*error: subprocess-exited-with-error\s*$|^\s*ERROR: Failed building wheel for \S+"
        r"|^(?:ERROR: )+(?:Failed to build installable wheels|Could not build wheels for)\b",
        ("pip",),
        "  error: subprocess-exited-with-error",
        "pip (src/pip/_internal/exceptions.py, InstallationSubprocessError) after a build "
        "backend's subprocess failed, and its summaries of the wheels it could not build ('ERROR: "
        "Failed to build installable wheels', corpus case BE003): the build's own error is in "
        "the output it replays above; observed in corpus case Z006",
        strong=True,
    ),
    Wrapper(
        r"\berror: `cargo [^`]+` failed with code \d+$",
        ("setuptools-rust",),
        "63.11   error: `cargo rustc --lib --message-format=json-render-diagnostics "
        "--manifest-path Cargo.toml --release -v --features 'pyo3/extension-module "
        "python-bindings' --crate-type cdylib -- --crate-type=cdylib` failed with code 101",
        "setuptools-rust (build_rust) when cargo failed: cargo's own error, or a build "
        "script's word on what it could not find, is in the output above; observed in corpus "
        "case AT503",
        strong=True,
    ),
    Wrapper(
        r"\bCUDA Setup failed despite GPU being available\b",
        ("bitsandbytes",),
        "        CUDA Setup failed despite GPU being available. Please run the following command "
        "to get more information:",
        "bitsandbytes before 0.43 (cextension.py), raising after its CUDA SETUP report: the "
        "report's own line on the library it could not find says why; observed in corpus case "
        "AR105",
        strong=True,
    ),
    Wrapper(
        # (uv's cross, U+00D7, or an "x" where the terminal has no Unicode)
        "^(?:x|\u00d7) Failed to build `[^`]+`$"
        r"|\bCall to `[\w.:]+` failed \(exit status: \d+\)",
        ("uv",),
        "  `-> Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)",
        "uv's report that a package's build backend failed (its tree of causes under 'Failed to "
        "build'): the backend's own error is in what uv relayed of its output, at DEBUG under "
        "-v; observed in corpus case AR102",
        strong=True,
    ),
    Wrapper(
        r"^(?:asyncio\.(?:exceptions\.)?|concurrent\.futures\._base\.)?CancelledError\s*$",
        ("python",),
        "asyncio.exceptions.CancelledError",
        "asyncio (asyncio/exceptions.py): a task cancelled by another, with no word of its own; "
        "what cancelled it (a timeout, a failed sibling, a shutdown) is said by the next of its "
        "chain or by the lines around it; observed in corpus case Z019",
    ),
    Wrapper(
        r"\bWorker \w+ pid \d+ died, exit code: -15\b",
        ("vllm",),
        "ERROR 10-15 02:47:20 multiproc_worker_utils.py:117] Worker VllmWorkerProcess pid 1017165 "
        "died, exit code: -15",
        "vLLM's worker monitor (vllm/executor/multiproc_worker_utils.py) on a worker that "
        "SIGTERM ended: the engine shutting its workers down after its own failure, which its "
        "traceback says; observed in corpus case Z017",
    ),
    Wrapper(
        r"^\s*=> ERROR \[[^\]]*\] (?:RUN|COPY|ADD)\b",
        ("docker",),
        ' => ERROR [build 5/5] RUN if [ "default" != "default" ]; then export CMAKE_ARGS=x; fi '
        "&& cma  0.3s",
        "Docker BuildKit's progress view naming the step that failed: the step's own output, "
        "replayed under it between '------' lines, says why; corpus case A037 has one",
    ),
    Wrapper(
        r"\bError compiling objects for extension\b",
        ("pytorch",),
        "RuntimeError: Error compiling objects for extension",
        "PyTorch's C++ extension builder (torch/utils/cpp_extension.py, _run_ninja_build) "
        "after ninja failed: the compiler's own errors are printed above; corpus case Z015 has "
        "it indented under pip's replay",
    ),
    Wrapper(
        r"\bNinja build failed\. Ninja output:",
        ("flashinfer",),
        "(EngineCore pid=3164713) ERROR 09-23 10:35:19 [core.py:1374] RuntimeError: Ninja build "
        "failed. Ninja output:",
        "FlashInfer's JIT (flashinfer/jit/cpp_ext.py) when ninja failed: the compiler's own "
        "lines, replayed under it, say why; observed in corpus case AQ101",
    ),
    Wrapper(
        r"\bptxas fatal\s*: Ptx assembly aborted due to errors\b",
        ("cuda",),
        "ptxas fatal   : Ptx assembly aborted due to errors",
        "NVIDIA's PTX assembler after the errors it printed: its own summary, the first "
        "'ptxas ... error :' line says which; corpus case Z092 has it under torch inductor's "
        "logger",
    ),
    Wrapper(
        r"\bError in model execution(?: \(input dumped to [^)]*\))?: \S",
        ("vllm",),
        "ERROR 12-18 22:57:54 engine.py:135] IndexError: Error in model execution (input dumped "
        "to /tmp/err_execute_model_input_20241218-225754.pkl): tuple index out of range",
        "vLLM's model runner (vllm/worker/model_runner_base.py, dump_input_when_exception) "
        "raising the step's exception again with its own words before the original message; "
        "the original's own line is in its traceback above, where the log holds it; observed "
        "in corpus case A010",
    ),
    Wrapper(
        r"EngineDeadError",
        ("vllm",),
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
        "trace (above) for the root cause.",
        "vLLM V1: vllm/v1/engine/exceptions.py, raised to every request once the engine core died",
    ),
    Wrapper(
        r"\bDataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly\b",
        ("pytorch",),
        "RuntimeError: DataLoader worker (pid(s) 1127) exited unexpectedly",
        "PyTorch's DataLoader (torch/utils/data/dataloader.py, _try_get_data) raising from "
        "the signal handler's word on how the worker died; observed in corpus case E062",
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
        r"^FAILED \S+::\S+ - \S",
        ("pytest",),
        "FAILED tests/gemm/test_mm_fp4.py::test_mm_fp4[mxfp4_alpha-False-True-cudnn-res_dtype1-"
        "512-512-256] - cudnn._compiled_module.cudnnGraphNotSupportedError: No valid engine "
        "configs for Matmul_MUL_",
        "pytest's short test summary (-r): a failed test and the first line of its exception, "
        "whose traceback the report holds above when it was kept; observed in corpus case AL409",
    ),
    Wrapper(
        r"\.py::\S+ (?:ERROR|FAILED)\s+\[\s*\d+%\]$",
        ("pytest",),
        "2026-01-19T14:48:37.5828264Z test_llm.py::TestWrappers::test_packing[True] ERROR      "
        "                [ 25%]",
        "pytest's verbose progress: a test that failed or errored, the run going on to the "
        "next; its report below says why, or the run's own fault does; observed in corpus case "
        "AU205",
    ),
    Wrapper(
        r"^make(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error \d+$",
        ("make",),
        "make: *** [Makefile:2: install-server] Error 2",
        "GNU make on a recipe whose command failed: the command's own output above says why; "
        "observed in corpus case AV303",
    ),
    Wrapper(
        r"\bAsyncLLM output_handler failed\.?$",
        ("vllm",),
        "(APIServer pid=478060) ERROR 01-18 22:19:26 [async_llm.py:538] AsyncLLM output_handler "
        "failed.",
        "vLLM V1's API server (vllm/v1/engine/async_llm.py) when the engine it reads from is "
        "dead: an EngineDeadError follows, the engine's own lines say why; observed in corpus "
        "case K082",
    ),
    Wrapper(
        r"\bWorker proc \S+ died unexpectedly",
        ("vllm",),
        "(EngineCore_0 pid=271) ERROR 08-25 12:24:19 [multiproc_executor.py:146] Worker proc "
        "VllmWorker-1 died unexpectedly, shutting down executor.",
        "vLLM V1's multiprocess executor (vllm/v1/executor/multiproc_executor.py) when its "
        "monitor saw a worker exit: the worker's own error, or the executor's quote of it, says "
        "why; observed in corpus case J033",
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
        r"\b[Ee]xit(?:ed)?(?: with)? (?:code|status)[ :=]*(?:0x[Cc]0000[0-9A-Fa-f]{3}"
        r"|-10737\d{5}|32212\d{5})\b",
        ("windows",),
        "Whisper process failed. Exit code: -1073741795",
        "a launcher on Windows naming its child's exit code, a status of Windows' (0xC000001D, "
        "an illegal instruction, read as signed; 0xC0000005 is 3221225477 unsigned); observed "
        "in corpus case AB006",
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
        PIP_CANCELLED,
        ("pip",),
        "ERROR: Operation cancelled by user",
        "pip's word on a Ctrl-C while it installs (its KeyboardInterrupt, said at ERROR): the "
        "operator's stop, no failure of its own; observed in corpus case BE801",
    ),
    Wrapper(
        r"Terminated\b",
        ("slurm", "shell"),
        "srun: error: host-1: task 0: Terminated",
        "Slurm's srun on a task that SIGTERM ended (a shell says 'Terminated' too); observed in "
        "corpus case 596",
    ),
    Wrapper(
        r"\.\w+:\d+: (?:CUDA|CANN|HIP|ROCm|SYCL|MUSA) error\s*$",
        ("llama.cpp",),
        "/usr/local/llama.cpp/ggml/src/ggml-cann/ggml-cann.cpp:67: CANN error",
        "ggml's backends (ggml_cuda_error, ggml_cann_error...) naming the source line they "
        "abort from; the backend's own 'CANN error: EZ9903: ...' line before or after it says "
        "what failed; observed in corpus case AN051",
    ),
    Wrapper(
        r"\bLMSTUDIO_STARTUP_ERROR:",
        ("lmstudio",),
        '\t\t\t\t\t\t\tLMSTUDIO_STARTUP_ERROR:{"schemaVersion":1,"code":"model_load_failed",'
        '"message":"Failed '
        "to initialize the context: dflash requires ctx_other to be set (this warning is normal "
        'during memory fitting)"}',
        "LM Studio's runtime summing up, as JSON for its app, why the model did not start: the "
        "engine's own line, before or after it, says it first; observed in corpus case AN058",
    ),
    Wrapper(
        r"^srun: error: \S+: tasks? [\d,-]+: Exited with exit code [1-9]\d*$",
        ("slurm",),
        "srun: error: host-1: task 0: Exited with exit code 1",
        "Slurm's srun on a task that exited with a status: the task's own output says why; "
        "observed in corpus case AM123",
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
        r"^(?:\[[\d/:-]+\] \[E\] )?(?:Engine could not be created from network|Building engine "
        r"failed|Engine set up failed|Error: Build serialized network failed\.?)$",
        ("tensorrt",),
        "Error: Build serialized network failed.",
        "trtexec (samples/common/sampleEngines.cpp) and the programs built on TensorRT's "
        "builder, after the builder logged why it could not build; observed in corpus case "
        "CA404",
    ),
    Wrapper(
        r"^(?:\w+Error: )?\(Fatal\) Operator \w+ raises an [\w:]+ exception\.$",
        ("paddlepaddle",),
        "SystemError: (Fatal) Operator relu raises an paddle::memory::allocation::BadAlloc "
        "exception.",
        "PaddlePaddle's executor on an operator that threw: 'The exception content is' and the "
        "exception's own message follow it; observed in corpus case BZ003",
        strong=True,
    ),
    Wrapper(
        # (a pointer compared with null, or a TensorRT object's name alone)
        r"\bAssertion `(?:\w+(?:->|\.))*\w+ != (?:nullptr|NULL)' failed\.?$"
        r"|\bAssertion `\w*(?:engine|network|builder)\w*' failed\.?$",
        ("tensorrt", "c++"),
        "rcnn: /home/user/user/proj/tensorrtx_yolo8/rcnn/rcnn.cpp:318: void BuildRcnnModel("
        "unsigned int, nvinfer1::IHostMemory**, const string&, const string&): Assertion "
        "`engine != nullptr' failed.",
        "a C++ program's assert that the call before it returned something: the call logged "
        "why it returned nothing (TensorRT's '[E]' lines); observed in corpus cases CA403 and "
        "BK108",
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
        r"\berror: [\w-]+ command failed due to signal\b",
        ("clang", "rocm"),
        "clang: error: amdgcn-link command failed due to signal (use -v to see invocation)",
        "clang's driver (clang/lib/Driver/Compilation.cpp) after a tool it ran died of a signal: "
        "its 'unable to execute command: <signal>' before it says which; observed in corpus "
        "case AP202",
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
        r"\bCheckpointException ranks:dict_keys\(\[[\d, ]+\]\)$",
        ("pytorch",),
        "[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException "
        "ranks:dict_keys([0])",
        "PyTorch's distributed checkpoint (torch/distributed/checkpoint/utils.py) naming the "
        "ranks whose save or load failed; each rank's own traceback follows it, '(RANK 0)', "
        "ending in the error that failed it; observed in corpus case BM103",
    ),
    Wrapper(
        r"\bpyxis: (?:container start failed|child \d+ failed) with error code\b",
        ("pyxis", "slurm"),
        "slurmstepd: error: pyxis: container start failed with error code: 1",
        "NVIDIA's pyxis (Slurm's container plugin) on an enroot container that did not start: "
        "the enroot log it prints after it ('pyxis:   nvidia-container-cli: ...', "
        "'[ERROR] ...') says why; observed in corpus case BL307",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bpyxis: (?:couldn't start container|failed to import docker image)$"
        r"|\bspank: required plugin \S+: task_init\(\) failed"
        r"|\bFailed to invoke spank plugin stack$",
        ("pyxis", "slurm"),
        "slurmstepd: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1",
        "Slurm's plugin stack (spank) and pyxis summing up a container that did not start, "
        "after the enroot log that says why; observed in corpus case BL307",
    ),
    Wrapper(
        r"\[ERROR\] \S+/hooks\.d/\S+ exited with return code \d+$",
        ("enroot",),
        "slurmstepd: error: pyxis:   [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with "
        "return code 1",
        "enroot on one of its start-up hooks that failed (its NVIDIA hook runs "
        "nvidia-container-cli, whose error is printed just before); observed in corpus case "
        "BL307",
    ),
    Wrapper(
        r"\bFailed to serve model \S+, for ramalama \w+ command$",
        ("ramalama",),
        "2025-12-09 10:40:29 - ERROR - Failed to serve model llama3, for ramalama run command",
        "RamaLama (a container launcher around llama.cpp and vLLM) summing up a server it could "
        "not start; its next line says why (a health check that timed out, with the "
        "container's log appended); observed in corpus case BN405",
    ),
    Wrapper(
        r"\bThe Kernel crashed while executing code in the current cell\b",
        ("jupyter",),
        "The Kernel crashed while executing code in the current cell or a previous cell.",
        "VS Code's Jupyter extension on a kernel process that died: the cell's output above it "
        "(an OOM, a CUDA error) says why; alone, it is all the log has; observed in corpus case "
        "BI002",
    ),
    Wrapper(
        r"^Fatal Python error: Aborted\b",
        ("python",),
        "Fatal Python error: Aborted",
        "CPython's faulthandler on SIGABRT (Modules/faulthandler.c): the abort's reason is the "
        "native error printed before it ('terminate called ...', 'what(): ...')",
    ),
    Wrapper(
        r"\bninja exited with status \d+",
        ("sglang", "tvm-ffi"),
        "RuntimeError: ninja exited with status 1",
        "a JIT kernel build driven through ninja (sglang's jit_kernel over tvm-ffi): the "
        "compiler's own 'error:' lines, printed around it, say why; observed in corpus case S052",
    ),
    Wrapper(
        r"Exception caught at file:\S+, line:\d+",  # (glued to the SYCL error before it)
        ("llama.cpp",),
        "Exception caught at file:/app/ggml/src/ggml-sycl/ggml-sycl.cpp, line:3600",
        "ggml's SYCL backend (ggml/src/ggml-sycl) where it caught the SYCL runtime's exception, "
        "whose message it printed just before; observed in corpus case T123",
    ),
    Wrapper(
        r"^Error: (?:DownloadError|ShardCannotStart|ShardDisconnected|WebserverCannotStart)\s*$",
        ("tgi",),
        "Error: DownloadError",
        "Text Generation Inference's launcher (launcher/src/main.rs) exiting with the name of "
        "the step that failed; the step's own lines before it say why; observed in corpus case "
        "T083",
    ),
    Wrapper(
        r"\blinker command failed with exit code \d+",
        ("clang",),
        "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
        "clang's driver when its linker failed: the linker's own lines before it (\"Undefined "
        'symbols for architecture arm64:") say why; observed in corpus case V093',
    ),
    Wrapper(
        r"^\s*error: command '[^']+' failed with exit (?:code|status) [1-9]\d*$",
        ("setuptools",),
        "    error: command '/usr/bin/x86_64-linux-gnu-g++' failed with exit code 1",
        "setuptools' build_ext (distutils' spawn) after a compiler or linker it ran failed: "
        "that tool's own lines above say why; observed in corpus case AS403",
    ),
    Wrapper(
        r"\d errors? detected in the compilation of ",
        ("nvcc", "nvrtc"),
        '1 error detected in the compilation of "/tmp/tmpwauubgj0/'
        '2344c8410148612839a8738d76e8cf69e4dc8b66.cubin.cu".',
        "nvcc's and NVRTC's count of the errors they printed: each `error:` line says what; "
        "observed in corpus case E186",
    ),
    Wrapper(
        r"Could not load model \S+ with any of the following classes\b",
        ("transformers",),
        "ValueError: Could not load model google/gemma-2-27b-it with any of the following "
        "classes: (<class 'transformers.models.auto.modeling_auto.AutoModelForCausalLM'>, "
        "<class 'transformers.models.auto.modeling_tf_auto.TFAutoModelForCausalLM'>, "
        "<class 'transformers.models.gemma2.modeling_gemma2.Gemma2ForCausalLM'>). See the "
        "original errors:",
        "transformers' pipeline (pipelines/base.py infer_framework_load_model) after each model "
        "class failed to load: the errors it quotes below say why; observed in corpus case AS108",
    ),
    Wrapper(
        # (the hook's own words follow: its stderr goes on past the line's end)
        r"\berror running (?:\w+ )?hook\b",
        ("docker",),
        "Error response from daemon: failed to create task for container: failed to create shim "
        "task: OCI runtime create failed: runc create failed: unable to start container process: "
        "error during container init: error running hook #0: error running hook: exit status 1, "
        "stdout: , stderr: Auto-detected mode as 'legacy'",
        "runc (the OCI runtime) when a container's prestart hook failed, the NVIDIA Container "
        "Toolkit's among them; observed in corpus case AW406",
        another_process=True,
    ),
    Wrapper(
        # (or its message relayed by the caller without its name: "Export failed with error:
        # Command '['optimum-cli', 'export', ...]' returned non-zero exit status 2.")
        r"\bCalledProcessError\b|\bCommand '\[.*\]' returned non-zero exit status -?\d+",
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
        r"\bProcess \w+ \(PID: \d+\) died with exit code -?\d+",
        ("vllm",),
        "ERROR 02-27 15:02:41 [utils.py:289] RuntimeError: Process ApiServer_0 (PID: 10466) died "
        "with exit code 1",
        "vLLM's multi-API-server launcher (vllm/v1/utils.py, wait_for_completion_or_failure) "
        "when one of its API server processes exited, which printed its own error first; "
        "observed in corpus case BE201",
        another_process=True,
    ),
    Wrapper(
        r"\bError: The command exited with status -?\d+$",
        ("buildkite",),
        "[2025-04-01T17:38:14Z] 🚨 Error: The command exited with status 1",
        "Buildkite's agent on a step whose command failed, after that command's output; "
        "observed in corpus case C009",
    ),
    Wrapper(
        r'^Error: building at STEP ".*": while running runtime: exit status [1-9]',
        ("buildah", "podman"),
        'Error: building at STEP "RUN make -j": while running runtime: exit status 1',
        "Buildah (podman build): a RUN step whose command failed, after that command's own "
        "output (corpus case BD501 has one, its STEP a longer command)",
    ),
    Wrapper(
        r"\bRuntimeError: Critical error when building pipeline:$",
        ("dali",),
        "RuntimeError: Critical error when building pipeline:",
        "NVIDIA DALI (dali/python/nvidia/dali/pipeline.py): an operator that could not be "
        "built, its own error on the lines under it; observed in corpus case BD308",
    ),
    Wrapper(
        r"\bCould not start a suitable backend\b",
        ("text-embeddings-inference",),
        "    Could not start backend: Could not start a suitable backend",
        "text-embeddings-inference (backends/src/lib.rs): every backend it tried failed, "
        "each one's reason logged before; observed in corpus case BD603",
    ),
    Wrapper(
        # (only where it says no more than how the runner ended: its reason may be the cause)
        # (Go's "%!w(<nil>)": the runner ended with no error to wrap)
        r"\bllama runner (?:process has )?terminated\b(?::|\" error=\")\s*(?:exit status \w+"
        r"|signal: \w+|error:|%!w\(<nil>\))",
        ("ollama",),
        'time=2025-07-16T20:07:57.610+02:00 level=ERROR source=sched.go:489 msg="error loading '
        'llama server" error="llama runner process has terminated: exit status 2"',
        "Ollama's scheduler (server/sched.go) relaying its runner's death, and the CLI relaying "
        "that; the runner's own lines say why; observed in corpus case 505",
    ),
    Wrapper(
        r"\bray\.exceptions\.RayTaskError\(\w+\): |\bray\.exceptions\.RayTaskError: ray::",
        ("ray",),
        "ray.exceptions.RayTaskError(NotImplementedError): ray::main_task() (pid=19443, "
        "ip=10.0.0.1)",
        "Ray (python/ray/exceptions.py): the header of a remote task's failure, re-raised where "
        "it was awaited, its cause's name in brackets or not ('RayTaskError: ray::f() (pid=...)' "
        "in corpus case X063); the task's own traceback and exception follow",
    ),
    Wrapper(
        r"\bActorDiedError: The actor died because of an error raised in its creation task\b",
        ("ray",),
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its "
        "creation task, ray::agent_loop_worker_0:AgentLoopWorker.__init__() (pid=716404, "
        "ip=172.17.0.2, actor_id=165327c4e7f51af17312d1f801000000, repr=<verl.experimental."
        "agent_loop.agent_loop.AgentLoopWorker object at 0x71ce0b9e2660>)",
        "Ray (python/ray/exceptions.py) on an actor whose __init__ raised: the creation task's "
        "traceback and exception follow; observed in corpus case AN202",
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
        # (its notice of how to suppress it cut by some reporters: "Unhandled error: ray::...")
        r"Unhandled error \(suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'\)"
        r"|\bUnhandled error: ray::\w",
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
    Wrapper(
        r"msg=\"post predict\" error=",
        ("ollama",),
        'time=2024-07-01T10:00:00.000Z level=ERROR source=server.go:1654 msg="post predict" '
        'error="Post \\"http://127.0.0.1:35343/completion\\": EOF"',
        'ollama/ollama llm/server.go (llmServer.Completion: slog.Error("post predict", '
        "\"error\", err)); read in the engine's source: The server's HTTP call to its runner "
        "broke mid-request (EOF, connection reset): the runner process died and its own "
        "stderr says why.",
        another_process=True,
    ),
    Wrapper(
        r"msg=\"llama-server (?:completion|chat) error\" error=",
        ("ollama",),
        "time=2026-06-01T10:00:00.000Z level=ERROR source=llama_server.go:1640 "
        'msg="llama-server completion error" error="Post '
        '\\"http://127.0.0.1:41234/completion\\": EOF"',
        'ollama/ollama llm/llama_server.go (Completion/Chat: slog.Error("llama-server '
        'completion error", "error", err)); read in the engine\'s source: Newer Ollama\'s '
        "relay of a broken connection to its llama-server child: the child died, its own "
        "output holds the cause.",
        another_process=True,
    ),
    Wrapper(
        r"\bmodel runner has unexpectedly stopped, this may be due to resource "
        r"limitations or an internal error\b",
        ("ollama",),
        "Error: model runner has unexpectedly stopped, this may be due to resource "
        "limitations or an internal error, check ollama server logs for details",
        "ollama/ollama llm/server.go and llm/llama_server.go (Completion/Chat: errors.New / "
        'fmt.Errorf("model runner has unexpectedly stopped, ... check ollama server logs for '
        "details\")); read in the engine's source: What the API and CLI say when the runner "
        "died mid-request; the server log has the runner's real error.",
        another_process=True,
    ),
    Wrapper(
        # (a signal's name is the only word on the child's death a log may hold: not this)
        r"\bllama-server (?:process has )?terminated\b(?::|\" error=\")\s*exit status \w+",
        ("ollama",),
        'time=2026-06-01T10:00:00.000Z level=ERROR source=sched.go:734 msg="error loading '
        'llama server" error="llama-server process has terminated: exit status 1"',
        'ollama/ollama llm/llama_server.go (reaper: slog.Error("llama-server terminated", '
        '...); WaitUntilRunning: fmt.Errorf("llama-server process has terminated: %s", '
        "exit)); read in the engine's source: Newer Ollama (llama-server child) relaying "
        "only how its child exited, like the existing 'llama runner ... terminated' row.",
        another_process=True,
    ),
    Wrapper(
        r"\bllama(?:-server| runner) process no longer running: (?:-?\d+|exit status \d+|"
        r"unknown)\s*(?:\"|$)",
        ("ollama",),
        'time=2024-10-01T10:00:00.000Z level=ERROR source=sched.go:455 msg="error loading '
        'llama server" error="llama runner process no longer running: -1 "',
        'ollama/ollama llm/server.go (getServerStatus / WaitUntilRunning: fmt.Errorf("llama '
        "runner process no longer running: %d %s\")); llm/llama_server.go ('llama-server "
        "process no longer running'); read in the engine's source: The runner is gone and "
        "Ollama only knows its exit code (-1: a signal); the runner's own output says why.",
        another_process=True,
    ),
    Wrapper(
        r"\ban error was encountered while running the model: (?:unexpected EOF|"
        r"EOF)\s*(?:\"|$)",
        ("ollama",),
        'time=2025-05-01T10:00:00.000Z level=ERROR source=routes.go:1520 msg="chat error" '
        'error="an error was encountered while running the model: unexpected EOF"',
        "ollama/ollama llm/server.go and llm/llama_server.go (reading the runner's stream: "
        'fmt.Errorf("an error was encountered while running the model: %s", msg)); read in '
        "the engine's source: Only when it quotes a bare EOF: the runner's stream ended "
        "because the runner died (with any other message the quoted text is the cause).",
        another_process=True,
    ),
    Wrapper(
        r"\bShard complete standard error output:",
        ("tgi",),
        "2023-08-17T10:23:26.957416Z ERROR shard-manager: text_generation_launcher: Shard "
        "complete standard error output:",
        "huggingface/text-generation-inference launcher/src/main.rs (shard_manager: "
        'tracing::error!("Shard complete standard error output:\\n{err}")); read in the '
        "engine's source: The launcher dumping a dead shard's stderr: the lines after it are "
        "the shard's own error.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"text_generation_launcher: (?:Shard \d+ crashed|Webserver Crashed)\s*$",
        ("tgi",),
        "2024-05-01T10:05:00.123456Z ERROR text_generation_launcher: Shard 0 crashed",
        "huggingface/text-generation-inference launcher/src/main.rs (main loop: "
        'tracing::error!("Shard {rank} crashed") / tracing::error!("Webserver Crashed")); '
        "read in the engine's source: The launcher noticing a shard (Python) or the router "
        "(Rust) exited after startup; that process's own lines say why.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"^Error: (?:ShardFailed|WebserverFailed)\s*$",
        ("tgi",),
        "Error: ShardFailed",
        "huggingface/text-generation-inference launcher/src/main.rs (main returns "
        "LauncherError::ShardFailed / WebserverFailed, printed by Rust's Termination as "
        "'Error: {:?}'); read in the engine's source: The launcher's exit after a shard or "
        "the router died while serving (ShardCannotStart is the start-up one).",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bMethod \w+ encountered an error\.",
        ("tgi",),
        "2024-05-01T10:05:00.123456Z ERROR text_generation_launcher: Method Decode "
        "encountered an error.",
        "huggingface/text-generation-inference server/text_generation_server/interceptor.py "
        '(ExceptionInterceptor.intercept: logger.exception(f"Method {method_name} '
        "encountered an error.\")), relayed by the launcher; read in the engine's source: The "
        "shard's gRPC interceptor announcing a traceback (Prefill/Decode/Warmup failed); the "
        "exception at its end is the cause, and a RuntimeError stops the shard.",
    ),
    Wrapper(
        r"\bEngine main loop failed\.",
        ("lmdeploy",),
        "2026-03-01 10:00:00,123 - lmdeploy - ERROR - engine.py:625 - Engine main loop failed.",
        "InternLM/lmdeploy lmdeploy/pytorch/engine/engine.py (async_loop: "
        "logger.exception('Engine main loop failed.')); read in the engine's source: The "
        "PyTorch engine's loop died; the traceback logged with it ends in the real exception.",
        strong=True,
    ),
    Wrapper(
        r"\b(?:WorkerWrapper rank\[\d+\] wait_tasks failed\.|Proc\[\d+\] failed\s*$|"
        r"EngineLoop wait_tasks failed\.|RayExecutor DP\[\d+\] wait_tasks failed\.)",
        ("lmdeploy",),
        "2026-03-01 10:00:00,123 - lmdeploy - ERROR - mp_executor.py:561 - Proc[1] failed",
        "InternLM/lmdeploy lmdeploy/pytorch/engine/executor/mp_executor.py (_main_loop: "
        "logger.exception(f'Proc[{proc_id}] failed')), executor/base_worker.py, "
        "engine/engine_loop.py, executor/ray_executor.py; read in the engine's source: A "
        "worker or the engine loop announcing the traceback that follows; the exception at "
        "its end is the cause.",
        strong=True,
    ),
    Wrapper(
        r"\bReceived custom termination signal from sub processing, exiting\b",
        ("lmdeploy",),
        "2026-03-01 10:00:00,456 - lmdeploy - ERROR - mp_executor.py:282 - Received custom "
        "termination signal from sub processing, exiting...",
        "InternLM/lmdeploy lmdeploy/pytorch/engine/executor/mp_executor.py (SIGUSR1 handler "
        "set in MPExecutor.__init__, raised by a failed worker proc); read in the engine's "
        "source: The executor exits because a worker process failed and signalled it; that "
        "worker's traceback is the cause.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bServer process \d+ exited with code -?[1-9]\d*\b",
        ("lmdeploy",),
        "2026-03-01 10:00:01,000 - lmdeploy - ERROR - launch_server.py:180 - Server process "
        "4242 exited with code 1",
        "InternLM/lmdeploy lmdeploy/serve/openai/launch_server.py (launch_server: "
        "logger.error(f'Server process {process.pid} exited with code {process.exitcode}'), "
        "then raises RuntimeError with the same text); read in the engine's source: The "
        "multi-DP launcher reporting that one api_server child died; the child's own log "
        "holds the error.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bServer process failed during startup or serving\.",
        ("lmdeploy",),
        "2026-03-01 10:00:00,900 - lmdeploy - ERROR - launch_server.py:68 - Server process "
        "failed during startup or serving.",
        "InternLM/lmdeploy lmdeploy/serve/openai/launch_server.py (_run_server: "
        "logger.exception(...) then os._exit(1)); read in the engine's source: A DP child's "
        "header over its traceback; the exception at the end is the cause.",
        strong=True,
    ),
    Wrapper(
        r"\bPyTorch ZMQ engine process is not alive\b",
        ("lmdeploy",),
        "2026-03-01 10:00:02,000 - lmdeploy - ERROR - zmq_rpc.py:62 - PyTorch ZMQ engine "
        "process is not alive.",
        "InternLM/lmdeploy lmdeploy/pytorch/engine/mp_engine/zmq_rpc.py (AsyncRPCClient "
        "backend-dead handling: logger.error(self.dead_msg)); read in the engine's source: "
        "The api_server's RPC client found the engine subprocess dead; the engine process's "
        "log says why.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bStub process '[^']+' is not healthy\.",
        ("triton",),
        "E0602 10:00:00.123456 1 python_be.cc:2684] Failed to process the request(s) for "
        "model instance 'preprocessing_0_0', message: Stub process 'preprocessing_0_0' is "
        "not healthy.",
        "triton-inference-server/python_backend src/python_be.cc and src/stub_launcher.cc "
        '("Stub process \'" + name + "\' is not healthy."); read in the engine\'s source: '
        "Triton noticing that a model's Python stub process died (segfault, OOM kill); the "
        "stub's own output or the kernel says why.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bAsyncLLMEngine has failed, terminating server process\b",
        ("vllm",),
        "CRITICAL 11-04 12:53:11 launcher.py:72] AsyncLLMEngine has failed, terminating "
        "server process",
        "vllm-project/vllm vllm/entrypoints/launcher.py before V1 (runtime_error_handler: "
        'logger.critical("AsyncLLMEngine has failed, terminating server process")); read in '
        "the engine's source: The pre-V1 OpenAI server shutting down because its engine "
        "already failed; the engine's traceback earlier in the log is the cause.",
        strong=True,
    ),
    Wrapper(
        r"\b(?:(?:Multimodal)?DetokenizerManager|TokenizerManager|DataParallelController|"
        r"FaultToleranceManager) hit an exception\b",
        ("sglang",),
        "[2025-06-01 10:00:00] DataParallelController hit an exception: Traceback (most "
        "recent call last):",
        "sgl-project/sglang python/sglang/srt/managers/detokenizer_manager.py "
        "(run_detokenizer_process), data_parallel_controller.py "
        '(run_data_parallel_controller_process): logger.error(f"... hit an exception: '
        "{traceback}\") then SIGQUIT to the parent; read in the engine's source: Like "
        "'Scheduler hit an exception': the traceback that follows ends in the real error, "
        "and the launcher then prints 'Received sigquit from a child process'.",
    ),
    Wrapper(
        r"\bExecutor worker died during initialization\b",
        ("tensorrt-llm",),
        "[06/16/2025-10:03:14] [TRT-LLM] [E] Executor worker died during initialization.",
        "NVIDIA/TensorRT-LLM tensorrt_llm/executor/proxy.py (_start_executor_workers: "
        'logger.error("Executor worker died during initialization.") and '
        'RuntimeError("Executor worker died during initialization")); read in the engine\'s '
        "source: The proxy saw an MPI worker finish before sending READY; the worker's own "
        "error (often 'Failed to initialize executor on rank N') is the cause.",
        strong=True,
        another_process=True,
    ),
    Wrapper(
        r"\bggml_cuda_compute_forward: \S+ failed\s*$",
        ("llama.cpp", "ollama"),
        "ggml_cuda_compute_forward: MUL_MAT failed",
        "ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu (ggml_cuda_graph_compute / "
        'compute_forward: GGML_LOG_ERROR("%s: %s failed\\n", __func__, ggml_op_desc(dst))); '
        "read in the engine's source: ggml's CUDA backend naming the op whose kernel failed; "
        "the 'CUDA error: ...' line right after it says what failed.",
    ),
    Wrapper(
        r"^\s*current device: \d+, in function \w+ at \S+:\d+\s*$",
        ("llama.cpp", "ollama"),
        "  current device: 0, in function ggml_cuda_compute_forward at "
        "/go/src/github.com/ollama/ollama/ml/backend/ggml/ggml/src/ggml-cuda/ggml-cuda.cu:237"
        "6",
        "ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu (ggml_cuda_error: "
        'GGML_LOG_ERROR("  current device: %d, in function %s at %s:%d\\n")); read in the '
        "engine's source: The location line ggml prints between 'CUDA error: <reason>' and "
        "the failing statement: context for the error above, never the error itself.",
    ),
    Wrapper(
        r"^Error: Could not create backend$",
        ("text-embeddings-inference",),
        "Error: Could not create backend",
        "Hugging Face TEI's router (router/src/main.rs) exiting when its backend did not start: "
        "the backend's own ERROR record before it ('Could not start Candle backend: ...') says "
        "why; observed in corpus cases AF121 and AF124",
    ),
    Wrapper(
        r"^Error executing job with overrides: \[",
        ("hydra", "verl"),
        "Error executing job with overrides: ['algorithm.adv_estimator=grpo', "
        "'data.train_batch_size=8']",
        "Hydra's job runner (hydra/_internal/utils.py, run_and_report) naming the overrides of "
        "the job whose exception it prints next: the traceback under it says why; observed in "
        "corpus cases P120 and S059",
    ),
    Wrapper(
        r"^Error: Process completed with exit code [1-9]\d*\.?$",
        ("github-actions",),
        "Error: Process completed with exit code 1.",
        "GitHub Actions' runner closing a step whose command failed: the step's own output "
        "says why; observed in corpus cases AD063, AG100 and AG130",
    ),
    Wrapper(
        r"^error: builder for '[^']+' failed with exit code \d+",
        ("nix",),
        "error: builder for '/nix/store/xr8z5wasjrcfpzzb5l0j7ad6xzvy190p-llama-cpp-blas-0.0.0.drv' "
        "failed with exit code 1;",
        "Nix naming the derivation whose build failed, before the last lines of its build log "
        "(each behind '       > '): the build's own error says why; observed in corpus case "
        "AG044",
    ),
    Wrapper(
        r"(?i)\bfailed to load (?:the )?model\.?\s*$",
        ("llama.cpp", "lmstudio", "ollama"),
        "llama_model_load_from_file_impl: failed to load model",
        "llama.cpp's loader (and the apps on it: LM Studio's '🥲 Failed to load the model') "
        "saying the load failed, after or before the line that says why ('error loading model: "
        "...'); observed in corpus cases F036 and AG215",
    ),
    Wrapper(
        r"\bThe following operation failed in the TorchScript interpreter\.",
        ("pytorch", "vllm"),
        "RuntimeError: The following operation failed in the TorchScript interpreter.",
        "PyTorch's TorchScript interpreter (torch/csrc/jit) re-raising an error from a scripted "
        "function: its 'Traceback of TorchScript' follows, and the original error's message "
        "ends it; observed in corpus case V130 (and behind vLLM's prefix in AI271)",
        strong=True,
    ),
    Wrapper(
        r"Error in call to target '[\w.]+':$",
        ("hydra",),
        "hydra.errors.InstantiationException: Error in call to target "
        "'genrl_swarm.communication.hivemind.hivemind_backend.HivemindBackend':",
        "Hydra's instantiate (hydra/_internal/instantiate/_instantiate2.py) on a target that "
        "raised: the exception it caught follows on the next line, as its repr; observed in "
        "corpus case AT414",
    ),
    Wrapper(
        r"JaxStackTraceBeforeTransformation: ",
        ("jax",),
        "jax._src.source_info_util.JaxStackTraceBeforeTransformation: TypeError: Custom VJP bwd "
        "rule must produce an output with the same container (pytree) structure as the args "
        "tuple of the primal function, and in particular must produce a tuple of length equal "
        "to the number of arguments to the primal function, but got bwd output structure "
        "PyTreeDef(*) for primal input structure PyTreeDef((*,)).",
        "JAX's copy of an error raised while tracing, to point at the user's source before the "
        "transformation (jax/_src/source_info_util.py): the error itself is raised again "
        "below it; observed in corpus case E196",
    ),
)
