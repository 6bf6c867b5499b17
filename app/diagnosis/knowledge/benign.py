"""Benign lines: what looks alarming to grep and means nothing, as servers print it while
healthy (configuration dumps, access logs, warnings) or as advice around a real error."""

from dataclasses import dataclass

from app.diagnosis.knowledge.fact import Fact


@dataclass(frozen=True)
class Benign(Fact):
    # Noise even where the line has an exception's shape or a logger's ERROR severity (a
    # configuration dump holding "crash_dump_folder=None", an access log's "500"); otherwise
    # an exception line that the pattern happens to match stays a failure.
    hard: bool = False


BENIGN = (
    Benign(
        # (three or more severity names in a row, ordered: a help text's or a doc's list)
        r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL)(?:\s*[>,<|/]\s*"
        r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL)\b){2,}",
        ("python",),
        "                      least log are: DEBUG > INFO > WARNING > ERROR > CRITICAL",
        "a command's help text listing the levels of its --log-level option (click's, "
        "Xinference's 'Options listed from most log to least log are: ...'), printed when its "
        "usage is shown; observed in corpus case AX003",
        hard=True,
    ),
    Benign(
        r"^UsageError: (?:Line|Cell) magic function `%{1,2}[\w.-]+` not found\.?$",
        ("ipython", "jupyter"),
        "UsageError: Line magic function `%tensorboard` not found.",
        "IPython refusing a cell's magic its kernel has no extension for: the cell stops, the "
        "kernel runs the next ones; observed in corpus case BB004",
        hard=True,
    ),
    Benign(
        r"\bSimplifiedTraceback: For simplicity, JAX has removed its internal frames\b",
        ("jax",),
        "jax.errors.SimplifiedTraceback: For simplicity, JAX has removed its internal frames "
        "from the traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to "
        "include these.",
        "JAX's traceback filter (jax/_src/traceback_util.py) chaining a notice to the exception "
        "it filtered: named like an exception, it only says frames were hidden; observed in "
        "corpus case X073",
        hard=True,
    ),
    Benign(
        r"\bDumping (?:input data|scheduler (?:output|stats))\b",
        ("vllm",),
        "ERROR 05-28 19:38:44 [dump_input.py:68] Dumping input data",
        "vLLM V1's engine core (vllm/v1/engine/dump_input.py) dumping its scheduler's state at "
        "ERROR when a step failed: the failure is the traceback after it",
        hard=True,
    ),
    Benign(
        r"\bPMIX ERROR: (?:UNREACHABLE|ERROR) in file\b",
        ("openmpi",),
        "[host-1:101829] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 2198",
        "PMIx under Open MPI when a peer it polls has gone (a container's ranks exiting): "
        "printed at every teardown, a failure's or not",
        hard=True,
    ),
    Benign(
        r"blaslt error: (?:Cannot read|Could not load) .*TensileLibrary_lazy_\w+\.dat\b"
        r"|\bhipBLASLt error: Heuristic Fetch Failed\b",
        ("rocm", "ollama", "llama.cpp"),
        "Jul 28 15:11:48 host-1 ollama[307422]: rocblaslt error: Could not load "
        "/usr/local/lib/ollama/rocm/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat",
        "hipBLASLt without tuned kernels for this GPU: its GEMMs go to rocBLAS instead and the "
        "program runs on; observed in corpus case AN406",
    ),
    Benign(
        r"\[E:onnxruntime:[^\]]*\bTryGetProviderInfo_\w+\]",
        ("onnxruntime",),
        "2024-10-07 08:30:49.765992660 [E:onnxruntime:Default, provider_bridge_ort.cc:1480 "
        "TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_"
        "ort.cc:1193 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
        "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so "
        "with error: libcufft.so.10: cannot open shared object file: No such file or directory",
        "ONNX Runtime unable to load an execution provider's library (CUDA's, TensorRT's): the "
        "session falls back to the next provider, the CPU at last, and runs on; observed in "
        "corpus case BE654",
        hard=True,
    ),
    Benign(
        # (its "slurmstepd: error: " may be read as every line's prefix)
        r"\b(?:common_file_write_\w+: write pid \d+ to \S*cgroup\.procs"
        r"|Unable to move pid \d+ to init root cgroup|error unlocking cgroup '"
        r"|Failed to destroy CXI Service ID \d+)",
        ("slurm",),
        "slurmstepd: error: Unable to move pid 2756385 to init root cgroup /sys/fs/cgroup",
        "Slurm's step daemon tidying up after the step's tasks exited (moving their pids out "
        "of the step's cgroup, releasing a network service): its own housekeeping, said at "
        "error severity whether the job succeeded or not; observed in corpus case BE302",
        hard=True,
    ),
    Benign(
        # (pyxis relays enroot's whole log at error severity: its notes and enroot's own
        # [INFO] records among it are none)
        r"\bpyxis: (?:printing (?:contents of )?(?:enroot )?log file\b|if the image has an "
        r"unusual entrypoint\b)|\bpyxis:\s+\[INFO\] ",
        ("pyxis", "slurm"),
        "slurmstepd: error: pyxis: printing contents of log file ...",
        "NVIDIA's pyxis (Slurm's container plugin) announcing the enroot log it relays, and "
        "enroot's information records in it, all under slurmstepd's 'error:'; observed in "
        "corpus case BL308",
        hard=True,
    ),
    Benign(
        # (a task's working directory missing on a node: Slurm starts it in /tmp and goes on)
        r"\bcouldn't chdir to `[^']*': .*: going to /tmp instead\b",
        ("slurm",),
        " 0: slurmstepd: error: couldn't chdir to `/workspace': No such file or directory: "
        "going to /tmp instead",
        "Slurm's step daemon (src/slurmd/slurmstepd/mgr.c) where the job's working directory "
        "does not exist on the node: it says so at error severity and starts the task in /tmp; "
        "observed in corpus case BL508",
        hard=True,
    ),
    Benign(
        r"\bnon-?fatal (?:error|exception|fault)\b",
        ("nvidia-fabricmanager", "any"),
        "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on "
        "fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61",
        "an error a program logs at ERROR while saying itself that it is not fatal (NVIDIA's "
        "Fabric Manager on an NVSwitch error it corrected): the program goes on; observed in "
        "corpus case BJ202",
    ),
    Benign(
        r"\bld: cannot find -l(?:cufile|aio)\b",
        ("deepspeed",),
        "/usr/bin/ld: cannot find -lcufile",
        "DeepSpeed's op builders (op_builder/builder.py) linking a test program to see whether "
        "GPUDirect Storage or libaio is there: the link fails where they are not, and the job "
        "goes on without those ops; observed in corpus case AO002",
    ),
    Benign(
        r"^wandb: ERROR The nbformat package was not found\b",
        ("wandb",),
        "wandb: ERROR The nbformat package was not found. It is required to save notebook history.",
        "Weights & Biases in a notebook without nbformat: it cannot save the notebook's history "
        "and the run goes on; observed in corpus case AS208",
        hard=True,
    ),
    Benign(
        r"\blibbitsandbytes_cpu\.so: undefined symbol: cadam32bit_grad_fp32\b",
        ("bitsandbytes",),
        "/content/text-generation-webui/installer_files/env/lib/python3.11/site-packages/"
        "bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: cadam32bit_grad_fp32",
        "bitsandbytes before 0.43 importing its CPU build where no GPU was found: it prints the "
        "missing 8-bit optimizer symbol and goes on; observed in corpus case AS107",
        hard=True,
    ),
    Benign(
        r"\bCannot use FA version \d+ is not supported due to\b",
        ("vllm",),
        "ERROR 10-27 15:32:02 [fa_utils.py:57] Cannot use FA version 2 is not supported due to "
        "FA2 is only supported on devices with compute capability >= 8",
        "vLLM's FlashAttention version check (vllm/attention/utils/fa_utils.py), logged at ERROR "
        "before it falls back to another attention backend; observed in corpus case AS009",
        hard=True,
    ),
    Benign(
        r"\bfailed to allocate graph, reserving\b",
        ("llama.cpp",),
        "ggml_backend_sched_alloc_splits: failed to allocate graph, reserving "
        "(backend_ids_changed = 1)",
        "ggml's scheduler (ggml/src/ggml-backend.cpp) reserving its graph again when the backend "
        "assignment changed: routine, logged at every such change",
        hard=True,
    ),
    Benign(
        r"\bno error file defined for parent, to copy child error file\b",
        ("torch",),
        "E0430 00:03:36.594000 427421 site-packages/torch/distributed/elastic/multiprocessing/"
        "errors/error_handler.py:145] no error file defined for parent, to copy child error "
        "file (/tmp/torchelastic_peqnq9j4/none_0nidde8u/attempt_0/1/error.json)",
        "torchelastic's error handler (torch/distributed/elastic/multiprocessing/errors/"
        "error_handler.py), logged at ERROR on every child failure it copies: bookkeeping, the "
        "child's exception is in the summary below; observed in corpus case R122",
        hard=True,
    ),
    Benign(
        r"^Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace\b",
        ("torch",),
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if "
        "you're reporting a bug to PyTorch). For even more developer context, set "
        'TORCH_LOGS="+dynamo"',
        "torch._dynamo's advice under a compile error (torch/_dynamo/exc.py), printed with the "
        "error's own severity",
        hard=True,
    ),
    # Configuration dumps, access logs, warnings and benchmark summaries.
    Benign(
        r"server_args=",
        ("sglang",),
        "[2025-03-01 10:00:00] server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct'"
        ", tp_size=1, port=30000, mem_fraction_static=0.88, crash_dump_folder=None, "
        "watchdog_timeout=300)",
        "sglang: its arguments, logged once at launch ('server_args=ServerArgs(...)')",
        hard=True,
    ),
    Benign(
        r"ServerArgs\(\w+=",  # (a field: "ServerArgs() got ..." is an exception's)
        ("sglang",),
        "ServerArgs(model_path='/models/Qwen2.5-7B-Instruct', tp_size=2, "
        "disable_cuda_graph=False, watchdog_timeout=300)",
        "sglang: the repr of its ServerArgs dataclass (python/sglang/srt/server_args.py), "
        "wherever it is printed",
        hard=True,
    ),
    Benign(
        r"EngineArgs\(\w+=",
        ("vllm",),
        "EngineArgs(model='facebook/opt-125m', served_model_name=None, tokenizer='facebook/"
        "opt-125m', enforce_eager=False, disable_log_stats=False)",
        "vLLM: the repr of its EngineArgs dataclass (vllm/engine/arg_utils.py), wherever it is "
        "printed",
        hard=True,
    ),
    Benign(
        r"Namespace\(\w+=",
        ("vllm", "python"),
        "INFO 04-02 23:55:08 api_server.py:149] args: Namespace(host=None, port=8000, "
        "uvicorn_log_level='info', allow_credentials=True, disable_log_requests=False)",
        "Python's argparse Namespace, as older vLLM OpenAI servers logged their arguments "
        "('args: Namespace(...)') and benchmark scripts print theirs",
        hard=True,
    ),
    Benign(
        # the whole line one setting, so a real record that advises a level is not one
        r"^\s*[\"']?\w*log_?level[\"']?\s*[:=]\s*[\"']?(?:ERROR|[Ee]rror|CRITICAL|[Cc]ritical|FATAL|[Ff]atal)[\"']?,?$",
        ("lmdeploy", "python"),
        '    "lmdeploy_log_level": "ERROR",',
        "a configuration dump's line setting a logger's level (a JSON or YAML config printed at "
        "start); observed in corpus case AH153",
        hard=True,
    ),
    Benign(
        r"non-default args",
        ("vllm",),
        "INFO 06-23 10:49:59 [cli_args.py:309] non-default args: {'model': "
        "'Qwen/Qwen2.5-0.5B-Instruct'}",
        "vLLM: its OpenAI server's arguments, logged once at launch ('non-default args: {...}')",
        hard=True,
    ),
    Benign(
        r"\bHTTP/\d(?:\.\d)?\"? \d{3}\b",
        ("uvicorn", "vllm", "sglang"),
        '[2024-12-13 01:45:26] INFO:     127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found',
        "Uvicorn's access log: a client's request and its status, not the server's health; "
        "observed in corpus case 002 (sglang)",
        hard=True,
    ),
    Benign(
        r"(?:Failed|Successful) requests:",
        ("vllm", "sglang", "jetstream"),
        "Successful requests: 1780",
        "the serving benchmarks' summary (vLLM's benchmark_serving, sglang's bench_serving, "
        "JetStream's); observed in corpus case 831",
        hard=True,
    ),
    Benign(
        # (the warning's own header may come after it: a viewer that shows the newest first)
        r"^\s*(?:warnings\.)?warn\(",
        ("python",),
        '  warn(f"Failed to load image Python extension: {e}")',
        "the source line Python's warnings module prints under its 'file:line: Category: "
        "message' header: the call that warned, not a failure; observed in corpus case BL202",
        hard=True,
    ),
    Benign(
        # (the trace's level 1 is its error level: hard; its prefix is peeled before this)
        r"(?:^|\] )Cannot find the function: \w+(?: for module: 0x[0-9a-f]+)?\s*$",
        ("rocm", "hip"),
        ":1:hip_code_object.cpp      :624 : 305270480327 us: [pid:312732 tid:0x15533460c740] "
        "Cannot find the function: Cijk_Ailk_Bljk_SB_MT128x96x16_MI32x32x2x1",
        "the HIP runtime's trace (AMD_LOG_LEVEL) while rocBLAS looks a kernel up in each code "
        "object it loaded: a miss in one, then found in the next ('hipModuleGetFunction: "
        "Returned hipSuccess'); observed in corpus cases BW306 and BW307",
        hard=True,
    ),
    Benign(
        r"\b(?:UserWarning|FutureWarning|DeprecationWarning|RuntimeWarning)\b",
        ("python",),
        "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py:126: UserWarning: "
        "The CUDA Graph is empty. This usually means that the graph was attempted to be "
        "captured on wrong device or stream. (Triggered internally at "
        "/pytorch/aten/src/ATen/cuda/CUDAGraph.cpp:147.)",
        "Python's warnings module ('file:line: Category: message'); observed in corpus case "
        "704 (PyTorch)",
        hard=True,
    ),
    Benign(
        r"No available shared memory broadcast block",
        ("vllm",),
        "(EngineCore pid=127) INFO 04-15 13:42:25 [shm_broadcast.py:681] No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when some processes "
        "are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
        "quantization).",
        "vLLM: vllm/distributed/device_communicators/shm_broadcast.py while a worker is slow; "
        "observed in corpus case M016",
        hard=True,
    ),
    Benign(
        r"NCCL INFO",
        ("nccl",),
        "host-1:73025:73025 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open "
        "shared object file: No such file or directory No plugin found (libnccl-net.so), using "
        "internal implementation",
        "NCCL's INFO log (NCCL_DEBUG=INFO), whose lines trace its calls even on success; "
        "observed in corpus case 848",
        hard=True,
    ),
    Benign(
        r"\bNCCL WARN NET/OFI (?:Failed to initialize \w+ protocol|aws-ofi-nccl initialization "
        r"failed|Initializing plugin failed)",
        ("nccl", "aws-ofi-nccl"),
        "[2026-03-13 18:29:09] host-1:82816:82816 [0] int nccl_net_ofi_create_plugin("
        "nccl_net_ofi_plugin_t**):227 NCCL WARN NET/OFI Failed to initialize rdma protocol",
        "AWS's NCCL network plugin (aws-ofi-nccl, nccl_net_ofi_create_plugin) on a host with no "
        "EFA device: NCCL then drops the plugin and uses its own sockets or InfiniBand "
        "('Assigned NET plugin Socket'); observed in corpus case AI126",
        hard=True,
    ),
    Benign(
        r"\bNCCL WARN NUMA auto balancing enabled which can lead to variability\b",
        ("rccl",),
        "host-1:5646:5646 [0] /data/jenkins_workspace/workspace/rccl_release/build/hipify/src/"
        "init.cc:115 NCCL WARN NUMA auto balancing enabled which can lead to variability in the "
        'RCCL performance! Disable by "sudo sysctl kernel.numa_balancing=0"',
        "RCCL's start-up advice (src/init.cc) on a host with NUMA balancing on: a performance "
        "hint at WARN level, printed by every rank of a healthy job; observed in corpus case "
        "AN258",
        hard=True,
    ),
    Benign(
        r'\bNCCL WARN Missing "(?:amd_)?iommu=\w+" from kernel command line\b',
        ("rccl",),
        "host-1:5646:5646 [0] /data/jenkins_workspace/workspace/rccl_release/build/hipify/src/"
        'init.cc:136 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to '
        "system instablity or hang!",
        "RCCL's start-up advice (src/init.cc) on a host booted without the IOMMU settings AMD "
        "recommends: printed by every rank of healthy jobs too; observed in corpus cases AN258 "
        "and AP206",
        hard=True,
    ),
    Benign(
        r"\bras/client_support\.cc:\d+ NCCL WARN Call to bind failed: Address already in use\b",
        ("nccl",),
        "[2026-09-09 11:29:56] host-1:321049:321049 [0] ras/client_support.cc:181 NCCL WARN Call "
        "to bind failed: Address already in use",
        "NCCL's RAS service (src/ras/client_support.cc) finding its port taken by another "
        "process's on the same host: one RAS listener serves them all, the job runs on; observed "
        "in corpus cases H071 and AP608",
        hard=True,
    ),
    Benign(
        r"^Failed to load \S*/torchao/_C[\w.]*\.so\b",
        ("torchao",),
        "Failed to load /usr/local/lib/python3.12/dist-packages/torchao/_C_cutlass_100a.abi3.so: "
        "Could not load this library: /us",
        "torchao's import (torchao/__init__.py) trying its kernels built for another GPU "
        "architecture or torch: it warns and goes on without them; observed in corpus case AP502",
        hard=True,
    ),
    Benign(
        r"^decode: failed to find a memory slot for batch of size \d+$",
        ("llama.cpp",),
        "decode: failed to find a memory slot for batch of size 1024",
        "llama.cpp's context (src/llama-context.cpp decode) with no room for a whole batch: the "
        "server retries with half the batch ('retrying with smaller batch size'); observed in "
        "corpus case AP015",
    ),
    Benign(
        r"^ERROR: This container was built for NVIDIA Driver Release",
        ("ngc",),
        "ERROR: This container was built for NVIDIA Driver Release 595.58 or later, but",
        "NVIDIA's NGC containers: the entrypoint's banner on an older driver, before the "
        "command runs (which fails on its own words if the driver is too old for it); "
        "observed in corpus case H041",
    ),
    Benign(
        r"Unable to register (?:cuDNN|cuFFT|cuBLAS) factory: Attempting to register factory",
        ("tensorflow", "jax"),
        "2025-08-21 01:35:53.031618: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:"
        "9261] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN "
        "when one has already been registered",
        "XLA's stream executor when TensorFlow and JAX (or two copies of one) both load their CUDA "
        "plugins: logged at E at every start, harmless",
        hard=True,
    ),
    Benign(
        r"^AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'$",
        ("tensorflow", "protobuf"),
        "AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'",
        "protobuf 5's C extension (upb) printing, once per message type, an error it ignores "
        "while TensorFlow's generated code registers its types at import; the program goes on; "
        "observed in corpus case K095",
        hard=True,
    ),
    Benign(
        r"\bggml_cuda_host_malloc: failed to allocate [\d.]+ MiB of pinned memory\b",
        ("llama.cpp", "ollama", "koboldcpp"),
        "ggml_cuda_host_malloc: failed to allocate 16408.00 MiB of pinned memory: out of memory",
        "llama.cpp's CUDA backend (ggml/src/ggml-cuda/ggml-cuda.cu): page-locked host memory "
        "refused, after which the buffer is allocated as ordinary host memory and loading goes "
        "on; observed in corpus case K058",
    ),
    Benign(
        r"\bfrom LD_PRELOAD cannot be preloaded\b.*: ignored\.?$",
        ("glibc",),
        "ERROR: ld.so: object '../libtcmalloc.so.4.5.3' from LD_PRELOAD cannot be preloaded "
        "(cannot open shared object file): ignored.",
        "glibc's dynamic loader on an LD_PRELOAD entry it cannot open: it says itself that it "
        "ignored it and the program runs; observed in corpus case N142",
        hard=True,
    ),
    Benign(
        r"\bwarning: failed to mlock \d+-byte buffer\b",
        ("llama.cpp", "lmstudio", "ollama"),
        " warning: failed to mlock 1555828736-byte buffer (after previously locking 0 bytes): "
        "Cannot allocate memory",
        "llama.cpp's loader (src/llama-mmap.cpp) when a locked-memory limit refuses --mlock: "
        "it warns and loads the model unlocked; observed in corpus case P092",
    ),
    # Advice printed around a real error, which is never the error itself.
    Benign(
        r"(?:^|\] )This (?:usually|typically|often|probably) (?:means|indicates)\b[^.]*:\s*$",
        ("lemonade", "any"),
        "[ERROR] This usually means:",
        "a program's lead-in to its list of likely reasons, under the error it explains "
        "(Lemonade's router after its llama-server child died); observed in corpus case AZ305",
    ),
    Benign(
        r"^If you (?:get|see|encounter|run into|are seeing|hit) ",
        ("bitsandbytes", "any"),
        "If you get `CUDA error: invalid device function` errors, the above might be the cause "
        "and the solution is to make sure only one ['libcudart.so', 'libcudart.so.11.0', "
        "'libcudart.so.12.0'] in the paths that we search based on your env.",
        "advice for an error the program has not met ('If you get ... errors, ...'): "
        "bitsandbytes' CUDA setup (cuda_setup/main.py) on finding several CUDA runtimes; "
        "observed in corpus case AZ403",
    ),
    Benign(
        r"CUDA kernel errors might be asynchronously reported",
        ("pytorch",),
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.",
        "PyTorch: the advice after every CUDA error it raises; observed in corpus case 011",
    ),
    Benign(
        r"CUDA_LAUNCH_BLOCKING",
        ("pytorch",),
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "PyTorch: the advice after every CUDA error it raises; observed in corpus case 011",
    ),
    Benign(
        r"TORCH_USE_CUDA_DSA",
        ("pytorch",),
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "PyTorch: the advice after every CUDA error it raises; observed in corpus case 011",
    ),
    Benign(
        r"^\(?run with NCCL_DEBUG",
        ("nccl",),
        "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
        "NCCL: the advice in its error strings (ncclGetErrorString: 'unhandled cuda error (run "
        "with NCCL_DEBUG=INFO for details)'), at a line's start where the error was wrapped",
    ),
    Benign(
        # (not a relayer's, before the stream it relays: "INFO [llamacpp-router stdout] ...")
        r"^(?:WARNING|WARN|INFO|DEBUG)\b(?!\s*\[[^\]]*\b(?:stdout|stderr)\])",
        ("uvicorn", "python"),
        "INFO (uvicorn.error):  Started server process [1]",
        "a logger's own severity first, as Uvicorn's and logging's default formats put it; "
        "observed in corpus case 539",
    ),
    Benign(
        r"might cause accuracy degradation",
        ("sglang",),
        "[2026-04-12 12:43:59] WARNING model_config.py:856: DeepGemm is enabled but the "
        "scale_fmt of checkpoint is not ue8m0. This might cause accuracy degradation on "
        "Blackwell.",
        "sglang: python/sglang/srt/configs/model_config.py warns of a checkpoint's scale format "
        "on Blackwell",
    ),
    Benign(
        r"This might",
        ("sglang",),
        "This might cause accuracy degradation on Blackwell.",
        "sglang: the same warning as model_config.py prints it, its second sentence on a line "
        "of its own where a viewer wrapped it",
    ),
    Benign(
        r"Possibly you have",
        ("vllm",),
        "ERROR 08-31 15:52:59 _custom_ops.py:37] Possibly you have built or installed an "
        "obsolete version of vllm.",
        "vLLM: vllm/_custom_ops.py after its kernels failed to import; observed in corpus case "
        "M002",
    ),
    Benign(
        # (not NCCL's own name for ncclInternalError, "internal error - please report this
        # issue to the NCCL developers", quoted in its failures)
        r"please (?:try|consider|check|report|file)(?! this issue to the NCCL developers)",
        ("pytorch",),
        "If you need this call to be captured, please file an issue.",
        "PyTorch: the advice after an operation that CUDA graph capture does not allow "
        "(CUDAGeneratorImpl); observed in corpus case 543",
    ),
    Benign(
        r"Please try",
        ("vllm",),
        "ERROR 08-31 15:52:59 _custom_ops.py:37] Please try a clean build and install of vllm,"
        "or remove old built files such as vllm/*cpython*.so and build/ .",
        "vLLM: vllm/_custom_ops.py after its kernels failed to import; observed in corpus case "
        "M002",
    ),
    Benign(
        r"^For debugging",
        ("pytorch",),
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
        "PyTorch on ROCm: the advice after every HIP error it raises; observed in corpus case 805",
    ),
    Benign(
        r"^Compile with",
        ("pytorch",),
        "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
        "PyTorch on ROCm: the advice after every HIP error it raises; observed in corpus case 805",
    ),
    Benign(
        r"\bdebug\b.*\berror\b",
        ("litellm",),
        "LiteLLM.Info: If you need to debug this error, use `litellm.set_verbose=True'.",
        "LiteLLM, the proxy in front of many servers: its advice after a failed call",
    ),
    # Counters of errors that happen to be zero, or are just a figure.
    Benign(
        r"error_?(?:rate|count|s)=\S|errors?=0\b",
        ("any",),
        "2026-03-01 10:00:05 bench: requests=200 ok=200 errors=0 p50_ms=41.2",
        "any key=value summary that counts errors (a benchmark client's, a metrics logger's)",
    ),
    Benign(
        r"errors?: 0\b",
        ("any",),
        "benchmark summary: requests: 500, errors: 0",
        "any summary that counts errors",
    ),
    Benign(
        r"\bwarn(?:ing)?s?\b.*\bdeprecat",
        ("nvcc",),
        "nvcc warning : The 'compute_35', 'compute_37', 'sm_35', and 'sm_37' architectures are "
        "deprecated, and may be removed in a future release (Use -Wno-deprecated-gpu-targets to "
        "suppress warning).",
        "CUDA 11's nvcc, warning of architectures it will drop",
    ),
    Benign(
        r"\bNon-NVIDIA users ignore this\b",
        ("mlperf",),
        "    FileNotFoundError: Cannot find perf logs for Orin_TRT/gptj-99.9/SingleStream at "
        "build/artifacts/closed/NVIDIA/results/Orin_TRT/gptj-99.9/SingleStream/performance/run_1. "
        "Non-NVIDIA users ignore this. NVIDIA users run `make pull_artifacts_repo`.",
        "NVIDIA's MLPerf inference harness (closed/NVIDIA, its Extra Perf Stats step after a "
        "finished run) printing the exception it caught about artifacts only NVIDIA has; "
        "observed in corpus case AD092",
        hard=True,
    ),
    Benign(
        r"\bis part of \w+, but not documented\. Make sure to add it to the docstring\b",
        ("transformers",),
        "(EngineCore pid=367) [ERROR] `min_frames` is part of Qwen3VLVideoProcessorInitKwargs, but "
        "not documented. Make sure to add it to the docstring of the function in /usr/local/lib/"
        "python3.12/dist-packages/transformers/models/qwen3_vl/video_processing_qwen3_vl.py.",
        "Hugging Face Transformers' docstring check on a processor's keyword arguments, logged at "
        "ERROR as a model's processor loads: a note to its developers, the load goes on; observed "
        "in corpus case AF101",
        hard=True,
    ),
    Benign(
        r"\bpip's dependency resolver does not currently take into account all the packages\b",
        ("pip",),
        "ERROR: pip's dependency resolver does not currently take into account all the packages "
        "that are installed. This behaviour is the source of the following dependency conflicts.",
        "pip's resolver listing conflicts with packages already installed, at ERROR, before it "
        "goes on to 'Successfully installed ...': the install succeeded; observed in corpus "
        "cases AG158 and AG186",
        hard=True,
    ),
    Benign(
        r"\bConstant folding an instruction is taking > \S+:?$|^The operation took \d",
        ("jax", "xla"),
        "2024-12-31 17:12:54.316188: E external/xla/xla/service/slow_operation_alarm.cc:73] "
        "Constant folding an instruction is taking > 1s:",
        "XLA's slow-operation alarm (xla/service/slow_operation_alarm.cc) logging at ERROR that "
        "a compile step is slow, then how long it took: 'This isn't necessarily a bug', the "
        "compile goes on; observed in corpus cases AE099 and AG104",
        hard=True,
    ),
)
