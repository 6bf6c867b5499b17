"""Server logs for the demo, written as sglang writes them (start-up, benchmarks, crashes).

The demo writes these into files line by line; the tailer and the diagnosis engine have
to find everything in them by themselves.
"""

import random

MODEL = "/shared/kimi-k2.5-int4"


def _stamp(second: int, rank: int | None = None) -> str:
    minute, sec = divmod(second % 3600, 60)
    tp = f" TP{rank}" if rank is not None else ""
    return f"[2026-02-27 13:{minute:02d}:{sec:02d}{tp}]"


def server_args(flags: dict[str, object]) -> str:
    args = {
        "model_path": MODEL, "tokenizer_path": MODEL, "tokenizer_mode": "auto", "load_format": "auto",
        "trust_remote_code": True, "context_length": None, "host": "0.0.0.0", "port": 30000,
        "skip_server_warmup": False, "dtype": "auto", "kv_cache_dtype": "auto",
        "mem_fraction_static": 0.85, "chunked_prefill_size": 8192, "cuda_graph_max_bs": 80,
        "tp_size": 8, "watchdog_timeout": 300, "crash_dump_folder": None,
        "disable_custom_all_reduce": False, "enable_torch_symm_mem": False,
        "enable_flashinfer_allreduce_fusion": False, "disable_cuda_graph": False,
        "speculative_algorithm": None, "attention_backend": "flashinfer",
        "error_on_warnings": False, **flags,
    }  # fmt: skip
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


# The stack before and after the seeds' pivot, as each run's script prints it first
# (`python -m sglang.check_env`): the CUDA 13 upgrade's versions are the seeds' own.
STACKS = {
    "cuda12.8": {"nvcc": "12.8, V12.8.93", "driver": "575.57.08", "torch": "2.10.0+cu128",
                 "sglang": "0.5.6", "sgl_kernel": "0.3.16", "flashinfer_python": "0.3.1"},
    "cuda13": {"nvcc": "13.0, V13.0.48", "driver": "580.95.05", "torch": "2.9.1+cu130",
               "sglang": "0.5.9", "sgl_kernel": "0.3.21", "flashinfer_python": "0.6.4"},
}  # fmt: skip


def check_env(stack: str) -> list[str]:
    versions = STACKS[stack]
    return [
        "Python: 3.12.3 (main, Nov  6 2025, 13:44:16) [GCC 13.3.0]",
        "CUDA available: True",
        "GPU 0,1,2,3,4,5,6,7: NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "GPU 0,1,2,3,4,5,6,7 Compute Capability: 12.0",
        "CUDA_HOME: /usr/local/cuda",
        f"NVCC: Cuda compilation tools, release {versions['nvcc']}",
        f"CUDA Driver Version: {versions['driver']}",
        f"PyTorch: {versions['torch']}",
        f"sglang: {versions['sglang']}",
        f"sgl_kernel: {versions['sgl_kernel']}",
        f"flashinfer_python: {versions['flashinfer_python']}",
        "triton: 3.5.0",
        "transformers: 4.57.1",
    ]


def startup(flags: dict[str, object], *, ready: bool = True, stack: str = "cuda12.8") -> list[str]:
    lines = [
        *check_env(stack),
        f"{_stamp(1)} WARNING model_config.py:955: DeepGemm is enabled but the scale_fmt of "
        "checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell.",
        f"{_stamp(2)} {server_args(flags)}",
        f"{_stamp(3)} Using default HuggingFace chat template with detected content format: string",
    ]
    lines += [f"{_stamp(8, tp)} Init torch distributed begin." for tp in range(8)]
    lines += [f"{_stamp(10, tp)} Init torch distributed ends. mem usage=1.02 GB" for tp in range(8)]
    lines += [
        f"{_stamp(11, 0)} Load weight begin. avail mem=93.41 GB",
        f"{_stamp(11, 0)} Loading safetensors checkpoint shards:  50% Completed | 32/64",
        f"{_stamp(11, 0)} Loading safetensors checkpoint shards: 100% Completed | 64/64",
        f"{_stamp(95, 0)} Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=31.87 GB, mem usage=61.54 GB.",
        f"{_stamp(96, 0)} Memory pool end. avail mem=9.12 GB",
    ]
    if ready:
        lines += [
            f"{_stamp(97, 0)} Capture cuda graph begin. This can take up to several minutes.",
            f"{_stamp(121, 0)} Capture cuda graph end. Time elapsed: 24.02 s. mem usage=1.39 GB.",
            f"{_stamp(122, 0)} max_total_num_tokens=412312, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=1024, context_len=262144",
            f"{_stamp(123)} INFO:     Started server process [2061]",
            f"{_stamp(123)} INFO:     Waiting for application startup.",
            f"{_stamp(123)} INFO:     Application startup complete.",
            f"{_stamp(123)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            f'{_stamp(124)} INFO:     127.0.0.1:40220 - "GET /get_model_info HTTP/1.1" 200 OK',
            f"{_stamp(130)} The server is fired up and ready to roll!",
        ]
    return lines


def benchmark(run: int, throughput: float, rng: random.Random) -> list[str]:
    """Decode-batch lines while the benchmark runs, then bench_serving's summary."""
    lines = []
    for step in range(12):
        gen = throughput * rng.uniform(0.9, 1.1)
        lines.append(
            f"{_stamp(200 + run * 60 + step, 0)} Decode batch. #running-req: 1, #token: "
            f"{4000 + step * 37}, token usage: 0.01, cuda graph: True, "
            f"gen throughput (token/s): {gen:.2f}, #queue-req: 0"
        )
        lines.append(
            f"{_stamp(200 + run * 60 + step)} INFO:     127.0.0.1:{41000 + step} - "
            '"POST /generate HTTP/1.1" 200 OK'
        )
    duration = 256 * 1000 / throughput / 100
    lines += [
        "============ Serving Benchmark Result ============",
        "Backend:                                 sglang",
        "Traffic request rate:                    inf",
        "Max request concurrency:                 1",
        "Successful requests:                     100",
        f"Benchmark duration (s):                  {duration:.2f}",
        "Total input tokens:                      25600",
        "Total generated tokens:                  25600",
        f"Request throughput (req/s):              {throughput / 256:.2f}",
        f"Output token throughput (tok/s):         {throughput:.2f}",
        f"Total token throughput (tok/s):          {throughput * 2:.2f}",
        "----------------End-to-End Latency----------------",
        f"Mean E2E Latency (ms):                   {256 / throughput * 1000:.2f}",
        "==================================================",
    ]
    return lines


def traceback(rank: int, frames: list[tuple[str, int, str, str]], exception: str) -> list[str]:
    lines = [f"{_stamp(140, rank)} Scheduler hit an exception: Traceback (most recent call last):"]
    for path, line, function, code in frames:
        lines += [f'  File "{path}", line {line}, in {function}', f"    {code}"]
    lines.append(exception)
    return lines


SCHEDULER = "/root/sglang/python/sglang/srt/managers/scheduler.py"
RUNNER = "/root/sglang/python/sglang/srt/model_executor/model_runner.py"
GRAPH = "/root/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py"


def _sigquit() -> list[str]:
    return [
        f"{_stamp(141)} Received sigquit from a child process. It usually means the child failed.",
        "Killed",
    ]


def crash_flashinfer_fusion() -> list[str]:
    return traceback(0, [
        (SCHEDULER, 2989, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)"),
        (RUNNER, 530, "initialize", "self.init_flashinfer_allreduce_fusion()"),
        ("/root/ml-env/lib/python3.12/site-packages/flashinfer/jit/core.py", 212, "build_and_load",
         "raise RuntimeError(msg)"),
    ], "RuntimeError: FlashInfer JIT: trtllm_allreduce_fusion is not supported on sm_120 "
       "(supported: sm_90, sm_100)") + _sigquit()  # fmt: skip


def crash_nccl_tree() -> list[str]:
    return [
        f"{_stamp(100, 0)} Capture cuda graph begin. This can take up to several minutes.",
        *traceback(0, [
            (GRAPH, 436, "capture", ") = self.capture_one_batch_size(bs, forward)"),
            (GRAPH, 560, "capture_one_batch_size", "run_once()"),
            ("/root/ml-env/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", 2867,
             "all_reduce", "work = group.allreduce([tensor], opts)"),
        ], "RuntimeError: CUDA error: operation not permitted when stream is capturing"),
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{SCHEDULER}", line 2989, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
        "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream "
        "is capturing",
        *_sigquit(),
    ]  # fmt: skip


def crash_nccl_channels() -> list[str]:
    return traceback(3, [
        (SCHEDULER, 2989, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)"),
        (RUNNER, 1290, "init_memory_pool", "self.token_to_kv_pool = MHATokenToKVPool("),
    ], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
       "capacity of 94.97 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process "
       "has 93.83 GiB memory in use.") + _sigquit()  # fmt: skip


def crash_torch_symm_mem() -> list[str]:
    """The seed's log: KeyError: 12 below the logging module's own error block."""
    logging_error = [
        f"{_stamp(139)} Received sigquit from a child process. It usually means the child failed.",
        "--- Logging error ---",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/logging/__init__.py", line 1160, in emit',
        "    msg = self.format(record)",
        '  File "/usr/lib/python3.12/logging/__init__.py", line 392, in getMessage',
        "    msg = msg % self.args",
        "          ~~~~^~~~~~~~~~~",
        "TypeError: not all arguments converted during string formatting",
        "Call stack:",
        '  File "/root/sglang/python/sglang/srt/entrypoints/engine.py", line 735, in '
        "launch_phase_sigquit_handler",
        '    logger.error("Received sigquit from a child process. It usually means the child '
        'failed.", e)',
        "Message: 'Received sigquit from a child process. It usually means the child failed.'",
        "Arguments: (<Signals.SIGQUIT: 3>,)",
    ]
    ranks = []
    for rank in (3, 5):
        ranks += traceback(rank, [
            (SCHEDULER, 2989, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)"),
            ("/root/sglang/python/sglang/srt/distributed/parallel_state.py", 1436,
             "initialize_model_parallel", "_TP = init_model_parallel_group("),
            ("/root/sglang/python/sglang/srt/distributed/device_communicators/torch_symm_mem.py", 56,
             "__init__", "self.max_size = TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability][self.world_size]"),
        ], "KeyError: 12")  # fmt: skip
        ranks.append("")
    return [*logging_error, *ranks, "Killed"]
