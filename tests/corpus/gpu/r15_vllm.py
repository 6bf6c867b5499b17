# vLLM-shaped API server + EngineCore (round 15), one real fault (or none) per --scenario:
# graph_item: TP=2 workers; the model's rotary embedding checks positions with a host sync (.item());
#   CUDA-graph capture of that op is not permitted (both workers at once);
# triton_smem: a fused-MoE Triton kernel launched with a tuned config whose tiles need more shared memory
#   than the SM has; the engine reports the failure over the handshake before its error is logged;
# fp8_fnuz: an fp8 checkpoint quantized in the ROCm format (float8_e4m3fnuz) run with torch._scaled_mm;
# sigterm_loading: the operator's SIGTERM arrives while CUDA graphs are being captured;
# serving_assert: serving; a client sends prompt_token_ids from another tokenizer (ids past the
#   embedding): device-side assert in the embedding, the engine dies, the API server shuts down.
import argparse
import atexit
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r15_common import add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.1"
MODELS = {
    "graph_item": "/models/Phi-3-medium-128k-instruct",
    "triton_smem": "/models/Mixtral-8x7B-Instruct-v0.1",
    "fp8_fnuz": "/models/Llama-3.1-70B-Instruct-FP8-KV",
    "sigterm_loading": "/models/Qwen2.5-32B-Instruct",
    "serving_assert": "/models/Llama-3.1-8B-Instruct",
}
ARGS = {
    "graph_item": {"tensor_parallel_size": 2, "trust_remote_code": True, "max_model_len": 16384},
    "triton_smem": {"max_model_len": 32768},
    "fp8_fnuz": {"quantization": "fp8", "max_model_len": 8192},
    "sigterm_loading": {"max_model_len": 32768},
    "serving_assert": {"max_model_len": 8192},
}
ARCH = {"graph_item": "Phi3ForCausalLM", "triton_smem": "MixtralForCausalLM", "fp8_fnuz": "LlamaForCausalLM",
        "sigterm_loading": "Qwen2ForCausalLM", "serving_assert": "LlamaForCausalLM"}
MOE_CONFIG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 1, "num_warps": 8,
              "num_stages": 4}


class EngineDeadError(Exception):
    pass


class Llama:
    """Random-weight decoder on the GPU with a rotary cache of max_pos positions."""

    def __init__(self, hidden=1024, heads=8, inter=2816, layers=4, vocab=32000, max_pos=16384, check_positions=False,
                 fp8=None):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.h, self.nh, self.hd, self.vocab, self.max_pos = hidden, heads, hidden // heads, vocab, max_pos
        self.check_positions = check_positions
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = []
        for _ in range(layers):
            self.layers.append({"qkv": torch.randn(3 * hidden, hidden, **kw) * 0.02,
                                "o": torch.randn(hidden, hidden, **kw) * 0.02,
                                "gate_up": torch.randn(2 * inter, hidden, **kw) * 0.02,
                                "down": torch.randn(hidden, inter, **kw) * 0.02})
        self.fp8 = fp8
        if fp8 is not None:
            f8 = getattr(torch, fp8)
            for L in self.layers:
                for k in list(L):
                    w = L[k]
                    scale = w.abs().max().float() / 240.0
                    L[k] = ((w.float() / scale).to(f8), scale)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, device="cuda").float() / self.hd))
        t = torch.arange(max_pos, device="cuda").float()
        freqs = torch.outer(t, inv)
        self.cos_cached = freqs.cos().to(torch.bfloat16)
        self.sin_cached = freqs.sin().to(torch.bfloat16)

    def linear(self, x, w):
        import torch
        if self.fp8 is None:
            return x @ w.T
        wq, ws = w
        xs = x.abs().max().float() / 240.0
        xq = (x.float() / xs).to(wq.dtype)
        return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)

    def rotary(self, x, positions):
        import torch
        if self.check_positions:  # LongRoPE: switch to the long factors past the original context
            if (positions >= 4096).any().item():
                x = x * 1.0
        cos = self.cos_cached[positions].unsqueeze(1)
        sin = self.sin_cached[positions].unsqueeze(1)
        x1, x2 = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, ids, positions=None):
        import torch
        T = ids.shape[0]
        if positions is None:
            positions = torch.arange(T, device="cuda")
        h = torch.nn.functional.embedding(ids, self.emb)
        for L in self.layers:
            q, k, v = self.linear(h, L["qkv"]).view(T, 3, self.nh, self.hd).unbind(1)
            q, k = self.rotary(q, positions), self.rotary(k, positions)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], is_causal=True)
            h = h + self.linear(a[0].transpose(0, 1).reshape(T, self.h), L["o"])
            g, u = self.linear(h, L["gate_up"]).chunk(2, dim=-1)
            h = h + self.linear(torch.nn.functional.silu(g) * u, L["down"])
        return h[-1] @ self.emb.T


def fused_moe_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def fused_moe_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                         stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                         BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(0)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n
        offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_SIZE_K) & (offs_n[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

    return fused_moe_kernel


def invoke_fused_moe(kernel, a, b, config):
    import torch
    import triton
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
    grid = (triton.cdiv(M, config["BLOCK_SIZE_M"]) * triton.cdiv(N, config["BLOCK_SIZE_N"]),)
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                 **config)
    return c


def capture_graphs(model, rank, sleep_per_size=0.0):
    import torch
    from tqdm import tqdm
    sizes = [512, 504, 496, 488, 480, 472, 464, 456, 448, 440, 432, 424, 416, 408, 400, 392, 384, 376, 368, 360,
             352, 344, 336, 328, 320, 312, 304, 296, 288, 280, 272, 264, 256, 248, 240, 232, 224, 216, 208, 200,
             192, 184, 176, 168, 160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24,
             16, 8, 4, 2, 1]
    pool = torch.cuda.graph_pool_handle()
    stream = torch.cuda.Stream()
    ids = torch.randint(0, model.vocab, (512,), device="cuda")
    pos = torch.arange(512, device="cuda")
    graphs = {}
    for n in tqdm(sizes, desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", disable=rank != 0):
        for _ in range(2):
            model.forward(ids[:n], pos[:n])
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool, stream=stream):
            model.forward(ids[:n], pos[:n])
        graphs[n] = g
        if sleep_per_size:
            time.sleep(sleep_per_size)
    return graphs


# ------------------------------------------------------------------ TP workers (graph_item)
def worker_main(rank, conn, scenario, model_path):
    add_prefix(f"(Worker_TP{rank} pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = vllm_logger("multiproc_executor.py")
    try:
        import torch
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info(f"rank {rank} in world size 2 is assigned as DP rank 0, PP rank 0, "
                                              f"TP rank {rank}, EP rank {rank}")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model_path}...")
        t0 = time.perf_counter()
        model = Llama(hidden=1280, heads=10, inter=4480, layers=4, vocab=32064, check_positions=True)
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0:.6f} seconds")
        conn.send(("READY", rank))
    except Exception:
        log.exception("WorkerProc failed to start.")
        conn.send(("FAILED", rank))
        time.sleep(0.5)
        sys.exit(1)
    while True:
        method = conn.recv()
        try:
            if method == "profile":
                ids = torch.randint(0, model.vocab, (8192,), device="cuda")
                model.forward(ids)
                torch.cuda.synchronize()
                vllm_logger("gpu_worker.py").info(f"Memory profiling takes 1.87 seconds. Total non-torch memory: 0.44GiB; "
                                                  f"torch peak memory increase: {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")
                conn.send(("OK", None))
            elif method == "compile_or_warm_up_model":
                graphs = capture_graphs(model, rank)  # noqa: F841
                conn.send(("OK", None))
        except Exception as e:
            log.exception("WorkerProc hit an exception.")
            conn.send(("ERROR", str(e)))
            time.sleep(2)
            sys.exit(1)


class MultiprocExecutor:
    def __init__(self, scenario, model_path, tp):
        ctx = mp.get_context("spawn")
        self.procs, self.conns = [], []
        for r in range(tp):
            a, b = ctx.Pipe(duplex=True)
            p = ctx.Process(target=worker_main, args=(r, b, scenario, model_path), name=f"VllmWorker-{r}", daemon=True)
            p.start()
            self.procs.append(p)
            self.conns.append(a)
        for c in self.conns:
            status, _ = c.recv()
            if status != "READY":
                raise Exception("WorkerProc initialization failed due to an exception in a background process. "
                                "See stack trace for root cause.")

    def collective_rpc(self, method):
        for c in self.conns:
            c.send(method)
        for c in self.conns:
            status, err = c.recv()
            if status != "OK":
                raise RuntimeError(f"Worker failed with error '{err}', please check the stack trace above for the "
                                   f"root cause")


# ------------------------------------------------------------------ engine core
class EngineCore:
    def __init__(self, scenario, model):
        self.scenario = scenario
        self.log = vllm_logger("core.py")
        a = ARGS[scenario]
        tp = a.get("tensor_parallel_size", 1)
        self.log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
                      f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                      f"trust_remote_code={a.get('trust_remote_code', False)}, dtype=torch.bfloat16, "
                      f"max_seq_len={a.get('max_model_len', 32768)}, download_dir=None, load_format=auto, "
                      f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size=1, "
                      f"quantization={a.get('quantization')}, enforce_eager=False, kv_cache_dtype=auto, "
                      f"device_config=cuda, seed=0, served_model_name={model}, enable_prefix_caching=True, "
                      f"chunked_prefill_enabled=True")
        if tp > 1:
            vllm_logger("shm_broadcast.py").info("vLLM message queue communication handle: Handle(local_reader_ranks=[0, 1], "
                                                 "buffer_handle=(2, 16777216, 10, 'psm_3b1e0c52'), local_subscribe_addr="
                                                 "'ipc:///tmp/6c0d3f4e-2b7a-4f0e-8a8e-1d2c3b4a5f60', remote_subscribe_addr=None, "
                                                 "remote_addr_ipv6=False)")
            ex = MultiprocExecutor(scenario, model, tp)
            ex.collective_rpc("profile")
            vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 1,153,024 tokens")
            vllm_logger("kv_cache_utils.py").info("Maximum concurrency for 16,384 tokens per request: 70.37x")
            ex.collective_rpc("compile_or_warm_up_model")
            return
        import torch
        torch.cuda.set_device(0)
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        if scenario == "fp8_fnuz":
            vllm_logger("fp8.py").info("Detected fp8 checkpoint (weight dtype float8_e4m3fnuz, per-tensor weight "
                                       "scales, activation_scheme=dynamic). Please note that this format is experimental "
                                       "and subject to change.")
            self.model = Llama(hidden=2048, heads=16, inter=5632, layers=2, fp8="float8_e4m3fnuz")
        elif scenario == "serving_assert":
            self.model = Llama(vocab=128256)
        else:
            self.model = Llama()
        if scenario == "triton_smem":
            self.w1 = torch.randn(1024, 14336 // 8, device="cuda", dtype=torch.bfloat16) * 0.02
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0:.6f} seconds")
        self.profile_run()
        lg = vllm_logger("kv_cache_utils.py")
        lg.info("GPU KV cache size: 421,312 tokens")
        lg.info(f"Maximum concurrency for {ARGS[scenario]['max_model_len']:,} tokens per request: "
                f"{421312 / ARGS[scenario]['max_model_len']:.2f}x")
        self.kv = torch.empty((4, 2, 421312 // 16, 16, 8, 128), device="cuda", dtype=torch.bfloat16)
        t0 = time.perf_counter()
        self.graphs = capture_graphs(self.model, 0, sleep_per_size=0.08 if scenario == "sigterm_loading" else 0.0)
        rl.info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.38 GiB")
        self.log.info("init engine (profile, create kv cache, warmup model) took 9.87 seconds")

    def profile_run(self):
        import torch
        ids = torch.randint(0, self.model.vocab, (8192,), device="cuda")
        self.model.forward(ids)
        if self.scenario == "triton_smem":
            path = ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/fused_moe/configs/"
                    "E=8,N=14336,device_name=NVIDIA_H200.json")
            vllm_logger("fused_moe.py").info(f"Using configuration from {path} for MoE layer.")
            kern = fused_moe_kernel()
            a = torch.randn(8192, 1024, device="cuda", dtype=torch.bfloat16)
            invoke_fused_moe(kern, a, self.w1, MOE_CONFIG)
        torch.cuda.synchronize()
        vllm_logger("gpu_worker.py").info(f"Memory profiling takes 2.14 seconds. Total non-torch memory: 0.41GiB; "
                                          f"torch peak memory increase: {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")

    def step(self, prompt_ids, n_out):
        import torch
        ids = torch.tensor(prompt_ids, device="cuda")
        for _ in range(n_out):
            nxt = self.model.forward(ids[-256:]).argmax()
            ids = torch.cat([ids, nxt[None]])
        torch.cuda.synchronize()


def engine_core_main(scenario, model, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_term(signum, frame):
        raise SystemExit()

    signal.signal(signal.SIGTERM, on_term)
    log = vllm_logger("core.py")
    try:
        core = EngineCore(scenario, model)
    except Exception:
        if scenario == "triton_smem":  # the handshake fails first, the error reaches the log after
            out_q.put(("FAILED", 0))
            time.sleep(1.0)
            log.exception("EngineCore failed to start.")
        else:
            log.exception("EngineCore failed to start.")
            out_q.put(("FAILED", 0))
            time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", 0))
    while True:
        req = in_q.get()
        if req is None:
            return
        rid, prompt_ids, n_out = req
        t0 = time.perf_counter()
        try:
            core.step(prompt_ids, n_out)
        except Exception:
            log.exception("EngineCore encountered a fatal error.")
            out_q.put(("DEAD", rid))
            time.sleep(0.5)
            sys.exit(1)
        out_q.put(("DONE", (rid, len(prompt_ids), n_out, time.perf_counter() - t0)))


class Term(Exception):
    pass


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
    nd = {"model_tag": model, "port": args.port, **a, "model": model}
    log.info(f"non-default args: {nd}")
    vllm_logger("model.py").info(f"Resolved architecture: {ARCH[sc]}")
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    procs = [p]

    def shutdown_cores():
        for q in procs:
            if sc == "triton_smem":
                q.join(timeout=10)
            if q.is_alive():
                q.terminate()
                q.join(timeout=10)

    atexit.register(shutdown_cores)

    def on_term(signum, frame):
        if sc == "sigterm_loading":
            raise KeyboardInterrupt("terminated")
        raise Term()

    signal.signal(signal.SIGTERM, on_term)
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status, _ = out_q.get(timeout=400)
    if status != "READY":
        if sc != "triton_smem":
            p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. "
                           "Failed core proc(s): {}")
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    vllm_logger("launcher.py").info("Available routes are:")
    for route, methods in [("/health", "GET"), ("/v1/models", "GET"), ("/v1/chat/completions", "POST"),
                           ("/v1/completions", "POST")]:
        vllm_logger("launcher.py").info(f"Route: {route}, Methods: {methods}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    p_tok = g_tok = n_done = 0
    t_start = time.perf_counter()
    try:
        for rid in range(400):
            time.sleep(0.2)
            n_in, n_out = 120 + (rid * 53) % 900, 24
            prompt = [128000] + [(rid * 7919 + j * 104729) % 128000 for j in range(n_in - 1)]
            if sc == "serving_assert" and rid == 9:  # token ids from Qwen2.5's tokenizer
                prompt = [151644, 8948, 198, 2610, 525, 1207, 16948, 11, 3465, 553, 54364, 14817, 13, 151645, 198,
                          151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
                vllm_logger("logger.py").info(f"Received request cmpl-9f3c0d6e1b2a4c58a7d1e0f2b3c4d5e6-0: prompt: None, "
                                              f"params: SamplingParams(n=1, temperature=0.0, max_tokens=64), "
                                              f"prompt_token_ids: {prompt}, prompt_embeds shape: None, lora_request: None.")
            in_q.put((rid, prompt, n_out))
            status, res = out_q.get(timeout=120)
            if status == "DEAD":
                try:
                    raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
                except EngineDeadError:
                    vllm_logger("async_llm.py").exception("AsyncLLM output_handler failed.")
                uvicorn_log(f'127.0.0.1:{43100 + rid} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
                raise Term()
            uvicorn_log(f'127.0.0.1:{43100 + rid} - "POST /v1/completions HTTP/1.1" 200 OK')
            p_tok += res[1]
            g_tok += res[2]
            n_done += 1
            if n_done % 4 == 0:
                dt = time.perf_counter() - t_start
                stats.info(f"Engine 000: Avg prompt throughput: {p_tok / dt:.1f} tokens/s, Avg generation throughput: "
                           f"{g_tok / dt:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.3%, "
                           f"Prefix cache hit rate: 9.4%")
                p_tok = g_tok = 0
                t_start = time.perf_counter()
        while True:
            time.sleep(1)
    except Term:
        vllm_logger("launcher.py").info("Shutting down FastAPI HTTP server.")
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")


if __name__ == "__main__":
    main()
