# vLLM-shaped API server + EngineCore for round 22, one real fault (or none) per --scenario:
# illegal_cancel: serving with several requests in flight; the paged-KV write kernel (Triton) reads the block
#   table of the batch, which the model runner allocates with torch.empty and fills only up to each request's
#   allocated blocks; a long prompt's prefill chunk reads entries past them (recycled memory of the previous
#   step's float32 logits buffer): the store goes far outside the KV cache (illegal memory access); the engine
#   core dies and the API server aborts the requests still in flight;
# topk_oom: a 262k-vocabulary model served with gpu_memory_utilization 0.92; the profile run measured a greedy
#   batch only, and the KV cache took the rest; the first large batch with top-k/top-p sampling sorts the
#   whole float32 logits (values + int64 indices): CUDA out of memory in the sampler while serving;
# lora_copy: --enable-lora --max-lora-rank 64 with a static adapter whose adapter_config.json says r=16 while
#   its tensors have rank 32 (the config was copied from another adapter): the engine's copy of lora_A into
#   the adapter slot fails when the API server registers the adapter after start-up;
# sigint_loading: healthy start; the operator's Ctrl-C (SIGINT to the whole process group, r22_run.sh) arrives
#   while the engine core loads the checkpoint shards (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r22_common import LORA_DIR, SHARDS_DIR, add_prefix, uvicorn_log, vllm_logger

VER = "0.11.2"
GiB = 1 << 30
MODELS = {
    "illegal_cancel": "/models/Meta-Llama-3.1-8B-Instruct",
    "topk_oom": "/models/gemma-3-12b-it",
    "lora_copy": "/models/Qwen2.5-7B-Instruct",
    "sigint_loading": SHARDS_DIR,
}
ARGS = {
    "illegal_cancel": {"max_model_len": 65536, "max_num_batched_tokens": 8192, "block_size": 16},
    "topk_oom": {"gpu_memory_utilization": 0.92, "max_model_len": 8192, "max_num_seqs": 1024},
    "lora_copy": {
        "enable_lora": True,
        "max_lora_rank": 64,
        "max_loras": 4,
        "lora_modules": [{"name": "sql", "path": LORA_DIR}],
        "max_model_len": 16384,
    },
    "sigint_loading": {"max_model_len": 32768, "tensor_parallel_size": 1},
}
VOCAB = {"topk_oom": 262144}


class EngineDeadError(Exception):
    pass


def log_config(sc, model):
    a = ARGS[sc]
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.get('max_model_len')}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
        f"compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'}}"
    )


# ---------------------------------------------------------------- engine core (real GPU work)
class Engine:
    def __init__(self, sc, model):
        import torch

        self.sc = sc
        log_config(sc, model)
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info(
            "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0"
        )
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        self.vocab = VOCAB.get(sc, 32000)
        g = torch.Generator(device="cuda").manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16, generator=g)
        self.emb = torch.randn(self.vocab, 2048, **kw) * 0.02
        self.layers = [
            (torch.randn(11264, 2048, **kw) * 0.02, torch.randn(2048, 5632, **kw) * 0.02)
            for _ in range(6)
        ]
        self.head = torch.randn(self.vocab, 2048, **kw) * 0.02
        if sc == "sigint_loading":
            self.load_shards(SHARDS_DIR)
        vllm_logger("default_loader.py").info(
            f"Loading weights took {time.perf_counter() - t0:.2f} seconds"
        )
        rl.info(
            f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and "
            f"{time.perf_counter() - t0 + 0.4:.6f} seconds"
        )
        self.hidden(
            torch.randint(0, self.vocab, (8192,), device="cuda")
        )  # the profile run: greedy, hidden only
        self.greedy(torch.zeros(256, dtype=torch.long, device="cuda"))
        torch.cuda.synchronize()
        free = torch.cuda.mem_get_info()[0]
        # topk_oom: gpu_memory_utilization 0.92; the profile's (greedy) peak is already counted
        kv = max(free - 3 * GiB, GiB) if sc == "topk_oom" else min(4 * GiB, int(free * 0.5))
        self.kv = torch.zeros(kv // 4, dtype=torch.float32, device="cuda")
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {kv / GiB:.2f} GiB")
        per_token = 2 * 2 * 32 * 8 * 128
        vllm_logger("kv_cache_utils.py").info(f"GPU KV cache size: {kv // per_token:,} tokens")
        mml = ARGS[sc]["max_model_len"]
        vllm_logger("kv_cache_utils.py").info(
            f"Maximum concurrency for {mml:,} tokens per request: {kv / per_token / mml:.2f}x"
        )
        self.capture()
        if sc == "lora_copy":
            a = ARGS[sc]
            n_mod = 16
            self.lora_a = torch.zeros(a["max_loras"], n_mod, a["max_lora_rank"], 2048, **_kw())
            self.lora_b = torch.zeros(a["max_loras"], n_mod, 2048, a["max_lora_rank"], **_kw())
            vllm_logger("punica_selector.py").info("Using PunicaWrapperGPU.")

    def load_shards(self, folder):
        import json

        from safetensors import safe_open
        from tqdm import tqdm

        with open(f"{folder}/model.safetensors.index.json") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        fmt = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        self.loaded = {}
        for fn in tqdm(files, desc="Loading safetensors checkpoint shards", bar_format=fmt):
            with safe_open(f"{folder}/{fn}", framework="pt", device="cpu") as f:
                for name in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                    self.loaded[name] = f.get_tensor(name).cuda()
                    time.sleep(
                        0.6
                    )  # the per-parameter weight_loader (sharding, fusing, quantization checks)

    def capture(self):
        import torch
        from tqdm import tqdm

        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        self.graphs = {}
        pool = torch.cuda.graph_pool_handle()
        for bs in tqdm(
            [64, 32, 16, 8, 4, 2, 1], desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt
        ):
            ids = torch.zeros(bs, dtype=torch.long, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                self.greedy(ids)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                out = self.greedy(ids)
            self.graphs[bs] = (g, ids, out)
        vllm_logger("gpu_model_runner.py").info(
            f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.31 GiB"
        )

    def hidden(self, ids):
        import torch

        h = self.emb[ids]
        for gu_w, d_w in self.layers:
            g_, u = (h @ gu_w.T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ d_w.T
        return h

    def greedy(self, ids):
        return (self.hidden(ids) @ self.head.T).argmax(-1)

    # ---- the sampler (vLLM's apply_top_k_top_p sorts the full logits)
    def sample(self, ids, top_k, top_p, temperature):
        import torch

        logits = (self.hidden(ids) @ self.head.T).float() / temperature
        logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
        kth = logits_sort.gather(-1, (logits_sort.size(1) - top_k).view(-1, 1))
        logits_sort.masked_fill_(logits_sort < kth, -float("inf"))
        probs_sort = logits_sort.softmax(dim=-1)
        cum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
        logits_sort.masked_fill_(cum <= 1 - top_p.view(-1, 1), -float("inf"))
        logits = logits.scatter_(dim=-1, index=logits_idx, src=logits_sort)
        q = torch.empty_like(logits).exponential_()
        return (logits.softmax(-1) / q).argmax(-1)

    # ---- paged KV write for a prefill chunk (Triton)
    def write_kv(self, n_tokens, n_blocks_alloc, block_size=16):
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def reshape_and_cache(
            kv_ptr, src_ptr, block_table_ptr, n, BLOCK_SIZE: tl.constexpr, BLOCK: tl.constexpr
        ):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            blk = tl.load(block_table_ptr + offs // BLOCK_SIZE, mask=m)
            slot = blk * BLOCK_SIZE + offs % BLOCK_SIZE
            v = tl.load(src_ptr + offs, mask=m)
            tl.store(kv_ptr + slot, v, mask=m)

        n_blk = (n_tokens + block_size - 1) // block_size
        scratch = torch.randn(n_blk * 2, device="cuda")  # the previous step's logits staging buffer
        del scratch
        table = torch.empty(
            n_blk, dtype=torch.int64, device="cuda"
        )  # recycled block of the caching allocator
        table[:n_blocks_alloc] = torch.arange(
            n_blocks_alloc, device="cuda"
        )  # only the allocated blocks
        src = torch.randn(n_tokens, device="cuda")
        reshape_and_cache[(triton.cdiv(n_tokens, 1024),)](
            self.kv, src, table, n_tokens, BLOCK_SIZE=block_size, BLOCK=1024
        )

    def step(self, bs, n_out, seed, mode="greedy", prompt_len=0, alloc_blocks=0):
        import torch

        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, self.vocab, (bs,), device="cuda", generator=g)
        if prompt_len:
            self.write_kv(min(prompt_len, 8192), alloc_blocks)
        if mode == "sample":
            top_k = torch.full((bs,), 64, device="cuda")
            top_p = torch.full((bs,), 0.95, device="cuda")
            toks = [self.sample(ids, top_k, top_p, 0.8) for _ in range(n_out)]
            return torch.stack(toks, 1).cpu().tolist()
        toks = []
        for _ in range(n_out):
            if bs <= 64:
                graph, sid, out = self.graphs[next(b for b in sorted(self.graphs) if b >= bs)]
                sid[:bs].copy_(ids)
                graph.replay()
                ids = out[:bs].clone()
            else:
                ids = self.greedy(ids)
            toks.append(ids)
        return torch.stack(toks, 1).cpu().tolist()

    def add_lora(self, slot, path):
        import json

        from safetensors.torch import load_file

        with open(f"{path}/adapter_config.json") as f:
            cfg = json.load(f)
        r = cfg["r"]
        vllm_logger("worker_manager.py").info(
            f"Loading LoRA adapter from {path} (rank {r}, targets {cfg['target_modules']})"
        )
        w = load_file(f"{path}/adapter_model.safetensors", device="cuda")
        names = sorted(k for k in w if "lora_A" in k)
        for i, name in enumerate(names):
            self.lora_a[slot, i, :r].copy_(w[name])
            self.lora_b[slot, i, :, :r].copy_(w[name.replace("lora_A", "lora_B")])


def _kw():
    import torch

    return dict(device="cuda", dtype=torch.bfloat16)


def engine_core_main(sc, model, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")

    def on_signal(signum, frame):  # vLLM's engine core: SIGTERM / SIGINT end the busy loop
        raise SystemExit()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model)
    except SystemExit:
        return  # "EngineCore exiting." is a debug line
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(
        f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds"
    )
    out_q.put(("READY", 0))
    try:
        while True:
            req = in_q.get()
            if req is None:
                return
            if req[0] == "lora":
                eng.add_lora(1, req[1])
                out_q.put(("OK", None))
                continue
            _, rid, kw = req
            out_q.put(("DONE", rid, eng.step(seed=rid, **kw)))
    except SystemExit:
        return
    except Exception:
        log.error("EngineCore encountered a fatal error.\n" + traceback.format_exc().rstrip())
        sys.stdout.flush()
        time.sleep(0.2)
        sys.exit(1)


def get_reply(p, out_q, timeout=120):
    t_end = time.time() + timeout
    while time.time() < t_end:
        try:
            return out_q.get(timeout=0.5)
        except Exception:
            if not p.is_alive():
                vllm_logger("core_client.py").error(
                    "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
                )
                return ("ENGINE_CORE_DEAD", p.exitcode)
    return ("TIMEOUT", None)


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
    arch = {"topk_oom": "Gemma3ForConditionalGeneration", "illegal_cancel": "LlamaForCausalLM"}.get(
        sc, "Qwen2ForCausalLM"
    )
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    vllm_logger("model.py").info(f"Using max model len {a['max_model_len']}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    if sc == "topk_oom":
        vllm_logger("__init__.py").warning(
            "Default sampling parameters have been overridden by the model's "
            "Hugging Face generation config recommended from the model creator. "
            "If this is not intended, please relaunch vLLM instance with "
            "`--generation-config vllm`."
        )
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    last = time.time()
    status = None
    while status is None:  # a KeyboardInterrupt here is the operator's Ctrl-C
        try:
            status = out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                break
            if time.time() - last >= 10:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last = time.time()
    if status != "READY":
        time.sleep(0.3)
        raise RuntimeError(
            "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
        )

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        in_q.put(None)
        p.join(timeout=10)
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)

    def dead(in_flight, ctx_msg):
        try:
            raise EngineDeadError(
                "EngineCore encountered an issue. See stack trace (above) for the root cause."
            )
        except EngineDeadError:
            vllm_logger(ctx_msg[0]).error(f"{ctx_msg[1]}\n{traceback.format_exc().rstrip()}")
        for rid, port in in_flight:
            vllm_logger("async_llm.py").info(f"Request chatcmpl-{rid:08x} aborted.")
            uvicorn_log(
                f'10.0.3.7:{port} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error'
            )
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        sys.exit(1)

    if sc == "lora_copy":  # the static --lora-modules are registered once the engine is up
        vllm_logger("serving_models.py").info(f"Loading static LoRA adapter 'sql' from {LORA_DIR}")
        in_q.put(("lora", LORA_DIR))
        r = get_reply(p, out_q)
        if r[0] != "OK":
            dead([], ("serving_models.py", "Failed to load static LoRA adapter 'sql'."))
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics"):
        log.info(
            f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics') else 'POST'}"
        )
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    last = time.time()
    port = 50211
    p_tok = g_tok = 0
    for rid in range(1, 400):
        port += 1
        kw = {"bs": 8, "n_out": 16}
        if (
            sc == "illegal_cancel" and rid == 9
        ):  # a 41k-token document; its blocks are allocated chunk by chunk
            kw = {"bs": 8, "n_out": 4, "prompt_len": 41230, "alloc_blocks": 8192 // 16 // 4}
        elif sc == "illegal_cancel":
            kw = {"bs": 8, "n_out": 16, "prompt_len": 1024, "alloc_blocks": 64}
        if sc == "topk_oom":
            bs = min(64 * rid, 1024)
            kw = {"bs": bs, "n_out": 4, "mode": "sample" if rid >= 4 else "greedy"}
        in_q.put(("gen", rid, kw))
        r = get_reply(p, out_q)
        if r[0] != "DONE":
            in_flight = [
                (rid + 0x3F10 * i, port + i) for i in range(5 if sc == "illegal_cancel" else 3)
            ]
            dead(in_flight, ("async_llm.py", "AsyncLLM output_handler failed."))
        n = kw["bs"] if sc == "topk_oom" else 1
        for i in range(min(n, 6)):
            uvicorn_log(f'10.0.3.7:{port + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        p_tok += kw.get("prompt_len", 800) * n
        g_tok += kw["n_out"] * n
        time.sleep(0.2)
        if time.time() - last >= 2.0:
            el = time.time() - last
            stats.info(
                f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                f"{g_tok / el:.1f} tokens/s, Running: {n} reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, "
                f"Prefix cache hit rate: 31.5%"
            )
            p_tok = g_tok = 0
            last = time.time()


if __name__ == "__main__":
    main()
