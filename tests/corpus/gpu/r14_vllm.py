# vLLM-shaped API server + EngineCore (round 14), one real fault (or none) per --scenario:
# maxlen: max_model_len 131072 on a model whose rotary cache holds 32768 positions; the profile run's
#   dummy batch meets the cache (tensor size mismatch);
# kv_fraction: gpu_memory_utilization=0.35 applied as a per-process memory fraction; the KV cache for
#   the requested context does not fit beside the weights (OOM with 'allowed');
# tp_shape: TP=2 workers load a checkpoint pre-sharded for TP=4 (copy_ into a parameter of another shape);
# dp_nvml: data_parallel_size=2 on a one-GPU box: EngineCore_DP1 gets CUDA_VISIBLE_DEVICES=1, NVML refuses;
# fp8_k16: fp8 per-tensor quantization of a model whose intermediate size is not a multiple of 16;
# chat_template: --chat-template with a Jinja nesting mistake: chat requests fail (400), completions
#   are served, then the operator's SIGTERM;
# healthy_sigterm: start with alarming warnings, serve, the operator's SIGTERM.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r14_common import CHAT_TEMPLATE, SHARDED, TOK_GOOD, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.1"
MODELS = {
    "maxlen": "/models/Qwen2.5-14B-Instruct",
    "kv_fraction": "/models/gpt-oss-20b",
    "tp_shape": SHARDED,
    "dp_nvml": "/models/Llama-3.1-8B-Instruct",
    "fp8_k16": "/models/internlm2-chat-7b-ft",
    "chat_template": TOK_GOOD,
    "healthy_sigterm": "/models/Qwen3-8B",
}
ARGS = {
    "maxlen": {"max_model_len": 131072, "max_num_batched_tokens": 131072, "enable_chunked_prefill": False},
    "kv_fraction": {"max_model_len": 131072, "gpu_memory_utilization": 0.35},
    "tp_shape": {"tensor_parallel_size": 2, "load_format": "sharded_state"},
    "dp_nvml": {"data_parallel_size": 2},
    "fp8_k16": {"quantization": "fp8", "trust_remote_code": True},
    "chat_template": {"chat_template": CHAT_TEMPLATE, "enable_auto_tool_choice": True, "tool_call_parser": "llama3_json"},
    "healthy_sigterm": {"max_model_len": 32768},
}


class Term(Exception):
    pass


class Llama:
    """Random-weight decoder on the GPU with a rotary cache of max_pos positions."""

    def __init__(self, hidden=1024, heads=8, inter=2816, layers=4, vocab=32000, max_pos=32768, fp8=False):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.h, self.nh, self.hd = hidden, heads, hidden // heads
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = []
        for _ in range(layers):
            self.layers.append({"qkv": torch.randn(3 * hidden, hidden, **kw) * 0.02,
                                "o": torch.randn(hidden, hidden, **kw) * 0.02,
                                "gate_up": torch.randn(2 * inter, hidden, **kw) * 0.02,
                                "down": torch.randn(hidden, inter, **kw) * 0.02})
        self.fp8 = fp8
        if fp8:
            for L in self.layers:
                for k in list(L):
                    w = L[k]
                    scale = w.abs().max().float() / 448.0
                    L[k] = ((w.float() / scale).to(torch.float8_e4m3fn), scale)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, device="cuda").float() / self.hd))
        t = torch.arange(max_pos, device="cuda").float()
        freqs = torch.outer(t, inv)
        self.cos_cached = freqs.cos().to(torch.bfloat16)  # [max_pos, hd/2]
        self.sin_cached = freqs.sin().to(torch.bfloat16)

    def linear(self, x, w):
        import torch
        if not self.fp8:
            return x @ w.T
        wq, ws = w
        xs = x.abs().max().float() / 448.0
        xq = (x.float() / xs).to(torch.float8_e4m3fn)
        return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)

    def rotary(self, x, seq_len):
        import torch
        cos = self.cos_cached[:seq_len].unsqueeze(1)
        sin = self.sin_cached[:seq_len].unsqueeze(1)
        x1, x2 = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, ids):
        import torch
        T = ids.shape[0]
        h = self.emb[ids]
        for L in self.layers:
            q, k, v = self.linear(h, L["qkv"]).view(T, 3, self.nh, self.hd).unbind(1)
            q, k = self.rotary(q, T), self.rotary(k, T)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], is_causal=True)
            h = h + self.linear(a[0].transpose(0, 1).reshape(T, self.h), L["o"])
            g, u = self.linear(h, L["gate_up"]).chunk(2, dim=-1)
            h = h + self.linear(torch.nn.functional.silu(g) * u, L["down"])
        return h[-1] @ self.emb.T


# ------------------------------------------------------------------ TP workers (tp_shape)
def worker_main(rank, conn):
    add_prefix(f"(Worker_TP{rank} pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = vllm_logger("multiproc_executor.py")
    try:
        import torch
        from safetensors import safe_open
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info(f"rank {rank} in world size 2 is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {SHARDED}...")
        hidden, inter, tp = 1024, 5504, 2
        params = {}
        for i in range(2):
            p = f"model.layers.{i}"
            params[f"{p}.self_attn.qkv_proj.weight"] = torch.empty(3 * hidden // tp, hidden, device="cuda", dtype=torch.bfloat16)
            params[f"{p}.self_attn.o_proj.weight"] = torch.empty(hidden, hidden // tp, device="cuda", dtype=torch.bfloat16)
            params[f"{p}.mlp.gate_up_proj.weight"] = torch.empty(2 * inter // tp, hidden, device="cuda", dtype=torch.bfloat16)
            params[f"{p}.mlp.down_proj.weight"] = torch.empty(hidden, inter // tp, device="cuda", dtype=torch.bfloat16)
        vllm_logger("sharded_state_loader.py").info(f"Loading weights with load_format=sharded_state from {SHARDED} (rank {rank})")
        fn = f"{SHARDED}/model-rank-{rank}-part-0.safetensors"
        with safe_open(fn, framework="pt", device="cpu") as f:
            for name in sorted(f.keys(), key=lambda n: ("mlp" in n, n)):
                loaded = f.get_tensor(name)
                param_data = params[name].data
                param_data.copy_(loaded)
        conn.send(("READY", rank))
    except Exception:
        log.exception("WorkerProc failed to start.")
        conn.send(("FAILED", rank))
        time.sleep(0.5)
        sys.exit(1)
    time.sleep(60)


class MultiprocExecutor:
    def __init__(self, tp):
        ctx = mp.get_context("spawn")
        self.procs, conns = [], []
        for r in range(tp):
            rd, wr = ctx.Pipe(duplex=False)
            p = ctx.Process(target=worker_main, args=(r, wr), name=f"VllmWorker-{r}", daemon=True)
            p.start()
            self.procs.append(p)
            conns.append(rd)
        failed = False
        for c in conns:
            status, _ = c.recv()
            failed |= status != "READY"
        if failed:
            time.sleep(0.3)
            raise Exception("WorkerProc initialization failed due to an exception in a background process. "
                            "See stack trace for root cause.")


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
                      f"max_seq_len={a.get('max_model_len', 32768)}, download_dir=None, "
                      f"load_format={a.get('load_format', 'auto')}, tensor_parallel_size={tp}, pipeline_parallel_size=1, "
                      f"data_parallel_size={a.get('data_parallel_size', 1)}, quantization={a.get('quantization')}, "
                      f"enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={model}, "
                      f"enable_prefix_caching=True, chunked_prefill_enabled={a.get('enable_chunked_prefill', True)}")
        if tp > 1:
            vllm_logger("shm_broadcast.py").info("vLLM message queue communication handle: Handle(local_reader_ranks=[0, 1], "
                                                 "buffer_handle=(2, 16777216, 10, 'psm_8c2d41aa'), local_subscribe_addr="
                                                 "'ipc:///tmp/0f7e3b9a-6a55-4c61-9e0e-5b7d3d2f4a11', remote_subscribe_addr=None, "
                                                 "remote_addr_ipv6=False)")
            MultiprocExecutor(tp)
            return
        import torch
        if scenario == "kv_fraction":
            torch.cuda.set_per_process_memory_fraction(a["gpu_memory_utilization"])
        torch.cuda.set_device(0)
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        if scenario == "fp8_k16":
            vllm_logger("fp8.py").info("Using per-tensor dynamic activation scales for Fp8LinearMethod (cutlass_scaled_mm unavailable, torch._scaled_mm fallback).")
        t0 = time.perf_counter()
        if scenario == "fp8_k16":
            self.model = Llama(hidden=2048, heads=16, inter=11000, layers=2, fp8=True)
        else:
            self.model = Llama()
        if scenario == "kv_fraction":
            self.weights = torch.empty(40 * 2**30 // 2, device="cuda", dtype=torch.bfloat16)  # 40 GiB of experts
        used = torch.cuda.memory_allocated() / 2**30
        rl.info(f"Model loading took {used:.4f} GiB and {time.perf_counter() - t0:.6f} seconds")
        self.profile_run(a)
        self.init_kv_cache(a)
        rl.info("Graph capturing finished in 4 secs, took 0.38 GiB")
        self.log.info("init engine (profile, create kv cache, warmup model) took 11.42 seconds")

    def profile_run(self, a):
        import torch
        n = a.get("max_num_batched_tokens", 8192)
        ids = torch.randint(0, 32000, (n,), device="cuda")
        if self.scenario == "healthy_sigterm":
            with torch.cuda.amp.autocast(dtype=torch.bfloat16):
                self.model.forward(ids[:2048])
        self.model.forward(ids)
        torch.cuda.synchronize()
        vllm_logger("gpu_worker.py").info(f"Memory profiling takes 2.14 seconds. Total non-torch memory: 0.41GiB; "
                                          f"torch peak memory increase: {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")

    def init_kv_cache(self, a):
        import torch
        lg = vllm_logger("kv_cache_utils.py")
        max_len = a.get("max_model_len", 32768)
        if self.scenario == "kv_fraction":
            # 24 layers x (K,V) x 8 KV heads x 64 dim, bf16, for 2 sequences of max_model_len
            tokens = 2 * max_len
            lg.info(f"GPU KV cache size: {tokens:,} tokens")
            lg.info(f"Maximum concurrency for {max_len:,} tokens per request: 2.00x")
            self.kv = torch.empty((24, 2, tokens, 8, 64), device="cuda", dtype=torch.bfloat16)
        else:
            tokens = 421_312
            lg.info(f"GPU KV cache size: {tokens:,} tokens")
            lg.info(f"Maximum concurrency for {max_len:,} tokens per request: {tokens / max_len:.2f}x")
            self.kv = torch.empty((4, 2, tokens // 16, 8, 128), device="cuda", dtype=torch.bfloat16)

    def step(self, n_in, n_out):
        import torch
        ids = torch.randint(0, 32000, (n_in,), device="cuda")
        for _ in range(n_out):
            nxt = self.model.forward(ids[-256:]).argmax()
            ids = torch.cat([ids, nxt[None]])
        torch.cuda.synchronize()


def engine_core_main(scenario, model, dp_rank, in_q, out_q):
    add_prefix(f"(EngineCore_DP{dp_rank} pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = vllm_logger("core.py")
    try:
        if scenario == "dp_nvml":
            import pynvml
            cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            log.info(f"Initializing DP rank {dp_rank} engine core with CUDA_VISIBLE_DEVICES={cvd}")
            pynvml.nvmlInit()
            physical_device_id = int(cvd.split(",")[0])
            handle = pynvml.nvmlDeviceGetHandleByIndex(physical_device_id)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            vllm_logger("cuda.py").info(f"Device {physical_device_id}: {pynvml.nvmlDeviceGetName(handle)}, "
                                        f"compute capability {major}.{minor}")
            if dp_rank == 0:
                time.sleep(1.0)
        core = EngineCore(scenario, model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", dp_rank))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", dp_rank))
    while True:
        req = in_q.get()
        if req is None:
            log.info("Shutdown requested, EngineCore exiting.")
            return
        rid, n_in, n_out = req
        t0 = time.perf_counter()
        core.step(n_in, n_out)
        out_q.put(("DONE", (rid, n_in, n_out, time.perf_counter() - t0)))


def render_chat(tokenizer, template, messages):
    return tokenizer.apply_chat_template(messages, chat_template=template, tokenize=False, add_generation_prompt=True)


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
    arch = {"maxlen": "Qwen2ForCausalLM", "kv_fraction": "GptOssForCausalLM", "tp_shape": "MixtralForCausalLM",
            "fp8_k16": "InternLM2ForCausalLM", "healthy_sigterm": "Qwen3ForCausalLM"}.get(sc, "LlamaForCausalLM")
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    if sc == "maxlen":
        vllm_logger("config.py").warning(
            "User-specified max_model_len (131072) is greater than the derived max_model_len "
            "(max_position_embeddings=32768 or model_max_length=None in model's config.json). "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative "
            "position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses "
            "absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array "
            "out-of-bounds error.")
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    if sc == "healthy_sigterm":
        vllm_logger("utils.py").warning("Found ulimit of 1024 and failed to automatically increase with error current limit "
                                        "exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too "
                                        "many open files`. Consider increasing with ulimit -n")
    if a.get("enable_chunked_prefill", True):
        vllm_logger("scheduler.py").info(f"Chunked prefill is enabled with max_num_batched_tokens={a.get('max_num_batched_tokens', 8192)}.")
    dp = a.get("data_parallel_size", 1)
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    procs = []
    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    for r in range(dp):
        if dp > 1:
            os.environ["CUDA_VISIBLE_DEVICES"] = str(r)
        p = ctx.Process(target=engine_core_main, args=(sc, model, r, in_q, out_q), name=f"EngineCore_DP{r}")
        p.start()
        procs.append(p)
    if dp > 1:
        if saved is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved
    vllm_logger("utils.py").info(f"Waiting for {dp} local, 0 remote core engine proc(s) to start.")
    failed = {}
    for _ in range(dp):
        status, r = out_q.get(timeout=400)
        if status != "READY":
            failed[f"EngineCore_DP{r}"] = 1
            break
    if failed:
        time.sleep(0.5)
        for p in procs:
            if p.is_alive():
                p.kill()
        raise RuntimeError("Engine core initialization failed. See root cause above. "
                           f"Failed core proc(s): {failed}")

    def on_term(signum, frame):
        raise Term()

    signal.signal(signal.SIGTERM, on_term)
    tokenizer = template = None
    if sc == "chat_template":
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(model)
        template = open(a["chat_template"]).read()
        vllm_logger("api_server.py").info(f"Using supplied chat template: {a['chat_template']}")
        vllm_logger("serving_chat.py").info('"auto" tool choice has been enabled please note that while the parallel_tool_calls client option is preset for compatibility reasons, it will be ignored.')
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    vllm_logger("launcher.py").info("Available routes are:")
    for route, methods in [("/health", "GET"), ("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")]:
        vllm_logger("launcher.py").info(f"Route: {route}, Methods: {methods}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    p_tok = g_tok = n_done = 0
    t_start = time.perf_counter()
    try:
        for rid in range(400):
            time.sleep(0.25)
            n_in, n_out = 120 + (rid * 53) % 900, 24
            route = "/v1/chat/completions" if rid % 2 == 0 else "/v1/completions"
            if route == "/v1/chat/completions" and template is not None:
                msgs = [{"role": "system", "content": "tok1 tok2 tok3"}, {"role": "user", "content": f"tok{rid} tok7 tok9"}]
                try:
                    render_chat(tokenizer, template, msgs)
                except Exception:
                    vllm_logger("serving_chat.py").exception("Error in preprocessing prompt inputs")
                    uvicorn_log(f'127.0.0.1:{43100 + rid} - "POST {route} HTTP/1.1" 400 Bad Request')
                    continue
            in_q.put((rid, n_in, n_out))
            status, res = out_q.get(timeout=120)
            uvicorn_log(f'127.0.0.1:{43100 + rid} - "POST {route} HTTP/1.1" 200 OK')
            p_tok += res[1]
            g_tok += res[2]
            n_done += 1
            if n_done % 4 == 0:
                dt = time.perf_counter() - t_start
                stats.info(f"Engine 000: Avg prompt throughput: {p_tok / dt:.1f} tokens/s, Avg generation throughput: "
                           f"{g_tok / dt:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, "
                           f"Prefix cache hit rate: 12.5%")
                p_tok = g_tok = 0
                t_start = time.perf_counter()
        while True:
            time.sleep(1)
    except Term:
        vllm_logger("launcher.py").info("Shutting down FastAPI HTTP server.")
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        in_q.put(None)
        for p in procs:
            p.join(timeout=10)
        uvicorn_log(f"Finished server process [{os.getpid()}]")


if __name__ == "__main__":
    main()
