# sglang-shaped launcher + scheduler child for round 23, one real fault per --scenario:
# moe_fp32_tiles: a MoE reward model served with --dtype float32 and --disable-cuda-graph (numerical debugging);
#   the fused-MoE Triton kernel takes its tile config from the tuned JSON for this GPU, tuned for bf16
#   (BLOCK_SIZE_M 128, N 256, K 64, num_stages 4); in float32 the tiles need more shared memory than the SM
#   has: Triton's OutOfResources at the launcher's warm-up request; the scheduler signals the launcher;
# capture_nonzero: a MoE model whose token dispatch gathers each expert's tokens with torch.nonzero (the
#   "small batch" path a contributor added); CUDA graph capture of the decode batches meets the host sync of
#   nonzero; the scheduler's capture wrapper re-raises with its advice, the launcher gets sigquit.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r23_common import Decoder, sglang_logger, uvicorn_log

MODELS = {"moe_fp32_tiles": "/models/Skywork-Reward-MoE-16B", "capture_nonzero": "/models/Moonlight-16B-A3B-Instruct"}
EXTRA = {
    "moe_fp32_tiles": ", dtype='float32', mem_fraction_static=0.85, disable_cuda_graph=True, is_embedding=False",
    "capture_nonzero": ", dtype='bfloat16', mem_fraction_static=0.88, cuda_graph_max_bs=64, ep_size=1, moe_dispatch='nonzero'",
}
CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)
E, TOPK, HID, INTER = 64, 6, 2048, 1408


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def fused_moe_kernel_fn():
    import triton
    import triton.language as tl

    @triton.jit
    def fused_moe_kernel(a_ptr, b_ptr, c_ptr, expert_ids_ptr, M, N, K, stride_am, stride_ak, stride_be,
                         stride_bn, stride_bk, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        e = tl.load(expert_ids_ptr + pid_m)
        offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + e * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_SIZE_K) & (offs_n[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

    return fused_moe_kernel


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
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        self.dt = torch.float32 if sc == "moe_fp32_tiles" else torch.bfloat16
        kw = dict(device="cuda", dtype=self.dt)
        torch.manual_seed(0)
        self.model = Decoder(layers=2)
        self.router = torch.randn(E, HID, **kw) * 0.02
        self.w13 = torch.randn(E, 2 * INTER, HID, **kw) * 0.02
        self.w2 = torch.randn(E, HID, INTER, **kw) * 0.02
        arch = "DeepseekV3ForCausalLM" if sc == "capture_nonzero" else "MixtralForRewardModel"
        lg.info(f"Load weight end. type={arch}, dtype={self.dt}, avail mem={avail_gb():.2f} GB, "
                f"mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB.")
        self.kv = torch.empty(2 * 2**30, dtype=torch.bfloat16, device="cuda")
        lg.info("KV Cache is allocated. #tokens: 262144, K size: 2.00 GB, V size: 2.00 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        if sc == "moe_fp32_tiles":
            name = torch.cuda.get_device_name().replace(" ", "_")
            self.moe_cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
                            "num_warps": 8, "num_stages": 4}
            lg.info(f"Using configuration from /sgl-workspace/sglang/python/sglang/srt/layers/moe/fused_moe_triton/"
                    f"configs/triton_3_4_0/E={E},N={INTER},device_name={name}.json for MoE layer.")
            self.kernel = fused_moe_kernel_fn()
        else:
            lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
            t0 = time.perf_counter()
            self.capture()
            lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.51 GB. "
                    f"avail mem={avail_gb():.2f} GB.")
        lg.info(f"max_total_num_tokens=262144, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len=32768, available_gpu_mem={avail_gb():.2f} GB")

    # ---- MoE layer: token dispatch + experts
    def moe_nonzero(self, h):
        import torch

        logits = h @ self.router.T
        w, ids = torch.topk(logits.float().softmax(-1), TOPK, dim=-1)
        out = torch.zeros_like(h)
        for e in range(E):
            tok, slot = (ids == e).nonzero(as_tuple=True)  # the small-batch dispatch
            if tok.numel() == 0:
                continue
            x = h[tok]
            g_, u = (x @ self.w13[e].T).chunk(2, -1)
            y = (torch.nn.functional.silu(g_) * u) @ self.w2[e].T
            out.index_add_(0, tok, y * w[tok, slot, None].to(y.dtype))
        return out

    def moe_triton(self, h):
        import torch
        import triton

        logits = h @ self.router.T
        w, ids = torch.topk(logits.float().softmax(-1), TOPK, dim=-1)
        cfg = self.moe_cfg
        BM = cfg["BLOCK_SIZE_M"]
        order = ids.flatten().argsort()
        tok = order // TOPK
        a = h[tok].contiguous()  # sorted by expert
        M = a.size(0)
        expert_ids = ids.flatten()[order][::BM].contiguous().to(torch.int32)
        c = torch.empty(M, 2 * INTER, device="cuda", dtype=h.dtype)
        grid = (triton.cdiv(M, BM), triton.cdiv(2 * INTER, cfg["BLOCK_SIZE_N"]))
        self.kernel[grid](a, self.w13, c, expert_ids, M, 2 * INTER, HID, a.stride(0), a.stride(1),
                          self.w13.stride(0), self.w13.stride(1), self.w13.stride(2), c.stride(0), c.stride(1),
                          BLOCK_SIZE_M=BM, BLOCK_SIZE_N=cfg["BLOCK_SIZE_N"], BLOCK_SIZE_K=cfg["BLOCK_SIZE_K"],
                          GROUP_SIZE_M=cfg["GROUP_SIZE_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        g_, u = c.chunk(2, -1)
        y = torch.einsum("mi,mhi->mh", torch.nn.functional.silu(g_) * u, self.w2[ids.flatten()[order]])
        out = torch.zeros_like(h)
        out.index_add_(0, tok, y * w.flatten()[order, None].to(y.dtype))
        return out

    def decode(self, ids):
        m = self.model
        h = m.emb[ids].to(self.dt)
        h = h + self.moe_nonzero(h) if self.sc == "capture_nonzero" else h + self.moe_triton(h)
        return (h.to(m.head.dtype) @ m.head.T).argmax(-1)

    def capture(self):
        import torch
        from tqdm import tqdm

        pool = torch.cuda.graph_pool_handle()
        self.graphs = {}
        try:
            for bs in tqdm([64, 48, 32, 24, 16, 12, 8, 4, 2, 1], desc="Capturing batches", ncols=100):
                ids = torch.zeros(bs, dtype=torch.long, device="cuda") + torch.arange(bs, device="cuda")
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    self.decode(ids)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    out = self.decode(ids)
                self.graphs[bs] = (g, ids, out)
        except RuntimeError as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")

    def event_loop(self):
        import torch

        self.resp_q.put(("ready", 0))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_tok, n_out = item
            self.logger.info(f"Prefill batch. #new-seq: 1, #new-token: {n_tok}, #cached-token: 0, token usage: 0.00, "
                             f"#running-req: 0, #queue-req: 0, ")
            ids = torch.randint(0, 32000, (n_tok,), device="cuda")
            toks = [int(self.decode(ids)[-1])]
            for _ in range(n_out - 1):
                toks.append(int(self.decode(torch.tensor([toks[-1]], device="cuda"))[0]))
            self.resp_q.put((rid, toks))


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
        f"skip_tokenizer_init=False, load_format='auto', trust_remote_code=True, device='cuda', "
        f"served_model_name='{model}', host='0.0.0.0', port={args.port}, tp_size=1, stream_interval=1, "
        f"random_seed=90311207, log_level='info'{EXTRA[sc]})")
    if sc == "moe_fp32_tiles":
        logger.warning("Casting torch.bfloat16 to torch.float32.")
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=run_scheduler, args=(sc, req_q, resp_q), name="sglang::scheduler", daemon=True)
    p.start()
    procs.append(p)
    resp_q.get(timeout=600)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:45170 - "GET /get_model_info HTTP/1.1" 200 OK')
    req_q.put((0, 6, 8))  # the launcher's warm-up /generate
    resp_q.get(timeout=600)
    uvicorn_log('127.0.0.1:45172 - "POST /generate HTTP/1.1" 200 OK')
    logger.info("The server is fired up and ready to roll!")
    for rid in range(1, 400):
        req_q.put((rid, 300 + rid * 7 % 900, 24))
        resp_q.get(timeout=600)
        uvicorn_log(f'10.0.1.9:{45172 + rid} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        time.sleep(0.2)


if __name__ == "__main__":
    main()
