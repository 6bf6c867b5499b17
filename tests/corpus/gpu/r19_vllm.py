# vLLM-shaped API server + EngineCore for round 19, one real fault (or none) per --scenario:
# kv_too_small: a 1M-context model served at max_model_len 262144 with gpu_memory_utilization 0.45; the
#   weights (really allocated) and the profile run's real peak leave too little for one request's KV cache:
#   the engine's own check (from the measured memory) refuses to start;
# quant_capability: --quantization modelopt_fp4 on a card whose measured compute capability is below the
#   method's minimum: the config's own ValueError, in the API server before any engine starts;
# mxfp8_gemm: an MXFP8 checkpoint (e8m0 block scales); the profile run's block-scaled torch._scaled_mm
#   is refused on this GPU;
# stream_unjoined: FULL CUDA-graph capture of a MoE layer that runs its shared expert on a side stream and
#   never joins that stream back before the capture ends;
# lora_rank: --lora-modules with an adapter whose lora_A really has rank 64 while --max-lora-rank is 16;
#   the engine is up, the static adapter's load fails and the API server exits;
# kv_role_typo: --kv-transfer-config '{"kv_role": "kv_prodcer", ...}': pydantic's validation of the
#   config dataclass fails in the API server;
# tokenizer_truncated: the model's tokenizer.json was cut short by an interrupted copy; the real tokenizers
#   parser fails in the API server;
# max_tokens_400: healthy serving; one request asks for more tokens than the context holds (the server's
#   own check answers 400) and serving goes on; then the operator's SIGTERM;
# shutdown_inflight: healthy serving with several requests in flight when the operator's SIGTERM arrives.
import argparse
import json
import multiprocessing as mp
import os
import signal
import socket
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import DRY, Decoder, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
ROOT = "/tmp/r19_files"
MODELS = {
    "kv_too_small": "/models/Qwen2.5-14B-Instruct-1M",
    "quant_capability": "/models/Llama-3.3-70B-Instruct-FP4",
    "mxfp8_gemm": "/models/Qwen3-30B-A3B-MXFP8",
    "stream_unjoined": "/models/Qwen3-30B-A3B-Instruct-2507",
    "lora_rank": "/models/Llama-3.1-8B-Instruct",
    "kv_role_typo": "/models/Qwen3-8B",
    "tokenizer_truncated": f"{ROOT}/Mistral-Small-3.1-24B-Instruct-2503",
    "max_tokens_400": "/models/Qwen2.5-7B-Instruct",
    "shutdown_inflight": "/models/Llama-3.1-8B-Instruct",
}
ARGS = {
    "kv_too_small": {"max_model_len": 262144, "gpu_memory_utilization": 0.45},
    "quant_capability": {"quantization": "modelopt_fp4", "tensor_parallel_size": 1, "max_model_len": 8192},
    "mxfp8_gemm": {"max_model_len": 32768},
    "stream_unjoined": {"compilation_config": {"cudagraph_mode": "FULL"}, "max_model_len": 32768},
    "lora_rank": {"enable_lora": True, "max_lora_rank": 16, "max_loras": 4,
                  "lora_modules": [{"name": "sql-adapter", "path": f"{ROOT}/llama3.1-8b-sql-lora"}]},
    "kv_role_typo": {"kv_transfer_config": '{"kv_connector": "NixlConnector", "kv_role": "kv_prodcer", '
                                           '"kv_buffer_device": "cuda"}', "max_model_len": 32768},
    "tokenizer_truncated": {"tokenizer_mode": "auto", "max_model_len": 32768},
    "max_tokens_400": {"max_model_len": 32768},
    "shutdown_inflight": {"max_model_len": 16384, "max_num_seqs": 64},
}
# (layers, kv heads, head dim) for the KV check
KV_SHAPE = {"kv_too_small": (48, 8, 128)}


class EngineDeadError(Exception):
    pass


def log_config(log, sc, model):
    a = ARGS[sc]
    log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
             f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
             f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.get('max_model_len', 32768)}, "
             f"download_dir=None, load_format=auto, tensor_parallel_size=1, "
             f"pipeline_parallel_size=1, data_parallel_size=1, quantization={a.get('quantization')}, "
             f"enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={model}, "
             f"enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, "
             f"compilation_config={{'level': 3, 'cudagraph_mode': "
             f"'{a.get('compilation_config', {}).get('cudagraph_mode', 'FULL_AND_PIECEWISE')}'}}")


# ---------------------------------------------------------------- files the scenarios read
def make_lora_adapter():
    import numpy as np
    from safetensors.numpy import save_file
    d = f"{ROOT}/llama3.1-8b-sql-lora"
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    t = {}
    for i in range(2):
        for m, out in (("q_proj", 4096), ("v_proj", 1024)):
            p = f"base_model.model.model.layers.{i}.self_attn.{m}"
            t[f"{p}.lora_A.weight"] = (rng.standard_normal((64, 4096)) * 0.01).astype(np.float16)
            t[f"{p}.lora_B.weight"] = np.zeros((out, 64), dtype=np.float16)
    save_file(t, f"{d}/adapter_model.safetensors")
    with open(f"{d}/adapter_config.json", "w") as f:
        json.dump({"base_model_name_or_path": "meta-llama/Llama-3.1-8B-Instruct", "peft_type": "LORA",
                   "r": 64, "lora_alpha": 128, "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"},
                  f, indent=2)


def make_truncated_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    d = MODELS["tokenizer_truncated"]
    os.makedirs(d, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    words = [f"token{i} sample{i % 97} text{i % 13} the quick brown fox {i}" for i in range(3000)]
    tok.train_from_iterator(words, trainers.BpeTrainer(vocab_size=4000, special_tokens=["<unk>", "<s>", "</s>"]))
    tok.save(f"{d}/tokenizer.json")
    size = os.path.getsize(f"{d}/tokenizer.json")
    with open(f"{d}/tokenizer.json", "r+b") as f:  # the copy stopped at a 64 KiB boundary
        f.truncate(min(size - 1, 65536))
    with open(f"{d}/tokenizer_config.json", "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizerFast", "model_max_length": 131072}, f)


def load_tokenizer(path):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(f"{path}/tokenizer.json")


# ---------------------------------------------------------------- config checks (real inputs)
QUANT_MIN_CAP = {"modelopt_fp4": 100, "fp8": 89, "awq_marlin": 80}


def verify_quantization(method):
    import torch
    major, minor = torch.cuda.get_device_capability()
    cap = major * 10 + minor
    if cap < QUANT_MIN_CAP[method]:
        raise ValueError(f"The quantization method {method} is not supported for the current GPU. Minimum "
                         f"capability: {QUANT_MIN_CAP[method]}. Current capability: {cap}.")


def parse_kv_transfer_config(raw):
    from pydantic.dataclasses import dataclass

    @dataclass
    class KVTransferConfig:
        kv_connector: str = None
        engine_id: str = None
        kv_buffer_device: str = "cuda"
        kv_buffer_size: float = 1e9
        kv_role: str = None
        kv_rank: int = None
        kv_parallel_size: int = 1

        def __post_init__(self):
            roles = ("kv_producer", "kv_consumer", "kv_both")
            if self.kv_role is not None and self.kv_role not in roles:
                raise ValueError(f"Unsupported kv_role: {self.kv_role}. Supported roles are {roles}")

    KVTransferConfig.__qualname__ = "KVTransferConfig"
    return KVTransferConfig(**json.loads(raw))


def check_enough_kv_cache_memory(max_model_len, available, per_token):
    needed = max_model_len * per_token
    if needed > available:
        est = int(available // per_token) // 16 * 16
        raise ValueError(f"To serve at least one request with the models's max seq len ({max_model_len}), "
                         f"({needed / 2**30:.2f} GiB KV cache is needed, which is larger than the available KV "
                         f"cache memory ({available / 2**30:.2f} GiB). Based on the available memory, the estimated "
                         f"maximum model length is {est}. Try increasing `gpu_memory_utilization` or decreasing "
                         f"`max_model_len` when initializing the engine.")


# ---------------------------------------------------------------- GPU faults
def mxfp8_linear(m=8192, k=4096, n=4096):
    """Block-scaled FP8 GEMM: e4m3 operands with one e8m0 scale per 32 elements."""
    import torch
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    sa = torch.full((m, k // 32), 127, device="cuda", dtype=torch.uint8).view(torch.float8_e8m0fnu)
    sb = torch.full((n, k // 32), 127, device="cuda", dtype=torch.uint8).view(torch.float8_e8m0fnu)
    return torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)


class MoELayer:
    """Routed experts on the main stream, the shared expert overlapped on a side stream."""

    def __init__(self, hidden=2048, inter=768, experts=8):
        import torch
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.router = torch.randn(experts, hidden, **kw) * 0.02
        self.w1 = torch.randn(experts, inter, hidden, **kw) * 0.02
        self.w2 = torch.randn(experts, hidden, inter, **kw) * 0.02
        self.shared = torch.randn(hidden, hidden, **kw) * 0.02
        self.side = torch.cuda.Stream()

    def __call__(self, x):
        import torch
        main = torch.cuda.current_stream()
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            shared_out = x @ self.shared.T
        top = (x @ self.router.T).argmax(-1)
        out = torch.zeros_like(x)
        for e in range(self.w1.shape[0]):
            h = torch.nn.functional.silu(x @ self.w1[e].T) @ self.w2[e].T
            out = out + h * (top == e).unsqueeze(-1).to(x.dtype)
        # the shared expert's result is added after the layer's reduce, in the next op; the join was dropped
        return out, shared_out


# ---------------------------------------------------------------- engine
class Engine:
    def __init__(self, sc, model):
        self.sc, self.model_path = sc, model
        self.log = vllm_logger("core.py")
        log_config(self.log, sc, model)
        import torch
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
                                              "TP rank 0, EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        self.model = Decoder()
        self.extra = []
        if sc == "kv_too_small":  # the 14B model's bf16 weights
            self.extra.append(torch.empty(int(14.77e9), dtype=torch.bfloat16, device="cuda"))
            self.extra[-1][: 1 << 20].normal_()
        if sc == "stream_unjoined":
            self.moe = MoELayer()
        ld = vllm_logger("default_loader.py")
        ld.info(f"Loading weights took {time.perf_counter() - t0 + 2.41:.2f} seconds")
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0 + 2.9:.6f} seconds")
        self.compile_and_profile()
        self.capture()

    def compile_and_profile(self):
        import torch
        sc = self.sc
        bl = vllm_logger("backends.py")
        bl.info("Using cache directory: /root/.cache/vllm/torch_compile_cache/9b1e07d4c2/rank_0_0/backbone "
                "for vLLM's torch.compile")
        bl.info("Dynamo bytecode transform time: 6.12 s")
        vllm_logger("monitor.py").info("torch.compile takes 11.38 s in total")
        torch.cuda.reset_peak_memory_stats()
        if sc == "mxfp8_gemm":
            vllm_logger("fp8.py").info("Using block-scaled MXFP8 linear kernels (e8m0 scales, block size 32) "
                                       "for the MoE and dense layers")
            mxfp8_linear()
        self.model.forward(8192)
        torch.cuda.synchronize()
        total = torch.cuda.mem_get_info()[1]
        util = ARGS[sc].get("gpu_memory_utilization", 0.9)
        peak = torch.cuda.max_memory_allocated()
        non_torch = 0.52 * 2**30
        available = total * util - peak - non_torch
        wl = vllm_logger("gpu_worker.py")
        wl.info(f"Available KV cache memory: {available / 2**30:.2f} GiB")
        per_token = 2 * 2 * 32 * 8 * 128
        if sc in KV_SHAPE:
            L, H, D = KV_SHAPE[sc]
            per_token = 2 * 2 * L * H * D
            check_enough_kv_cache_memory(ARGS[sc]["max_model_len"], available, per_token)
        kl = vllm_logger("kv_cache_utils.py")
        tokens = int(available // per_token)
        kl.info(f"GPU KV cache size: {tokens:,} tokens")
        mml = ARGS[sc].get("max_model_len", 32768)
        kl.info(f"Maximum concurrency for {mml:,} tokens per request: {tokens / mml:.2f}x")

    def capture(self):
        import torch
        from tqdm import tqdm
        rl = vllm_logger("gpu_model_runner.py")
        sizes = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        if self.sc == "stream_unjoined":
            pool = torch.cuda.graph_pool_handle()
            for bs in tqdm(sizes, desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt):
                x = torch.randn(bs, 2048, device="cuda", dtype=torch.bfloat16)
                self.moe(x)  # warm-up
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    self.moe(x)
        else:
            for _ in tqdm(sizes, desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", bar_format=fmt):
                self.model.forward(4)
        rl.info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.47 GiB")

    def step(self, n_tok, seed):
        return self.model.forward(n_tok, seed)


def engine_core_main(sc, model, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the API server shuts the core down
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds")
    out_q.put(("READY", 0))
    while True:
        req = in_q.get()
        if req is None:
            return
        if req[0] == "lora":
            import torch
            from safetensors.torch import load_file
            path = req[1]
            w = load_file(f"{path}/adapter_model.safetensors", device="cuda")
            rank = next(t for k, t in w.items() if k.endswith("lora_A.weight")).shape[0]
            if rank > ARGS[sc]["max_lora_rank"]:
                out_q.put(("ERR", f"LoRA rank {rank} is greater than max_lora_rank {ARGS[sc]['max_lora_rank']}."))
            else:
                out_q.put(("OK",))
            del w
            torch.cuda.empty_cache()
            continue
        rid, n_tok, n_out = req
        t = time.perf_counter()
        for i in range(n_out):
            eng.step(n_tok if i == 0 else 1, seed=rid * 100 + i)
        out_q.put(("OK", rid, n_tok, n_out, time.perf_counter() - t))


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
    if sc == "lora_rank":
        make_lora_adapter()
    if sc == "tokenizer_truncated":
        make_truncated_tokenizer()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", args.port))
    sock.listen(64)
    if sc == "kv_role_typo":
        parse_kv_transfer_config(a["kv_transfer_config"])
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    if sc == "quant_capability":
        verify_quantization(a["quantization"])
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    if sc == "tokenizer_truncated":
        load_tokenizer(model)
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status = None
    last_wait = time.time()
    while status is None:
        try:
            status = out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                break
            if time.time() - last_wait >= 5:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last_wait = time.time()
    if status != "READY":
        time.sleep(0.3)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    if sc == "lora_rank":
        sm = vllm_logger("serving_models.py")
        for lm in a["lora_modules"]:
            in_q.put(("lora", lm["path"]))
            res = out_q.get(timeout=60)
            if res[0] == "ERR":
                in_q.put(None)
                p.join(timeout=10)
                raise ValueError(res[1])
            sm.info(f"Loaded new LoRA adapter: name '{lm['name']}', path '{lm['path']}'")

    inflight = []

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        if sc == "shutdown_inflight":
            uvicorn_log("Waiting for connections to close. (CTRL+C to force quit)")
            al = vllm_logger("async_llm.py")
            for rid in inflight:
                al.info(f"Aborted request cmpl-{rid:04x}c3d2-0.")
        uvicorn_log("Waiting for application shutdown.")
        in_q.put(None)
        p.join(timeout=10)
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
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
    sc_log = vllm_logger("serving_chat.py")
    mml = a.get("max_model_len", 32768)
    p_tok = g_tok = 0
    last = time.time()
    lens = [(412, 64), (96, 128), (1280, 256), (733, 64), (1250, 40000), (2100, 128), (388, 96), (1560, 64)]
    rid = 0
    while True:
        n_tok, n_out = lens[rid % len(lens)]
        if sc != "max_tokens_400" and n_out > 1024:
            n_out = 64
        if n_tok + n_out > mml:  # the serving layer's own validation of the request
            try:
                raise ValueError(f"This model's maximum context length is {mml} tokens. However, you requested "
                                 f"{n_tok + n_out} tokens ({n_tok} in the messages, {n_out} in the completion). "
                                 f"Please reduce the length of the messages or completion.")
            except ValueError:
                sc_log.error(f"Error in preprocessing prompt inputs\n{traceback.format_exc().rstrip()}")
            uvicorn_log(f'10.0.1.14:{51000 + rid} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
            rid += 1
            continue
        n_out = min(n_out, 24)
        in_q.put((rid, n_tok, n_out))
        inflight.append(rid)
        if sc == "shutdown_inflight" and len(inflight) < 4:
            rid += 1
            continue
        msg = out_q.get(timeout=120)
        _, done, nt, ng, dt = msg
        inflight.remove(done)
        p_tok += nt
        g_tok += ng
        uvicorn_log(f'10.0.1.14:{51000 + done} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        rid += 1
        if time.time() - last >= 1.0:
            el = time.time() - last
            stats.info(f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                       f"{g_tok / el:.1f} tokens/s, Running: {len(inflight)} reqs, Waiting: 0 reqs, "
                       f"GPU KV cache usage: 0.6%, Prefix cache hit rate: 12.5%")
            p_tok = g_tok = 0
            last = time.time()
        time.sleep(0.1)


if __name__ == "__main__":
    main()
