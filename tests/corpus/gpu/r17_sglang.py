# sglang-shaped launcher + scheduler children (round 17), one real fault per --scenario:
# autotune_capture: TP=2; the MLP's fused silu-and-mul is a @triton.autotune kernel keyed on the token count;
#   the graph runner warms up once at the largest batch size only, so the first captured batch size is a new
#   autotune key: the autotuner benchmarks inside the capture and its device synchronize is refused
#   (both ranks at once); sglang wraps it as "Capture cuda graph failed";
# unknown_model_type: the model folder's config.json names a model_type newer than the installed
#   transformers; the scheduler's model config load fails after torch distributed init.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r17_common import NEWTYPE, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "autotune_capture": "/models/Qwen3-30B-A3B-Instruct-2507",
    "unknown_model_type": NEWTYPE,
}
EXTRA = {
    "autotune_capture": ", mem_fraction_static=0.85, cuda_graph_max_bs=64, disable_cuda_graph=False, "
                        "enable_torch_compile=False, moe_runner_backend='triton'",
    "unknown_model_type": ", mem_fraction_static=0.88, trust_remote_code=False, disable_cuda_graph=False",
}
TP = {"autotune_capture": 2}
CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def silu_and_mul_kernel():
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK_N": bn}, num_warps=w) for bn, w in
                              [(256, 2), (512, 4), (1024, 4), (2048, 8)]],
                     key=["M", "N"])
    @triton.jit
    def act_and_mul_kernel(x_ptr, out_ptr, M, N, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        col = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        m = col < N
        g = tl.load(x_ptr + row * 2 * N + col, mask=m, other=0.0).to(tl.float32)
        u = tl.load(x_ptr + row * 2 * N + N + col, mask=m, other=0.0).to(tl.float32)
        y = g / (1.0 + tl.exp(-g)) * u
        tl.store(out_ptr + row * N + col, y.to(out_ptr.dtype.element_ty), mask=m)

    return act_and_mul_kernel


class Model:
    """A few MoE-free decoder MLP layers (random weights) split over tp ranks; the activation is the Triton kernel."""

    def __init__(self, tp, vocab=151936, hidden=2048, inter=6144, layers=4):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.vocab, self.inter = vocab, inter // tp
        self.emb = torch.randn(vocab // tp, hidden, **kw) * 0.02
        self.layers = [{"gate_up": torch.randn(2 * self.inter, hidden, **kw) * 0.02,
                        "down": torch.randn(hidden, self.inter, **kw) * 0.02} for _ in range(layers)]
        self.kern = silu_and_mul_kernel()

    def forward(self, ids):
        import torch
        import triton
        h = self.emb[ids % self.emb.shape[0]]
        M = h.shape[0]
        for L in self.layers:
            gu = h @ L["gate_up"].T
            act = torch.empty((M, self.inter), device="cuda", dtype=torch.bfloat16)
            self.kern[lambda meta: (M, triton.cdiv(self.inter, meta["BLOCK_N"]))](gu, act, M, self.inter)
            h = h + act @ L["down"].T
        return h[-1:] @ self.emb.T


class Scheduler:
    def __init__(self, tp_rank, tp, scenario, req_q, resp_q):
        self.tp_rank, self.tp, self.scenario, self.req_q, self.resp_q = tp_rank, tp, scenario, req_q, resp_q
        self.logger = sglang_logger(tp_rank)

    def init(self):
        import torch
        lg, sc = self.logger, self.scenario
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        lg.info(f"Init torch distributed ends. mem usage={0.58 if self.tp > 1 else 0.0:.2f} GB")
        if sc == "unknown_model_type":
            from transformers import AutoConfig
            AutoConfig.from_pretrained(MODELS[sc], trust_remote_code=False, revision=None)
        lg.info(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        self.model = Model(self.tp)
        lg.info(f"Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB, mem usage=28.61 GB.")
        self.kv = torch.empty((4, 2, 65536, 2, 128), device="cuda", dtype=torch.bfloat16)
        lg.info("KV Cache is allocated. #tokens: 1166592, K size: 53.41 GB, V size: 53.41 GB")
        lg.info(f"Memory pool end. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        self.init_cuda_graphs()
        lg.info(f"max_total_num_tokens=1166592, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len=262144, available_gpu_mem=12.37 GB")

    def init_cuda_graphs(self):
        try:
            self.capture()
        except RuntimeError as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")

    def capture(self):
        import torch
        from tqdm import tqdm
        lg = self.logger
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        bss = [64, 56, 48, 40, 32, 24, 16, 8, 4, 2, 1]
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        # one warm-up pass at the largest batch size (cuBLAS workspaces, allocator), then capture every size
        ids = torch.randint(0, self.model.vocab, (bss[0],), device="cuda")
        with torch.cuda.stream(stream):
            self.model.forward(ids)
        torch.cuda.synchronize()
        bar = tqdm(bss, disable=self.tp_rank != 0)
        self.graphs = {}
        t0 = time.perf_counter()
        for bs in bar:
            bar.set_description(f"Capturing batches (bs={bs} avail_mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB)")
            ids = torch.randint(0, self.model.vocab, (bs,), device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, stream=stream):
                self.model.forward(ids)
            self.graphs[bs] = g
        bar.close()
        lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.74 GB. "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB.")

    def event_loop(self):
        self.resp_q.put(("ready", self.tp_rank))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            self.resp_q.put((item, 200))


def run_scheduler(tp_rank, tp, scenario, req_q, resp_q):
    sched = Scheduler(tp_rank, tp, scenario, req_q, resp_q)
    try:
        sched.init()
        sched.event_loop()
    except Exception:
        sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        sys.stdout.flush()
        os.kill(os.getppid(), signal.SIGQUIT)
        time.sleep(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    sc = args.scenario
    tp = TP.get(sc, 1)
    logger = sglang_logger()
    ctx = mp.get_context("spawn")
    procs = []

    def sigquit_handler(signum, frame):
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        time.sleep(1.5)
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, sigquit_handler)
    model = MODELS[sc]
    logger.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                f"skip_tokenizer_init=False, load_format='auto', dtype='auto', kv_cache_dtype='auto', "
                f"quantization=None, context_length=None, device='cuda', served_model_name='{model}', "
                f"host='0.0.0.0', port={args.port}, tp_size={tp}, stream_interval=1, random_seed=782430167, "
                f"log_level='info'{EXTRA[sc]})")
    req_qs = [ctx.Queue() for _ in range(tp)]
    resp_q = ctx.Queue()
    for r in range(tp):
        p = ctx.Process(target=run_scheduler, args=(r, tp, sc, req_qs[r], resp_q), name=f"sglang::scheduler_TP{r}",
                        daemon=True)
        p.start()
        procs.append(p)
    for _ in range(tp):
        resp_q.get(timeout=300)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    for rid in range(4):
        for q in req_qs:
            q.put(rid)
        for _ in range(tp):
            resp_q.get(timeout=60)
        uvicorn_log(f'127.0.0.1:{41210 + rid} - "POST /generate HTTP/1.1" 200 OK')
        if rid == 0:
            logger.info("The server is fired up and ready to roll!")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
