"""What to try next: failures this field meets, each as a row of the classes it applies to, a
pattern over the root-cause line (and, where the line alone does not tell, one over the lines
around it) and a sentence or two of advice, with a real line it matches, a near line it must
not match, and the public thread or page the advice rests on (kept here, not shown)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Advice:
    classes: tuple[str, ...]  # the error classes (rules.ERROR_CLASSES) it applies to
    pattern: str  # over the root-cause line, or a candidate line
    advice: str
    example: str  # a real line the pattern matches
    # Where the example comes from: "corpus case N" (tests/corpus/cases/N.log), a file under
    # tests/data/, or the public thread that printed it.
    example_from: str
    counter: str  # a near line the pattern must not match
    counter_from: str  # where that line comes from, as `example_from` says it
    source: str  # the public issue thread or documentation the advice rests on
    # Over the excerpt and the frame: the setting the line must have been printed in (an
    # out-of-memory error is this row's only while CUDA graphs were being captured).
    context: str | None = None
    # A real line of the example's setting (a frame of its traceback), and where it comes
    # from: what `context` finds, or what the engine reads the example's class from.
    context_line: str = ""
    context_from: str = ""
    # The failing frame says where to look: its file and line follow the advice.
    frame: bool = False


# torch's out-of-memory error as corpus case 704 printed it: both memory rows' example.
_OUT_OF_MEMORY = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total "
    "capacity of 139.80 GiB of which 2.63 GiB is free. Including non-PyTorch memory, this "
    "process has 137.17 GiB memory in use. Of the allocated memory 136.50 GiB is allocated by "
    "PyTorch, and 5.35 MiB is reserved by PyTorch but unallocated. If reserved but unallocated "
    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-"
    "pytorch-cuda-alloc-conf)"
)

ADVICE = (
    Advice(
        ("unsupported_arch",),
        r"(?:^|\s)KeyError: '?(?:sm_?)?\d{1,3}'?$",
        "A table keyed by compute capability has no entry for this GPU's SM version: the frame "
        "names the table. A newer release of that library may list it; otherwise add the row "
        "(a patch), or turn the feature off.",
        "KeyError: 12",
        "tests/data/seed_torch_symm_mem.log (sglang's torch symmetric-memory all-reduce on SM120)",
        "[rank0]: KeyError: 'model'",
        "corpus case 801",
        "https://github.com/sgl-project/sglang/pull/24548",
        context_line='  File "/root/sglang/python/sglang/srt/distributed/device_communicators/'
        'torch_symm_mem.py", line 56, in __init__',
        context_from="tests/data/seed_torch_symm_mem.log",
        frame=True,
    ),
    Advice(
        ("unsupported_arch",),
        r"No supported CUDA architectures found for major versions",
        "The kernel's JIT (or the wheel) has no build target for this GPU: often the nvcc it "
        "found is too old for this architecture. Point CUDA_HOME at a newer toolkit or upgrade "
        "CUDA, or rebuild with this GPU in TORCH_CUDA_ARCH_LIST (FLASHINFER_CUDA_ARCH_LIST for "
        "FlashInfer).",
        "(EngineCore_DP0 pid=120) ERROR 01-28 06:36:45 [core.py:946] RuntimeError: No supported "
        "CUDA architectures found for major versions [10].",
        "a log in https://github.com/vllm-project/vllm/pull/31740",
        "RuntimeError: No CUDA GPUs are available",
        "corpus case 716",
        "https://github.com/flashinfer-ai/flashinfer/issues/2577",
    ),
    Advice(
        ("oom_gpu",),
        r"(?:CUDA|HIP) out of memory|OutOfMemoryError",
        "GPU memory ran out while CUDA graphs were captured: capture fewer batch sizes "
        "(--cuda-graph-max-bs, or vLLM's --cudagraph-capture-sizes), or leave the graphs more "
        "room by lowering --mem-fraction-static (--gpu-memory-utilization in vLLM).",
        _OUT_OF_MEMORY,
        "corpus case 704",
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
        "corpus case 725",
        "https://github.com/sgl-project/sglang/pull/10590",
        context=r"[Cc]apture cuda graph|cuda_graph_runner|capture_one_batch_size|capture_model"
        r"|Capturing (?:batches|CUDA graph)",
        context_line='  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/model_executor/'
        'cuda_graph_runner.py", line 436, in capture',
        context_from="corpus case 011",
    ),
    Advice(
        ("oom_gpu",),
        r"(?:CUDA|HIP) out of memory|OutOfMemoryError",
        "GPU memory ran out: give the server less to hold (a lower --mem-fraction-static, "
        "--gpu-memory-utilization in vLLM), a shorter context (--context-length, "
        "--max-model-len) or fewer requests at once (--max-running-requests, --max-num-seqs); "
        "or spread the model over more GPUs (--tp).",
        _OUT_OF_MEMORY,
        "corpus case 704",
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
        "corpus case 725",
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory.html",
    ),
    Advice(
        ("nccl_comm",),
        r"Watchdog caught collective operation timeout",
        "A collective waited past the watchdog's timeout: some rank stopped first (a crash, a "
        "hang, a slow host) and the others waited on it. Find that rank's own error, earlier in "
        "its log or another node's; raising the timeout only helps a rank that is merely slow.",
        "[E ProcessGroupNCCL.cpp:481] [Rank 65] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1559, OpType=_REDUCE_SCATTER_BASE, NumelIn=3121908768, "
        "NumelOut=32519883, Timeout(ms)=1800000) ran for 1800441 milliseconds before timing "
        "out.",
        "corpus case 533",
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to "
        "connect to 10.0.0.1:1234",
        "corpus case 510",
        "https://github.com/NVIDIA/nccl/issues/1111",
    ),
    Advice(
        ("cuda_graph",),
        r"operation not permitted when stream is capturing|StreamCaptureUnsupported",
        "A collective ran while a CUDA graph was being captured, and this all-reduce path "
        "cannot be captured: choose another all-reduce implementation (the engine's custom or "
        "NCCL one), or run with --disable-cuda-graph (--enforce-eager in vLLM) to confirm.",
        "ERROR 03-25 12:23:00 [engine.py:448] RuntimeError: CUDA error: operation not permitted "
        "when stream is capturing",
        "corpus case M034",
        "E       RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph "
        "capture. If you need this call to be captured, please file an issue. Current "
        "cudaStreamCaptureStatus: cudaStreamCaptureStatusActive",
        "corpus case 544",
        "https://github.com/ROCm/rccl/issues/2022",
        context=r"all_reduce|allreduce|all_gather|ProcessGroupNCCL|device_communicator|nccl",
        context_line="ERROR 03-25 12:23:00 [engine.py:448]     torch.distributed.all_reduce(out, "
        "group=self.device_group)",
        context_from="corpus case M034",
    ),
    Advice(
        ("unsupported_arch",),
        r"no kernel image is available for execution on the device",
        "The binary holds no kernel for this GPU's architecture: install a build (wheel, "
        "container) compiled for it, usually one made with a newer CUDA, or build from source "
        "with this GPU's arch listed.",
        "CUDA error: no kernel image is available for execution on the device",
        "corpus case 529",
        "CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        "corpus case 828",
        "https://github.com/ollama/ollama/issues/12316",
    ),
    Advice(
        ("import_or_version",),
        r"undefined symbol",
        "A compiled extension was built against another version of the library it loads "
        "(CUDA, torch, the engine's kernels): after an upgrade, reinstall or rebuild the "
        "extension against the versions now installed, or pin them back together.",
        "ImportError: /opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: "
        "undefined symbol: cuGreenCtxStreamCreate",
        "corpus case 023",
        "ModuleNotFoundError: No module named 'flashinfer'",
        "corpus case 717",
        "https://github.com/sgl-project/sglang/issues/8131",
    ),
    Advice(
        ("config_or_args",),
        r"[Aa]ddress already in use|\[Errno 98\]",
        "Another process holds the port: a server from an earlier attempt still running, or "
        "another service. Stop it (find it with `ss -ltnp`), or launch on a free --port.",
        "OSError: [Errno 98] Address already in use",
        "corpus case 847",
        "Jul 28 08:28:30 host-1 ollama[74021]: Error: could not create directory mkdir "
        "/var/lib/ollama: permission denied",
        "corpus case 813",
        "https://github.com/vllm-project/vllm/issues/11617",
    ),
    Advice(
        ("model_loading",),
        r"gated repo|GatedRepoError|Access to model \S+ is restricted",
        "The model is gated on Hugging Face: accept its licence on the model page with the "
        "account whose token the server uses, and give it that token (HF_TOKEN, or "
        "`huggingface-cli login`) on the host that launches it.",
        "OSError: You are trying to access a gated repo.",
        "a log in https://github.com/sgl-project/sglang/pull/14644",
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "corpus case 559",
        "https://github.com/city96/ComfyUI_ExtraModels/issues/99",
    ),
    Advice(
        # The engine reads the bare ValueError as configuration.
        ("unsupported_arch", "config_or_args"),
        r"fp8e4nv (?:data type )?(?:is )?not supported",
        "Triton compiles fp8e4nv (FP8 E4M3) only for compute capability 8.9 and up: on an older "
        "GPU use an FP16/BF16 or another quantization of the model, or a kernel backend that "
        "does not cast to FP8.",
        'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes '
        "are ('fp8e4b15', 'fp8e5')\")",
        "https://github.com/WeChatCV/Stand-In_Preprocessor_ComfyUI/issues/10",
        "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.redux.sync.fmax",
        "corpus case 803",
        "https://github.com/triton-lang/triton/issues/4319",
    ),
    Advice(
        ("nccl_comm",),
        r"unhandled cuda error",
        "NCCL hit a CUDA error it does not name: run again with NCCL_DEBUG=INFO to see the "
        "failing call, and check that the driver, the CUDA runtime and NCCL's version agree "
        "(and that peer-to-peer access works between these GPUs).",
        "Oct 16 02:07:00   what():  NCCL error in: /var/lib/jenkins/workspace/torch/lib/c10d/"
        "../c10d/NCCLUtils.hpp:29, unhandled cuda error",
        "corpus case 006",
        "host-1:35917:35994 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion "
        "with error 12, opcode 1, len 0, vendor err 129",
        "corpus case 507",
        "https://github.com/pytorch/pytorch/issues/12744",
    ),
    Advice(
        ("import_or_version",),
        r"lib\w+\.so\.\d+: cannot open shared object file",
        "A library built for another CUDA major version (the number after .so) is not on this "
        "host: install the runtime it names, or the package built for the CUDA you have.",
        "(EngineCore pid=169) ImportError: libcudart.so.13: cannot open shared object file: No "
        "such file or directory",
        "corpus case 557",
        "ImportError: /opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: "
        "undefined symbol: cuGreenCtxStreamCreate",
        "corpus case 023",
        "https://github.com/kaito-project/kaito/issues/2086",
    ),
    Advice(
        ("import_or_version",),
        r"PTX was compiled with an unsupported toolchain",
        "The code was compiled by a newer CUDA toolkit than the driver supports: upgrade the "
        "driver, or use a build made with a toolkit no newer than the driver's CUDA version.",
        "CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        "corpus case 828",
        "CUDA error: no kernel image is available for execution on the device",
        "corpus case 529",
        "https://github.com/ggml-org/llama.cpp/issues/5845",
    ),
    Advice(
        ("cuda_runtime",),
        r"illegal memory access",
        "A kernel read or wrote out of bounds, and the error may surface in a later call: run "
        "again with CUDA_LAUNCH_BLOCKING=1 to see the kernel that did it, and try another "
        "attention or GEMM backend; sometimes it is memory running out, reported this way.",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "corpus case M024",
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
        "corpus case 725",
        "https://docs.sglang.io/references/faq.html",
    ),
    Advice(
        ("config_or_args",),
        r"Duplicate GPU detected",
        "Two ranks were given the same GPU: check CUDA_VISIBLE_DEVICES and how the launcher maps "
        "local ranks to devices, so that each rank has its own.",
        "[2026-12-01 11:32:38] vm:773:773 [0] init.cc:904 NCCL WARN Duplicate GPU detected : "
        "rank 1 and rank 0 both on CUDA device 60",
        "corpus case 709",
        "RuntimeError: CUDA error: invalid device ordinal",
        "corpus case 541",
        "https://github.com/NVIDIA/nccl/issues/1241",
    ),
)
