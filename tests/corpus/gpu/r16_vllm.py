# vLLM-shaped API server + EngineCore (round 16), one real fault (or none) per --scenario:
# graph_oom: --gpu-memory-utilization 0.98 with full CUDA graphs that include the LM head: the KV cache takes
#   all but 2 % of the card, the graph pool's static logits outgrow the rest during capture (CUDA OOM);
# tokcfg_truncated: the model folder's tokenizer_config.json was cut short by an interrupted copy; the API
#   server's tokenizer load fails while the engine core is still loading weights;
# tp2_graph_break: TP=2 workers; a trust_remote_code model left a debug print() in forward; vLLM compiles
#   the model with fullgraph=True: Dynamo refuses the graph break (both workers at once);
# embed_numpy: a pooling (embedding) server; a token-level pooling request leaves its output on the GPU and
#   the output serializer calls .numpy() on it: the engine core dies, the API server's EngineDeadError;
# oov_refused_sigterm: a client sends prompt_token_ids from another tokenizer: the request is refused (400),
#   serving goes on, then the operator's SIGTERM; a shared-memory segment is left behind at exit.
import argparse
import atexit
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r16_common import TOKCUT, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
MODELS = {
    "graph_oom": "/models/Llama-3.1-8B-Instruct",
    "tokcfg_truncated": TOKCUT,
    "tp2_graph_break": "/models/internlm3-8b-instruct",
    "embed_numpy": "/models/Qwen3-Embedding-8B",
    "oov_refused_sigterm": "/models/Llama-3.1-8B-Instruct",
}
ARGS = {
    "graph_oom": {"gpu_memory_utilization": 0.98, "max_model_len": 32768, "max_num_seqs": 512,
                  "compilation_config": {"cudagraph_mode": "FULL"}},
    "tokcfg_truncated": {"max_model_len": 32768, "reasoning_parser": "qwen3"},
    "tp2_graph_break": {"tensor_parallel_size": 2, "trust_remote_code": True, "max_model_len": 16384},
    "embed_numpy": {"runner": "pooling", "max_model_len": 8192},
    "oov_refused_sigterm": {"max_model_len": 8192},
}
ARCH = {"graph_oom": "LlamaForCausalLM", "tokcfg_truncated": "Qwen3ForCausalLM",
        "tp2_graph_break": "InternLM3ForCausalLM", "embed_numpy": "Qwen3ForCausalLM",
        "oov_refused_sigterm": "LlamaForCausalLM"}


class EngineDeadError(Exception):
    pass


class Llama:
    """Random-weight decoder on the GPU; lm_head=True returns logits for every position."""

    def __init__(self, hidden=1024, heads=8, inter=2816, layers=2, vocab=32000, debug_print=False):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.h, self.nh, self.hd, self.vocab = hidden, heads, hidden // heads, vocab
        self.debug_print = debug_print
        self.rope_scaling = "dynamic"
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = []
        for _ in range(layers):
            self.layers.append({"qkv": torch.randn(3 * hidden, hidden, **kw) * 0.02,
                                "o": torch.randn(hidden, hidden, **kw) * 0.02,
                                "gate_up": torch.randn(2 * inter, hidden, **kw) * 0.02,
                                "down": torch.randn(hidden, inter, **kw) * 0.02})

    def forward(self, ids, lm_head=False, pool=None):
        import torch
        T = ids.shape[0]
        h = torch.nn.functional.embedding(ids, self.emb)
        if self.debug_print and self.rope_scaling == "dynamic":
            print("InternLM3: using dynamic NTK rope scaling, max_position_embeddings=32768")
        for L in self.layers:
            q, k, v = (h @ L["qkv"].T).view(T, 3, self.nh, self.hd).unbind(1)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], is_causal=True)
            h = h + a[0].transpose(0, 1).reshape(T, self.h) @ L["o"].T
            g, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g) * u) @ L["down"].T
        if pool == "token":
            return torch.nn.functional.normalize(h.float(), dim=-1)
        if pool == "last":
            return torch.nn.functional.normalize(h[-1].float(), dim=-1)
        if lm_head:
            return h @ self.emb.T
        return h[-1] @ self.emb.T


def capture_graphs(model, rank, lm_head):
    """cudagraph_mode FULL: the LM head is inside the graph, each size keeps its static logits."""
    import torch
    from tqdm import tqdm
    sizes = [512, 504, 496, 488, 480, 472, 464, 456, 448, 440, 432, 424, 416, 408, 400, 392, 384, 376, 368, 360,
             352, 344, 336, 328, 320, 312, 304, 296, 288, 280, 272, 264, 256, 248, 240, 232, 224, 216, 208, 200,
             192, 184, 176, 168, 160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24,
             16, 8, 4, 2, 1]
    pool = torch.cuda.graph_pool_handle()
    stream = torch.cuda.Stream()
    ids = torch.randint(0, model.vocab, (512,), device="cuda")
    graphs, outs = {}, {}
    mode = "decode, FULL" if lm_head else "mixed prefill-decode, PIECEWISE"
    for n in tqdm(sizes, desc=f"Capturing CUDA graphs ({mode})", disable=rank != 0):
        for _ in range(2):
            model.forward(ids[:n], lm_head=lm_head)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool, stream=stream):
            outs[n] = model.forward(ids[:n], lm_head=lm_head)
        graphs[n] = g
    return graphs, outs


# ------------------------------------------------------------------ TP workers (tp2_graph_break)
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
        model = Llama(hidden=2048, heads=16, inter=5120, layers=2, vocab=128512, debug_print=True)
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
            if method == "determine_available_memory":
                bl = vllm_logger("backends.py")
                bl.info(f"Using cache directory: /root/.cache/vllm/torch_compile_cache/5c1f0e9a2b/rank_{rank}_0/"
                        f"backbone for vLLM's torch.compile")
                compiled = torch.compile(model.forward, fullgraph=True, backend="inductor")
                ids = torch.randint(0, model.vocab, (8192,), device="cuda")
                compiled(ids)
                torch.cuda.synchronize()
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
                      f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
                      f"seed=0, served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
                      f"pooler_config={'PoolerConfig(pooling_type=LAST, normalize=True)' if scenario == 'embed_numpy' else None}, "
                      f"compilation_config={a.get('compilation_config', {'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'})}")
        if tp > 1:
            vllm_logger("shm_broadcast.py").info("vLLM message queue communication handle: Handle(local_reader_ranks=[0, 1], "
                                                 "buffer_handle=(2, 16777216, 10, 'psm_8e21c4d7'), local_subscribe_addr="
                                                 "'ipc:///tmp/1f9e2c6a-33b1-4d0e-9a47-5b2e8c0d7f13', remote_subscribe_addr=None, "
                                                 "remote_addr_ipv6=False)")
            ex = MultiprocExecutor(scenario, model, tp)
            ex.collective_rpc("determine_available_memory")
            return
        import torch
        torch.cuda.set_device(0)
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        if scenario == "graph_oom":
            self.model = Llama(hidden=4096, heads=32, inter=14336, layers=2, vocab=128256)
        elif scenario == "oov_refused_sigterm":
            self.model = Llama(vocab=128256)
        elif scenario == "embed_numpy":
            self.model = Llama(hidden=1024, heads=8, vocab=151665)
        else:
            self.model = Llama()
            for i in range(1, 6):
                time.sleep(0.6)
                vllm_logger("default_loader.py").info(f"Loading safetensors checkpoint shards: {i * 20}% Completed | "
                                                      f"{i}/5 [00:0{i}<00:0{5 - i}, 1.62it/s]")
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0:.6f} seconds")
        ids = torch.randint(0, self.model.vocab, (8192,), device="cuda")
        self.model.forward(ids)
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        vllm_logger("gpu_worker.py").info(f"Memory profiling takes 1.92 seconds. Total non-torch memory: 0.53GiB; "
                                          f"torch peak memory increase: {torch.cuda.max_memory_allocated() / 2**30:.2f}GiB")
        util = a.get("gpu_memory_utilization", 0.9)
        kv_bytes = int(free - (1 - util) * total)
        if scenario != "graph_oom":
            kv_bytes = min(kv_bytes, 3 << 30)  # this box's other jobs: the profile run's figure, capped
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {kv_bytes / 2**30:.2f} GiB")
        block_bytes = 16 * 2 * 8 * 128 * 2 * 32  # 16 tokens, K+V, 8 KV heads, head dim 128, bf16, 32 layers
        n_blocks = kv_bytes // block_bytes
        lg = vllm_logger("kv_cache_utils.py")
        lg.info(f"GPU KV cache size: {n_blocks * 16:,} tokens")
        lg.info(f"Maximum concurrency for {a['max_model_len']:,} tokens per request: "
                f"{n_blocks * 16 / a['max_model_len']:.2f}x")
        self.kv = torch.empty((n_blocks, block_bytes // 2), device="cuda", dtype=torch.bfloat16)
        if scenario == "embed_numpy":
            self.log.info("init engine (profile, create kv cache, warmup model) took 6.41 seconds")
            return
        t0 = time.perf_counter()
        self.graphs, self.graph_outs = capture_graphs(self.model, 0, lm_head=scenario == "graph_oom")
        rl.info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.41 GiB")
        self.log.info("init engine (profile, create kv cache, warmup model) took 11.26 seconds")

    def step(self, req):
        import torch
        rid, prompt_ids, n_out, pool = req
        ids = torch.tensor(prompt_ids, device="cuda")
        if pool is not None:
            out = self.model.forward(ids, pool=pool)
            if pool == "last":
                out = out.cpu()
            return {"req_id": f"embd-{rid}", "pooling_output": out, "finished": True}
        for _ in range(n_out):
            nxt = self.model.forward(ids[-256:]).argmax()
            ids = torch.cat([ids, nxt[None]])
        torch.cuda.synchronize()
        return {"req_id": f"cmpl-{rid}", "new_token_ids": ids[-n_out:].tolist(), "finished": True}


def enc_hook(obj):
    """vLLM's MsgpackEncoder: tensors go out as (dtype, shape, raw bytes)."""
    import torch
    if isinstance(obj, torch.Tensor):
        arr = obj.numpy()
        return {"dtype": str(arr.dtype), "shape": list(arr.shape), "data": arr.tobytes()}
    raise TypeError(f"Object of type {type(obj)} is not serializable")


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
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", getattr(getattr(core, "model", None), "vocab", 0)))
    import msgpack
    while True:
        req = in_q.get()
        if req is None:
            return
        t0 = time.perf_counter()
        try:
            out = core.step(req)
            buf = msgpack.packb({"engine_index": 0, "outputs": [out], "timestamp": time.time()}, default=enc_hook)
        except Exception:
            log.exception("EngineCore encountered a fatal error.")
            out_q.put(("DEAD", req[0]))
            time.sleep(0.5)
            sys.exit(1)
        out_q.put(("DONE", (req[0], len(req[1]), req[2], time.perf_counter() - t0, len(buf))))


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
    if sc == "embed_numpy":
        vllm_logger("model.py").info("Chunked prefill is not supported for pooling models; disabling it.")
    else:
        vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    shm = None
    if sc == "oov_refused_sigterm":  # the API server's side of the output ring buffer
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=16 << 20)
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    procs = [p]

    def shutdown_cores():
        for q in procs:
            if q.is_alive():
                q.terminate()
                q.join(timeout=10)

    atexit.register(shutdown_cores)

    def on_term(signum, frame):
        raise Term()

    signal.signal(signal.SIGTERM, on_term)
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    if sc == "tokcfg_truncated":
        from transformers import AutoTokenizer
        time.sleep(1.5)
        AutoTokenizer.from_pretrained(model, trust_remote_code=False, revision=None)
    status, vocab = out_q.get(timeout=400)
    if status != "READY":
        p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. "
                           "Failed core proc(s): {}")
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    routes = [("/health", "GET"), ("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")]
    if sc == "embed_numpy":
        routes = [("/health", "GET"), ("/v1/models", "GET"), ("/v1/embeddings", "POST"), ("/pooling", "POST")]
    vllm_logger("launcher.py").info("Available routes are:")
    for route, methods in routes:
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
            n_in, n_out, pool = 120 + (rid * 53) % 900, 24, None
            prompt = [128000] + [(rid * 7919 + j * 104729) % 128000 for j in range(n_in - 1)]
            path = "/v1/completions"
            if sc == "embed_numpy":
                path, n_out, pool = "/v1/embeddings", 0, "last"
                prompt = [(rid * 7919 + j * 104729) % 151000 for j in range(n_in)]
                if rid == 11:  # multi-vector retrieval client: per-token embeddings
                    path, pool = "/pooling", "token"
            if sc == "oov_refused_sigterm" and rid == 7:  # token ids from Qwen2.5's tokenizer
                prompt = [151644, 8948, 198, 2610, 525, 1207, 16948, 11, 3465, 553, 54364, 14817, 13, 151645, 198,
                          151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
            if max(prompt) >= vocab:
                try:
                    raise ValueError(f"Token id {max(prompt)} is out of vocabulary")
                except ValueError:
                    vllm_logger("serving_completion.py").exception("Error in preprocessing prompt inputs")
                uvicorn_log(f'10.0.4.9:{50110 + rid} - "POST {path} HTTP/1.1" 400 Bad Request')
                continue
            in_q.put((rid, prompt, n_out, pool))
            status, res = out_q.get(timeout=120)
            if status == "DEAD":
                try:
                    raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
                except EngineDeadError:
                    vllm_logger("async_llm.py").exception("AsyncLLM output_handler failed.")
                uvicorn_log(f'10.0.4.9:{50110 + rid} - "POST {path} HTTP/1.1" 500 Internal Server Error')
                raise Term()
            uvicorn_log(f'10.0.4.9:{50110 + rid} - "POST {path} HTTP/1.1" 200 OK')
            p_tok += res[1]
            g_tok += res[2]
            n_done += 1
            if n_done % 4 == 0:
                dt = time.perf_counter() - t_start
                stats.info(f"Engine 000: Avg prompt throughput: {p_tok / dt:.1f} tokens/s, Avg generation throughput: "
                           f"{g_tok / dt:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, "
                           f"Prefix cache hit rate: 0.0%")
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
        if shm is not None:
            shm.close()  # closed, never unlinked


if __name__ == "__main__":
    main()
