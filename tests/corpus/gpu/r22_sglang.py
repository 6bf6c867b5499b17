# sglang-shaped launcher + scheduler children for round 22, one real fault (or none) per --scenario:
# nvcc_errors: --enable-custom-all-reduce-v2 JIT-builds the one-shot all-reduce kernel (torch cpp_extension,
#   nvcc) from a source written against an older header set: nvcc reports four real errors, then its "4
#   errors detected" summary, ninja its FAILED line, and torch "Error building extension"; the scheduler
#   signals the launcher;
# recompile_fullgraph: the custom logit processor (per-request top-k) is compiled with
#   torch.compile(fullgraph=True, dynamic=False); every new top_k a client sends is a new specialization; past
#   the recompile limit, fullgraph=True makes Dynamo raise instead of falling back; the scheduler dies while
#   serving;
# health_503: healthy serving; one 120k-token document's prefill keeps the scheduler busy for seconds, the
#   launcher's /health_generate probe times out (503) and serving goes on; then the operator's SIGTERM (no
#   crash);
# healthy_warnings: a start with many alarming (real) warnings, serving, the operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r22_common import ROOT, Decoder, sglang_logger, uvicorn_log

MODELS = {
    "nvcc_errors": "/models/Llama-3.3-70B-Instruct-FP8",
    "recompile_fullgraph": "/models/Qwen3-8B",
    "health_503": "/models/Qwen2.5-14B-Instruct-1M",
    "healthy_warnings": "/models/Mistral-Small-3.1-24B-Instruct-2503",
}
EXTRA = {
    "nvcc_errors": ", mem_fraction_static=0.85, enable_custom_all_reduce_v2=True, disable_custom_all_reduce=False",
    "recompile_fullgraph": ", mem_fraction_static=0.88, enable_custom_logit_processor=True",
    "health_503": ", mem_fraction_static=0.88, context_length=131072, chunked_prefill_size=-1",
    "healthy_warnings": ", mem_fraction_static=0.88, dtype='bfloat16', tool_call_parser='mistral'",
}
ALLREDUCE_SRC = r"""
#include <torch/extension.h>
#include <cuda_bf16.h>
#include <c10/cuda/CUDAStream.h>

struct __align__(16) RankData { const void* __restrict__ ptrs[8]; };
struct __align__(16) RankSignals { void* signals[8]; };

template <typename T, int NGPUS>
__global__ void one_shot_all_reduce(RankData* __restrict__ data, RankSignals sg, T* __restrict__ out,
                                    int size) {
  using P = typename packed_t<T>::P;
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < size; idx += gridDim.x * blockDim.x) {
    P acc = ((const P*)data->ptrs[0])[idx];
#pragma unroll
    for (int r = 1; r < NGPUS; r++) packed_assign_add(acc, ((const P*)data->ptrs[r])[idx]);
    ((P*)out)[idx] = acc;
  }
  barrier_at_end<NGPUS>(sg, rank);
}

void all_reduce(torch::Tensor inp, torch::Tensor out) {
  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  int size = inp.numel();
  one_shot_all_reduce<__nv_bfloat16, 2><<<108, 512, 0, stream>>>(nullptr, RankSignals{},
                                                                  (__nv_bfloat16*)out.data_ptr(), size);
}
"""


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


class Scheduler:
    def __init__(self, sc, req_q, resp_q):
        self.sc, self.req_q, self.resp_q = sc, req_q, resp_q
        self.logger = sglang_logger(0)

    def init(self):
        import torch

        lg, sc = self.logger, self.sc
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        lg.info("Init torch distributed ends. mem usage=0.00 GB")
        if sc == "healthy_warnings":
            self.real_warnings_early()
        if sc == "nvcc_errors":
            self.build_custom_ar()
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        self.model = Decoder()
        arch = {
            "recompile_fullgraph": "Qwen3ForCausalLM",
            "healthy_warnings": "Mistral3ForConditionalGeneration",
            "health_503": "Qwen2ForCausalLM",
        }.get(sc, "LlamaForCausalLM")
        lg.info(
            f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, "
            f"mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB."
        )
        self.kv = torch.empty(2 * 2**30, dtype=torch.bfloat16, device="cuda")
        lg.info("KV Cache is allocated. #tokens: 318812, K size: 2.00 GB, V size: 2.00 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        if sc == "healthy_warnings":
            self.real_warnings_late()
        lg.info(
            f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB"
        )
        t0 = time.perf_counter()
        self.capture()
        lg.info(
            f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.38 GB. "
            f"avail mem={avail_gb():.2f} GB."
        )
        ctx = 131072 if sc == "health_503" else 32768
        lg.info(
            f"max_total_num_tokens=318812, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests=2048, context_len={ctx}, available_gpu_mem={avail_gb():.2f} GB"
        )
        if sc == "recompile_fullgraph":
            import torch._dynamo

            cfg = torch._dynamo.config
            limit = getattr(cfg, "recompile_limit", getattr(cfg, "cache_size_limit", None))
            lg.info(
                f"Custom logit processor enabled (torch.compile fullgraph=True, dynamic=False, "
                f"recompile_limit={limit})"
            )
            self.top_k_proc = torch.compile(top_k_filter, fullgraph=True, dynamic=False)

    def build_custom_ar(self):
        from torch.utils.cpp_extension import load_inline

        d = f"{ROOT}/sgl_jit/custom_ar_v2"
        os.makedirs(d, exist_ok=True)
        self.logger.info(
            f"JIT building custom all-reduce v2 kernels into {d} (first start on this node)"
        )
        load_inline(
            name="custom_ar_v2",
            cpp_sources="void all_reduce(torch::Tensor inp, torch::Tensor out);",
            cuda_sources=ALLREDUCE_SRC,
            functions=["all_reduce"],
            build_directory=d,
            extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"],
            verbose=False,
        )

    def real_warnings_early(self):
        import warnings

        import torch

        warnings.simplefilter("default")
        x = torch.ones(4, device="cuda")
        torch.tensor(x)  # the processor's image-size tensor (copy-construct warning)
        x.storage()  # TypedStorage in the multimodal processor's cache
        torch.FloatTensor(2)  # legacy constructor in the vision tower's remote code
        self.logger.warning(
            "Attention backend not explicitly specified. Use fa3 backend by default."
        )
        self.logger.warning(
            "Mistral3 model: falling back to the torch native vision attention; the Triton "
            "vision attention kernel was not found for head_dim=88."
        )

    def real_warnings_late(self):
        import warnings

        import torch

        with warnings.catch_warnings():
            warnings.simplefilter("default")
            w = torch.randn(64, 64, device="cuda")
            torch.nn.utils.weight_norm(torch.nn.Linear(64, 64).cuda())
            torch.cuda.amp.autocast(dtype=torch.bfloat16)
            (w.T.contiguous() @ w).sum()
        self.logger.warning("max_total_tokens is too large for the pool; setting it to 318812.")
        self.logger.warning(
            "The tokenizer's chat template differs from the model's generation config: using "
            "the tokenizer's."
        )

    def capture(self):
        import torch
        from tqdm import tqdm

        pool = torch.cuda.graph_pool_handle()
        self.graphs = {}
        for bs in tqdm([64, 48, 32, 24, 16, 12, 8, 4, 2, 1], desc="Capturing batches", ncols=100):
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

    def decode(self, ids):
        import torch

        m = self.model
        h = m.emb[ids]
        for L in m.layers:
            g_, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        return h @ m.head.T

    def long_prefill(self, n_tok):
        """A 120k-token prefill chunk by chunk (real GPU work: MLPs plus causal attention over the prefix)."""
        import torch

        m = self.model
        kv = []
        for start in range(0, n_tok, 4096):
            h = m.emb[torch.arange(start, start + 4096, device="cuda") % m.vocab]
            kv.append(h)
            keys = torch.cat(kv).float()
            for L in (
                m.layers * 2
            ):  # 8 layers; the torch_native backend's fp32 attention (no tensor cores)
                a = (torch.softmax(h.float() @ keys.T / 45.0, -1) @ keys).to(h.dtype)
                g_, u = ((h + a) @ L["gate_up"].T).chunk(2, dim=-1)
                h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
            torch.cuda.synchronize()
        return int((h[-1:] @ m.head.T).argmax())

    def event_loop(self):
        self.resp_q.put(("ready", 0))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_tok, n_out, top_k = item
            self.logger.info(
                f"Prefill batch. #new-seq: 1, #new-token: {n_tok}, #cached-token: 0, token usage: 0.00, "
                f"#running-req: 0, #queue-req: 0, "
            )
            if n_tok > 8192:
                toks = [self.long_prefill(n_tok)]
            else:
                toks = [self.model.forward(n_tok, seed=rid)]
            for i in range(n_out - 1):
                if top_k:
                    import torch

                    logits = self.decode(torch.full((1,), toks[-1], device="cuda"))
                    toks.append(int(self.top_k_proc(logits.float(), top_k).argmax()))
                else:
                    toks.append(self.model.forward(1, seed=rid * 10 + i))
            self.logger.info(
                f"Decode batch. #running-req: 1, #token: {n_tok + n_out}, token usage: 0.00, "
                f"cuda graph: True, gen throughput (token/s): {1210 + (rid * 53) % 400:.2f}, "
                f"#queue-req: 0, "
            )
            self.resp_q.put((rid, toks))


def top_k_filter(logits, top_k):
    """The custom logit processor: keep the top_k logits of each row."""
    import torch

    vals, _ = torch.topk(logits, top_k, dim=-1)
    return logits.masked_fill(logits < vals[..., -1:], float("-inf"))


def run_scheduler(sc, req_q, resp_q):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sched = Scheduler(sc, req_q, resp_q)
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
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
        f"skip_tokenizer_init=False, load_format='auto', dtype='auto', device='cuda', "
        f"served_model_name='{model}', host='0.0.0.0', port={args.port}, tp_size=1, stream_interval=1, "
        f"random_seed=73301652, log_level='info'{EXTRA[sc]})"
    )
    if sc == "healthy_warnings":
        logger.warning(
            "Transformers version 4.57.1 is used for model type mistral3. If you experience issues "
            "related to RoPE parameters, they may be due to incompatibilities between Transformers "
            ">=5.0.0 and some models."
        )
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(
        target=run_scheduler, args=(sc, req_q, resp_q), name="sglang::scheduler", daemon=True
    )
    p.start()
    procs.append(p)
    resp_q.get(timeout=600)

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
    req_q.put((0, 6, 8, 0))
    resp_q.get(timeout=600)
    uvicorn_log('127.0.0.1:40324 - "POST /generate HTTP/1.1" 200 OK')
    logger.info("The server is fired up and ready to roll!")
    top_ks = [20, 40, 50, 20, 64, 40, 100, 5, 10, 50, 1, 30, 8, 200, 16, 32]
    done = set()

    def wait_for(want, timeout):
        """The detokenizer's replies, in the order the scheduler finishes them."""
        t_end = time.time() + timeout
        while want not in done:
            rid_, _ = resp_q.get(timeout=max(t_end - time.time(), 0.01))
            done.add(rid_)
            if rid_ == 6 and sc == "health_503":
                uvicorn_log('10.0.1.14:40330 - "POST /v1/completions HTTP/1.1" 200 OK')

    for rid in range(1, 400):
        port = 40324 + rid
        top_k = top_ks[rid % len(top_ks)] if sc == "recompile_fullgraph" else 0
        if (
            sc == "health_503" and rid == 6
        ):  # a 120k-token document; the launcher's probe comes in meanwhile
            req_q.put((rid, 122880, 4, 0))
            time.sleep(0.5)
            req_q.put(
                (-rid, 1, 1, 0)
            )  # /health_generate: a one-token request through the scheduler
            t0 = time.time()
            try:
                wait_for(-rid, 3.0)
            except queue.Empty:
                logger.error(
                    f"Health check failed. Server couldn't get a response from detokenizer for last 3 "
                    f"seconds. tic start time: {t0:.2f}. last_heartbeat time: {t0 - 0.5:.2f}"
                )
                uvicorn_log(
                    '127.0.0.1:51872 - "GET /health_generate HTTP/1.1" 503 Service Unavailable'
                )
            continue
        req_q.put((rid, 300 + rid * 7 % 900, 24, top_k))
        wait_for(rid, 600)
        uvicorn_log(f'10.0.1.14:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        if sc == "health_503" and rid % 5 == 0:
            uvicorn_log('127.0.0.1:51874 - "GET /health_generate HTTP/1.1" 200 OK')
        time.sleep(0.2)


if __name__ == "__main__":
    main()
