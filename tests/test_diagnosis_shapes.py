"""Failures found by their shape, in logs without a Python traceback, and the end of the
story deciding `crashed`: general behaviour, each shown on a small log of its kind."""

import pytest

from app.diagnosis import diagnose_bytes


def diagnose(text: str) -> dict:
    return diagnose_bytes(text.encode()).to_dict()


def newest_first(lines: list[str]) -> str:
    """The lines as a cloud console shows them: each stamped at ERROR with its time, newest
    first."""
    stamped = [f"E 2026-02-27T13:00:{n // 1000:02d}.{n % 1000:03d}Z {line}" for n, line in
               enumerate(lines)]  # fmt: skip
    return "\n".join(reversed(stamped)) + "\n"


@pytest.mark.parametrize(
    "log,root_cause,error_class",
    [
        # A logger's error severity, whatever the words, followed by the end of the log.
        (
            "[I301 10:00:00.000000000 store.cpp:40] [c10d] connecting to 10.0.0.1:29500\n"
            "[I301 10:00:30.000000000 store.cpp:40] [c10d] retrying 10.0.0.1:29500\n"
            "[E301 10:01:00.000000000 socket.cpp:860] [c10d] The client socket has timed out "
            "after 60s "
            "while trying to connect to 10.0.0.1:29500\n",
            "[E301 10:01:00.000000000 socket.cpp:860] [c10d] The client socket has timed out "
            "after 60s "
            "while trying to connect to 10.0.0.1:29500",
            "timeout_or_hang",
        ),
        # A CUDA sample's check macro.
        (
            "Running on device 0\n"
            "CUDA error at vectorAdd.cu:112 code=209(cudaErrorNoKernelImageForDevice) "
            '"cudaLaunchKernel(...)"\n',
            "CUDA error at vectorAdd.cu:112 code=209(cudaErrorNoKernelImageForDevice) "
            '"cudaLaunchKernel(...)"',
            "unsupported_arch",
        ),
        # LLVM's fatal error, then the abort it causes: a JIT that cannot lower the kernel for
        # this GPU (PRODUCT.md's rule; corpus case 509 is this line, labelled so).
        (
            "Compiling kernel _fused_moe_kernel\n"
            "LLVM ERROR: Failed to translate TritonGPU to LLVM IR.\n"
            "*** SIGABRT received at time=1712361058 on cpu 4 ***\n",
            "LLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
            "unsupported_arch",
        ),
        # An array library's allocation failure, in absl's status form.
        (
            "2026-03-01 10:00:00.000 W external/xla/bfc_allocator.cc:479] Allocator ran out\n"
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
            "trying to allocate 8589934592 bytes.\n",
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
            "trying to allocate 8589934592 bytes.",
            "oom_gpu",
        ),
        # A cluster manager's word that it killed the job for memory.
        (
            "epoch 3 step 1200 loss 1.73\n"
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch. Some of your "
            "processes may have been killed by the cgroup out-of-memory handler.\n",
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch. Some of your "
            "processes may have been killed by the cgroup out-of-memory handler.",
            "oom_host_killed",
        ),
        # A compiler error quoting the exception that is the real cause.
        (
            "Traceback (most recent call last):\n"
            '  File "/srv/run.py", line 9, in <module>\n'
            "    model(x)\n"
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "RuntimeError: Triton Error [CUDA]: device kernel image is invalid\n",
            "RuntimeError: Triton Error [CUDA]: device kernel image is invalid",
            # (a kernel the driver cannot load: Triton's toolchain newer than the driver, as the
            # corpus's four independent labels of this line read it)
            "import_or_version",
        ),
        # A wrapper exception that points to another line loses to that line.
        (
            "[E301 10:01:00.000000000 socket.cpp:860] [c10d] The client socket has timed out "
            "after 60s\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/site-packages/torch/distributed/run.py", line 8, in main\n'
            "    run(args)\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection "
            "to the C10d store has failed. See inner exception for details.\n",
            "[E301 10:01:00.000000000 socket.cpp:860] [c10d] The client socket has timed out "
            "after 60s",
            "timeout_or_hang",
        ),
    ],
)  # fmt: skip
def test_failures_without_a_python_traceback_are_found_by_their_shape(
    log: str, root_cause: str, error_class: str
) -> None:
    body = diagnose(log)
    assert body["root_cause"] == root_cause
    assert body["error_class"] == error_class
    assert body["crashed"] is True


def test_nccl_warnings_alone_explain_a_hang_not_a_crash() -> None:
    body = diagnose(
        "host-1:15:91 [3] NCCL INFO Channel 00 : 3[3] -> 0[0] via NET/Socket/0\n"
        "host-1:15:91 [3] include/socket.h:398 NCCL WARN Call to write failed : Connection "
        "reset by peer\n"
        "host-1:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 -> 2 [Proxy thread error]\n"
    )
    assert body["crashed"] is False
    assert body["error_class"] == "nccl_comm"
    assert body["root_cause"].endswith("NCCL WARN Call to write failed : Connection reset by peer")


def test_an_nccl_warning_followed_by_an_abort_is_a_crash_blamed_on_the_warning() -> None:
    body = diagnose(
        "host-1:15:91 [3] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.2 "
        "failed : Connection timed out\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  NCCL error: remote process exited or there was a network error\n"
    )
    assert body["crashed"] is True
    # The transport names the fault; NCCL's WARN wins over "timed out" meaning a hang.
    assert body["error_class"] == "nccl_comm"
    assert "NCCL WARN Net : Call to recv" in body["root_cause"]


def test_a_viewer_that_stamps_error_on_every_line_does_not_make_every_line_an_error() -> None:
    lines = [
        "Loading safetensors checkpoint shards: 100% Completed",
        "Memory profiling takes 3.2 seconds",
        "Capturing CUDA graphs: 100%",
        "Starting vLLM API server on http://0.0.0.0:8000",
        "Available routes are: /v1/completions",
    ]
    body = diagnose(
        "".join(f"ERROR 2026-03-01T10:00:0{n}Z {line}\n" for n, line in enumerate(lines))
    )
    assert body["crashed"] is False and body["root_cause"] is None
    # ...while the logger's own severity inside the stamp still tells.
    stamped = "".join(f"ERROR 2026-03-01T10:00:0{n}Z {line}\n" for n, line in enumerate(lines))
    stamped += "ERROR 2026-03-01T10:00:09Z [E socket.cpp:860] [c10d] store is gone\n"
    body = diagnose(stamped)
    assert body["root_cause"] is not None and body["root_cause"].endswith("store is gone")


def test_the_only_concrete_exception_inside_a_logging_error_block_beats_the_wrappers() -> None:
    body = diagnose(
        "--- Logging error ---\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/sglang/srt/distributed/parallel_state.py", line 88, in init\n'
        "    table[capability]\n"
        "KeyError: 12\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/logging/__init__.py", line 1160, in emit\n'
        "    msg = self.format(record)\n"
        "TypeError: not all arguments converted during string formatting\n"
        "Call stack:\n"
        '  File "/srv/sglang/srt/entrypoints/engine.py", line 735, in handler\n'
        '    logger.error("Received sigquit from a child process.", e)\n'
        "Message: 'Received sigquit from a child process.'\n"
        "Arguments: (KeyError(12),)\n"
        "[2026-03-01 10:00:02] Received sigquit from a child process. It usually means the "
        "child failed.\n"
        "Killed\n"
    )
    assert body["root_cause"] == "KeyError: 12"
    assert body["crashed"] is True


def test_of_two_launches_in_one_file_the_last_one_tells() -> None:
    first_run = (
        "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
        "[2026-03-01 10:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/srt/model_executor/model_runner.py", line 300, in init\n'
        "    self.load_model()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    second_launch = (
        "[2026-03-01 11:00:00] server_args=ServerArgs(model_path='/m', mem_fraction_static=0.8)\n"
    )
    crashed_again = (
        "[2026-03-01 11:00:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/srt/distributed/device_communicators/torch_symm_mem.py", line 56, in init\n'
        "    self.max_size = MAX_SIZES[self.device_capability]\n"
        "KeyError: 12\n"
    )
    body = diagnose(first_run + second_launch + crashed_again)
    assert body["root_cause"] == "KeyError: 12" and body["crashed"] is True
    # The second launch still starting: the first run's OOM is no longer the story.
    body = diagnose(first_run + second_launch + "[2026-03-01 11:00:05 TP0] Load weight begin\n")
    assert body["crashed"] is False and body["root_cause"] is None
    # One launch: its failure stands.
    body = diagnose(first_run)
    assert body["crashed"] is True and body["error_class"] == "oom_gpu"


@pytest.mark.parametrize(
    "line,error_class",
    [
        ("RuntimeError: [/opt/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:3313: "
         "Connection reset by peer (gloo)", "nccl_comm"),
        ("RuntimeError: Gloo allreduce size mismatch: rank 0 sent 4096 bytes, rank 1 expected 2048",
         "nccl_comm"),
        ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 232448, "
         "Hardware limit: 101376.", "unsupported_arch"),
        ("subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/main.c', '-O3', "
         "'-shared', '-o', '/tmp/cuda_utils.so']' returned non-zero exit status 1.",
         "import_or_version"),
        ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
         "tensor with shape[8192,8192]", "oom_gpu"),
        ("(raylet) 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
         "crashed due to other reasons", "oom_host_killed"),
        ("RuntimeError: No CUDA GPUs are available", "config_or_args"),
        ("/app/ggml/src/ggml-backend.cpp:809: pre-allocated tensor (cache_r_l0 (view) (copy of "
         ")) in a buffer (OPENVINO0) that cannot run the operation (CPY)", "unsupported_arch"),
        ("ggml_metal_graph_compute_block_invoke: error: unsupported op 'SSM_CONV'",
         "unsupported_arch"),
        ("triton.runtime.errors.OutOfResources: out of resource: threads, Required: 2048, "
         "Hardware limit: 1024. Reducing block sizes or `num_stages` may help.",
         "unsupported_arch"),
        ("run.sh: line 3: 4242 非法指令 (核心已转储) python3 serve.py", "unsupported_arch"),
        ("CANN error: EE1001: [PID: 205631] 2024-09-04-01:19:57.687.508 The argument is "
         "invalid.Reason: rtDeviceSynchronize execute failed, reason=[context pointer null]",
         "cuda_runtime"),
        ("AttributeError: `newbyteorder` was removed from the ndarray class in NumPy 2.0. Use "
         "`arr.view(arr.dtype.newbyteorder(order))` instead.", "import_or_version"),
        ("RuntimeError: Numpy is not available", "import_or_version"),
        ("AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` "
         "instead.", "import_or_version"),
        ("RuntimeError: no cmake or cmake3 with version >= 3.13.0 found", "import_or_version"),
        ('jax.errors.JaxRuntimeError: ABORTED: The TPU is already in use by another process '
         'probably owned by another user. Run "$ sudo lsof -w /dev/accel0"', "config_or_args"),
        ("RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling "
         "`cusolverDnCreate(handle)`.", "cuda_runtime"),
        ("FloatingPointError: invalid value (nan) encountered in log", "other"),
        ("RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to "
         "compilePyTorch (%s). Please make sure to use the same CUDA versions.', '12.8', '12.4')",
         "import_or_version"),
        ("error: rustc 1.81.0 is not supported by the following packages:", "import_or_version"),
        ("E0608 10:49:50.145396     474 ucx_utils.cpp:592] VRAM memory is detected as host by "
         "UCX. UCX is likely not configured with CUDA support. VRAM registration cannot proceed.",
         "import_or_version"),
        ("RuntimeError: Could not load libtorchcodec. Likely causes:", "import_or_version"),
        ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
         "NVIDIA GPU and installed a driver", "config_or_args"),
        ("ValueError: Could not load Llama model from path: /m/x.gguf. Received error Model path "
         "does not exist: /m/x.gguf", "config_or_args"),
        ("2023-11-09 08:40:04 ERROR:The path to the model does not exist. Exiting.",
         "config_or_args"),
        ("RuntimeError: Capture cuda graph failed: torch.OutOfMemoryError: CUDA out of memory. "
         "Tried to allocate 2.00 GiB", "oom_gpu"),
        ("MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/rapids/include/rmm/mr/"
         "device/cuda_memory_resource.hpp", "oom_gpu"),
        ("CUDA error: 2", "oom_gpu"),
        ("MPICH ERROR: Unable to use a NIC_POLICY of 'NUMA'. Rank 4 is not confined to a single "
         "NUMA node.  There are 4 numa_nodes detected (rc=0).", "config_or_args"),
        ('KeyError: "Column train not in the dataset. Current columns in the dataset: '
         "['context', 'question']\"", "config_or_args"),
        ("/bin/bash: -c: line 1: unexpected EOF while looking for matching `\"'",
         "config_or_args"),
        ("/home/user/.openllm/venv/6084/bin/python: No module named bentoml", "import_or_version"),
        ("TVMError: Check failed: (result) is false: Failed to allocate 99121664 bytes with "
         "alignment 16 bytes.", "oom_gpu"),
        ('CMake Error: CMake was unable to find a build program corresponding to "Unix '
         'Makefiles".  CMAKE_MAKE_PROGRAM is not set.', "import_or_version"),
        ("RuntimeError: Default process group has not been initialized, please make sure to call "
         "init_process_group.", "config_or_args"),
        ("Could not start Candle backend: Could not start backend: Runtime compute cap 87 is not "
         "compatible with compile time compute cap 80", "unsupported_arch"),
        ("Error: Failed to initialize NVML", "config_or_args"),
        ("2022/06/16 07:21:18 Failed to initialize NVML: could not load NVML library.",
         "config_or_args"),
        ("⠴ Transcribing... 0:00:00Could not locate cudnn_ops64_9.dll. Please make sure it is "
         "in your library path!", "import_or_version"),
        ("-> CUDA driver version is insufficient for CUDA runtime version", "import_or_version"),
        ('time=2026-09-19T20:06:59.547Z level=ERROR msg="Cannot init NVML library; err: '
         'ERROR_LIBRARY_NOT_FOUND"', "config_or_args"),
        ("CUDA error: the function requires an architectural feature absent from the device",
         "unsupported_arch"),
        ("OSError: (External)  Nccl error, unhandled cuda error  (at /work/paddle/fluid/platform/"
         "collective_helper.cc:87)", "nccl_comm"),
        ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
         "directory", "model_loading"),
        ("libc++abi: terminating due to uncaught exception of type std::runtime_error: "
         "Attempting to allocate 135383101952 bytes which is greater than the maximum allowed "
         "buffer size of 77309411328 bytes.", "oom_gpu"),
        ("RuntimeError: Dynamo is not supported on Python 3.12+", "import_or_version"),
        ('ggml_metal_init: error: Error Domain=MTLLibraryErrorDomain Code=3 "program_source:3:10: '
         "fatal error: 'ggml-common.h' file not found", "import_or_version"),
        ("/usr/bin/bash: line 2: --sequence-length: command not found", "config_or_args"),
        ("slurmstepd: error: pyxis:     [ERROR] URL https://registry-1.docker.io/v2/org/img/"
         "manifests/stable returned error code: 401 Unauthorized", "config_or_args"),
        ("[2025-07-18T15:06:29.684] error: pyxis:     nvidia-container-cli: ldcache error: "
         "process /usr/sbin/ldconfig.", "config_or_args"),
        ('FATAL:   container creation failed: exec: "/usr/bin/nvidia-container-cli": stat '
         "/usr/bin/nvidia-container-cli: no such file or directory", "config_or_args"),
        ("RuntimeError: Error compiling objects for extension", "import_or_version"),
        ("AttributeError: type object 'torch._C.Tag' has no attribute 'needs_fixed_stride_order'",
         "import_or_version"),
        ("wandb.errors.errors.UsageError: api_key not configured (no-tty). call "
         "wandb.login(key=[your_api_key])", "config_or_args"),
        ("RuntimeError: 0 active drivers ([]). There should only be one.", "config_or_args"),
        ('FATAL:   "bris": executable file not found in $PATH', "config_or_args"),
        ("RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke "
         "method cudnnGetVersion.", "import_or_version"),
        ("error: unknown type name 'uint'", "import_or_version"),
        ("RuntimeError: failed to find a rendering device", "config_or_args"),
        ("RuntimeError: FlashInfer failed to JIT-compile: ninja (build tool) not found.",
         "import_or_version"),
        ("RuntimeError: GET was unable to find an engine to execute this computation",
         "cuda_runtime"),
        ("Exception(1) tid(2384) 887A0006 The GPU will not respond to more commands, most "
         "likely because of an invalid command passed by the calling application.",
         "cuda_runtime"),
    ],
)  # fmt: skip
def test_the_class_names_the_underlying_fault_not_the_phase(line: str, error_class: str) -> None:
    body = diagnose(f"[2026-03-01 10:00:00] starting\n{line}\n")
    assert body["root_cause"] == line
    assert body["error_class"] == error_class


def test_nccl_s_last_error_names_its_topology_search_that_found_no_path() -> None:
    found = "Failed to find reverse path from remNode 0/c1000 nlinks 4 to node 0/d9000"
    body = diagnose(f"ncclInternalError: Internal check failed.\nLast error:\n{found}\n")
    assert (body["root_cause"], body["error_class"]) == (found, "nccl_comm")


@pytest.mark.parametrize(
    "line",
    [
        "/src/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:1234: GGML_ASSERT(ne00 % 32 == 0) failed",
        "F0301 10:00:00.000000 4242 gpu_compiler.cc:612] Check failed: module != nullptr",
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "[/opt/dali/dali/operators/reader/loader/indexed_file_loader.h:105] Assert on "
        '"fin.good()" failed: Failed to open file /dev/shm/train/a.tfrecord.idx',
        "💥 Error: The model you specified is invalid or corrupted.",
        "Exception 0xc0000005 0x0 0x0 0x7ff9efe32590",  # Go's runtime on Windows
    ],
)
def test_native_aborts_of_more_runtimes_are_crashes(line: str) -> None:
    body = diagnose(f"loading model\n{line}\n")
    assert body["root_cause"] == line and body["crashed"] is True


def test_libfabric_s_warnings_on_providers_it_went_on_without_are_no_failure() -> None:
    body = diagnose(
        "host-1:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.9.1\n"
        "libfabric:1680522:1726870657::core:core:ofi_hmem_init():339<warn> Failed to initialize "
        "hmem iface FI_HMEM_ZE: No data available\n"
        "#  Avg bus bandwidth    : 21.0343\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_an_abort_at_teardown_after_a_ctrl_c_is_the_stop_not_a_crash() -> None:
    body = diagnose(
        "got prompt\n"
        "Traceback (most recent call last):\n"
        '  File "/content/ComfyUI/main.py", line 276, in prompt_worker\n'
        "    e.execute(item[2], prompt_id, item[3], item[4])\n"
        "KeyboardInterrupt\n"
        "terminate called without an active exception\n"
        "Fatal Python error: Aborted\n"
        "\n"
        "Thread 0x00007f (most recent call first):\n"
        '  File "/content/ComfyUI/main.py", line 276 in prompt_worker\n'
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_web_ui_s_failed_job_is_one_request_the_ui_serves_past() -> None:
    body = diagnose(
        "Running on public URL: https://0123456789abcdef.gradio.live\n"
        "100% 20/20 [00:02<00:00,  7.35it/s]\n"
        "*** Error completing request\n"
        "*** Arguments: ('task(j3vu9x5aw0roa2m)', <gradio.routes.Request object at 0x7f46>)\n"
        "    Traceback (most recent call last):\n"
        '      File "/content/sd/modules/call_queue.py", line 74, in f\n'
        "        res = list(func(*args, **kwargs))\n"
        "    TypeError: slice indices must be integers or None or have an __index__ method\n"
        "\n"
        "---\n"
    )
    assert (body["crashed"], body["root_cause"], body["ready"]) == (False, None, True)


def test_git_s_own_failure_in_a_setup_script_that_went_on_is_not_why_it_stopped() -> None:
    error = "AttributeError: module 'ml_dtypes' has no attribute 'float8_e4m3b11'"
    body = diagnose(
        "fatal: couldn't find remote ref if\n"
        "aria2 is already the newest version (1.36.0-1).\n"
        "Successfully installed accelerate-0.19.0\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/accelerate", line 5, in <module>\n'
        "    from accelerate.commands.accelerate_cli import main\n" + error + "\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, error)


def test_logfmt_severities_count_like_any_logger_s() -> None:
    error = (
        'time=2026-03-01T10:00:05.000Z level=ERROR source=sched.go:489 msg="error loading '
        'llama server" error="llama runner process has terminated: exit status 2"'
    )
    body = diagnose(
        'time=2026-03-01T10:00:00.000Z level=INFO source=routes.go:1200 msg="Listening on '
        '127.0.0.1:11434"\n'
        'time=2026-03-01T10:00:01.000Z level=INFO source=server.go:400 msg="starting llama '
        'server" error_count=0\n' + error + "\n"
    )
    assert body["root_cause"] == error and body["crashed"] is True


def test_systemd_s_word_on_a_service_it_killed() -> None:
    line = "vllm.service: Main process exited, code=killed, status=9/KILL"
    body = diagnose(f"Started vllm.service.\n{line}\nvllm.service: Failed with result 'signal'.\n")
    assert body["root_cause"] == line
    assert body["error_class"] == "oom_host_killed" and body["crashed"] is True


@pytest.mark.parametrize(
    "wrapper",
    [
        "ERROR 03-01 10:00:09 [multiproc_executor.py:140] Worker proc VllmWorker-0 died "
        "unexpectedly, shutting down executor.",
        "[2026-03-01 10:00:09] Rank 0 scheduler is dead. Please check if there are relevant logs.",
        "2026-03-01T10:00:09.000Z ERROR text_generation_launcher: Webserver Crashed",
    ],
)
def test_an_engine_s_word_that_a_child_died_never_hides_why(wrapper: str) -> None:
    cause = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    body = diagnose(
        f'{wrapper}\nTraceback (most recent call last):\n  File "/x.py", line 1\n{cause}\n'
    )
    assert body["root_cause"] == cause
    assert wrapper not in [c["line"] for c in body["candidates"]][:1]


def test_a_job_its_own_alarm_killed_after_its_last_word_is_a_hang_at_its_end() -> None:
    alarm = (
        "./run_and_time.sh: line 224:  6519 Alarm clock             python train_imagenet.py "
        '"${PARAMS[@]}"'
    )
    body = diagnose(
        ':::MLLOG {"namespace": "", "time_ms": 1652678709789, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"status": "success", "epoch": 36}}\n'
        + alarm + "\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    )  # fmt: skip
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, alarm, "timeout_or_hang",
    )  # fmt: skip


def test_ray_s_node_supervisor_names_the_process_that_died() -> None:
    body = diagnose(
        "Some Ray subprocesses exited unexpectedly:\n"
        "raylet [exit code=1]\n"
        "Remaining processes will be killed.\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, "raylet [exit code=1]")


def test_hydra_s_report_with_no_traceback_is_named_by_its_first_line() -> None:
    refused = "Could not override 'actor_rollout_ref.rollout.n'."
    body = diagnose(
        "[2026-03-01 10:00:05,004][root][INFO] - Using the default config\n" + refused + "\n"
        "To append to your config use +actor_rollout_ref.rollout.n=16\n"
        "Key 'n' is not in struct\n"
        "    full_key: actor_rollout_ref.rollout.n\n"
        "    object_type=dict\n"
        "\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, refused, "config_or_args",
    )  # fmt: skip


def test_sglang_s_word_on_a_child_that_exited_yields_to_the_child_s_own_error() -> None:
    failed = (
        "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
        "func=resume line=214"
    )
    body = diagnose(
        f"{failed}\n{failed}\n"
        "Child process unexpectedly failed with an exit code 256. pid=97721\n"
        "Child process unexpectedly failed with an exit code 256. pid=97719\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, failed, "cuda_runtime",
    )  # fmt: skip
    # Its word alone: the child's own error is still to come.
    body = diagnose("Child process unexpectedly failed with an exit code 256. pid=97721\n")
    assert (body["crashed"], body["root_cause"]) == (True, None)
    # The same check on an allocation the driver refused is the card's memory.
    oom = "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h line=194"
    assert diagnose(oom + "\n")["error_class"] == "oom_gpu"


def test_python_given_a_script_that_is_not_there_is_never_silent() -> None:
    missing = (
        "/p/project1/venv/bin/python3: can't open file '/p/project1/user/marc/python': "
        "[Errno 2] No such file or directory"
    )
    body = diagnose(
        "W1207 10:00:01.000000 torch/distributed/run.py:793] Setting OMP_NUM_THREADS\n"
        f"{missing}\n{missing}\n"
        "E1207 10:00:02.000000 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        "(exitcode: 2) local_rank: 0 (pid: 1523) of binary: /p/project1/venv/bin/python3\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, missing, "config_or_args",
    )  # fmt: skip


def test_unittest_s_report_on_a_module_it_could_not_import_is_named_by_the_import_s_error() -> None:
    missing = "ModuleNotFoundError: No module named 'attn_core_inplace_cuda'"
    body = diagnose(
        "E.................EEEE\n" + "=" * 70 + "\n"
        "ERROR: tests.test_data_pipeline (unittest.loader._FailedTest)\n" + "-" * 70 + "\n"
        "ImportError: Failed to import test module: tests.test_data_pipeline\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/openfold/utils/kernel/attention_core.py", line 20, in <module>\n'
        '    attn_core_inplace_cuda = importlib.import_module("attn_core_inplace_cuda")\n'
        f"{missing}\n\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, missing, "import_or_version",
    )  # fmt: skip


def test_ik_llama_cpp_s_check_finding_a_nan_is_the_failure_that_ends_the_run() -> None:
    found_nan = (
        "Oops(ggml_compute_forward_sum_rows_f32, ffn_moe_weights_sum-60): found nan for i1 = 0, "
        "i2 = 0, i3 = 0. ne00 = 8"
    )
    body = diagnose(
        "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
        "|  2048 |    512 |   6144 |   10.534 |   194.42 |   58.584 |     8.74 |\n" + found_nan
        + "\n"
    )  # fmt: skip
    assert (body["crashed"], body["root_cause"]) == (True, found_nan)


def test_a_failure_glued_after_a_progress_bar_is_reported_without_the_bar() -> None:
    failed = (
        "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:163: operator(): block: "
        "[0,0,0], thread: [126,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size` failed."
    )
    bar = "Training:   0%|          | 1/3000 [00:00<18:36,  2.69it/s]"
    body = diagnose(bar + failed + "\n" + failed.replace("126", "127") + "\n")
    assert body["root_cause"] == failed
    # A bar with its postfix and nothing after it stays a bar; a bar's own columns too.
    kept = " 50%|#####     | 5/10 [00:01<00:01,  4.2it/s, loss=0.3]"
    assert diagnose(kept + "\nKilled\n")["root_cause"] == "Killed"


def test_slurm_s_housekeeping_after_the_job_s_last_word_is_no_failure() -> None:
    body = diagnose(
        "{'train_runtime': 3601.2, 'train_samples_per_second': 4.1, 'epoch': 3.0}\n"
        "slurmstepd: error: common_file_write_uint32s: write pid 2756385 to "
        "/sys/fs/cgroup/cgroup.procs failed: Device or resource busy\n"
        "slurmstepd: error: Unable to move pid 2756385 to init root cgroup /sys/fs/cgroup\n"
        "slurmstepd: error: Failed to destroy CXI Service ID 5 (cxi0): Device or resource busy\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)
    # The kernel's word that it killed a task is still the step's failure.
    killed = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=8538204.0. Some of the step "
        "tasks have been OOM Killed."
    )
    body = diagnose(
        killed + "\nslurmstepd: error: Failed to destroy CXI Service ID 5 (cxi0): Device or "
        "resource busy\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, killed, "oom_host_killed",
    )  # fmt: skip


def test_a_launcher_s_sigkilled_child_yields_to_the_scheduler_s_oom_kill_after_it() -> None:
    killed = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=42969.0. Some of the step tasks "
        "have been OOM Killed."
    )
    body = diagnose(
        "Loading checkpoint shards:  50%|#####     | 2/4 [00:31<00:31, 15.6s/it]\n"
        "W0716 14:07:34.000000 1706775 torch/distributed/elastic/multiprocessing/api.py:897] "
        "Sending process 1707170 closing signal SIGTERM\n"
        "E0716 14:07:34.846000 1706775 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -9) local_rank: 3 (pid: 1707173) of binary: /usr/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  exitcode  : -9 (pid: 1707173)\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 1707173\n"
        "============================================================\n" + killed + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, killed, "oom_host_killed",
    )  # fmt: skip


def test_an_error_record_hundreds_of_lines_before_the_run_ends_well_is_lived_through() -> None:
    record = "[ERROR] 15-Jan-26 04:32:13 - Could not retrieve git hash."
    work = [f"[INFO] 15-Jan-26 04:3{i // 60 % 10}:{i % 60:02d} - Epoch {i}: loss 0.41\n"
            for i in range(600)]  # fmt: skip
    start = "[INFO] 15-Jan-26 04:32:13 - Using device cuda:0\n" + record + "\n"
    body = diagnose(start + "".join(work))
    assert (body["crashed"], body["root_cause"]) == (False, None)
    assert record in [c["line"] for c in body["candidates"]]
    # A few dozen lines after it, the log does not tell.
    assert diagnose(start + "".join(work[:40]))["crashed"] is None


def test_a_user_space_oom_killer_s_verdict_is_the_host_running_out() -> None:
    low = (
        "Aug 04 10:39:10 host-1 earlyoom[845]: low memory! at or below SIGTERM limits: mem  "
        "3.00%, swap 10.00%"
    )
    body = diagnose(
        "Aug 04 10:38:00 host-1 earlyoom[845]: mem avail:  2000 of 30236 MiB ( 6.61%)\n"
        + low
        + "\n"
        "Aug 04 10:39:10 host-1 earlyoom[845]: sending SIGTERM to process 322603 uid 1000 "
        '"python3.13": oom_score 1282, VmRSS 29931 MiB\n'
        "Aug 04 10:39:12 host-1 earlyoom[845]: process 322603 exited after 2.805 seconds\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, low, "oom_host_killed",
    )  # fmt: skip


def test_an_abort_s_banner_yields_to_the_fatal_record_that_caused_it() -> None:
    # TensorFlow's logging with the thread's id: a fatal record, then the abort's banner.
    fatal = (
        "2023-04-04 03:10:10.727618: F    7918 tensorflow/tsl/platform/statusor.cc:33] "
        "Attempting to fetch value instead of handling error UNKNOWN: TPU initialization "
        "failed: No ba16c7433 device found."
    )
    banner = "*** SIGABRT received by PID 7918 (TID 7918) on cpu 1 from PID 7918; stack trace: ***"
    frames = "PC: @     0x7f071f68b8eb  (unknown)  raise\n    @     0x7f06e2aeca1a  (unknown)\n"
    body = diagnose(fatal + "\n" + banner + "\n" + frames)
    assert (body["crashed"], body["root_cause"]) == (True, fatal)
    # glog's CHECK printed by another thread after the banner still says why.
    check = (
        "F0120 12:29:23.305308   34355 fusion_emitter.cc:6694] Check failed: "
        "fusion_util::IsFusibleUnalignedDUS(user, target_)"
    )
    body = diagnose(
        "*** SIGABRT received by PID 28601 (TID 34285) on cpu 134 from PID 28601; ***\n"
        "E0120 12:29:19.847935   34285 coredump_hook.cc:457] RAW: Dumping core locally.\n"
        + check
        + "\n*** Check failure stack trace: ***\n    @     0x70cb5d4a55c4  (unknown)\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, check)


def test_onnx_runtime_s_check_of_a_cuda_call_is_a_failure() -> None:
    failure = (
        "2025-05-02 10:00:00.000 [E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] "
        "Non-zero status code returned while running Resize node. Status Message: CUDA failure "
        "35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0"
    )
    body = diagnose("loading model.onnx\n" + failure + "\n")
    assert (body["crashed"], body["root_cause"]) == (True, failure)


def test_hipblaslt_without_tuned_kernels_for_the_gpu_is_no_failure() -> None:
    body = diagnose(
        "Jul 28 15:11:40 host-1 ollama[307422]: load_tensors: offloaded 49/49 layers to GPU\n"
        "Jul 28 15:11:48 host-1 ollama[307422]: rocblaslt error: Cannot read /usr/local/lib/"
        "ollama/rocm/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat: No such file or "
        "directory\n"
        "Jul 28 15:11:48 host-1 ollama[307422]: rocblaslt error: Could not load /usr/local/lib/"
        "ollama/rocm/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat\n"
        "Jul 28 15:11:48 host-1 ollama[307422]: hipBLASLt error: Heuristic Fetch Failed\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_onnx_runtime_falling_back_from_a_provider_it_cannot_load_is_no_failure() -> None:
    lines = [
        "*************** EP Error ***************",
        "EP Error onnxruntime_pybind_state.cc:456 RegisterTensorRTPluginsAsCustomOps Please "
        "install TensorRT libraries as mentioned in the GPU requirements page",
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
        "****************************************",
        "2024-04-24 10:39:18.3717953 [E:onnxruntime:Default, provider_bridge_ort.cc:1534 "
        "onnxruntime::TryGetProviderInfo_TensorRT] provider_bridge_ort.cc:1209 "
        "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed "
        'with error 126 "" when trying to load "onnxruntime_providers_tensorrt.dll"',
    ]
    for log in ("\n".join(lines) + "\n", newest_first(lines)):
        body = diagnose(log)
        assert (body["crashed"], body["root_cause"]) == (False, None)


def test_ray_s_unhandled_error_yields_to_the_task_s_traceback_even_newest_first() -> None:
    error = (
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
        "version 2.27.3"
    )
    lines = [
        "ERROR worker.py:430 -- Unhandled error: ray::AsyncSglangWorker.async_call_plugin()",
        '  File "/src/agentrl/trainer/components/nccl_tensor_comm.py", line 90, in async_receive',
        "    await asyncio.to_thread(dist.barrier, group=self.pg)",
        error,
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'invalid argument'",
    ]
    assert diagnose("\n".join(lines) + "\n")["root_cause"] == error
    body = diagnose(newest_first(lines))
    assert body["crashed"] and body["root_cause"].endswith(error)


def test_a_sweep_agent_s_next_run_starts_afresh_after_the_one_that_errored() -> None:
    killed = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=21171137.batch. Some of the step "
        "tasks have been OOM Killed."
    )
    body = diagnose(
        "wandb: Agent Starting Run: unxsy0hh with config:\n"
        "wandb: \tbatch_size: 128\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/src/model/base/bert.py", line 220, in train\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB.\n"
        "wandb: ERROR Run unxsy0hh errored:\n"
        "wandb: Agent Starting Run: em3qtl1s with config:\n"
        "wandb: \tbatch_size: 64\n"
        "wandb: Syncing run deep-sweep-6\n"
        "/var/slurm_spool/job21171137/slurm_script: line 22: 1687899 Killed                  "
        "poetry run python ./scripts/train/main.py\n" + killed + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, killed, "oom_host_killed",
    )  # fmt: skip


def test_pip_stopped_by_its_operator_is_a_stop_and_what_fails_after_is_the_story() -> None:
    install = "Collecting accelerate\n  Downloading accelerate-0.21.0.whl (244 kB)\n"
    stopped = diagnose(install + "ERROR: Operation cancelled by user\n^C\n")
    assert (stopped["crashed"], stopped["root_cause"]) == (False, None)
    missing = "ModuleNotFoundError: No module named 'accelerate'"
    body = diagnose(
        install + "ERROR: Operation cancelled by user\n^C\n"
        "Traceback (most recent call last):\n"
        '  File "/content/train.py", line 77, in install_dependencies\n'
        "    from accelerate.utils import write_basic_config\n" + missing + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, missing, "import_or_version",
    )  # fmt: skip


def test_cargo_s_word_on_a_build_script_that_failed_yields_to_the_script_s_panic() -> None:
    panicked = (
        "  thread 'main' panicked at 'nvcc cannot target gpu arch 89. Available nvcc targets are "
        "[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87].', build.rs:12:5"
    )
    body = diagnose(
        "error: failed to run custom build command for `candle-kernels v0.2.1`\n\n"
        "Caused by:\n"
        "  process didn't exit successfully: `target/release/build/candle-kernels-35c8/"
        "build-script-build` (exit code: 101)\n"
        "  --- stdout\n  cargo:rerun-if-changed=build.rs\n\n  --- stderr\n" + panicked + "\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, panicked)
    # The crate named bare (a report that lost its backticks), nvcc's error in the output.
    nvcc = 'src/moe/moe_wmma_gguf.cu(259): error: incomplete type "nvcuda::wmma::fragment"'
    body = diagnose(
        "error: failed to run custom build command for candle-kernels v0.9.2\nCaused by:\n"
        "process didn't exit successfully: /app/target/release/build/candle-kernels-50be/"
        "build-script-build (exit status: 101)\n\n" + nvcc + "\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, nvcc)


def test_docker_s_word_on_a_container_it_could_not_start_yields_to_the_hook_s_error() -> None:
    # (a terminal 80 columns wide: the daemon's one line wrapped, the hook's error below it)
    hook = "nvidia-container-cli: initialization error: WSL environment detected but no adap"
    body = diagnose(
        "Gracefully stopping... (press Ctrl+C again to force)\n"
        "Error response from daemon: failed to create task for container: failed to creat\n"
        "e shim task: OCI runtime create failed: runc create failed: unable to start cont\n"
        "ainer process: error during container init: error running hook #0: error running\n"
        " hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        + hook
        + "\nters were found: unknown\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, hook)
    # Its own word is still the root cause where no hook's error follows.
    alone = (
        "Error response from daemon: failed to create task for container: failed to create shim "
        "task: OCI runtime create failed: could not apply required modification to OCI "
        "specification: error modifying OCI spec: failed to inject CDI devices"
    )
    assert diagnose("Attaching to nim\n" + alone + "\n")["root_cause"] == alone


def test_an_error_logged_just_before_a_crash_signal_says_why_the_signal_came() -> None:
    logged = (
        "[HAMI-core ERROR (pid:565 thread=140267266266944 multiprocess_memory_limit.c:831)]: "
        "Illegal device id: 850725928"
    )
    body = diagnose(
        logged + "\n!!!!!!! Segfault encountered !!!!!!!\n"
        '  File "/libvgpu/src/multiprocess/multiprocess_memory_limit.c", line 833, in '
        "get_current_device_memory_limit\n"
        '  File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()\n'
    )
    assert (body["crashed"], body["root_cause"]) == (True, logged)


def test_a_shell_s_missing_command_with_a_failure_after_it_is_gone_past() -> None:
    failed = "RuntimeError: 0 active drivers ([]). There should only be one."
    body = diagnose(
        "Successfully installed triton-3.6.0\n"
        "/bin/bash: line 1: nvidia-smi: command not found\n"
        "Traceback (most recent call last):\n"
        '  File "/content/vector_add.py", line 1, in <module>\n'
        "    DEVICE = triton.runtime.driver.active.get_active_torch_device()\n"
        '  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/driver.py", line 28, in '
        "active\n"
        + "".join(
            f'  File "/usr/local/lib/python3.12/dist-packages/triton/runtime/driver.py", line {n}, '
            "in default\n"
            for n in range(20, 40)
        )
        + failed + "\n"
    )  # fmt: skip
    assert (body["crashed"], body["root_cause"]) == (True, failed)
    # Alone at the end, it is why the script stopped.
    missing = "/bin/bash: line 32: oqnd4apl: command not found"
    assert diagnose("Loading config\n" + missing + "\n")["root_cause"] == missing


def test_an_error_that_calls_itself_non_fatal_is_no_failure() -> None:
    body = diagnose(
        "[Feb 27 2025 14:10:02] [INFO] [tid 1808] multicast group 1 is allocated.\n"
        "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on "
        "fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)
    # A fatal one is a failure.
    fatal = (
        "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch fatal error 12028 on fid 0 "
        "on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61"
    )
    assert diagnose(fatal + "\n")["root_cause"] == fatal


def test_tensorflow_s_record_of_the_op_that_failed_beats_its_root_errors_summary() -> None:
    op_failed = (
        "2021-03-24 22:58:48.688700: W tensorflow/core/framework/op_kernel.cc:1651] "
        "OP_REQUIRES failed at nccl_ops.cc:104 : Internal: unhandled system error"
    )
    body = diagnose(
        "I0324 22:58:40.000000 139872082519872 benchmark_cnn.py:2000] Running warm up\n"
        + op_failed + "\n" + op_failed.replace("48.688700", "48.688800") + "\n"
        "Traceback (most recent call last):\n"
        '  File "tf_cnn_benchmarks.py", line 73, in <module>\n'
        "    app.run(main)\n"
        "tensorflow.python.framework.errors_impl.InternalError: 2 root error(s) found.\n"
        "  (0) Internal: unhandled system error\n"
    )  # fmt: skip
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, op_failed, "nccl_comm",
    )  # fmt: skip
    # An allocator's hint that it calls "not a failure" yields to the failure after it.
    hint = (
        "2020-07-10 08:43:17.477999: W tensorflow/core/common_runtime/bfc_allocator.cc:239] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.54GiB with "
        "freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available."
    )
    assert diagnose(hint + "\n" + op_failed + "\n")["root_cause"] == op_failed


def test_onnxruntime_s_own_warning_on_a_provider_it_fell_back_from_is_no_failure() -> None:
    body = diagnose(
        "2025-02-10 15:11:12,191 - dw pose extraction - INFO - LOAD: DW Pose Model\n"
        "2025-02-10 15:11:13.526591585 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:640 "
        "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please "
        "reference https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html"
        "#requirements to ensure all dependencies are met.\n"
        "Extracting dwpose from video frames...\n"
        "DWPose data extraction complete!\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_notebook_kernel_that_crashed_yields_to_the_error_its_cell_printed() -> None:
    crashed = "The Kernel crashed while executing code in the current cell or a previous cell. "
    alone = diagnose("DPO training:  50%|█████     | 500/1000\n" + crashed + "\n")
    assert (alone["crashed"], alone["root_cause"]) == (True, crashed)
    failed = (
        "2024-07-02 16:22:00.000153:  264768  ERROR ||NEURON_CC_WRAPPER||: Failed compilation "
        "with ['neuronx-cc', 'compile', '--target=trn1']: [TEN404] Internal tensorizer error"
    )
    body = diagnose(failed + "\n" + crashed + "\n")
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_pyxis_s_own_summaries_yield_to_the_enroot_log_it_relays() -> None:
    cause = (
        "slurmstepd: error: pyxis:   nvidia-container-cli: container error: file lookup failed: "
        "/proc/421042/root/fsx/enroot/data/user/etc/debian_version: permission denied"
    )
    body = diagnose(
        "slurmstepd: error: pyxis: container start failed with error code: 1\n"
        "slurmstepd: error: pyxis: printing enroot log file:\n" + cause + "\n"
        "slurmstepd: error: pyxis:   [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with "
        "return code 1\n"
        "slurmstepd: error: pyxis: couldn't start container\n"
        "slurmstepd: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1\n"
        "slurmstepd: error: Failed to invoke spank plugin stack\n"
        "srun: error: host-1: task 0: Exited with exit code 1\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, cause)
    missing = (
        "slurmstepd: error: pyxis:     [ERROR] Command not found: nvidia-container-cli, see "
        "https://github.com/NVIDIA/libnvidia-container"
    )
    body = diagnose(
        "slurmstepd: error: pyxis: container start failed with error code: 1\n"
        "slurmstepd: error: pyxis: printing contents of log file ...\n" + missing + "\n"
        "slurmstepd: error: pyxis: couldn't start container\n"
    )
    assert (body["root_cause"], body["error_class"]) == (missing, "import_or_version")


def test_slurm_starting_a_task_in_tmp_for_a_missing_directory_is_no_failure() -> None:
    moved = (
        " 0: slurmstepd: error: couldn't chdir to `/workspace': No such file or directory: "
        "going to /tmp instead\n"
    )
    body = diagnose(
        "2025-01-24 14:22:52.021 | INFO | server:_run_async:377 - Serving on port 12345\n"
        + moved * 3
        + " 0: epoch 1 step 10 loss 2.31\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_distributed_checkpoint_s_exception_yields_to_the_rank_s_own_error() -> None:
    quota = "[rank0]: OSError: [Errno 122] Disk quota exceeded: '/ckpt/fsdp_0/.metadata.tmp'"
    body = diagnose(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/srv/train.py", line 88, in <module>\n'
        "[rank0]:     accelerator.save_state(output_dir)\n"
        "[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException "
        "ranks:dict_keys([0])\n"
        "[rank0]: Traceback (most recent call last): (RANK 0)\n"
        '[rank0]:   File "/torch/distributed/checkpoint/filesystem.py", line 513, in '
        "create_stream\n"
        "[rank0]:     with path.open(mode) as stream:\n" + quota + "\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, quota)


def test_a_relayed_engine_s_error_is_an_error_under_its_relay_s_info() -> None:
    relay = "2025-08-13 04:39:39,465 - __main__ - INFO - "
    error = (
        "2025-08-13 04:39:39,837 - __main__ - INFO - ERROR 08-13 04:39:39 engine.py:400] "
        "CUDA error: no kernel image is available for execution on the device"
    )
    body = diagnose(
        "2025-08-13 04:39:39,077 - __main__ - WARNING - Attempt 9: Please wait for vllm server "
        "to become ready...\n"
        + relay
        + "INFO 08-13 04:39:39 cuda.py:229] Using Flash Attention backend.\n"
        + relay
        + "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation.\n"
        + relay
        + "INFO 08-13 04:39:39 model_runner.py:1110] Starting to load model /m...\n"
        + error
        + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True, error, "unsupported_arch",
    )  # fmt: skip


def test_a_request_the_server_could_not_process_is_served_past() -> None:
    body = diagnose(
        "INFO:     Uvicorn running on http://0.0.0.0:7960 (Press CTRL+C to quit)\n"
        "04:42:20 - ERROR - Error processing UI generation request: 500: No operator found for "
        "`memory_efficient_attention_forward` with inputs:\n"
        "     query       : shape=(1, 4096, 16, 64) (torch.float16)\n"
        "`fa2F@0.0.0` is not supported because:\n"
        "    xFormers wasn't build with CUDA support\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_chain_of_exceptions_the_program_fell_back_from_is_lived_through() -> None:
    body = diagnose(
        "Jax plugin configuration error: Exception when calling "
        "jax_plugins.xla_cuda12.initialize()\n"
        "Traceback (most recent call last):\n"
        '  File "/env/jax_plugins/xla_cuda12/__init__.py", line 201, in _version_check\n'
        "    version = get_version()\n"
        "RuntimeError: cuDNN not found.\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/env/jax/_src/xla_bridge.py", line 487, in discover_pjrt_plugins\n'
        "    plugin_module.initialize()\n"
        "RuntimeError: Unable to load cuDNN. Is it installed?\n"
        "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
        "installed. Falling back to cpu.\n"
        "Cross-entropy loss: 2.5872\n"
        "Bits per byte:      3.7325\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_training_loop_that_skipped_a_step_for_an_oom_went_on() -> None:
    body = diagnose(
        "20:13:55 INFO log(vocab=248320) = 12.4225  (random-model baseline)\n"
        "20:16:28 WARNING OOM at iter 1 (rank 0): CUDA out of memory. Tried to allocate 30.79 "
        "GiB. GPU 0 has a total capacity of 139.80 GiB of which 27.66 GiB is free.\n"
        "20:16:28 WARNING Skipped iter 1 due to OOM (consecutive: 1, max allowed: 10).\n"
        "20:56:41 INFO Saving resume checkpoint to /ckpt/resume_ckpt\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_paddle_s_summary_of_an_exception_printed_empty_says_what_failed() -> None:
    summary = (
        "Out of memory error on GPU 1. Cannot allocate 4.882812GB memory on GPU 1, "
        "19.911926GB memory has been allocated and available memory is only 3.730957GB."
    )
    frames = "".join(f"{n}   paddle::memory::allocation::Allocator::Allocate(unsigned long)\n"
                     for n in range(30))  # fmt: skip
    body = diagnose(
        "Traceback (most recent call last):\n"
        '  File "/env/ppcls/arch/backbone/base/theseus_layer.py", line 622, in forward\n'
        "    qk_mat = qk_mat + mask\n"
        "MemoryError: \n"
        "\n"
        "--------------------------------------\n"
        "C++ Traceback (most recent call last):\n"
        "--------------------------------------\n" + frames + "\n"
        "----------------------\n"
        "Error Message Summary:\n"
        "----------------------\n"
        "ResourceExhaustedError: \n"
        "\n" + summary + "\n"
        "\n"
        "Please check whether there is any other process using GPU 1.\n"
        "(at ../paddle/phi/core/memory/allocation/cuda_allocator.cc:71)\n"
    )
    assert (body["root_cause"], body["error_class"]) == (summary, "oom_gpu")


def test_a_status_the_hub_answered_is_no_failure_to_connect() -> None:
    status = (
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
        "https://huggingface.co/org/tok/resolve/main/config.json"
    )
    chain = (
        "Traceback (most recent call last):\n"
        '  File "/env/huggingface_hub/utils/_http.py", line 409, in hf_raise_for_status\n'
        "    response.raise_for_status()\n" + status + "\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/env/transformers/utils/hub.py", line 470, in cached_files\n'
        "    raise EnvironmentError(\n"
    )
    offline = (
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
        "find it in the cached files and it looks like org/tok is not the path to a directory "
        "containing a file named config.json."
    )
    assert diagnose(chain + offline + "\n")["root_cause"] == status
    # The caller's own meaning of a status still says more than the status.
    gated = "OSError: You are trying to access a gated repo."
    assert diagnose(chain + gated + "\n")["root_cause"] == gated


def test_an_exception_that_names_an_engine_s_arguments_class_is_no_repr_of_them() -> None:
    raised = (
        "TypeError: sglang.srt.server_args.ServerArgs() got multiple values for keyword "
        "argument 'log_level'"
    )
    body = diagnose(
        "2024-05-26 14:51:19 | ERROR | stderr | Traceback (most recent call last):\n"
        '2024-05-26 14:51:19 | ERROR | stderr |   File "/env/sglang/srt/server.py", line 246, '
        "in __init__\n"
        "2024-05-26 14:51:19 | ERROR | stderr |     self.server_args = ServerArgs(*args, "
        "log_level=log_evel, **kwargs)\n"
        f"2024-05-26 14:51:19 | ERROR | stderr | {raised}\n"
    )
    assert (body["crashed"], body["root_cause"]) == (
        True,
        f"2024-05-26 14:51:19 | ERROR | stderr | {raised}",
    )
    # The repr itself, logged at launch, stays none.
    assert (
        diagnose("ServerArgs(model_path='/m', tp_size=2, watchdog_timeout=300)\n")["crashed"]
        is not True
    )


def test_a_launcher_s_failure_that_appends_its_child_s_log_is_not_read_past() -> None:
    timed_out = (
        "2025-12-09 10:40:29 - ERROR - Command 'health check of container ramalama_mQGA7dGE8j' "
        "timed out after 20 seconds: logs: ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no"
    )
    body = diagnose(
        "Downloading llama3\n"
        "2025-12-09 10:40:29 - ERROR - Failed to serve model llama3, for ramalama run command\n"
        f"{timed_out}\n"
        "ggml_cuda_init: found 1 ROCm devices:\n"
        "main: HTTP server is listening, hostname: 0.0.0.0, port: 8080, http threads: 31\n"
        "main: loading model\n"
        "srv    load_model: loading model '/mnt/models/llama3'\n"
    )
    assert (body["crashed"], body["ready"]) == (True, False)
    assert (body["root_cause"], body["error_class"]) == (timed_out, "timeout_or_hang")


HANDLED = (
    "Traceback (most recent call last):\n"
    '  File "/env/gguf/vocab.py", line 120, in load\n'
    "    return self._load()\n"
    "{caught}\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/env/convert_hf_to_gguf.py", line 640, in set_vocab\n'
    "    self._set_vocab_gpt2()\n"
    "{escaped}\n"
)


def test_the_exception_that_escaped_a_handler_is_the_failure_when_it_says_more() -> None:
    caught = "FileNotFoundError: File not found: /models/minicpm/tokenizer.model"
    escaped = (
        "ValueError: The repository for /models/minicpm contains custom code which must be "
        "executed to correctly load the model. Please pass the argument `trust_remote_code=True`"
    )
    body = diagnose(HANDLED.format(caught=caught, escaped=escaped))
    assert body["root_cause"] == escaped
    # Raised again with the caught one's words, or saying less: the caught one says it.
    again = "Exception: Capture cuda graph failed: mat1 and mat2 shapes cannot be multiplied"
    shapes = "RuntimeError: mat1 and mat2 shapes cannot be multiplied"
    assert diagnose(HANDLED.format(caught=shapes, escaped=again))["root_cause"] == shapes
    terse = "KeyError: 'weights'"
    assert diagnose(HANDLED.format(caught=escaped, escaped=terse))["root_cause"] == escaped
    # Chained by cause, the cause still comes first.
    caused = HANDLED.replace(
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
    )
    assert diagnose(caused.format(caught=caught, escaped=escaped))["root_cause"] == caught


def test_lsf_ending_a_job_at_its_run_time_limit_is_a_scheduler_s_stop() -> None:
    body = diagnose(
        "Epoch 12: 100%|##########| 400/400 [02:10<00:00, 3.07it/s, loss=0.412]\n"
        "------------------------------------------------------------\n"
        "Sender: LSF System <lsfadmin@host-1>\n"
        "Job <19480312: train> in cluster <dcc> Exited\n"
        "Started at Wed Nov 29 11:02:54 2023\n"
        "Terminated at Thu Nov 30 11:03:35 2023\n"
        "------------------------------------------------------------\n"
        "\n"
        "TERM_RUNLIMIT: job killed after reaching LSF run time limit.\n"
        "Exited with exit code 140.\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_cuda_extension_s_own_check_names_the_fault_before_a_cut_traceback() -> None:
    fault = "error in ms_deformable_im2col_cuda: an illegal memory access was encountered"
    body = diagnose(
        fault + "\nTraceback (most recent call last):\n"
        '  File "demo.py", line 70, in <module>\n'
        "    boxes, confidences, labels = predict(\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        fault,
        "cuda_runtime",
    )


def test_a_what_that_names_only_the_base_class_yields_to_the_terminate_line() -> None:
    terminate = "terminate called after throwing an instance of 'ReadSocketException'"
    body = diagnose(
        "🔷 Forward: 30.12 ms\n"
        + terminate
        + "\n  what():  std::exception\nAborted (core dumped)\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, terminate)
    # A what() with a message of its own still says more than the terminate line.
    said = "  what():  vector::_M_default_append"
    body = diagnose(
        "terminate called after throwing an instance of 'std::length_error'\n" + said + "\n"
    )
    assert body["root_cause"] == said


def test_the_gpu_driver_s_own_word_on_a_fault_is_the_root_cause() -> None:
    fault = (
        "Aug 08 22:35:13 host-1 kernel: amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault "
        "(src_id:0 ring:24 vmid:8 pasid:32794)"
    )
    dump = "".join(
        f"Aug 08 22:35:13 host-1 kernel: amdgpu 0000:c3:00.0: amdgpu:          {field}\n"
        for field in ("MORE_FAULTS: 0x1", "WALKER_ERROR: 0x0", "MAPPING_ERROR: 0x0", "RW: 0x0")
    )
    body = diagnose(fault + "\n" + dump)
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        fault,
        "cuda_runtime",
    )
    lost = (
        "2026-01-22T14:49:49Z [258,132ms] [Error] [carb.graphics-vulkan.plugin] VkResult: "
        "ERROR_DEVICE_LOST"
    )
    body = diagnose(
        lost + "\n2026-01-22T14:49:49Z [258,132ms] [Error] [gpu.foundation.plugin] A GPU crash "
        "occurred. Exiting the application...\n"
        "Reasons for the failure: a device lost, out of memory, or an unexpected bug.\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        lost,
        "cuda_runtime",
    )


def test_a_ray_actor_named_with_its_arguments_is_a_prefix_like_any_actor_s() -> None:
    tag = "(EnvGroup(rank=1) pid=49603) "
    error = (
        tag + "RuntimeError: The MUJOCO_EGL_DEVICE_ID environment variable must be an integer "
        "between 0 and 0 (inclusive), got 1."
    )
    body = diagnose(
        f'{tag}  File "/opt/venv/lib/python3.11/site-packages/robosuite/egl_context.py", line '
        f"61, in create_initialized_egl_device_display\n{tag}    raise RuntimeError(\n{error}\n"
        f"{tag}Exception ignored in: <function EGLGLContext.__del__ at 0x711f790620c0>\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, error)


def test_a_traceback_a_wrapper_relays_under_its_own_tag_is_read_as_any_traceback() -> None:
    tag = "[MusubiTuner WanLoRATrainer] TRAINER: "
    error = tag + "NameError: name 'node_name_print_debug' is not defined"
    body = diagnose(
        "got prompt\n[MusubiTuner WanLoRATrainer] execute_train_lora called. Trigger: text_ok\n"
        f"{tag}Traceback (most recent call last):\n"
        f'{tag}  File "C:\\AI\\ComfyUI\\custom_nodes\\run_wan_training.py", line 16, in '
        f"<module>\n{error}\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, error)


def test_tt_metal_s_exception_says_what_went_wrong_after_its_info_line() -> None:
    throw = (
        "ERROR 08-06 23:01:23 [engine.py:453] RuntimeError: TT_THROW @ /home/user/tt-metal/"
        "tt_metal/impl/allocator/bank_manager.cpp:141: tt::exception"
    )
    body = diagnose(
        throw + "\nERROR 08-06 23:01:23 [engine.py:453] info:\n"
        "ERROR 08-06 23:01:23 [engine.py:453] Out of Memory: Not enough space to allocate "
        "146575360 B DRAM buffer across 12 banks, where each bank needs to store 12214976 B\n"
    )
    assert (body["root_cause"], body["error_class"]) == (throw, "oom_gpu")


def test_a_brpc_service_serving_after_an_error_record_lived_through_it() -> None:
    body = diagnose(
        "I20251114 15:03:20.262110 57571 master.cpp:157] Starting xllm master service.\n"
        "E20251114 15:03:20.951929 57571 etcd_client.cpp:104] etcd get XLLM:SERVICE:MASTER "
        "failed: etcd-cpp-apiv3: key not found\n"
        "I20251114 15:03:20.953759 57571 scheduler.cpp:38] Set current service as master!\n"
        "I20251114 15:03:20.968561 57784 server.cpp:1200] "
        "Server[xllm_service::XllmHttpServiceImpl] is serving on port=28888.\n"
    )
    assert (body["ready"], body["crashed"], body["root_cause"]) == (True, False, None)


def test_a_cuda_error_code_under_glog_s_fatal_severity_is_a_crash_not_a_warning() -> None:
    fatal = (
        "F0721 22:26:17.930082    6445 stream_executor_util.cc:502] Could not create "
        "RepeatBufferKernel: INTERNAL: CUDA Runtime error: Failed call to cudaGetFuncBySymbol: "
        "cudaErrorNoKernelImageForDevice: no kernel image is available for execution on the device"
    )
    body = diagnose("INFO:absl:[thread=MainThread] Restoring checkpoint\n" + fatal + "\n")
    assert (body["crashed"], body["root_cause"]) == (True, fatal)
    # The same code at a warning's severity still explains a hang, not a crash.
    warned = "[WARN] interposer: cudaErrorNoKernelImageForDevice on cudaGetFuncBySymbol"
    assert diagnose(f"starting\n{warned}\n")["crashed"] is False


def test_magnum_s_windowless_context_that_cannot_start_is_a_crash() -> None:
    failed = (
        "Platform::WindowlessEglApplication::tryCreateContext(): unable to find CUDA device 0 "
        "among 6 EGL devices in total"
    )
    body = diagnose(
        "scene: data/hm3d/val/00824-Dd4bFSTQ8gi/Dd4bFSTQ8gi.glb\n-------------\n"
        + failed
        + "\nWindowlessContext: Unable to create windowless context\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "config_or_args",
    )


def test_the_source_line_under_a_python_warning_is_no_failure_in_either_order() -> None:
    lines = [
        "/opt/venv/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed "
        "to load image Python extension: 'libc10_cuda.so: cannot open shared object file: No "
        "such file or directory'",
        '  warn(f"Failed to load image Python extension: {e}")',
        "epoch 1: loss 0.412",
        "training finished",
    ]
    for log in ("\n".join(lines) + "\n", newest_first(lines)):
        body = diagnose(log)
        assert (body["crashed"], body["root_cause"]) == (False, None)


def test_a_script_s_own_err_tag_is_an_error_record() -> None:
    failed = "[ERR]  smoke test did not become healthy at ctx=65536"
    body = diagnose(
        "\x1b[32m[OK]\x1b[0m   acquired model: /models/qwen-27b.gguf (25G)\n"
        "\x1b[36m[..]\x1b[0m   smoke test: ctx=65536 device=ROCm0\n"
        f"\x1b[31m{failed[:5]}\x1b[0m{failed[5:]}\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_a_driver_call_that_returned_a_negative_errno_is_why_the_shell_saw_an_abort() -> None:
    failed = "mtgpu_device_initialize: mtgpu_query_dev_info failed (-22)"
    body = diagnose(
        "mthreads-gmi command check successfully!\n" + failed + "\ncorrupted double-linked list\n"
        "/home/check_status.sh: line 34:   117 Aborted                 (core dumped) ./test_musa\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_hip_s_trace_of_a_kernel_looked_up_in_the_next_code_object_is_no_failure() -> None:
    stamp = ":{level}:hip_module.cpp           :{line}  : 305270480{n} us: [pid:312732 tid:0x155] "
    failed = (
        "E0904 10:53:24.344123  312732 pjrt_stream_executor_client.cc:2826] Execution of "
        "replica 0 failed: INTERNAL: Failed to add kernel node to a HIP graph: hipError_t(9)"
    )
    trace = (
        stamp.format(level=1, line=84, n=339)
        + "Cannot find the function: Cijk_Ailk_Bljk_SB for module: 0x82caa730\n"
        + stamp.format(level=3, line=85, n=350)
        + "hipModuleGetFunction: Returned hipErrorNotFound : \n"
        + stamp.format(level=3, line=88, n=397) + "hipModuleGetFunction: Returned hipSuccess : \n"
        + "".join(
            stamp.format(level=3, line=798, n=430 + arg) + f"Arg{arg}:  Tensor2dSizeA = val:1\n"
            for arg in range(6)
        )
    )  # fmt: skip
    assert (diagnose(trace)["crashed"], diagnose(trace)["root_cause"]) == (False, None)
    body = diagnose(trace + "--\n" + failed + "\n")
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_an_error_logged_twice_in_a_row_and_gone_on_past_is_not_why_the_job_died() -> None:
    failed = (
        "[rank0]: RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:"
        "102 HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
        "&(comm->hcclComm_)), error code is 15"
    )
    lived = (
        "ERROR 04-27 03:09:48 [camem.py:69] Failed to import vllm_ascend_C:libvllm_ascend_kernels"
        ".so: cannot open shared object file: No such file or directory\n"
    )
    frame = '[rank0]:   File "/vllm_ascend/models/deepseek_v2.py", line {}, in __init__\n'
    log = (
        lived * 2
        + "".join(
            f"INFO 04-27 03:10:45 [parallel_state.py:959] rank {n} assigned\n" for n in (0, 1)
        )
        + "".join(
            f"[rank{n}]:[W427 03:10:15.652192062 ProcessGroupGloo.cpp:715] Warning: Unable to "
            "resolve hostname to a (local) address.\n"
            for n in (0, 1)
        )
        + "INFO 04-27 03:10:45 [parallel_state.py:959] rank 1 in world size 2 is assigned\n" * 2
        + "INFO 04-27 03:11:05 [model_runner.py:944] Starting to load model /models/ds-v2-lite\n"
        * 2
        + "INFO 04-27 03:11:05 [quantizer.py:88] Using the vLLM Ascend Quantizer version now!\n" * 2
        + "[rank0]: Traceback (most recent call last):\n"
        + "".join(frame.format(n) + "[rank0]:     self.layer = Layer(\n" for n in range(30))
        + failed
        + "\n"
    )
    body = diagnose(log)
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_a_logged_error_announcing_a_long_traceback_yields_to_the_exception_it_ends_in() -> None:
    failed = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00 MiB."
    frames = "".join(
        f'  File "/detectron2/modeling/layer_{n}.py", line {n}, in forward\n'
        "    return self.block(x)\n"
        for n in range(40)
    )
    body = diagnose(
        "[08/30 15:34:52] d2.engine.train_loop INFO: Starting training from iteration 0\n"
        "[08/30 15:34:53] d2.engine.train_loop ERROR: Exception during training:\n"
        "Traceback (most recent call last):\n" + frames + failed + "\n"
        "[08/30 15:34:53] d2.engine.hooks INFO: Total training time: 0:00:01\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_burn_s_panic_banner_points_to_the_panic_below_it() -> None:
    failed = (
        'called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out '
        'of memory")'
    )
    body = diagnose(
        "     Running `target/release/examples/finetune`\n=== PANIC ===\n"
        "A fatal error happened, you can check the experiment logs here => "
        "'/tmp/resnet-finetune/experiment.log'\n=============\n\n"
        "thread 'main' panicked at /cargo/cubecl-cuda-0.6.0/src/compute/storage.rs:132:87:\n"
        + failed
        + "\nstack backtrace:\n   0: std::panicking::begin_panic_handler\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_physx_s_gpu_allocator_that_fails_is_out_of_gpu_memory() -> None:
    failed = (
        "2025-03-15T15:07:10Z [job] PxgCudaDeviceMemoryAllocator fail to allocate memory "
        "100663296 bytes!! Result = 2"
    )
    body = diagnose("Creating environments: 4096\n" + failed + "\n")
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_an_error_before_a_load_or_start_up_that_completed_was_lived_through() -> None:
    warp = (
        "Warp CUDA error: Failed to get driver entry point 'cuDeviceGetUuid' (CUDA error 1)\n"
        "Warp CUDA error 36: API call is not supported in the installed CUDA driver (in "
        "function cuda_init, /builds/omniverse/warp/warp/native/warp.cu:277)\n"
        "Warp 1.7.1 initialized:\n   CUDA Toolkit 12.8, Driver 13.0\n   Devices:\n"
        '     "cuda:0"   : "NVIDIA GeForce RTX 4070 SUPER" (12 GiB, sm_89, mempool enabled)\n'
    )
    tokenizer = (
        "I tokenizers:tekken.cpp:280] Built vocabulary with 130072 tokens\n"
        "E0000 00:00:1771336683.851963 22483944 re2.cc:237] Error parsing '([^\\r\\n]?)': "
        "invalid perl operator: (?!\n"
        "I tokenizers:re2_regex.cpp:27] Re2 failed to compile regex: ([^\\r\\n]?)\n"
        "I tokenizers:tekken.cpp:206] Tekken tokenizer loaded successfully. Vocab size: 131072\n"
        "Listening (Ctrl+C to stop)...\n Good morning, this is a test.</s>\n"
    )
    for log in (warp, tokenizer):
        body = diagnose(log)
        assert (body["crashed"], body["root_cause"]) == (False, None), log


def test_a_child_s_failure_relayed_in_subprocess_s_words_yields_to_the_child_s_error() -> None:
    failed = "IndexError: list index out of range"
    body = diagnose(
        "Export failed with error: Command '['optimum-cli', 'export', 'executorch', '--model', "
        "'NousResearch/Llama-3.2-1B']' returned non-zero exit status 2.\n"
        + "".join(
            f'  File "/src/executorch/exir/program/_program.py", line {n}, in wrapper\n'
            "    return func(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^^^\n"
            for n in range(25)
        )
        + "    old_input_spec = old_signature.input_specs[idx]\n"
        + failed
        + "\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


@pytest.mark.parametrize(
    "failed",
    [
        "[host-1:1387 :0:1656] Caught signal 7 (Bus error: nonexistent physical address)",
        "ort.webgpu.bundle.min.mjs:10 Uncaught Error: Can't create a session. ERROR_CODE: 6, "
        "ERROR_MESSAGE: std::bad_alloc",
        "D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1716 "
        "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed "
        'with error 126 "" when trying to load "onnxruntime_providers_cuda.dll"',
        "vkWaitForFences failed -4",
        "failed to decode the batch, n_batch = 2048, ret = 1",
    ],
)
def test_a_runtime_s_own_word_that_it_failed_is_never_silent(failed: str) -> None:
    body = diagnose("loading model weights\nmodel loaded, 32 layers\n" + failed + "\n")
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_genie_s_dialog_that_could_not_be_created_yields_to_the_error_before_it() -> None:
    failed = '[ERROR] "Could not create context from binary for context index = 0 : err 5000"'
    body = diagnose(
        'Using libGenie.so version 1.9.0\n[WARN]  "Unable to initialize logging in backend."\n'
        + failed
        + '\n[ERROR] "Create From Binary FAILED!"\nFailed to create the dialog.\n'
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_an_error_report_laid_out_as_fields_is_read_by_its_message_field() -> None:
    failed = "    Error text: an illegal memory access was encountered"
    body = diagnose(
        "Step 12000: potential energy -1234.5\nCUDA Error:\n    File:       force/neighbor.cu\n"
        "    Line:       748\n    Error code: 700\n" + failed + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "cuda_runtime",
    )


def test_tensorrt_s_error_code_relayed_without_its_tag_is_a_failure() -> None:
    failed = (
        "trt_infer: 2: [virtualMemoryBuffer.cpp::resizePhysical::144] Error Code 2: OutOfMemory "
        "(no further information)"
    )
    body = diagnose("Building TRT engine.\n" + failed + "\n")
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_paddle_s_termination_signal_is_an_operator_s_stop() -> None:
    body = diagnose(
        "[2023/08/04 13:33:52] ppdet.engine INFO: Epoch: [3] [ 40/121] learning_rate: 0.000100\n"
        "--------------------------------------\nC++ Traceback (most recent call last):\n"
        "--------------------------------------\n0   paddle::framework::SignalHandle(char const*, "
        "int)\n\n----------------------\nError Message Summary:\n----------------------\n"
        "FatalError: `Termination signal` is detected by the operating system.\n"
        '  [TimeInfo: *** Aborted at 1691153636 (unix time) try "date -d @1691153636" if you '
        "are using GNU date ***]\n"
        "  [SignalInfo: *** SIGTERM (@0x1157b0) received by PID 1136639 (TID 0x7f90747ef700) "
        "from PID 1136560 ***]\n"
    )
    assert (body["crashed"], body["root_cause"]) == (False, None)


def test_ggml_vulkan_s_word_that_no_memory_type_has_room_says_more_than_the_failed_size() -> None:
    failed = "ggml_vulkan: No suitable memory type found: ErrorOutOfDeviceMemory"
    body = diagnose(
        '[GIN] 2025/10/30 - 13:08:10 | 200 |   13.3171539s | 127.0.0.1 | POST     "/v1/chat"\n'
        "ggml_vulkan: Device memory allocation of size 218787840 failed.\n" + failed + "\n"
        "Exception 0xc0000005 0x1 0x1000 0x7ffa4131058b\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_a_stop_after_a_worker_died_of_its_own_is_the_job_s_teardown() -> None:
    failed = (
        "[2024-02-18 20:48:46,758] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
        "(exitcode: -9) local_rank: 6 (pid: 3004758) of binary: /opt/conda/bin/python"
    )
    frames = "".join(
        f'  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/{name}.py", '
        f"line {line}, in {name}\n    result = {name}()\n"
        for name, line in (("run", 736), ("invoke", 878), ("monitor", 307), ("poll", 668))
    )
    # Slurm ends the other nodes' agents once a task has failed, each with a traceback of its own
    other_agents = "".join(
        "Traceback (most recent call last):\n" + frames + "torch.distributed.elastic."
        f"multiprocessing.api.SignalException: Process {pid} got signal: 15\n"
        for pid in range(466300, 466312)
    )
    body = diagnose(
        "[2024-02-18 20:47:01,002] wholegraph: init done\n" + failed + "\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "Root Cause (first observed failure):\n  exitcode  : -9 (pid: 3004758)\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 3004758\n" + other_agents
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "oom_host_killed",
    )


def test_a_stop_raised_after_a_failure_s_long_chained_traceback_is_its_teardown() -> None:
    failed = "ERROR 12-25 15:08:47 engine.py:135] IndexError: tuple index out of range"
    frames = "".join(
        f'ERROR 12-25 15:08:47 engine.py:135]   File "/vllm/engine/step_{n}.py", line {n}, in '
        f"step_{n}\nERROR 12-25 15:08:47 engine.py:135]     return step_{n + 1}()\n"
        for n in range(24)
    )
    body = diagnose(
        "ERROR 12-25 15:08:47 engine.py:135] Traceback (most recent call last):\n"
        + frames
        + failed
        + "\nERROR 12-25 15:08:47 engine.py:135] \n"
        "ERROR 12-25 15:08:47 engine.py:135] The above exception was the direct cause of the "
        "following exception:\nERROR 12-25 15:08:47 engine.py:135] \n"
        "ERROR 12-25 15:08:47 engine.py:135] Traceback (most recent call last):\n"
        + frames
        + "ERROR 12-25 15:08:47 engine.py:135] IndexError: Error in model execution: tuple index "
        "out of range\n"
        + "CRITICAL 12-25 15:08:47 launcher.py:99] MQLLMEngine is already dead, terminating "
        "server process\n" * 8 + "Process SpawnProcess-1:\nTraceback (most recent call last):\n"
        '  File "/vllm/engine/multiprocessing/engine.py", line 351, in signal_handler\n'
        '    raise KeyboardInterrupt("MQLLMEngine terminated")\n'
        "KeyboardInterrupt: MQLLMEngine terminated\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_nccl_s_bootstrap_socket_in_the_detail_under_its_exception_is_nccl_comm() -> None:
    body = diagnose(
        "[rank9]: torch.distributed.DistBackendError: NCCL error in /root/source/pytorch/torch/"
        "csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO "
        "for details), NCCL version 2.26.6\n"
        "[rank9]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
        "failed or device error.\n"
        "[rank9]: Last error:\n"
        "[rank9]: socketPollConnect poll() returned 1, no POLLOUT events\n"
        "[rank9]: Traceback (most recent call last):\n"
        '[rank9]:   File "/VeOmni/veomni/distributed/fsdp/initialize.py", line 45, in load\n'
        "[rank9]:     dist.barrier()\n"
    )
    assert (body["crashed"], body["error_class"]) == (True, "nccl_comm")


def test_a_tensorrt_program_s_build_failure_yields_to_the_builder_s_error() -> None:
    failed = (
        "[03/16/2026-17:30:57] [TRT] [E] 10: [optimizer.cpp::computeCosts::3869] Error Code 10: "
        "Internal Error (Could not find any implementation for node {ForeignNode[/layers.7/"
        "Transpose_2]}.)"
    )
    body = diagnose(
        "[03/16/2026-17:30:57] [TRT] [V] Deleting timing cache: 174 entries, served 118 hits.\n"
        + failed
        + "\nError: Build serialized network failed.\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_a_c_assert_that_a_call_returned_something_yields_to_why_it_did_not() -> None:
    failed = (
        "[12/12/2024-10:15:17] [E] [TRT] 1: [caskUtils.cpp::trtSmToCask::147] Error Code 1: "
        "Internal Error (Unsupported SM: 0x809)"
    )
    body = diagnose(
        "Building engine, please wait for a while...\n" + failed + "\nBuild engine successfully!\n"
        "rcnn: /src/rcnn/rcnn.cpp:318: void BuildRcnnModel(unsigned int, nvinfer1::IHostMemory**"
        ", const string&, const string&): Assertion `engine != nullptr' failed.\n"
        "Aborted\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "unsupported_arch",
    )


def test_paddle_s_operator_wrapper_yields_to_the_allocator_s_message_under_it() -> None:
    failed = (
        "Out of memory error on GPU 5. Cannot allocate 93.750244MB memory on GPU 5, available "
        "memory is only 82.062500MB."
    )
    body = diagnose(
        "Traceback (most recent call last):\n"
        '  File "/paddle/nn/functional/activation.py", line 528, in relu\n'
        "    return core.ops.relu(x)\n"
        "SystemError: (Fatal) Operator relu raises an paddle::memory::allocation::BadAlloc "
        "exception.\n"
        "The exception content is\n"
        ":ResourceExhaustedError: \n"
        "\n" + failed + "\n\n"
        "Please check whether there is any other process using GPU 5.\n"
        " (at /paddle/paddle/fluid/memory/allocation/cuda_allocator.cc:69)\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")


def test_a_relayer_s_info_level_is_not_the_level_of_the_stream_it_relays() -> None:
    relay = "INFO [llamacpp-router stdout] [45979] "
    loading = relay + "0.00.116.142 I srv load_model: loading model '/models/model.gguf'\n"
    failed = (
        relay + "0.01.047.215 E ggml_backend_cuda_buffer_type_alloc_buffer: allocating "
        "36864.00 MiB on device 0: cudaMalloc failed: out of memory"
    )
    body = diagnose(
        loading + failed + "\n" + relay + "0.01.047.220 E alloc_tensor_range: failed to allocate "
        "CUDA0 buffer of size 38654705664\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (True, failed, "oom_gpu")
    healthy = diagnose(
        loading + relay + "0.00.900.000 I main: server is listening on http://127.0.0.1:3000\n"
    )
    assert (healthy["crashed"], healthy["root_cause"]) == (False, None)


def test_buildkit_s_seconds_past_a_hundred_are_a_prefix_too() -> None:
    failed = "297.9 error[E0433]: failed to resolve: could not find `cuda_backend` in `candle_core`"
    body = diagnose(
        "215.0    Compiling candle-nn v0.8.3\n"
        "297.4    Compiling vllm-rs v0.9.0 (/vllm.rs)\n" + failed + "\n"
        "297.9   --> src/models/layers/distributed.rs:7:22\n"
        "297.9    |\n"
        "297.9 note: found an item that was configured out\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_another_program_s_retries_are_no_recovery_of_a_rank_s_uncaught_error() -> None:
    failed = (
        "[rank0]: RuntimeError: Not all inputs to pattern found in match.kwargs. Perhaps one of "
        "the inputs is unused? argnames=['x', 'slice_shape'], match.kwargs={'x': squeeze}"
    )
    body = diagnose(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/torch/_inductor/pattern_matcher.py", line 1425, in check_fn\n'
        "[rank0]:     raise RuntimeError(\n"
        "[rank0]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        + failed
        + "\n\n"
        "[14:42:46] WARNING  Request aborted (attempt 1/4): Request timed out.. Retrying in 2s...\n"
        "[14:42:47] WARNING  Request aborted (attempt 1/4): Request timed out.. Retrying in 2s...\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_a_program_s_own_check_of_a_cuda_call_is_its_last_word() -> None:
    failed = (
        "tile_upload.cu:37 cudaMemcpy2D(dev, pitch, host.data(), src_pitch, w * sizeof(T), h, "
        "cudaMemcpyHostToDevice) failed: invalid pitch argument (cudaErrorInvalidPitchValue)"
    )
    body = diagnose(
        "tile T32TQM: 10980x10980\n"
        "band SCL    10980x10980 elem=1B pitch=11264\n"
        "band B04    10980x10980 elem=4B pitch=44032\n" + failed + "\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "cuda_runtime",
    )


def test_a_rank_s_logged_failure_is_not_explained_by_its_peer_s_connection_closed() -> None:
    failed = (
        "[rank1] 12/08/2026 00:38:21 ERROR epoch 2: shard /data/part-00001-epoch2.npy not found "
        "(listing has 3 files); this rank cannot continue"
    )
    body = diagnose(
        "[rank1] 12/08/2026 00:38:21 INFO epoch 1 step 40 loss 1.0496\n" + failed + "\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/srv/train.py", line 88, in <module>\n'
        "[rank0]:     work.wait()\n"
        "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:547] "
        "Connection closed by peer [127.0.0.1]:57229\n"
    )
    assert (body["crashed"], body["root_cause"]) == (True, failed)


def test_the_amdgpu_driver_s_hung_scheduler_firmware_is_a_gpu_fault() -> None:
    failed = "[37583.630475] amdgpu 0000:c5:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE"
    body = diagnose(
        failed + "\n"
        "[37583.630482] amdgpu 0000:c5:00.0: amdgpu: failed to remove hardware queue from MES, "
        "doorbell=0x1002\n"
        "[37583.630484] amdgpu 0000:c5:00.0: amdgpu: MES might be in unrecoverable state, issue a "
        "GPU reset\n"
        "[37583.630509] amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!. Source:  3\n"
        "[37587.769019] amdgpu 0000:c5:00.0: amdgpu: GPU reset succeeded, trying to resume\n"
    )
    assert (body["crashed"], body["root_cause"], body["error_class"]) == (
        True,
        failed,
        "cuda_runtime",
    )


def test_a_cuda_error_in_a_graph_call_ggml_names_is_the_graph_s_fault() -> None:
    failed = "CUDA error: invalid argument"
    body = diagnose(
        "llama_new_context_with_model: graph splits = 2\n" + failed + "\n"
        "  current device: 0, in function ggml_backend_cuda_graph_compute at "
        "ggml/src/ggml-cuda.cu:2727\n"
        "  cudaGraphKernelNodeSetParams(cuda_ctx->cuda_graph->nodes[i], "
        "&cuda_ctx->cuda_graph->params[i])\n"
        "ggml/src/ggml-cuda.cu:102: CUDA error\n"
    )
    assert (body["root_cause"], body["error_class"]) == (failed, "cuda_graph")
