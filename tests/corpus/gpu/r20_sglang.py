# sglang-shaped launcher + scheduler (+ detokenizer) children for round 20, one real fault per --scenario:
# mem_fraction: a 70B FP8 model on one card with --mem-fraction-static 0.45 (lowered "to leave room for the
#   reward model"); the weights (really allocated, layer by layer) take more than the static fraction allows:
#   the memory profile leaves no room for the KV pool and the scheduler's own check refuses to start;
# tma_thread: the MLP's gate/up GEMM is a Triton kernel that builds its TMA descriptors on the device and so needs
#   triton's scratch allocator; the scheduler sets the allocator in its main thread (where weight loading and
#   the CUDA-graph warm-up run fine), but the overlap scheduler's forward thread has its own context: the first
#   real request's forward fails there (TpModelWorkerClient), the launcher gets SIGQUIT;
# detok_unicode: a custom byte-level detokenizer decodes each step's new tokens strictly as UTF-8; a step that
#   ends inside a multi-byte character kills the DetokenizerManager process while serving.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r20_common import Decoder, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "mem_fraction": "/models/Llama-3.3-70B-Instruct-FP8",
    "tma_thread": "/models/Qwen3-8B",
    "detok_unicode": "/models/Qwen2.5-7B-Instruct-zh-custom",
}
EXTRA = {
    "mem_fraction": ", mem_fraction_static=0.45, quantization='fp8', kv_cache_dtype='auto', max_running_requests=64",
    "tma_thread": ", mem_fraction_static=0.88, disable_overlap_schedule=False, attention_backend='fa3'",
    "detok_unicode": ", mem_fraction_static=0.85, skip_tokenizer_init=False, detokenizer='byte_level_custom'",
}
CONTEXT = 32768


def avail_gb():
    import torch
    return torch.cuda.mem_get_info()[0] / 2**30


# ---------------------------------------------------------------- a TMA GEMM (device-side descriptors)
_tma_kernel = None


def tma_gemm_kernel():
    global _tma_kernel
    if _tma_kernel is not None:
        return _tma_kernel
    import triton
    import triton.language as tl

    @triton.jit
    def gate_up_tma_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
        y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = x_desc.load([pid_m * BM, k * BK])
            b = w_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        y_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))

    _tma_kernel = gate_up_tma_kernel
    return _tma_kernel


def gate_up(x, w):
    import torch
    import triton
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=torch.bfloat16)
    BM, BN, BK = 64, 128, 64
    tma_gemm_kernel()[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, w, y, M, N, K, BM=BM, BN=BN, BK=BK,
                                                                num_warps=4, num_stages=3)
    return y


def tma_forward(model, n_tok, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    ids = torch.randint(0, model.vocab, (n_tok,), device="cuda", generator=g)
    h = model.emb[ids]
    for L in model.layers:
        gu = gate_up(h, L["gate_up"])
        a, b = gu.chunk(2, dim=-1)
        h = h + (torch.nn.functional.silu(a) * b) @ L["down"].T
    return int((h[-1:] @ model.head.T).argmax().item())


# ---------------------------------------------------------------- byte-level detokenizer
def build_byte_vocab(n=32000):
    """Token id -> bytes: ASCII pieces, whole CJK characters, and pieces that split a character in two."""
    words = [b"the", b" of", b" and", b" model", b" to", b" in", b"ing", b" is", b"ed", b" GPU", b",", b"."]
    vocab = []
    for i in range(n):
        cjk = chr(0x4E00 + (i * 37) % 0x5000).encode("utf-8")  # 3 bytes
        if i % 32 == 5:
            vocab.append(cjk[:2])  # a merge that stops inside the character (its tail is another token)
        elif i % 32 == 6:
            vocab.append(cjk[2:])
        elif i % 4 == 0:
            vocab.append(cjk)
        else:
            vocab.append(words[i % len(words)])
    return vocab


def detokenizer_main(in_q, out_q):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logger = sglang_logger()
    vocab = build_byte_vocab()
    decoded = {}
    try:
        while True:
            item = in_q.get()
            if item is None:
                return
            rid, new_ids, finished = item
            # incremental detokenization: only the new tokens of this step are decoded
            piece = b"".join(vocab[t] for t in new_ids).decode("utf-8")
            decoded[rid] = decoded.get(rid, "") + piece
            if finished:
                out_q.put((rid, decoded.pop(rid)))
    except Exception:
        logger.error(f"DetokenizerManager hit an exception: {traceback.format_exc()}")
        sys.stdout.flush()
        os.kill(os.getppid(), signal.SIGQUIT)
        time.sleep(30)


# ---------------------------------------------------------------- scheduler
class Scheduler:
    def __init__(self, sc, req_q, resp_q, detok_q):
        self.sc, self.req_q, self.resp_q, self.detok_q = sc, req_q, resp_q, detok_q
        self.logger = sglang_logger(0)

    def init(self):
        import torch
        lg, sc = self.logger, self.sc
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        lg.info("Init torch distributed ends. mem usage=0.00 GB")
        if sc == "tma_thread":
            import triton

            def alloc_fn(size, alignment, stream):
                return torch.empty(size, device="cuda", dtype=torch.int8)

            triton.set_allocator(alloc_fn)
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        if sc == "mem_fraction":
            self.load_70b_fp8()
        self.model = Decoder()
        lg.info(f"Load weight end. type={'LlamaForCausalLM' if 'Llama' in MODELS[sc] else 'Qwen2ForCausalLM'}, "
                f"dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, "
                f"mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB.")
        if sc == "mem_fraction":
            self.init_memory_pool(0.45)
        lg.info("KV Cache is allocated. #tokens: 402316, K size: 13.81 GB, V size: 13.81 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        bs_list = [1, 2, 4, 8, 12, 16, 24, 32]
        t0 = time.perf_counter()
        for bs in bs_list:
            if sc == "tma_thread":
                tma_forward(self.model, bs, seed=bs)
            else:
                self.model.forward(bs)
        torch.cuda.synchronize()
        lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0 + 2.1:.2f} s. mem usage=0.41 GB. "
                f"avail mem={avail_gb():.2f} GB.")
        lg.info(f"max_total_num_tokens=402316, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len={CONTEXT}, available_gpu_mem={avail_gb():.2f} GB")

    def load_70b_fp8(self):
        """Llama-3.3-70B in FP8: 80 decoder layers of fp8 weights, bf16 embedding and lm head."""
        import torch
        from tqdm import tqdm
        h, inter, kv = 8192, 28672, 1024
        per_layer = h * (h + 2 * kv) + h * h + 3 * h * inter
        self.weights = [torch.empty(128256 * h, dtype=torch.bfloat16, device="cuda")]
        fmt = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        shards = 15
        per_shard = [80 // shards + (1 if i < 80 % shards else 0) for i in range(shards)]
        for n in tqdm(per_shard, desc="Loading safetensors checkpoint shards", bar_format=fmt):
            for _ in range(n):
                w = torch.empty(per_layer, dtype=torch.uint8, device="cuda")
                w[:: 1 << 20].fill_(1)
                self.weights.append(w)
        self.weights.append(torch.empty(128256 * h, dtype=torch.bfloat16, device="cuda"))
        torch.cuda.synchronize()

    def init_memory_pool(self, mem_fraction_static):
        import torch
        total = torch.cuda.mem_get_info()[1] / 2**30
        available = avail_gb()
        cell_size = 8 * 128 * 80 * 2 * 2  # kv heads x head dim x layers x (K, V) x bf16
        rest_memory = available - total * (1 - mem_fraction_static)
        max_total_num_tokens = int(rest_memory * (1 << 30) // cell_size)
        if max_total_num_tokens <= 0:
            raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")

    def forward_thread(self, in_q, out_q):
        """The overlap scheduler's forward thread (TpModelWorkerClient)."""
        try:
            while True:
                rid, n_tok = in_q.get()
                if self.sc == "tma_thread":
                    tok = tma_forward(self.model, n_tok, seed=rid)
                    toks = [tok] + [tma_forward(self.model, 1, seed=rid * 10 + i) for i in range(7)]
                else:
                    toks = [self.model.forward(n_tok, seed=rid)] + [self.model.forward(1, seed=rid * 10 + i)
                                                                    for i in range(7)]
                out_q.put((rid, toks))
        except Exception:
            self.logger.error(f"TpModelWorkerClient hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(os.getppid(), signal.SIGQUIT)

    def event_loop(self):
        import queue
        fq, rq = queue.Queue(), queue.Queue()
        threading.Thread(target=self.forward_thread, args=(fq, rq), daemon=True).start()
        self.resp_q.put(("ready", 0))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_tok = item
            self.logger.info(f"Prefill batch. #new-seq: 1, #new-token: {n_tok}, #cached-token: 0, token usage: 0.00, "
                             f"#running-req: 0, #queue-req: 0, ")
            fq.put((rid, n_tok))
            _, toks = rq.get()
            self.logger.info(f"Decode batch. #running-req: 1, #token: {n_tok + 8}, token usage: 0.00, cuda graph: True, "
                             f"gen throughput (token/s): {1350 + (rid * 53) % 400:.2f}, #queue-req: 0, ")
            if self.detok_q is not None:
                for i in range(0, len(toks), 2):
                    self.detok_q.put((rid, toks[i:i + 2], i + 2 >= len(toks)))
            else:
                self.resp_q.put((rid, toks))


def run_scheduler(sc, req_q, resp_q, detok_q):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sched = Scheduler(sc, req_q, resp_q, detok_q)
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
    logger = sglang_logger()
    ctx = mp.get_context("spawn")
    procs = []

    def sigquit_handler(signum, frame):
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        time.sleep(1.0)
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, sigquit_handler)
    model = MODELS[sc]
    logger.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                f"skip_tokenizer_init=False, load_format='auto', dtype='auto', context_length=None, device='cuda', "
                f"served_model_name='{model}', host='0.0.0.0', port={args.port}, tp_size=1, stream_interval=1, "
                f"random_seed=731054412, log_level='info'{EXTRA[sc]})")
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    detok_q = ctx.Queue() if sc == "detok_unicode" else None
    p = ctx.Process(target=run_scheduler, args=(sc, req_q, resp_q, detok_q), name="sglang::scheduler", daemon=True)
    p.start()
    procs.append(p)
    if detok_q is not None:
        d = ctx.Process(target=detokenizer_main, args=(detok_q, resp_q), name="sglang::detokenizer", daemon=True)
        d.start()
        procs.append(d)
    resp_q.get(timeout=300)

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:40322 - "GET /get_model_info HTTP/1.1" 200 OK')
    lens = [6, 212, 87, 1040, 331, 512, 64, 790, 2048, 150, 999, 420, 77, 1500, 260, 33]
    for rid in range(400):
        n_tok = lens[rid % len(lens)]
        req_q.put((rid, n_tok))
        resp_q.get(timeout=600)
        if rid == 0:
            uvicorn_log('127.0.0.1:40324 - "POST /generate HTTP/1.1" 200 OK')
            logger.info("The server is fired up and ready to roll!")
            continue
        uvicorn_log(f'127.0.0.1:{40324 + rid} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        time.sleep(0.2)


if __name__ == "__main__":
    main()
