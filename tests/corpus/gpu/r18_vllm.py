# vLLM-shaped API server + EngineCore (+ TP workers) for round 18, one real fault (or none) per --scenario:
# dynamo_overrides: --hf-overrides '{"head_dim": 256}' on a model whose attention is 32 x 128; the
#   torch.compile'd forward (dynamic token count) cannot reshape q: Dynamo's fake-tensor run fails;
# ready_timeout: a disaggregated-prefill KV connector whose warm-up waits on a device flag the decode peer
#   never sets; the GPU kernel spins, the API server's wait for the engine core times out;
# rpc_timeout: TP=2 workers; a long prompt sends rank 0 into the custom all-reduce (it spins waiting for
#   rank 1), rank 1 took the other path; the EngineCore's execute_model RPC times out while serving;
# sigill: the engine core loads a CPU kernel built for a newer x86 ISA; the CPU raises SIGILL;
# graph_repeat: FULL CUDA-graph capture of an attention-metadata builder that calls repeat_interleave with
#   a tensor of repeats (a device-to-host sync) inside the capture; the API server's error comes first;
# port_in_use: another server already listens on the port;
# healthy_warnings: start with real warnings, serve, the operator's SIGTERM.
import argparse
import multiprocessing as mp
import os
import signal
import socket
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import DRY, Decoder, add_prefix, spin_until_peers, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
MODELS = {
    "dynamo_overrides": "/models/Qwen3-8B",
    "ready_timeout": "/models/Llama-3.3-70B-Instruct-FP8",
    "rpc_timeout": "/models/Qwen2.5-32B-Instruct",
    "sigill": "/models/Phi-4-mini-instruct",
    "graph_repeat": "/models/gemma-3-12b-it",
    "port_in_use": "/models/Mistral-7B-Instruct-v0.3",
    "healthy_warnings": "/models/Llama-3.1-8B-Instruct",
}
ARGS = {
    "dynamo_overrides": {"hf_overrides": {"head_dim": 256}, "max_model_len": 40960},
    "ready_timeout": {"kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_producer"},
                      "max_model_len": 16384},
    "rpc_timeout": {"tensor_parallel_size": 2, "max_model_len": 32768, "disable_custom_all_reduce": False},
    "sigill": {"cpu_offload_gb": 4, "max_model_len": 16384},
    "graph_repeat": {"compilation_config": {"cudagraph_mode": "FULL"}, "max_model_len": 8192},
    "port_in_use": {"max_model_len": 32768},
    "healthy_warnings": {"max_model_len": 32768, "gpu_memory_utilization": 0.85},
}
TP = {"rpc_timeout": 2}


class EngineDeadError(Exception):
    pass


def log_config(log, sc, model):
    a = ARGS[sc]
    log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
             f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
             f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.get('max_model_len', 32768)}, "
             f"download_dir=None, load_format=auto, tensor_parallel_size={TP.get(sc, 1)}, "
             f"pipeline_parallel_size=1, data_parallel_size=1, quantization=None, enforce_eager=False, "
             f"kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={model}, "
             f"enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, "
             f"compilation_config={{'level': 3, 'cudagraph_mode': "
             f"'{a.get('compilation_config', {}).get('cudagraph_mode', 'FULL_AND_PIECEWISE')}'}}")


# ---------------------------------------------------------------- the faults
def compiled_attention_prologue(head_dim):
    """q/k/v projection + reshape, compiled with a dynamic token count (vLLM's piecewise backend)."""
    import torch
    hidden, nh, nkv = 4096, 32, 8
    kw = dict(device="cuda", dtype=torch.bfloat16)
    wqkv = torch.randn((nh + 2 * nkv) * 128, hidden, **kw) * 0.02

    def forward(x):
        qkv = x @ wqkv.T
        q, k, v = qkv.split([nh * 128, nkv * 128, nkv * 128], dim=-1)
        q = q.view(x.shape[0], nh, head_dim)
        k = k.view(x.shape[0], nkv, head_dim)
        return (q.float().square().sum() + k.float().square().sum() + v.float().sum())

    fn = torch.compile(forward, fullgraph=True, dynamic=True)
    x = torch.randn(8192, hidden, **kw)
    torch._dynamo.mark_dynamic(x, 0)
    return fn(x)


def load_cpu_kernel():
    """mmap the kernel's code page and call it: an AMX tile instruction, then the ISA check's ud2."""
    import ctypes
    import mmap
    code = bytes([0xC4, 0xE2, 0x7B, 0x49, 0xC0,  # tilezero tmm0
                  0x0F, 0x0B,  # ud2
                  0xC3])  # ret
    buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    ctypes.CFUNCTYPE(None)(addr)()


def build_attn_metadata(seq_lens):
    """Per-token request index for the decode batch (what the metadata builder hands the kernel)."""
    import torch
    req_idx = torch.arange(seq_lens.shape[0], device="cuda", dtype=torch.int32)
    return torch.repeat_interleave(req_idx, seq_lens)


# ---------------------------------------------------------------- TP workers (rpc_timeout)
def worker_main(rank, sc, in_q, out_q):
    add_prefix(f"(Worker_TP{rank} pid={os.getpid()}) ")
    log = vllm_logger("gpu_model_runner.py")
    if not DRY:
        import torch
        torch.cuda.set_device(0)
    vllm_logger("parallel_state.py").info(f"rank {rank} in world size 2 is assigned as DP rank 0, PP rank 0, "
                                          f"TP rank {rank}, EP rank {rank}")
    log.info(f"Starting to load model {MODELS[sc]}...")
    t0 = time.perf_counter()
    model = Decoder(vocab=152064, hidden=2560, inter=13824, tp=2)
    log.info(f"Model loading took {model.gib():.4f} GiB and {time.perf_counter() - t0:.6f} seconds")
    out_q.put(("loaded", rank))
    while True:
        msg = in_q.get()
        if msg is None:
            return
        n_tok = msg
        model.forward(n_tok, seed=n_tok)
        # custom all-reduce for inputs up to 8 MiB (bf16 hidden x tokens), NCCL above; the shard each
        # rank reduces differs by the padded vocab split, so the two ranks choose differently at the edge
        size = n_tok * model.hidden * 2 + (0 if rank == 0 else 8192)
        if size <= 8 * 2**20 and n_tok > 1600:
            spin_until_peers(2)
        out_q.put(("done", rank))


class Engine:
    def __init__(self, sc, model):
        self.sc, self.model_path = sc, model
        self.log = vllm_logger("core.py")
        log_config(self.log, sc, model)
        tp = TP.get(sc, 1)
        self.workers = []
        if tp > 1:
            ctx = mp.get_context("spawn")
            vllm_logger("multiproc_executor.py").info(f"Worker proc count {tp}; using spawn for multiprocessing")
            self.wq = [ctx.Queue() for _ in range(tp)]
            self.rq = ctx.Queue()
            for r in range(tp):
                p = ctx.Process(target=worker_main, args=(r, sc, self.wq[r], self.rq), name=f"VllmWorker-{r}",
                                daemon=True)
                p.start()
                self.workers.append(p)
            for _ in range(tp):
                self.rq.get(timeout=120)
            self.model = None
        else:
            if not DRY:
                import torch
                torch.cuda.set_device(0)
            vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
                                                  "TP rank 0, EP rank 0")
            rl = vllm_logger("gpu_model_runner.py")
            rl.info(f"Starting to load model {model}...")
            vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
            t0 = time.perf_counter()
            if sc == "sigill":
                vllm_logger("cpu_offload.py").info("Loading CPU offload kernels (libvllm_cpu_offload.so, "
                                                   "ISA=avx512_amx) for 4.0 GiB of offloaded weights")
                if not DRY:
                    load_cpu_kernel()
            self.model = Decoder()
            rl.info(f"Model loading took {self.model.gib():.4f} GiB and {time.perf_counter() - t0:.6f} seconds")
        self.compile_and_profile()
        self.capture()

    def compile_and_profile(self):
        sc = self.sc
        bl = vllm_logger("backends.py")
        bl.info(f"Using cache directory: /root/.cache/vllm/torch_compile_cache/5f3a21c9e0/rank_0_0/backbone "
                f"for vLLM's torch.compile")
        if sc == "dynamo_overrides":
            t0 = time.perf_counter()
            if DRY:
                raise RuntimeError("dry: Dynamo failed to run FX node with fake tensors")
            compiled_attention_prologue(ARGS[sc]["hf_overrides"]["head_dim"])
            bl.info(f"Dynamo bytecode transform time: {time.perf_counter() - t0:.2f} s")
        vllm_logger("monitor.py").info("torch.compile takes 9.87 s in total")
        if self.model is not None:
            self.model.forward(8192)
        wl = vllm_logger("gpu_worker.py")
        wl.info("Available KV cache memory: 38.17 GiB")
        kl = vllm_logger("kv_cache_utils.py")
        kl.info("GPU KV cache size: 312,672 tokens")
        kl.info(f"Maximum concurrency for {ARGS[sc].get('max_model_len', 32768)} tokens per request: 9.54x")
        if sc == "ready_timeout":
            vllm_logger("nixl_connector.py").info("Initializing NIXL wrapper; KV role kv_producer, waiting for "
                                                  "the decode instance's handshake flag (engine_id=prefill-0)")
            spin_until_peers(2)

    def capture(self):
        from tqdm import tqdm
        rl = vllm_logger("gpu_model_runner.py")
        sizes = [512, 504, 496, 488, 480, 256, 128, 64, 32, 16, 8, 4, 2, 1]
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        if self.sc == "graph_repeat":
            if DRY:
                raise RuntimeError("dry: operation not permitted when stream is capturing")
            import torch
            pool = torch.cuda.graph_pool_handle()
            for bs in tqdm(sizes, desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt):
                seq_lens = torch.full((bs,), 1, device="cuda", dtype=torch.int64)
                g = torch.cuda.CUDAGraph()
                build_attn_metadata(seq_lens)  # warm-up run
                with torch.cuda.graph(g, pool=pool):
                    build_attn_metadata(seq_lens)
        else:
            for _ in tqdm(sizes, desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", bar_format=fmt):
                if self.model is not None:
                    self.model.forward(4)
        rl.info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.52 GiB")

    def step(self, n_tok, seed):
        if self.model is not None:
            return self.model.forward(n_tok, seed)
        for q in self.wq:
            q.put(n_tok)
        deadline = time.time() + 10
        got = 0
        while got < len(self.workers):
            try:
                self.rq.get(timeout=max(0.01, deadline - time.time()))
                got += 1
            except Exception:
                raise TimeoutError("RPC call to execute_model timed out.") from None
        return 7

    def shutdown(self):
        for p in self.workers:
            if p.is_alive():
                p.terminate()


def engine_core_main(sc, model, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model)
    except Exception:
        if sc == "graph_repeat":  # the handshake goes out first; the traceback follows
            out_q.put(("FAILED", 0))
            time.sleep(0.8)
            log.exception("EngineCore failed to start.")
        else:
            log.exception("EngineCore failed to start.")
            out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds")
    out_q.put(("READY", 0))
    while True:
        req = in_q.get()
        if req is None:
            eng.shutdown()
            return
        rid, n_tok = req
        try:
            t = time.perf_counter()
            for i in range(16):
                eng.step(n_tok if i == 0 else 1, seed=rid * 100 + i)
            out_q.put(("OK", rid, n_tok, 16, time.perf_counter() - t))
        except Exception:
            vllm_logger("dump_input.py").error(f"Dumping input data for V1 LLM engine (v{VER}) with config: "
                                               f"model='{model}', tensor_parallel_size={TP.get(sc, 1)}")
            vllm_logger("dump_input.py").error(f"Dumping scheduler output for model execution: "
                                               f"SchedulerOutput(scheduled_new_reqs=[NewRequestData(req_id=cmpl-"
                                               f"{rid:04x}a9e1, prompt_token_ids_len={n_tok}, "
                                               f"sampling_params=SamplingParams(n=1, temperature=0.7, top_p=0.8, "
                                               f"max_tokens=16), block_ids=([{rid * 7 + 1}],), num_computed_tokens=0, "
                                               f"lora_request=None)], num_scheduled_tokens={{cmpl-{rid:04x}a9e1: "
                                               f"{n_tok}}}, total_num_scheduled_tokens={n_tok})")
            log.exception("EngineCore encountered a fatal error.")
            out_q.put(("DEAD", rid))
            eng.shutdown()
            time.sleep(0.5)
            sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    a = ARGS[sc]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {dict({'model_tag': model, 'port': args.port}, **a, model=model)}")
    if sc == "healthy_warnings" and not DRY:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        warnings.warn("The `max_model_len` of 32768 exceeds the tokenizer's model_max_length (8192); "
                      "generation past it may be degraded", UserWarning)
        vllm_logger("__init__.py").warning("The model's config.json does not contain rope_scaling; "
                                           "using the original rotary embedding")
    # the server binds its socket before the engine starts
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("0.0.0.0", args.port))
    sock.listen(64)
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    timeout = float(os.environ.get("VLLM_ENGINE_READY_TIMEOUT_S", "600"))
    t0 = last_wait = time.time()
    status = None
    while status is None:
        try:
            status = out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                raise RuntimeError(f"Engine core initialization failed. See root cause above. Failed core proc(s): "
                                   f"{{'EngineCore_DP0': {p.exitcode}}}")
            if time.time() - t0 > timeout:
                p.terminate()
                raise TimeoutError(f"Timed out waiting for engine core processes to start. This can happen if "
                                   f"the engine is still loading or warming up; increase VLLM_ENGINE_READY_TIMEOUT_S "
                                   f"(now {timeout:.0f} s).")
            if time.time() - last_wait >= 5:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last_wait = time.time()
    if status != "READY":
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")

    def on_term(signum, frame):
        in_q.put(None)
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        time.sleep(0.5)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics"):
        log.info(f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics') else 'POST'}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    p_tok = g_tok = 0
    last = time.time()
    lens = [412, 96, 1280, 733, 64, 2100, 388, 1560, 905, 150]
    rid = 0
    while True:
        n_tok = lens[rid % len(lens)]
        if sc == "rpc_timeout" and rid == 5:
            n_tok = 1637  # 1637 x 2560 x 2 bytes sits at the custom all-reduce's 8 MiB edge
        in_q.put((rid, n_tok))
        msg = out_q.get(timeout=120)
        if msg[0] == "DEAD":
            time.sleep(0.6)
            al = vllm_logger("async_llm.py")
            try:
                raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
            except EngineDeadError:
                al.exception("AsyncLLM output_handler failed.")
            uvicorn_log(f'127.0.0.1:{50112 + rid} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
            vllm_logger("launcher.py").error("AsyncLLMEngine has failed, terminating server process")
            uvicorn_log("Shutting down")
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            uvicorn_log(f"Finished server process [{os.getpid()}]")
            p.join(timeout=5)
            sys.exit(1)
        _, _, nt, ng, dt = msg
        p_tok += nt
        g_tok += ng
        uvicorn_log(f'127.0.0.1:{50112 + rid} - "POST /v1/completions HTTP/1.1" 200 OK')
        rid += 1
        if time.time() - last >= 1.0:
            el = time.time() - last
            stats.info(f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                       f"{g_tok / el:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, "
                       f"Prefix cache hit rate: 0.0%")
            p_tok = g_tok = 0
            last = time.time()
        time.sleep(0.15)


if __name__ == "__main__":
    main()
