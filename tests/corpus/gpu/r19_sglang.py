# sglang-shaped launcher + scheduler children for round 19, one real fault (or none) per --scenario:
# watchdog: the scheduler's forward enters a custom-all-reduce style wait on a device flag that never comes
#   (a real spinning kernel); /health checks fail, then the scheduler's watchdog (a real thread that sees no
#   forward progress) fires and signals the launcher;
# expandable_oom: TP=2 on one card under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; each rank sizes its
#   KV pool from the card's total memory (as if it had the card alone): rank 0's pool fits, rank 1's does not;
# ipc_same_process: colocated RL rollout: the trainer hands the new weights to update_weights_from_tensor as
#   CUDA IPC handles, but trainer and scheduler live in one process, so the handle is opened by its exporter;
# chat_template: --chat-template points at a Jinja file with an unclosed block: the launcher's template
#   manager fails while the scheduler is still loading;
# launch_oor: a JIT-compiled fused MoE gating kernel (NVRTC via CuPy) that needs many registers per thread,
#   launched with 1024 threads per block: too many resources requested for launch;
# long_input: healthy serving; one request's input is longer than the context (the tokenizer manager's own
#   check answers 400) and serving goes on; then the operator's SIGTERM.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import Decoder, sglang_logger, spin_until_peers, uvicorn_log  # noqa: E402

ROOT = "/tmp/r19_files"
MODELS = {
    "watchdog": "/models/Qwen3-32B",
    "expandable_oom": "/models/Llama-3.1-70B-Instruct-FP8",
    "ipc_same_process": "/models/Qwen2.5-Math-7B",
    "chat_template": "/models/Qwen3-8B",
    "launch_oor": "/models/Mixtral-8x7B-Instruct-v0.1",
    "long_input": "/models/Qwen2.5-7B-Instruct",
}
EXTRA = {
    "watchdog": ", mem_fraction_static=0.85, watchdog_timeout=15, enable_custom_all_reduce=True",
    "expandable_oom": ", mem_fraction_static=0.6, quantization='fp8', kv_cache_dtype='auto'",
    "ipc_same_process": ", mem_fraction_static=0.5, enable_memory_saver=True, base_gpu_id=0",
    "chat_template": f", mem_fraction_static=0.88, chat_template='{ROOT}/templates/qwen3_tool_use.jinja'",
    "launch_oor": ", mem_fraction_static=0.85, enable_ep_moe=False, moe_runner_backend='triton'",
    "long_input": ", mem_fraction_static=0.88, context_length=32768, allow_auto_truncate=False",
}
TP = {"expandable_oom": 2}
CONTEXT = 32768

TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- for tool in tools %}
        {{- tool | tojson }}
    {%- endfor %}
{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

GATE_SRC = r"""
extern "C" __global__ void fused_moe_gate_topk_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    float acc[128];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = x[(t + i * 131) % n] * (i + 1);
    #pragma unroll
    for (int r = 0; r < 6; r++) {
        #pragma unroll
        for (int i = 0; i < 128; i++) acc[i] = fmaf(acc[i], acc[(i + 37) & 127], x[(t * (r + 3) + i) % n]);
    }
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < 128; i++) s += acc[i] * acc[127 - i];
    out[t] = s;
}
"""


def load_template_env():
    """What the template manager does with a --chat-template file (HF's sandboxed environment)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    path = f"{ROOT}/templates/qwen3_tool_use.jinja"
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    with open(path) as f:
        return env.from_string(f.read())


class Scheduler:
    def __init__(self, tp_rank, tp, sc, req_q, resp_q, port):
        self.tp_rank, self.tp, self.sc, self.req_q, self.resp_q, self.port = tp_rank, tp, sc, req_q, resp_q, port
        self.logger = sglang_logger(tp_rank)
        self.forward_ct = 0
        self.busy = False

    def avail(self):
        import torch
        return torch.cuda.mem_get_info()[0] / 2**30

    def init(self):
        import torch
        lg, sc = self.logger, self.sc
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        if self.tp > 1:
            import torch.distributed as dist
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{self.port + 7}", rank=self.tp_rank,
                                    world_size=self.tp)
        lg.info(f"Init torch distributed ends. mem usage={0.58 if self.tp > 1 else 0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={self.avail():.2f} GB")
        self.model = Decoder()
        if sc == "chat_template":
            time.sleep(2.0)  # the bigger checkpoint's shards
        lg.info(f"Load weight end. type={'LlamaForCausalLM' if 'Llama' in MODELS[sc] else 'Qwen2ForCausalLM'}, "
                f"dtype=torch.bfloat16, avail mem={self.avail():.2f} GB, mem usage={self.model.gib():.2f} GB.")
        if sc == "expandable_oom":
            self.alloc_kv_pool()
        else:
            lg.info("KV Cache is allocated. #tokens: 398112, K size: 13.67 GB, V size: 13.67 GB")
        lg.info(f"Memory pool end. avail mem={self.avail():.2f} GB")
        if sc == "launch_oor":
            self.gate = self.build_gate_kernel()
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={self.avail():.2f} GB")
        bs_list = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
        for bs in bs_list:
            self.model.forward(bs)
            if sc == "launch_oor":
                self.moe_gate(bs)
        lg.info(f"Capture cuda graph end. Time elapsed: 3.12 s. mem usage=0.38 GB. avail mem={self.avail():.2f} GB.")
        lg.info(f"max_total_num_tokens=398112, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len={CONTEXT}, available_gpu_mem=11.84 GB")

    def alloc_kv_pool(self):
        """Size the pool from mem_fraction_static of the card's total memory, minus this rank's weights."""
        import torch
        import torch.distributed as dist
        total = torch.cuda.mem_get_info()[1]
        pool_bytes = int(total * 0.6) - torch.cuda.memory_allocated()
        per_token = 80 * 8 // self.tp * 128 * 2 * 2  # layers x kv heads/rank x head_dim x (K,V) x bf16
        tokens = pool_bytes // per_token
        if self.tp_rank == 1:
            dist.barrier()  # rank 0 allocates first (the ranks start their pools in turn)
        self.k_buffer = torch.empty((tokens * per_token // 4,), dtype=torch.bfloat16, device="cuda")
        self.v_buffer = torch.empty((tokens * per_token // 4,), dtype=torch.bfloat16, device="cuda")
        self.logger.info(f"KV Cache is allocated. #tokens: {tokens}, K size: {tokens * per_token / 2 / 2**30:.2f} GB, "
                         f"V size: {tokens * per_token / 2 / 2**30:.2f} GB")
        if self.tp_rank == 0:
            dist.barrier()

    def build_gate_kernel(self):
        import cupy
        k = cupy.RawKernel(GATE_SRC, "fused_moe_gate_topk_kernel", options=("-maxrregcount=255", "-lineinfo"))
        k.compile()
        self.logger.info(f"JIT compiled fused_moe_gate_topk_kernel for sm_{''.join(map(str, cupy.cuda.Device().compute_capability))}: "
                         f"{k.num_regs} registers, {k.shared_size_bytes} bytes smem")
        return k

    def moe_gate(self, bs):
        import cupy
        import torch
        n = bs * 8 * 128
        x = torch.randn(n, device="cuda")
        out = torch.empty(n, device="cuda")
        threads = 1024
        self.gate(((n + threads - 1) // threads,), (threads,),
                  (cupy.from_dlpack(x), cupy.from_dlpack(out), cupy.int32(n)))
        torch.cuda.synchronize()

    def update_weights_from_tensor(self, named_tensors):
        """The scheduler side of update_weights_from_tensor: rebuild each serialized tensor, copy it in."""
        import pickle
        for name, payload in named_tensors:
            t = pickle.loads(payload)
            self.model.emb.copy_(t[: self.model.emb.shape[0]])
            self.logger.info(f"Updated parameter {name} from tensor")

    def watchdog(self, timeout):
        last_ct, last_t = self.forward_ct, time.time()
        while True:
            time.sleep(timeout / 5)
            if self.busy and self.forward_ct == last_ct:
                if time.time() - last_t > timeout:
                    self.logger.error(f"Scheduler watchdog timeout (self.watchdog_timeout={timeout}, self.soft=False)")
                    self.logger.info("Dumping the python stacks of the scheduler (forward_ct=%d):\n%s" % (
                        self.forward_ct, "".join(traceback.format_stack(sys._current_frames()[threading.main_thread().ident]))))
                    sys.stdout.flush()
                    os.kill(os.getppid(), signal.SIGQUIT)
                    return
            else:
                last_ct, last_t = self.forward_ct, time.time()

    def event_loop(self):
        if self.sc == "watchdog":
            threading.Thread(target=self.watchdog, args=(15,), daemon=True).start()
        self.resp_q.put(("ready", self.tp_rank))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, kind, n_tok = item
            if kind == "health":
                self.resp_q.put((rid, 200))
                continue
            if kind == "weights":
                import torch
                import torch.multiprocessing  # noqa: F401  (registers the CUDA reductions)
                from multiprocessing.reduction import ForkingPickler
                new = torch.randn(self.model.emb.shape, device="cuda", dtype=torch.bfloat16) * 0.02
                payload = bytes(ForkingPickler.dumps(new))  # the trainer's side, in this same process
                self.update_weights_from_tensor([("model.embed_tokens.weight", payload)])
                self.resp_q.put((rid, 200))
                continue
            self.busy = True
            if self.tp_rank == 0:
                self.logger.info(f"Prefill batch. #new-seq: 1, #new-token: {n_tok}, #cached-token: 0, "
                                 f"token usage: 0.01, #running-req: 0, #queue-req: 0, ")
            self.model.forward(n_tok, seed=rid)
            if self.sc == "watchdog" and n_tok > 4000:
                spin_until_peers(2)  # the custom all-reduce's wait for a peer flag that is never written
            for i in range(8):
                self.model.forward(1, seed=rid * 10 + i)
                self.forward_ct += 1
            if self.tp_rank == 0:
                self.logger.info(f"Decode batch. #running-req: 1, #token: {n_tok + 8}, token usage: 0.01, "
                                 f"cuda graph: True, gen throughput (token/s): {1400 + (rid * 37) % 300:.2f}, "
                                 f"#queue-req: 0, ")
            self.busy = False
            self.resp_q.put((rid, 200))


def run_scheduler(tp_rank, tp, sc, req_q, resp_q, port):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sched = Scheduler(tp_rank, tp, sc, req_q, resp_q, port)
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
        time.sleep(1.0)
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, sigquit_handler)
    if sc == "chat_template":
        os.makedirs(f"{ROOT}/templates", exist_ok=True)
        with open(f"{ROOT}/templates/qwen3_tool_use.jinja", "w") as f:
            f.write(TEMPLATE)
    model = MODELS[sc]
    logger.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                f"skip_tokenizer_init=False, load_format='auto', dtype='auto', "
                f"context_length=None, device='cuda', served_model_name='{model}', "
                f"host='0.0.0.0', port={args.port}, tp_size={tp}, stream_interval=1, random_seed=482913307, "
                f"log_level='info'{EXTRA[sc]})")
    req_qs = [ctx.Queue() for _ in range(tp)]
    resp_q = ctx.Queue()
    for r in range(tp):
        p = ctx.Process(target=run_scheduler, args=(r, tp, sc, req_qs[r], resp_q, args.port),
                        name=f"sglang::scheduler_TP{r}", daemon=True)
        p.start()
        procs.append(p)
    if sc == "chat_template":
        time.sleep(1.5)
        logger.info(f"Loading chat template from argument: {ROOT}/templates/qwen3_tool_use.jinja")
        load_template_env()
    for _ in range(tp):
        resp_q.get(timeout=300)

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        for q in req_qs:
            q.put(None)
        time.sleep(0.5)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)")
    uvicorn_log("127.0.0.1:40108 - \"GET /get_model_info HTTP/1.1\" 200 OK")

    def call(rid, kind, n_tok, timeout=60):
        for q in req_qs:
            q.put((rid, kind, n_tok))
        for _ in range(tp):
            resp_q.get(timeout=timeout)

    call(0, "gen", 6)
    uvicorn_log('127.0.0.1:40110 - "POST /generate HTTP/1.1" 200 OK')
    logger.info("The server is fired up and ready to roll!")
    if sc == "ipc_same_process":
        uvicorn_log('127.0.0.1:40111 - "POST /release_memory_occupation HTTP/1.1" 200 OK')
        uvicorn_log('127.0.0.1:40112 - "POST /resume_memory_occupation HTTP/1.1" 200 OK')
        call(1, "weights", 0)
        uvicorn_log('127.0.0.1:40113 - "POST /update_weights_from_tensor HTTP/1.1" 200 OK')
    lens = [212, 87, 1040, 36000, 331, 5120, 64, 790, 2048, 150, 999, 420]
    health_stop = threading.Event()
    if sc == "watchdog":
        def health():
            hid = 0
            while not health_stop.is_set():
                time.sleep(4)
                hid += 1
                for q in req_qs:
                    q.put((10000 + hid, "health", 0))
                t0 = time.time()
                try:
                    resp_q.get(timeout=8)
                    uvicorn_log(f'127.0.0.1:{41000 + hid} - "GET /health HTTP/1.1" 200 OK')
                except Exception:
                    logger.error(f"Health check failed. Server couldn't get a response from detokenizer for last "
                                 f"{time.time() - t0:.0f} seconds. tic start time: {time.strftime('%H:%M:%S', time.localtime(t0))}. "
                                 f"last_heartbeat time: {time.strftime('%H:%M:%S', time.localtime(t0 - 4))}")
                    uvicorn_log(f'127.0.0.1:{41000 + hid} - "GET /health HTTP/1.1" 503 Service Unavailable')
        threading.Thread(target=health, daemon=True).start()
    rid = 2
    while True:
        n_tok = lens[rid % len(lens)]
        if n_tok >= CONTEXT and sc != "long_input":
            n_tok = 1500
        if sc == "watchdog" and rid < 8 and n_tok > 4000:
            n_tok = 3000
        if n_tok >= CONTEXT:  # the tokenizer manager's own check of the request
            try:
                raise ValueError(f"The input ({n_tok} tokens) is longer than the model's context length "
                                 f"({CONTEXT} tokens).")
            except ValueError as e:
                logger.error(f"Error in request: {e}")
            uvicorn_log(f'127.0.0.1:{40110 + rid} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
            rid += 1
            continue
        try:
            call(rid, "gen", n_tok, timeout=3600)
        except Exception:
            pass
        uvicorn_log(f'127.0.0.1:{40110 + rid} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        rid += 1
        time.sleep(0.2)


if __name__ == "__main__":
    main()
