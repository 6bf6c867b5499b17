# vLLM-shaped processes for round 20, one real fault (or none) per --scenario:
# sleep_replay: API server + EngineCore with --enable-sleep-mode and CUDA graphs for decode. An RL trainer puts
#   the engine to sleep (the sleep path resets the CUDA graphs to give their memory pool back) and wakes it up
#   after the weight sync; the wake-up path reloads weights and KV cache but never recaptures: the next decode
#   step replays a graph that has no executable any more; EngineCore dies, the API server's EngineDeadError;
# inductor_nochoice: a reward model whose remote code runs the score head in float64; the user's
#   compilation_config passes inductor options max_autotune with TRITON as the only GEMM backend (and no
#   fallback to ATen): Inductor finds no GEMM choice for the float64 matmul while compiling, the engine fails
#   to start;
# fork_cuda: VLLM_WORKER_MULTIPROC_METHOD=fork, and the API server's fp8 capability check has already
#   initialized CUDA in the parent: the forked EngineCore cannot initialize CUDA;
# offline_sigint: offline batch generation with the LLM class (EngineCore child); the operator's Ctrl-C (SIGINT
#   to the whole process group) stops it mid-generation (no crash).
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r20_common import add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
MODELS = {
    "sleep_replay": "/models/Qwen3-8B",
    "inductor_nochoice": "/models/Skywork-Reward-V2-Llama-3.1-8B",
    "fork_cuda": "/models/Llama-3.1-8B-Instruct-FP8",
    "offline_sigint": "/models/Qwen2.5-7B-Instruct",
}
ARGS = {
    "sleep_replay": {"enable_sleep_mode": True, "max_model_len": 16384, "gpu_memory_utilization": 0.6},
    "inductor_nochoice": {"task": "reward", "trust_remote_code": True, "max_model_len": 8192,
                          "compilation_config": {"level": 3, "inductor_compile_config": {
                              "max_autotune": True, "max_autotune_gemm_backends": "TRITON",
                              "autotune_fallback_to_aten": False}}},
    "fork_cuda": {"quantization": "fp8", "max_model_len": 32768},
    "offline_sigint": {"max_model_len": 8192, "seed": 0, "disable_log_stats": True},
}


class EngineDeadError(Exception):
    pass


def log_config(log, sc, model):
    a = ARGS[sc]
    cc = a.get("compilation_config", {})
    log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
             f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
             f"trust_remote_code={a.get('trust_remote_code', False)}, dtype=torch.bfloat16, "
             f"max_seq_len={a.get('max_model_len', 32768)}, download_dir=None, load_format=auto, "
             f"tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
             f"quantization={a.get('quantization')}, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
             f"seed=0, served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
             f"pooler_config={'PoolerConfig(pooling_type=LAST, normalize=False)' if sc == 'inductor_nochoice' else None}, "
             f"compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE', "
             f"'inductor_compile_config': {cc.get('inductor_compile_config', {'enable_auto_functionalized_v2': False})}}}")


# ---------------------------------------------------------------- the model (real GPU work)
class GraphModel:
    """Random-weight decoder whose decode step is CUDA-graph capturable (no host syncs)."""

    def __init__(self, vocab=32000, hidden=2048, inter=5632, layers=4):
        import torch
        torch.manual_seed(0)
        self.vocab, self.hidden, self.inter, self.n_layers = vocab, hidden, inter, layers
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = [{"gate_up": torch.randn(2 * inter, hidden, **kw) * 0.02,
                        "down": torch.randn(hidden, inter, **kw) * 0.02} for _ in range(layers)]
        self.head = torch.randn(vocab, hidden, **kw) * 0.02
        self.graphs, self.static_ids, self.static_out = {}, {}, {}
        self.pool = None

    def hidden_states(self, ids):
        import torch
        h = self.emb[ids]
        for L in self.layers:
            gu = h @ L["gate_up"].T
            g, u = gu.chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g) * u) @ L["down"].T
        return h

    def run(self, ids):
        return (self.hidden_states(ids) @ self.head.T).argmax(-1)

    def capture(self, bs):
        import torch
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        ids = torch.zeros(bs, dtype=torch.long, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                self.run(ids)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool):
            out = self.run(ids)
        self.graphs[bs], self.static_ids[bs], self.static_out[bs] = g, ids, out

    def decode(self, ids):
        """One decode step for a batch: the padded graph replay, eager for sizes past the largest graph."""
        import torch
        bs = ids.shape[0]
        gbs = next((b for b in sorted(self.graphs) if b >= bs), None)
        if gbs is None:
            return self.run(ids)
        self.static_ids[gbs][:bs].copy_(ids)
        self.graphs[gbs].replay()
        return self.static_out[gbs][:bs].clone()

    def weight_tensors(self):
        yield self.emb
        yield self.head
        for L in self.layers:
            yield L["gate_up"]
            yield L["down"]


# ---------------------------------------------------------------- engine core
class Engine:
    def __init__(self, sc, model):
        import torch
        self.sc, self.model_path = sc, model
        log = vllm_logger("core.py")
        log_config(log, sc, model)
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
                                              "TP rank 0, EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        self.model = GraphModel()
        if sc == "inductor_nochoice":
            self.score_w = torch.randn(1, 2048, device="cuda", dtype=torch.float64) * 0.02
            self.norm_w = torch.ones(2048, device="cuda", dtype=torch.bfloat16)
        vllm_logger("default_loader.py").info(f"Loading weights took {time.perf_counter() - t0 + 3.12:.2f} seconds")
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0 + 3.6:.6f} seconds")
        self.compile_and_profile()
        if sc != "inductor_nochoice":
            self.alloc_kv()
            self.capture()

    # the pooler's score head, as the model's remote code writes it
    def score_head(self, h):
        import torch
        var = h.float().pow(2).mean(-1, keepdim=True)
        h = (h.float() * torch.rsqrt(var + 1e-5)).to(torch.bfloat16) * self.norm_w
        return h.to(torch.float64) @ self.score_w.T

    def compile_and_profile(self):
        import torch
        bl = vllm_logger("backends.py")
        bl.info("Using cache directory: /root/.cache/vllm/torch_compile_cache/3f0a91c2de/rank_0_0/backbone "
                "for vLLM's torch.compile")
        if self.sc == "inductor_nochoice":
            import torch._inductor.config as icfg
            opts = ARGS[self.sc]["compilation_config"]["inductor_compile_config"]
            for k, v in opts.items():
                if hasattr(icfg, k):
                    setattr(icfg, k, v)
            self.pooler = torch.compile(self.score_head, dynamic=True, fullgraph=True)
            bl.info("Dynamo bytecode transform time: 4.87 s")
            h = self.model.hidden_states(torch.randint(0, 32000, (8192,), device="cuda"))
            t0 = time.perf_counter()
            self.pooler(h)  # the profile run's dummy batch reaches the pooler
            bl.info(f"Compiling a graph for dynamic shape takes {time.perf_counter() - t0:.2f} s")
        else:
            bl.info("Dynamo bytecode transform time: 5.31 s")
            bl.info("Compiling a graph for dynamic shape takes 18.42 s")
            vllm_logger("monitor.py").info("torch.compile takes 23.73 s in total")
        torch.cuda.reset_peak_memory_stats()
        self.model.run(torch.randint(0, 32000, (8192,), device="cuda"))
        torch.cuda.synchronize()

    def alloc_kv(self):
        import torch
        free, total = torch.cuda.mem_get_info()
        kv_bytes = 4 * 2**30
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {kv_bytes / 2**30:.2f} GiB")
        self.kv = torch.empty(kv_bytes // 2, dtype=torch.bfloat16, device="cuda")
        per_token = 2 * 2 * 36 * 8 * 128
        kl = vllm_logger("kv_cache_utils.py")
        kl.info(f"GPU KV cache size: {kv_bytes // per_token:,} tokens")
        mml = ARGS[self.sc].get("max_model_len", 32768)
        kl.info(f"Maximum concurrency for {mml:,} tokens per request: {kv_bytes / per_token / mml:.2f}x")

    def capture(self):
        import torch
        from tqdm import tqdm
        sizes = [64, 32, 16, 8, 4, 2, 1]
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        before = torch.cuda.mem_get_info()[0]
        for bs in tqdm(sizes, desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt):
            self.model.capture(bs)
        took = (before - torch.cuda.mem_get_info()[0]) / 2**30
        vllm_logger("gpu_model_runner.py").info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, "
                                                f"took {max(took, 0.01):.2f} GiB")

    def step(self, bs, n_out, seed):
        import torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, 32000, (bs,), device="cuda", generator=g)
        for _ in range(n_out):
            ids = self.model.decode(ids)
        torch.cuda.synchronize()

    def sleep(self):
        """Level 1: offload the weights to the CPU, drop the KV cache, reset the CUDA graphs (frees their pool)."""
        import torch
        t0 = time.perf_counter()
        before = torch.cuda.mem_get_info()[0]
        m = self.model
        self.cpu_weights = [t.to("cpu") for t in m.weight_tensors()]
        m.emb = m.head = None
        m.layers = [dict() for _ in range(m.n_layers)]
        self.kv = None
        for g in m.graphs.values():
            g.reset()
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info()
        freed = (free - before) / 2**30
        vllm_logger("gpu_worker.py").info(f"Sleep mode freed {freed:.2f} GiB memory, "
                                          f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB memory is still in use.")
        vllm_logger("executor_base.py").info(f"It took {time.perf_counter() - t0:.6f} seconds to fall asleep.")

    def wake_up(self):
        import torch
        t0 = time.perf_counter()
        m = self.model
        w = [t.to("cuda") for t in self.cpu_weights]
        m.emb, m.head = w[0], w[1]
        m.layers = [{"gate_up": w[2 + 2 * i], "down": w[3 + 2 * i]} for i in range(m.n_layers)]
        self.cpu_weights = None
        self.kv = torch.empty(2 * 2**30, dtype=torch.bfloat16, device="cuda")
        torch.cuda.synchronize()
        vllm_logger("executor_base.py").info(f"It took {time.perf_counter() - t0:.6f} seconds to wake up tags "
                                             f"{{'weights', 'kv_cache'}}.")


def engine_core_main(sc, model, in_q, out_q, fork=False):
    if fork:  # the forked child inherits the API server's prefixed writers
        for f in (sys.stdout, sys.stderr):
            f.__dict__.pop("write", None)
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the front end shuts the core down
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0 + 9.4:.2f} seconds")
    out_q.put(("READY", 0))
    try:
        while True:
            req = in_q.get()
            if req is None:
                return
            if req[0] == "sleep":
                eng.sleep()
                out_q.put(("OK", None))
                continue
            if req[0] == "wake_up":
                eng.wake_up()
                out_q.put(("OK", None))
                continue
            _, rid, bs, n_out = req
            t = time.perf_counter()
            eng.step(bs, n_out, seed=rid)
            out_q.put(("DONE", (rid, bs, n_out, time.perf_counter() - t)))
    except Exception:
        log.exception("EngineCore encountered a fatal error.")
        out_q.put(("ENGINE_CORE_DEAD", None))
        time.sleep(0.3)
        sys.exit(1)


def wait_ready(p, out_q):
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    last = time.time()
    while True:
        try:
            return out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                return None
            if time.time() - last >= 10:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last = time.time()


# ---------------------------------------------------------------- offline LLM class (offline_sigint)
def offline_main(sc):
    from tqdm import tqdm
    model = MODELS[sc]
    log = vllm_logger("utils.py")
    log.info(f"non-default args: {dict({'model': model}, **ARGS[sc])}")
    vllm_logger("model.py").info("Resolved architecture: Qwen2ForCausalLM")
    vllm_logger("model.py").info(f"Using max model len {ARGS[sc]['max_model_len']}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0", daemon=True)
    p.start()
    if wait_ready(p, out_q) != "READY":
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    n = 2000
    for _ in tqdm(range(n), desc="Adding requests", total=n):
        time.sleep(0.0004)
    bar = tqdm(total=n, desc="Processed prompts", dynamic_ncols=True,
               postfix="est. speed input: 0.00 toks/s, output: 0.00 toks/s")
    done, in_toks, out_toks, t0 = 0, 0, 0, time.perf_counter()
    rid = 0
    while done < n:
        in_q.put(("gen", rid, 16, 24))
        status, res = out_q.get()
        time.sleep(0.04)  # detokenize and hand the outputs back
        rid += 1
        done += 16
        in_toks += 16 * 212
        out_toks += 16 * 24 * 6
        el = time.perf_counter() - t0
        bar.postfix = f"est. speed input: {in_toks / el:.2f} toks/s, output: {out_toks / el:.2f} toks/s"
        bar.update(16)
    bar.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    sc = args.scenario
    if sc == "offline_sigint":
        offline_main(sc)
        return
    model = MODELS[sc]
    a = ARGS[sc]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {dict({'model_tag': model, 'port': args.port}, **a, model=model)}")
    arch = {"inductor_nochoice": "LlamaForSequenceClassification", "sleep_replay": "Qwen3ForCausalLM"}
    vllm_logger("model.py").info(f"Resolved architecture: {arch.get(sc, 'LlamaForCausalLM')}")
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    if sc == "fork_cuda":
        import torch
        major, minor = torch.cuda.get_device_capability()  # fp8 needs compute capability 8.9 or newer
        vllm_logger("fp8.py").info(f"Detected compute capability {major}.{minor}: using CUTLASS fp8 scaled mm "
                                   f"(W8A8 per-tensor)")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    method = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    ctx = mp.get_context(method)
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q, method == "fork"), name="EngineCore_DP0")
    p.start()
    if wait_ready(p, out_q) != "READY":
        time.sleep(0.3)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        in_q.put(None)
        p.join(timeout=10)
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/sleep", "/wake_up",
              "/is_sleeping", "/metrics"):
        log.info(f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics', '/is_sleeping') else 'POST'}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    # the RL loop: a rollout batch, sleep while the trainer steps, wake up after the weight sync, next batch
    plan = ["gen"] * 8 + ["sleep", "update", "wake_up"] + ["gen"] * 8 if sc == "sleep_replay" else ["gen"] * 16
    p_tok = g_tok = 0
    last = time.time()
    port = 52210
    for rid, op in enumerate(plan):
        port += 1
        if op == "update":
            time.sleep(1.5)  # the trainer's optimizer step and the NCCL weight broadcast
            uvicorn_log(f'10.0.2.31:{port} - "POST /collective_rpc HTTP/1.1" 200 OK')
            continue
        if op in ("sleep", "wake_up"):
            in_q.put((op,))
            out_q.get(timeout=60)
            uvicorn_log(f'10.0.2.31:{port} - "POST /{op}{"?level=1" if op == "sleep" else ""} HTTP/1.1" 200 OK')
            continue
        in_q.put(("gen", rid, 32, 16))
        status, res = out_q.get(timeout=120)
        if status == "ENGINE_CORE_DEAD":
            try:
                raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
            except EngineDeadError:
                vllm_logger("async_llm.py").error(f"AsyncLLM output_handler failed.\n{traceback.format_exc().rstrip()}")
            uvicorn_log(f'10.0.2.31:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
            uvicorn_log("Shutting down")
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            uvicorn_log(f"Finished server process [{os.getpid()}]")
            p.join(timeout=10)
            sys.exit(1)
        uvicorn_log(f'10.0.2.31:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
        p_tok += 32 * 180
        g_tok += 32 * 16
        if time.time() - last >= 1.0:
            el = time.time() - last
            stats.info(f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                       f"{g_tok / el:.1f} tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, "
                       f"Prefix cache hit rate: 41.2%")
            p_tok = g_tok = 0
            last = time.time()
        time.sleep(0.15)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
