# sglang-shaped launcher + scheduler children (round 16), one real fault (or none) per --scenario:
# kv_pool_oom: --mem-fraction-static 0.98 with a 262144-token context and 4096 running requests: the
#   request-to-token table is allocated after the KV budget was taken from the free memory, the last KV
#   buffers do not fit (CUDA OOM in the KV-cache pool allocation);
# tp3_heads: --tp-size 3 on a model with 40 attention heads and 8 KV heads (13 query heads and 2 KV heads a
#   rank): the torch_native attention backend's SDPA refuses the grouping (all three ranks at once); the
#   ranks signal the launcher before their errors reach the log;
# assert_serving: serving; the Triton kernel that writes the request-to-token table checks its KV slots with
#   tl.device_assert (TRITON_DEBUG=1); a long request gets slots past the pool: device-side assert;
# recompile_sigterm: a custom logit processor compiled with torch.compile(dynamic=False) recompiles for
#   every new top_k until the recompile limit; it falls back to eager, serving goes on, then the operator's
#   SIGTERM.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r16_common import line_buffer_c_stdout, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "kv_pool_oom": "/models/Qwen3-32B",
    "tp3_heads": "/models/Qwen2.5-14B-Instruct",
    "assert_serving": "/models/Meta-Llama-3.1-8B-Instruct",
    "recompile_sigterm": "/models/Qwen2.5-7B-Instruct",
}
EXTRA = {
    "kv_pool_oom": ", mem_fraction_static=0.98, context_length=262144, max_running_requests=4096, "
                   "json_model_override_args='{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 8.0, "
                   "\"original_max_position_embeddings\": 32768}}'",
    "tp3_heads": ", mem_fraction_static=0.85, attention_backend='torch_native', disable_cuda_graph=False",
    "assert_serving": ", mem_fraction_static=0.88, chunked_prefill_size=8192, disable_radix_cache=False",
    "recompile_sigterm": ", mem_fraction_static=0.88, enable_custom_logit_processor=True, "
                         "custom_logit_processor_compile=True",
}
TP = {"tp3_heads": 3}
CONTEXT = {"kv_pool_oom": 262144, "assert_serving": 131072}
# (layers, heads, kv heads, head dim, hidden)
ARCH = {"kv_pool_oom": (64, 64, 8, 128, 5120), "tp3_heads": (48, 40, 8, 128, 5120),
        "assert_serving": (32, 32, 8, 128, 4096), "recompile_sigterm": (28, 28, 4, 128, 3584)}
ARCH_NAME = {"kv_pool_oom": "Qwen3ForCausalLM", "tp3_heads": "Qwen2ForCausalLM",
             "assert_serving": "LlamaForCausalLM", "recompile_sigterm": "Qwen2ForCausalLM"}


class Model:
    """A few decoder layers with the model's real head layout split over tp ranks, random weights."""

    def __init__(self, sc, tp, vocab=32000, layers=2):
        import torch
        torch.manual_seed(0)
        _, heads, kv_heads, hd, hidden = ARCH[sc]
        if sc != "tp3_heads":
            hidden, heads, kv_heads = 1024, 8, 2
        self.nh, self.nkv, self.hd = heads // tp, max(1, kv_heads // tp), hd
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.vocab, self.hidden = vocab, hidden
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = []
        for _ in range(layers):
            self.layers.append({"qkv": torch.randn((self.nh + 2 * self.nkv) * hd, hidden, **kw) * 0.02,
                                "o": torch.randn(hidden, self.nh * hd, **kw) * 0.02})

    def forward(self, ids):
        import torch
        T = ids.shape[0]
        h = self.emb[ids]
        for L in self.layers:
            qkv = h @ L["qkv"].T
            q, k, v = qkv.split([self.nh * self.hd, self.nkv * self.hd, self.nkv * self.hd], dim=-1)
            q = q.view(T, self.nh, self.hd).transpose(0, 1)
            k = k.view(T, self.nkv, self.hd).transpose(0, 1)
            v = v.view(T, self.nkv, self.hd).transpose(0, 1)
            # sglang's TorchNativeAttnBackend: SDPA with enable_gqa when the head counts differ
            a = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True,
                                                                 enable_gqa=self.nh != self.nkv)
            h = h + a[0].transpose(0, 1).reshape(T, self.nh * self.hd) @ L["o"].T
        return h[-1:] @ self.emb.T


def write_req_to_token_kernel():
    import triton
    import triton.language as tl

    @triton.jit(debug=True)
    def write_req_to_token_pool_triton(req_to_token_ptr, req_pool_index, pre_len, extend_len, out_cache_loc_ptr,
                                       req_to_token_stride, pool_size, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < extend_len
        loc = tl.load(out_cache_loc_ptr + offs, mask=mask, other=0)
        tl.device_assert(loc < pool_size, "out_cache_loc past the end of the KV pool")
        tl.store(req_to_token_ptr + req_pool_index * req_to_token_stride + pre_len + offs, loc.to(tl.int32),
                 mask=mask)

    return write_req_to_token_pool_triton


class Scheduler:
    def __init__(self, tp_rank, tp, scenario, req_q, resp_q):
        self.tp_rank, self.tp, self.scenario, self.req_q, self.resp_q = tp_rank, tp, scenario, req_q, resp_q
        self.logger = sglang_logger(tp_rank)
        self.context = CONTEXT.get(scenario, 32768)

    def init(self):
        import torch
        lg, sc = self.logger, self.scenario
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        lg.info(f"Init torch distributed ends. mem usage={0.62 if self.tp > 1 else 0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        if sc == "assert_serving":
            self.model = Model(sc, self.tp, vocab=128256)
        else:
            self.model = Model(sc, self.tp, layers=4 if sc == "tp3_heads" else 2)
        lg.info(f"Load weight end. type={ARCH_NAME[sc]}, dtype=torch.bfloat16, "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB, mem usage=0.84 GB.")
        self.init_memory_pool()
        lg.info(f"Memory pool end. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        self.capture()
        lg.info(f"max_total_num_tokens={self.max_total_num_tokens}, chunked_prefill_size=8192, "
                f"max_prefill_tokens=16384, max_running_requests=2048, context_len={self.context}, "
                f"available_gpu_mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")

    def init_memory_pool(self):
        import torch
        sc = self.scenario
        layers, _, kv_heads, hd, _ = ARCH[sc]
        nkv = max(1, kv_heads // self.tp)
        cell_size = layers * 2 * nkv * hd * 2
        if sc == "kv_pool_oom":
            free, total = torch.cuda.mem_get_info()
            rest_memory = free - total * (1 - 0.98)
            self.max_total_num_tokens = int(rest_memory // cell_size)
            max_num_reqs = 4096
        else:
            layers, self.max_total_num_tokens, max_num_reqs = 2, 65536, 2048
        self.req_to_token = torch.zeros((max_num_reqs + 1, self.context + 4), dtype=torch.int32, device="cuda")
        size, page_size = self.max_total_num_tokens, 1
        self.k_buffer = [torch.zeros((size + page_size, nkv, hd), dtype=torch.bfloat16, device="cuda")
                         for _ in range(layers)]
        self.v_buffer = [torch.zeros((size + page_size, nkv, hd), dtype=torch.bfloat16, device="cuda")
                         for _ in range(layers)]
        k_size = sum(b.numel() for b in self.k_buffer) * 2 / 2**30
        self.logger.info(f"KV Cache is allocated. #tokens: {size}, K size: {k_size:.2f} GB, V size: {k_size:.2f} GB")

    def capture(self):
        import torch
        from tqdm import tqdm
        lg = self.logger
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        bss = [32, 24, 16, 8, 4, 2, 1]
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        bar = tqdm(bss, disable=self.tp_rank != 0)
        self.graphs, self.outs = {}, {}
        t0 = time.perf_counter()
        for bs in bar:
            bar.set_description(f"Capturing batches (bs={bs} avail_mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB)")
            ids = torch.randint(0, self.model.vocab, (bs,), device="cuda")
            for _ in range(2):
                self.model.forward(ids)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, stream=stream):
                self.outs[bs] = self.model.forward(ids)
            self.graphs[bs] = g
        bar.close()
        lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.22 GB. "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB.")

    # ---------------------------------------------------------------- serving
    def event_loop(self):
        import torch
        lg, sc = self.logger, self.scenario
        kern = write_req_to_token_kernel() if sc == "assert_serving" else None
        if sc == "recompile_sigterm":
            def top_k_renorm(logits, top_k):
                vals, idx = torch.topk(logits, top_k, dim=-1)
                probs = torch.softmax(vals.float(), dim=-1)
                out = torch.zeros_like(logits, dtype=torch.float32)
                return out.scatter_(-1, idx, probs)
            processor = torch.compile(top_k_renorm, dynamic=False)
        free_start = 0
        self.resp_q.put(("ready", self.tp_rank))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_in, n_out, top_k = item
            slot = rid % 2048
            lg.info(f"Prefill batch. #new-seq: 1, #new-token: {min(n_in, 8192)}, #cached-token: 0, "
                    f"token usage: {free_start / self.max_total_num_tokens:.2f}, #running-req: 0, #queue-req: 0, ")
            if kern is not None:
                # token_to_kv_pool_allocator.alloc: slots from the free list, contiguous past free_start
                out_cache_loc = torch.arange(free_start, free_start + n_in, device="cuda", dtype=torch.int64)
                kern[(triton_cdiv(n_in, 512),)](self.req_to_token, slot, 0, n_in, out_cache_loc,
                                                self.req_to_token.stride(0), self.max_total_num_tokens,
                                                BLOCK_SIZE=512)
                free_start += n_in + n_out
            ids = torch.randint(0, self.model.vocab, (min(n_in, 4096),), device="cuda")
            t0 = time.perf_counter()
            for step in range(n_out):
                logits = self.model.forward(ids[-128:])
                if top_k:
                    nxt = torch.multinomial(processor(logits, top_k), 1).view(-1)
                else:
                    nxt = logits.argmax(-1)
                ids = torch.cat([ids, nxt])
                if (step + 1) % 32 == 0 and self.tp_rank == 0:
                    torch.cuda.synchronize()
                    dt = time.perf_counter() - t0
                    lg.info(f"Decode batch. #running-req: 1, #token: {n_in + step + 1}, token usage: "
                            f"{free_start / self.max_total_num_tokens:.2f}, cuda graph: True, "
                            f"gen throughput (token/s): {32 / dt:.2f}, #queue-req: 0, ")
                    t0 = time.perf_counter()
            torch.cuda.synchronize()
            if self.tp_rank == 0:
                self.resp_q.put((rid, 200))


def triton_cdiv(a, b):
    return (a + b - 1) // b


def run_scheduler(tp_rank, tp, scenario, req_q, resp_q):
    if scenario == "assert_serving":
        line_buffer_c_stdout()
    sched = Scheduler(tp_rank, tp, scenario, req_q, resp_q)
    try:
        sched.init()
        sched.event_loop()
    except Exception:
        if scenario == "tp3_heads":  # the launcher hears of it before the error is logged
            os.kill(os.getppid(), signal.SIGQUIT)
            time.sleep(0.3)
            sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
        else:
            sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(os.getppid(), signal.SIGQUIT)
        time.sleep(30)


class Term(Exception):
    pass


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

    def on_term(signum, frame):
        raise Term()

    signal.signal(signal.SIGQUIT, sigquit_handler)
    model = MODELS[sc]
    logger.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                f"skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, dtype='auto', "
                f"kv_cache_dtype='auto', quantization=None, context_length={CONTEXT.get(sc)}, device='cuda', "
                f"served_model_name='{model}', host='0.0.0.0', port={args.port}, tp_size={tp}, "
                f"stream_interval=1, random_seed=1234, log_level='info', cuda_graph_max_bs=32{EXTRA[sc]})")
    if sc == "tp3_heads":
        logger.warning("The tensor parallel size (3) is not a power of two; custom all-reduce is disabled.")
    req_qs = [ctx.Queue() for _ in range(tp)]
    resp_q = ctx.Queue()
    for r in range(tp):
        p = ctx.Process(target=run_scheduler, args=(r, tp, sc, req_qs[r], resp_q), name=f"sglang::scheduler_TP{r}",
                        daemon=True)
        p.start()
        procs.append(p)
    for _ in range(tp):
        resp_q.get(timeout=300)
    signal.signal(signal.SIGTERM, on_term)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:40512 - "GET /get_model_info HTTP/1.1" 200 OK')
    # (rid, prompt tokens, new tokens, top_k)
    reqs = [(0, 8, 8, 0)] + [(i, 300 + 70 * i, 64, 0) for i in range(1, 8)]
    if sc == "assert_serving":
        reqs[6] = (6, 63500, 64, 0)  # a long document: its slots run past the 65536-token pool
    if sc == "recompile_sigterm":
        ks = [20, 40, 50, 64, 80, 100, 128, 200, 256, 400, 512, 1000, 30, 20, 50, 5, 10, 2000, 40, 64, 300, 600]
        reqs = [(0, 8, 8, 0)] + [(i, 200 + 37 * i, 32, k) for i, k in enumerate(ks, start=1)]
    try:
        for rid, n_in, n_out, top_k in reqs:
            time.sleep(0.2)
            for q in req_qs:
                q.put((rid, n_in, n_out, top_k))
            _, code = resp_q.get(timeout=300)
            uvicorn_log(f'10.0.7.21:{40513 + rid} - "POST /generate HTTP/1.1" {code} OK')
            if rid == 0:
                logger.info("The server is fired up and ready to roll!")
        while True:
            time.sleep(1)
    except Term:
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        for p in procs:
            p.kill()


if __name__ == "__main__":
    main()
