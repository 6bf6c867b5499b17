# sglang-shaped launcher + scheduler children (round 14), one real fault per --scenario:
# int32_overflow: a Triton KV-store kernel computes loc * stride in int32; once a long-context request
#   pushes slot indices past 2**31 / 1024 the address wraps (illegal memory access) while serving;
# tokenizer_cut: the launcher's TokenizerManager loads a tokenizer.json cut short by a broken download
#   while the schedulers are loading weights;
# thread_ctx: overlap schedule: the forward thread's sampling gathers a token id past the vocabulary
#   (device-side assert), then the scheduler's main thread meets the dead context too;
# graph_default_stream: the CUDA-graph runner begins capture on the default stream;
# compile_nofake: --enable-torch-compile over a custom op registered without a fake (meta) kernel.
import argparse
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r14_common import TOK_CUT, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "int32_overflow": "/models/Qwen2.5-7B-Instruct-1M",
    "tokenizer_cut": TOK_CUT,
    "thread_ctx": "/models/Meta-Llama-3.1-8B-Instruct",
    "graph_default_stream": "/models/DeepSeek-R1-Distill-Qwen-7B",
    "compile_nofake": "/models/Mistral-7B-Instruct-v0.3",
}
EXTRA = {
    "int32_overflow": ", context_length=1010000, chunked_prefill_size=65536, max_total_tokens=2300000",
    "tokenizer_cut": ", quantization='awq_marlin'",
    "thread_ctx": ", disable_overlap_schedule=False, grammar_backend='xgrammar'",
    "graph_default_stream": ", disable_cuda_graph=False",
    "compile_nofake": ", enable_torch_compile=True, torch_compile_max_bs=32",
}
POOL = 2_300_000


def store_kv_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def set_kv_buffer_kernel(k_cache, v_cache, k, v, req_to_token, req_idx, start, stride_cache, stride_src,
                             D: tl.constexpr):
        pid = tl.program_id(0)
        loc = tl.load(req_to_token + req_idx + start + pid)  # int32 slot index
        offs = tl.arange(0, D)
        kk = tl.load(k + pid * stride_src + offs)
        vv = tl.load(v + pid * stride_src + offs)
        tl.store(k_cache + loc * stride_cache + offs, kk)
        tl.store(v_cache + loc * stride_cache + offs, vv)

    return set_kv_buffer_kernel


def register_ops():
    import torch

    @torch.library.custom_op("sgl_kernel::fused_add_rmsnorm", mutates_args=("residual",))
    def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        residual.add_(x)
        var = residual.float().pow(2).mean(-1, keepdim=True)
        return (residual.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight

    return fused_add_rmsnorm


class Model:
    def __init__(self, vocab=128256, hidden=1024, layers=4):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.vocab, self.hidden = vocab, hidden
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = [torch.randn(hidden, hidden, **kw) * (hidden ** -0.5) for _ in range(layers)]
        self.norm_w = torch.ones(hidden, **kw)
        self.rmsnorm = None

    def forward(self, ids):
        import torch
        h = self.emb[ids]
        res = torch.zeros_like(h)
        for w in self.layers:
            if self.rmsnorm is not None:
                h = self.rmsnorm(h, res, self.norm_w, 1e-6)
            h = torch.nn.functional.silu(h @ w)
        return h[..., -1, :] @ self.emb.T if h.dim() == 3 else h @ self.emb.T


class Scheduler:
    def __init__(self, tp_rank, scenario, req_q, resp_q):
        self.tp_rank, self.scenario, self.req_q, self.resp_q = tp_rank, scenario, req_q, resp_q
        self.logger = sglang_logger(tp_rank)
        self.fwd_failed = False

    def init(self):
        import torch
        lg, sc = self.logger, self.scenario
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        lg.info("Init torch distributed ends. mem usage=0.00 GB")
        lg.info(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        if sc == "tokenizer_cut":
            lg.info("Using awq_marlin kernels for AWQ checkpoint (group_size=128).")
            time.sleep(20)
        self.model = Model()
        if sc == "compile_nofake":
            self.model.rmsnorm = register_ops()
        lg.info(f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB, mem usage=0.27 GB.")
        if sc == "int32_overflow":
            self.k_cache = torch.zeros((POOL + 1, 8, 128), device="cuda", dtype=torch.bfloat16)
            self.v_cache = torch.zeros((POOL + 1, 8, 128), device="cuda", dtype=torch.bfloat16)
            self.req_to_token = torch.zeros((8, 1_048_576), device="cuda", dtype=torch.int32)
            self.kern = store_kv_kernel()
            self.next_slot = 1
            lg.info(f"KV Cache is allocated. #tokens: {POOL}, K size: {self.k_cache.numel() * 2 / 2**30:.2f} GB, "
                    f"V size: {self.v_cache.numel() * 2 / 2**30:.2f} GB")
        else:
            lg.info("KV Cache is allocated. #tokens: 412338, K size: 25.17 GB, V size: 25.17 GB")
        lg.info(f"Memory pool end. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        self.capture()
        lg.info(f"max_total_num_tokens={POOL if sc == 'int32_overflow' else 412338}, chunked_prefill_size="
                f"{65536 if sc == 'int32_overflow' else 8192}, max_prefill_tokens=16384, max_running_requests=2048, "
                f"context_len={1010000 if sc == 'int32_overflow' else 131072}, available_gpu_mem=11.37 GB")

    def capture(self):
        import torch
        from tqdm import tqdm
        lg, sc = self.logger, self.scenario
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        bss = [160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16, 8, 4, 2, 1]
        fwd = self.model.forward
        if sc == "compile_nofake":
            lg.info("Compiling the model with torch.compile (mode=max-autotune-no-cudagraphs) for bs <= 32.")
            fwd_c = torch.compile(self.model.forward, mode="max-autotune-no-cudagraphs", dynamic=False)
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        bar = tqdm(bss)
        for bs in bar:
            bar.set_description(f"Capturing batches (bs={bs} avail_mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB)")
            ids = torch.randint(0, self.model.vocab, (bs,), device="cuda")
            f = fwd_c if (sc == "compile_nofake" and bs <= 32) else fwd
            for _ in range(2):
                f(ids)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            if sc == "graph_default_stream":
                with torch.cuda.device(0):  # meant: torch.cuda.stream(stream)
                    g.capture_begin(pool=pool)
                    out = f(ids)
                    g.capture_end()
            else:
                with torch.cuda.graph(g, pool=pool, stream=stream):
                    out = f(ids)
        bar.close()
        lg.info(f"Capture cuda graph end. Time elapsed: 3.12 s. mem usage=0.52 GB. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB.")

    # ---------------------------------------------------------------- serving
    def store_kv(self, n_tokens):
        import torch
        k = torch.randn((n_tokens, 8, 128), device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        start = self.next_slot
        slots = torch.arange(start, start + n_tokens, device="cuda", dtype=torch.int32)
        self.req_to_token.view(-1)[:n_tokens] = slots
        self.kern[(n_tokens,)](self.k_cache, self.v_cache, k, v, self.req_to_token, 0, 0,
                               self.k_cache.stride(0), k.stride(0), D=1024)
        self.next_slot += n_tokens

    def event_loop(self):
        import torch
        lg = self.logger
        self.resp_q.put(("ready", self.tp_rank))
        fwd_q, res_q = queue.Queue(), queue.Queue()
        if self.scenario == "thread_ctx":
            threading.Thread(target=self.forward_thread, args=(fwd_q, res_q), daemon=True).start()
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_in, n_out, allowed = item
            if self.scenario == "int32_overflow":
                done = 0
                while done < n_in:
                    chunk = min(65536, n_in - done)
                    usage = (self.next_slot + chunk) / POOL
                    lg.info(f"Prefill batch. #new-seq: 1, #new-token: {chunk}, #cached-token: {done}, "
                            f"token usage: {usage:.2f}, #running-req: 0, #queue-req: 0, ")
                    self.store_kv(chunk)
                    ids = torch.randint(0, self.model.vocab, (min(chunk, 4096),), device="cuda")
                    int(self.model.forward(ids).argmax().item())
                    done += chunk
                for _ in range(n_out):
                    int(self.model.forward(torch.randint(0, self.model.vocab, (8,), device="cuda")).argmax().item())
                self.resp_q.put((rid, 200))
                continue
            lg.info(f"Prefill batch. #new-seq: 1, #new-token: {n_in}, #cached-token: 0, token usage: 0.01, "
                    f"#running-req: 0, #queue-req: 0, ")
            ids = torch.randint(0, self.model.vocab, (n_in,), device="cuda")
            allowed_t = torch.tensor(allowed, device="cuda") if allowed else None
            t0 = time.perf_counter()
            for step in range(n_out):
                if self.scenario == "thread_ctx":
                    fwd_q.put((ids, allowed_t))
                    while True:
                        try:
                            nxt = res_q.get(timeout=0.2)
                            break
                        except queue.Empty:
                            if self.fwd_failed:  # go on with the next batch's metadata
                                seq_lens = torch.tensor([ids.numel() + 1], device="cuda", dtype=torch.int64)
                                self.seq_lens_cpu = seq_lens.cpu()
                else:
                    nxt = self.sample(ids, allowed_t)
                ids = torch.cat([ids, nxt])
                if (step + 1) % 40 == 0:
                    dt = time.perf_counter() - t0
                    lg.info(f"Decode batch. #running-req: 1, #token: {n_in + step + 1}, token usage: 0.01, cuda graph: True, "
                            f"gen throughput (token/s): {40 / dt:.2f}, #queue-req: 0, ")
                    t0 = time.perf_counter()
            self.resp_q.put((rid, 200))

    def sample(self, ids, allowed):
        import torch
        logits = self.model.forward(ids[-64:])[-1:]  # [1, vocab]
        if allowed is not None:  # grammar-constrained decoding: pick among the allowed token ids
            sub = torch.gather(logits, 1, allowed[None])
            nxt = allowed[sub.argmax(-1)]
        else:
            nxt = logits.argmax(-1)
        return nxt

    def forward_thread(self, fwd_q, res_q):
        import torch
        try:
            while True:
                ids, allowed = fwd_q.get()
                nxt = self.sample(ids, allowed)
                copy_done = torch.cuda.Event()
                nxt_cpu = nxt.to("cpu", non_blocking=True)
                copy_done.record()
                copy_done.synchronize()
                res_q.put(nxt_cpu.to("cuda"))
        except Exception:
            self.fwd_failed = True
            self.logger.error(f"TpModelWorkerClient hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(os.getppid(), signal.SIGQUIT)


def run_scheduler(tp_rank, scenario, req_q, resp_q):
    sched = Scheduler(tp_rank, scenario, req_q, resp_q)
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
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    sc = args.scenario
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
                f"dtype='auto', tp_size={args.tp}, host='127.0.0.1', port={args.port}, mem_fraction_static=0.871, "
                f"cuda_graph_max_bs=160, random_seed=20661, log_level='info'{EXTRA[sc]})")
    req_qs = [ctx.Queue() for _ in range(args.tp)]
    resp_q = ctx.Queue()
    for r in range(args.tp):
        p = ctx.Process(target=run_scheduler, args=(r, sc, req_qs[r], resp_q), name=f"sglang::scheduler_TP{r}",
                        daemon=True)
        p.start()
        procs.append(p)
    if sc == "tokenizer_cut":
        from transformers import AutoTokenizer
        time.sleep(6)  # the detokenizer process starts in between
        tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
        print(tokenizer.vocab_size)
    for _ in range(args.tp):
        resp_q.get(timeout=300)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:52814 - "GET /get_model_info HTTP/1.1" 200 OK')
    # (rid, prompt tokens, new tokens, allowed token ids for constrained decoding)
    if sc == "int32_overflow":
        reqs = [(0, 8, 8, None), (1, 1200, 64, None), (2, 640_000, 32, None), (3, 700_000, 32, None),
                (4, 990_000, 32, None), (5, 2000, 32, None)]
    else:
        reqs = [(0, 8, 8, None)] + [(i, 300 + 50 * i, 80, None) for i in range(1, 4)]
        if sc == "thread_ctx":
            # a JSON-schema request whose grammar was compiled against Qwen's 151k vocabulary
            reqs.append((4, 420, 80, [90, 1025, 11, 13, 151643, 151645]))
            reqs.append((5, 300, 80, None))
    for rid, n_in, n_out, allowed in reqs:
        time.sleep(0.2)
        for q in req_qs:
            q.put((rid, n_in, n_out, allowed))
        _, code = resp_q.get(timeout=300)
        uvicorn_log(f'127.0.0.1:{52814 + rid} - "POST /generate HTTP/1.1" {code} OK')
        if rid == 0:
            logger.info("The server is fired up and ready to roll!")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
