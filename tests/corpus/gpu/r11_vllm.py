# vLLM-shaped API server + EngineCore_DP0 (+ Worker_TP* for TP=2) meeting real GPU faults (round 11):
# graph_tp2: two workers capture CUDA graphs of a MoE layer whose routing calls .tolist() (a sync) in capture;
# safetensors: shard 2 of 2 is a git-lfs pointer file, not the weights (safetensors header error);
# dead_misaligned: ready and serving, then an fp8-KV dequant kernel reads float4 at an 8-byte offset
#   (misaligned address): EngineCore fatal error, API server's EngineDeadError, shutdown;
# healthy_sigint: ready with warnings, serving with stats, then the operator's Ctrl-C.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes_common import add_prefix, uvicorn_log, vllm_logger  # noqa: E402

MODEL = "/models/Qwen3-30B-A3B"
CKPT = "/tmp/r11_models/Qwen3-30B-A3B"
VER = "0.11.0"


def make_checkpoint():
    import torch
    from safetensors.torch import save_file
    os.makedirs(CKPT, exist_ok=True)
    save_file({f"model.layers.{i}.mlp.gate_up_proj.weight": torch.randn(512, 256) for i in range(4)},
              f"{CKPT}/model-00001-of-00002.safetensors")
    with open(f"{CKPT}/model-00002-of-00002.safetensors", "w") as f:  # what a clone without git-lfs leaves
        f.write("version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:3c2b5e1b7a9f0c4d8e6a2f1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d\n"
                "size 4983487816\n")


class MoE:
    def __init__(self, hidden=1024, experts=16):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.E = experts
        self.w_router = torch.randn(hidden, experts, **kw) * 0.05
        self.w_exp = torch.randn(experts, hidden, hidden, **kw) * 0.03
        self.static_in = torch.randn(512, hidden, **kw)

    def forward(self, x):
        import torch
        topk = (x @ self.w_router).topk(2, dim=-1).indices.flatten()
        counts = torch.zeros(self.E, device=x.device, dtype=torch.int64)
        counts.scatter_add_(0, topk, torch.ones_like(topk))
        order = topk.argsort()
        xs = x.repeat_interleave(2, dim=0)[order]
        outs = [chunk @ self.w_exp[e] for e, chunk in enumerate(torch.split(xs, counts.tolist()))]
        return torch.cat(outs)


class Worker:
    def __init__(self, rank):
        import torch
        self.log = vllm_logger("gpu_model_runner.py")
        torch.cuda.set_device(0)
        self.log.info(f"Starting to load model {MODEL}...")
        self.model = MoE()
        self.log.info(f"Model loading took 28.47 GiB and 9.81 seconds")

    def compile_or_warm_up_model(self):
        import torch
        from tqdm import tqdm
        sizes = [512, 504, 496, 488, 480, 472, 464, 456, 448, 440, 432, 424, 416, 408, 400, 392, 384, 376,
                 368, 360, 352, 344, 336, 328, 320, 312, 304, 296, 288, 280, 272, 264, 256, 248, 240, 232,
                 224, 216, 208, 200, 192, 184, 176, 168, 160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80,
                 72, 64, 56, 48, 40, 32, 24, 16, 8, 4, 2, 1]
        pool = torch.cuda.graph_pool_handle()
        for bs in tqdm(sizes, desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"):
            x = self.model.static_in[:bs]
            self.model.forward(x)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                self.model.forward(x)


def worker_main(rank, rpc_q, res_q):
    add_prefix(f"(Worker_TP{rank} pid={os.getpid()}) ")
    log = vllm_logger("multiproc_executor.py")
    w = Worker(rank)
    res_q.put(("READY", rank))
    while True:
        method = rpc_q.get()
        if method is None:
            return
        try:
            getattr(w, method)()
            res_q.put(("SUCCESS", None))
        except Exception as e:
            log.exception("WorkerProc hit an exception.")
            res_q.put(("FAILURE", str(e)))


class MultiprocExecutor:
    def __init__(self, tp):
        ctx = mp.get_context("spawn")
        self.rpc_qs = [ctx.Queue() for _ in range(tp)]
        self.res_q = ctx.Queue()
        self.procs = []
        for r in range(tp):
            p = ctx.Process(target=worker_main, args=(r, self.rpc_qs[r], self.res_q), name=f"VllmWorker-{r}", daemon=True)
            p.start()
            self.procs.append(p)
        for _ in range(tp):
            self.res_q.get(timeout=300)

    def collective_rpc(self, method):
        for q in self.rpc_qs:
            q.put(method)
        for _ in self.rpc_qs:
            status, result = self.res_q.get(timeout=300)
            if status != "SUCCESS":
                raise RuntimeError(f"Worker failed with error '{result}', please check the stack trace above for the root cause")

    def shutdown(self):
        for p in self.procs:
            p.kill()


MISALIGNED_SRC = r'''
extern "C" __global__ void dequant_fp8_kv(const unsigned char* src, float* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = *reinterpret_cast<const float4*>(src + 16 * (long)i);
    dst[i] = v.x + v.y + v.z + v.w;
  }
}
'''


class EngineCore:
    def __init__(self, scenario, tp):
        import torch
        self.log = vllm_logger("core.py")
        self.scenario = scenario
        self.log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{MODEL}', speculative_config=None, "
                      f"tokenizer='{MODEL}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                      f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=40960, download_dir=None, "
                      f"load_format=auto, tensor_parallel_size={tp}, pipeline_parallel_size=1, "
                      f"quantization=None, enforce_eager=False, kv_cache_dtype={'fp8_e4m3' if scenario == 'dead_misaligned' else 'auto'}, "
                      f"device_config=cuda, seed=0, served_model_name={MODEL}, enable_prefix_caching=True")
        self.executor = None
        if tp > 1:
            vllm_logger("shm_broadcast.py").info("vLLM message queue communication handle: Handle(local_reader_ranks=[0, 1], buffer_handle=(2, 16777216, 10, 'psm_5a1f0c2e'), local_subscribe_addr='ipc:///tmp/6b0e7e4c-2c4d-4f3b-9d0a-ccf1d2e0b8aa', remote_subscribe_addr=None, remote_addr_ipv6=False)")
            self.executor = MultiprocExecutor(tp)
            vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 812,144 tokens")
            vllm_logger("kv_cache_utils.py").info("Maximum concurrency for 40,960 tokens per request: 19.83x")
            self.executor.collective_rpc("compile_or_warm_up_model")
            return
        torch.cuda.set_device(0)
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {MODEL}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        if scenario == "healthy_sigint":
            torch.backends.cuda.matmul.allow_tf32 = True
        if scenario == "safetensors":
            self.load_weights()
        self.model = MoE()
        rl.info("Model loading took 56.93 GiB and 14.27 seconds")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 421,312 tokens")
        vllm_logger("kv_cache_utils.py").info("Maximum concurrency for 40,960 tokens per request: 10.29x")
        x = self.model.static_in[:64]
        for _ in range(3):
            self.model.forward(x)
        torch.cuda.synchronize()
        rl.info("Graph capturing finished in 7 secs, took 0.62 GiB")
        self.log.info("init engine (profile, create kv cache, warmup model) took 21.37 seconds")
        if scenario == "dead_misaligned":
            import cupy
            self.cp = cupy
            self.kern = cupy.RawKernel(MISALIGNED_SRC, "dequant_fp8_kv")
            self.kv = torch.zeros(1 << 20, device="cuda", dtype=torch.uint8)
            self.deq = torch.empty(1 << 14, device="cuda", dtype=torch.float32)

    def load_weights(self):
        import glob
        import torch
        from safetensors import safe_open
        from tqdm import tqdm
        files = sorted(glob.glob(f"{CKPT}/*.safetensors"))
        bar = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]\n"
        for fn in tqdm(files, desc="Loading safetensors checkpoint shards", bar_format=bar):
            with safe_open(fn, framework="pt", device="cpu") as f:
                for name in f.keys():
                    f.get_tensor(name).to("cuda", non_blocking=True)

    def step(self, n_in, n_out, kv_offset):
        import torch
        x = self.model.static_in[:min(n_in, 512)]
        self.model.forward(x)
        for i in range(n_out):
            if self.scenario == "dead_misaligned" and i == 3:
                with self.cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                    src = self.cp.from_dlpack(self.kv)[kv_offset:]
                    dst = self.cp.from_dlpack(self.deq)
                    self.kern((64,), (256,), (src, dst, self.cp.int32(self.deq.numel())))
            self.model.forward(self.model.static_in[:8])
        torch.cuda.synchronize()


def engine_core_main(scenario, tp, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    try:
        core = EngineCore(scenario, tp)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 1))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", 0))
    try:
        while True:
            req = in_q.get()
            if req is None:
                log.info("Shutdown requested, EngineCore exiting.")
                return
            rid, n_in, n_out, kv_offset = req
            t0 = time.perf_counter()
            core.step(n_in, n_out, kv_offset)
            out_q.put(("DONE", (rid, n_in, n_out, time.perf_counter() - t0)))
    except Exception:
        log.exception("EngineCore encountered a fatal error.")
        out_q.put(("ENGINE_CORE_DEAD", None))
        sys.exit(1)


class EngineDeadError(Exception):
    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["graph_tp2", "safetensors", "dead_misaligned", "healthy_sigint"], required=True)
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    tp = 2 if args.scenario == "graph_tp2" else 1
    if args.scenario == "safetensors":
        make_checkpoint()
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {{'model_tag': '{MODEL}', 'model': '{CKPT if args.scenario == 'safetensors' else MODEL}', "
             f"'port': {args.port}, 'max_model_len': 40960, 'tensor_parallel_size': {tp}"
             f"{', ' + chr(39) + 'kv_cache_dtype' + chr(39) + ': ' + chr(39) + 'fp8' + chr(39) if args.scenario == 'dead_misaligned' else ''}}}")
    vllm_logger("model.py").info("Resolved architecture: Qwen3MoeForCausalLM")
    vllm_logger("model.py").info("Using max model len 40960")
    if args.scenario == "healthy_sigint":
        vllm_logger("arg_utils.py").warning("The global random seed is set to 0. Since VLLM_ENABLE_V1_MULTIPROCESSING is set to False, this may affect the random state of the Python process that launched vLLM.")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=engine_core_main, args=(args.scenario, tp, in_q, out_q), name="EngineCore_DP0")
    proc.start()
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status, _ = out_q.get(timeout=400)
    if status != "READY":
        proc.join(timeout=10)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    if args.scenario == "healthy_sigint":
        import torch
        warm = torch.ones(4)
        torch.tensor(warm)  # the serving frontend's logits-processor setup copy-constructs a tensor
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    vllm_logger("launcher.py").info("Available routes are:")
    for route, methods in [("/health", "GET"), ("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")]:
        vllm_logger("launcher.py").info(f"Route: {route}, Methods: {methods}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    reqs = [(i, 180 + 37 * i, 48, 0) for i in range(8)]
    if args.scenario == "dead_misaligned":
        reqs[5] = (5, 377, 48, 8)
    p_tok = g_tok = 0
    t_start = time.perf_counter()
    try:
        for rid, n_in, n_out, off in reqs:
            time.sleep(0.25)
            in_q.put((rid, n_in, n_out, off))
            status, res = out_q.get(timeout=120)
            if status == "ENGINE_CORE_DEAD":
                try:
                    raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
                except EngineDeadError:
                    vllm_logger("async_llm.py").exception("AsyncLLM output_handler failed.")
                uvicorn_log(f'127.0.0.1:{40100 + rid} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
                uvicorn_log("Shutting down")
                uvicorn_log("Waiting for application shutdown.")
                uvicorn_log("Application shutdown complete.")
                uvicorn_log(f"Finished server process [{os.getpid()}]")
                proc.join(timeout=10)
                sys.exit(1)
            uvicorn_log(f'127.0.0.1:{40100 + rid} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
            p_tok += res[1]
            g_tok += res[2]
            if rid % 4 == 3:
                dt = time.perf_counter() - t_start
                stats.info(f"Engine 000: Avg prompt throughput: {p_tok / dt:.1f} tokens/s, Avg generation throughput: "
                           f"{g_tok / dt:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.3%, "
                           f"Prefix cache hit rate: 0.0%")
                p_tok = g_tok = 0
                t_start = time.perf_counter()
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        in_q.put(None)
        proc.join(timeout=10)


if __name__ == "__main__":
    main()
