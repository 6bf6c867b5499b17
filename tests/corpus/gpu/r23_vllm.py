# vLLM-shaped API server + EngineCore (+ tensor-parallel worker processes) for round 23, one real fault (or none)
# per --scenario:
# relaunch: started by a supervisor script (r23_serve.sh) that retries with a fallback configuration and
#   appends every attempt to one log. Attempt 1 asks for --tensor-parallel-size 2 on a one-GPU node: the TP1
#   worker cannot select cuda:1 (invalid device ordinal), the engine fails to start, and the TP0 worker, which
#   had already put its weights on the card, is left behind. Attempt 2 (TP 1) finds the card half taken by that
#   worker: CUDA out of memory while the KV cache is allocated. The supervisor then kills the leftover worker
#   (its pid file) and attempt 3 starts healthy and serves until the operator's SIGTERM (no crash);
# hf_offline: `vllm serve meta-llama/Llama-3.1-8B-Instruct` on a node without internet access (HF_HUB_OFFLINE=1)
#   whose HF cache does not have the model: the config cannot be resolved;
# fp8_router: --quantization fp8 (dynamic, per tensor) on a Qwen1.5-MoE-style checkpoint whose router gate (60
#   experts) is quantized too: the FP8 GEMM of the gate (N=60) fails in the profile run.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r23_common import HF_HOME, ROOT, Decoder, add_prefix, uvicorn_log, vllm_logger

VER = "0.11.2"
GiB = 1 << 30
PIDFILE = f"{ROOT}/vllm-workers.pid"
MODELS = {"relaunch": "/models/Qwen2.5-32B-Instruct-AWQ", "hf_offline": "meta-llama/Llama-3.1-8B-Instruct",
          "fp8_router": "/models/Qwen1.5-MoE-A2.7B-Chat"}


def log_config(sc, model, a):
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.max_model_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size={a.tensor_parallel_size}, pipeline_parallel_size=1, "
        f"data_parallel_size=1, quantization={a.quantization}, enforce_eager=False, kv_cache_dtype=auto, "
        f"device_config=cuda, seed=0, served_model_name={model}, enable_prefix_caching=True, "
        f"chunked_prefill_enabled=True, compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'}}"
    )


# ---------------------------------------------------------------- tensor-parallel worker (own process)
def worker_main(rank, world, frac):
    add_prefix(f"(Worker_TP{rank} pid={os.getpid()}) ")
    log = vllm_logger("multiproc_executor.py")
    try:
        import torch

        torch.cuda.set_device(rank)
        vllm_logger("parallel_state.py").info(
            f"rank {rank} in world size {world} is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {MODELS['relaunch']}...")
        total = torch.cuda.mem_get_info()[1]
        t0 = time.perf_counter()
        w = torch.empty(int(total * frac), dtype=torch.uint8, device="cuda")  # this rank's weight shards
        w[: 1 << 28].fill_(1)
        torch.cuda.synchronize()
        vllm_logger("default_loader.py").info(f"Loading weights took {time.perf_counter() - t0 + 6.3:.2f} seconds")
        vllm_logger("gpu_model_runner.py").info(
            f"Model loading took {w.numel() / GiB:.4f} GiB and {time.perf_counter() - t0 + 7.1:.6f} seconds")
        with open(PIDFILE, "a") as f:
            f.write(f"{os.getpid()}\n")
        while True:  # waits for the executor's next RPC (the peers never come)
            time.sleep(1)
    except Exception:
        log.error("WorkerProc failed to start.\n" + traceback.format_exc().rstrip())
        sys.stdout.flush()
        sys.exit(1)


# ---------------------------------------------------------------- engine core
class Engine:
    def __init__(self, sc, model, a):
        import torch

        self.sc, self.a = sc, a
        log_config(sc, model, a)
        if a.tensor_parallel_size > 1:
            self.start_workers(a.tensor_parallel_size)
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info(
            "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        total = torch.cuda.mem_get_info()[1]
        if sc == "fp8_router":
            self.load_fp8()
        else:
            self.weights = torch.empty(int(total * 0.20), dtype=torch.uint8, device="cuda")  # AWQ weights
            self.weights[: 1 << 28].fill_(1)
        self.dec = Decoder()
        torch.cuda.synchronize()
        vllm_logger("default_loader.py").info(f"Loading weights took {time.perf_counter() - t0 + 5.2:.2f} seconds")
        used = torch.cuda.memory_allocated()
        rl.info(f"Model loading took {used / GiB:.4f} GiB and {time.perf_counter() - t0 + 5.9:.6f} seconds")
        vllm_logger("backends.py").info("Using cache directory: /root/.cache/vllm/torch_compile_cache/3f1c2a9e01/rank_0_0/backbone for vLLM's torch.compile")
        vllm_logger("monitor.py").info("torch.compile takes 21.37 s in total")
        self.profile()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        kv = int(a.gpu_memory_utilization * total) - peak - int(0.4 * GiB)
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {kv / GiB:.2f} GiB")
        per_token = 2 * 64 * 8 * 128 * 2
        vllm_logger("kv_cache_utils.py").info(f"GPU KV cache size: {kv // per_token:,} tokens")
        vllm_logger("kv_cache_utils.py").info(
            f"Maximum concurrency for {a.max_model_len:,} tokens per request: {kv / per_token / a.max_model_len:.2f}x")
        self.kv = torch.empty(kv, dtype=torch.uint8, device="cuda")
        self.capture()

    def start_workers(self, world):
        vllm_logger("multiproc_executor.py").info(
            "Use NCCL for DP synchronization. Starting worker processes (world_size=%d)." % world)
        procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(r), str(world)])
                 for r in range(world)]
        t_end = time.time() + 90
        while time.time() < t_end:
            for r, p in enumerate(procs):
                if p.poll() is not None:
                    raise Exception("WorkerProc initialization failed due to an exception in a background process. "
                                    "See stack trace for root cause.")
            time.sleep(0.2)
        raise TimeoutError("timed out waiting for the workers")

    def load_fp8(self):
        import torch

        vllm_logger("fp8.py").info("Using dynamic per-tensor FP8 quantization for the linear layers (activation_scheme=dynamic)")
        g = torch.Generator(device="cuda").manual_seed(0)
        self.fp8 = {}
        for i in range(4):
            for name, n, k in (("mlp.gate", 60, 2048), ("mlp.shared_expert.gate_up_proj", 11264, 2048),
                               ("mlp.shared_expert.down_proj", 2048, 5632), ("self_attn.qkv_proj", 6144, 2048)):
                w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) * 0.02
                scale = (w.abs().max().float() / 448.0).reshape(())
                self.fp8[f"model.layers.{i}.{name}"] = ((w / scale).to(torch.float8_e4m3fn), scale)

    def fp8_linear(self, x, name):
        import torch

        w, w_scale = self.fp8[name]
        x_scale = (x.abs().max().float() / 448.0).clamp(min=1e-12).reshape(())
        xq = (x / x_scale).to(torch.float8_e4m3fn)
        return torch._scaled_mm(xq, w.t(), scale_a=x_scale, scale_b=w_scale, out_dtype=torch.bfloat16)

    def profile(self):
        import torch

        ids = torch.randint(0, 32000, (8192,), device="cuda")
        if self.sc == "fp8_router":
            h = self.dec.emb[ids]
            for i in range(4):
                qkv = self.fp8_linear(h, f"model.layers.{i}.self_attn.qkv_proj")
                h = h + qkv[:, :2048]
                router_logits = self.fp8_linear(h, f"model.layers.{i}.mlp.gate")
                topk = torch.topk(router_logits.float().softmax(-1), 4, dim=-1)
                gu = self.fp8_linear(h, f"model.layers.{i}.mlp.shared_expert.gate_up_proj")
                g_, u = gu.chunk(2, -1)
                h = h + self.fp8_linear(torch.nn.functional.silu(g_) * u, f"model.layers.{i}.mlp.shared_expert.down_proj") * topk.values[:, :1].to(h.dtype)
            return h
        return self.dec.forward(8192)

    def capture(self):
        import torch
        from tqdm import tqdm

        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        self.graphs = {}
        pool = torch.cuda.graph_pool_handle()
        for bs in tqdm([64, 32, 16, 8, 4, 2, 1], desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", bar_format=fmt):
            ids = torch.zeros(bs, dtype=torch.long, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                self.decode(ids)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                out = self.decode(ids)
            self.graphs[bs] = (g, ids, out)
        vllm_logger("gpu_model_runner.py").info(
            f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.42 GiB")

    def decode(self, ids):
        import torch

        d = self.dec
        h = d.emb[ids]
        for L in d.layers:
            g_, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        return (h @ d.head.T).argmax(-1)

    def step(self, bs, n_out, seed):
        import torch

        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, 32000, (bs,), device="cuda", generator=g)
        self.dec.forward(700 + seed % 500, seed=seed)  # the prefill
        toks = []
        for _ in range(n_out):
            graph, sid, out = self.graphs[next(b for b in sorted(self.graphs) if b >= bs)]
            sid[:bs].copy_(ids)
            graph.replay()
            ids = out[:bs].clone()
            toks.append(ids)
        return torch.stack(toks, 1).cpu().tolist()


def engine_core_main(sc, model, a, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")

    def on_signal(signum, frame):
        raise SystemExit()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model, a)
    except SystemExit:
        return
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds")
    out_q.put(("READY", 0))
    try:
        while True:
            req = in_q.get()
            if req is None:
                return
            _, rid, kw = req
            out_q.put(("DONE", rid, eng.step(seed=rid, **kw)))
    except SystemExit:
        return


def resolve_config(model):
    """What `vllm serve` does first in the API server: read the model's config.json (transformers)."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model, trust_remote_code=False, revision=None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--attempt", type=int, default=1)
    ap.add_argument("--tensor-parallel-size", type=int, default=1)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--max-model-len", type=int, default=32768)
    ap.add_argument("--quantization", default=None)
    a = ap.parse_args()
    sc = a.scenario
    model = MODELS[sc]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    nd = {"model_tag": model, "port": a.port, "model": model}
    if a.tensor_parallel_size != 1:
        nd["tensor_parallel_size"] = a.tensor_parallel_size
    if a.quantization:
        nd["quantization"] = a.quantization
    nd["gpu_memory_utilization"] = a.gpu_memory_utilization
    nd["max_model_len"] = a.max_model_len
    log.info(f"non-default args: {nd}")
    if sc == "hf_offline":
        resolve_config(model)
    arch = {"fp8_router": "Qwen2MoeForCausalLM", "hf_offline": "LlamaForCausalLM"}.get(sc, "Qwen2ForCausalLM")
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    if sc == "relaunch":
        vllm_logger("awq_marlin.py").info("The model is convertible to awq_marlin during runtime. Using awq_marlin kernel.")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, a, in_q, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status, last = None, time.time()
    while status is None:
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
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics"):
        log.info(f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics') else 'POST'}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    last, port, p_tok, g_tok = time.time(), 41872, 0, 0
    for rid in range(1, 2000):
        port += 1
        in_q.put(("gen", rid, {"bs": 4, "n_out": 24}))
        r = out_q.get(timeout=120)
        for i in range(4):
            uvicorn_log(f'10.42.0.17:{port + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        p_tok += 4 * (700 + rid % 500)
        g_tok += 4 * 24
        time.sleep(0.3)
        if time.time() - last >= 5.0:
            el = time.time() - last
            stats.info(
                f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                f"{g_tok / el:.1f} tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.4%, "
                f"Prefix cache hit rate: 12.5%")
            p_tok = g_tok = 0
            last = time.time()
        del r


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(int(sys.argv[2]), int(sys.argv[3]), 0.5)
    else:
        if "--scenario" in sys.argv and "hf_offline" in sys.argv:
            os.environ.setdefault("HF_HOME", HF_HOME)
        main()
