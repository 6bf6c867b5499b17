# sglang-shaped launcher + scheduler children for round 21, one real fault (or none) per --scenario:
# jit_lock: the fused-MoE kernel is JIT-compiled into a cache shared by the servers of the node, under a file lock;
#   another server on the node took the lock and is stuck while holding it (r21_run.sh starts that holder); the
#   scheduler's wait for the lock times out before the CUDA-graph capture;
# graph_sync: the scheduler's load-reporter thread (it feeds the router's load balancing) reads the free memory
#   after a torch.cuda.synchronize() every few milliseconds, also while the main thread captures CUDA graphs:
#   the other thread's synchronize is refused during the capture and the capture is invalidated;
# template_400: healthy serving; the model's chat template concatenates message['content'] as a string; one client
#   sends OpenAI content parts (a list): the template fails for that request (400) and serving goes on; then the
#   operator's SIGTERM (no crash).
import argparse
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r21_common import JIT_CACHE, JIT_LOCK, Decoder, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "jit_lock": "/models/Mixtral-8x7B-Instruct-v0.1",
    "graph_sync": "/models/Qwen3-8B",
    "template_400": "/models/Llama-2-13b-chat-hf",
}
EXTRA = {
    "jit_lock": ", mem_fraction_static=0.85, moe_runner_backend='triton', enable_ep_moe=False",
    "graph_sync": ", mem_fraction_static=0.88, cuda_graph_max_bs=160, load_balance_method='minimum_tokens'",
    "template_400": ", mem_fraction_static=0.88, chat_template=None, context_length=4096",
}
CONTEXT = {"template_400": 4096}
CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n")
LLAMA2_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")


def avail_gb():
    import torch
    return torch.cuda.mem_get_info()[0] / 2**30


class Scheduler:
    def __init__(self, sc, req_q, resp_q):
        self.sc, self.req_q, self.resp_q = sc, req_q, resp_q
        self.logger = sglang_logger(0)

    def load_reporter(self):
        """Free memory and token usage for the router, every few milliseconds."""
        import torch
        while True:
            torch.cuda.synchronize()
            self.free_mem = torch.cuda.mem_get_info()[0]
            time.sleep(0.002)

    def init(self):
        import torch
        lg, sc = self.logger, self.sc
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
        lg.info("Init torch distributed ends. mem usage=0.00 GB")
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        self.model = Decoder()
        arch = {"jit_lock": "MixtralForCausalLM", "graph_sync": "Qwen3ForCausalLM"}.get(sc, "LlamaForCausalLM")
        lg.info(f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, "
                f"mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB.")
        self.kv = torch.empty(2 * 2**30, dtype=torch.bfloat16, device="cuda")
        lg.info("KV Cache is allocated. #tokens: 318812, K size: 2.00 GB, V size: 2.00 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        if sc == "graph_sync":
            self.free_mem = None
            threading.Thread(target=self.load_reporter, name="load_reporter", daemon=True).start()
        if sc == "jit_lock":
            self.jit_fused_moe()
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        t0 = time.perf_counter()
        try:
            self.capture()
        except RuntimeError as e:
            raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")
        lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.38 GB. "
                f"avail mem={avail_gb():.2f} GB.")
        ctx = CONTEXT.get(sc, 32768)
        lg.info(f"max_total_num_tokens=318812, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len={ctx}, available_gpu_mem={avail_gb():.2f} GB")

    def jit_fused_moe(self):
        import torch
        from filelock import FileLock
        lg = self.logger
        dev = torch.cuda.get_device_name().replace(" ", "_")
        lg.info(f"Using default MoE kernel config. Performance might be sub-optimal! Config file not found at "
                f"{JIT_CACHE}/fused_moe/configs/E=8,N=14336,device_name={dev}.json")
        lg.info(f"JIT compiling fused_moe_kernel (E=8, N=14336, dtype=bf16) into {JIT_CACHE}/fused_moe")
        with FileLock(JIT_LOCK, timeout=20):
            lg.info("fused_moe_kernel compiled")

    def capture(self):
        import torch
        from tqdm import tqdm
        bss = [160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16, 12, 8, 4, 2, 1]
        pool = torch.cuda.graph_pool_handle()
        self.graphs = {}
        for bs in tqdm(bss, desc="Capturing batches", ncols=100):
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
        return (h @ m.head.T).argmax(-1)

    def event_loop(self):
        self.resp_q.put(("ready", 0))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_tok, n_out = item
            self.logger.info(f"Prefill batch. #new-seq: 1, #new-token: {n_tok}, #cached-token: 0, token usage: 0.00, "
                             f"#running-req: 0, #queue-req: 0, ")
            toks = [self.model.forward(n_tok, seed=rid)] + [self.model.forward(1, seed=rid * 10 + i)
                                                            for i in range(n_out - 1)]
            self.logger.info(f"Decode batch. #running-req: 1, #token: {n_tok + n_out}, token usage: 0.00, "
                             f"cuda graph: True, gen throughput (token/s): {1210 + (rid * 53) % 400:.2f}, "
                             f"#queue-req: 0, ")
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


def apply_chat_template(messages):
    """The tokenizer manager's chat template rendering (HF's sandboxed Jinja environment)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(LLAMA2_TEMPLATE).render(messages=messages, bos_token="<s>", eos_token="</s>",
                                                   add_generation_prompt=True)


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
                f"skip_tokenizer_init=False, load_format='auto', dtype='auto', device='cuda', "
                f"served_model_name='{model}', host='0.0.0.0', port={args.port}, tp_size=1, stream_interval=1, "
                f"random_seed=48211907, log_level='info'{EXTRA[sc]})")
    req_q, resp_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=run_scheduler, args=(sc, req_q, resp_q), name="sglang::scheduler", daemon=True)
    p.start()
    procs.append(p)
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
    req_q.put((0, 6, 8))
    resp_q.get(timeout=600)
    uvicorn_log('127.0.0.1:40324 - "POST /generate HTTP/1.1" 200 OK')
    logger.info("The server is fired up and ready to roll!")
    texts = ["Summarize the attached meeting notes in three bullet points.", "What is the capital of Australia?",
             "Write a haiku about GPUs.", "Translate 'good morning' into German.",
             "Explain KV caching like I am five."]
    for rid in range(1, 400):
        port = 40324 + rid
        msgs = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": texts[rid % len(texts)]}]
        if rid % 7 == 3:  # a client that sends OpenAI content parts
            msgs[1]["content"] = [{"type": "text", "text": texts[rid % len(texts)]}]
        try:
            prompt = apply_chat_template(msgs)
        except Exception as e:
            logger.error(f"Error in request: {e}\n{traceback.format_exc()}")
            uvicorn_log(f'10.0.1.14:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
            time.sleep(0.2)
            continue
        req_q.put((rid, len(prompt.split()) * 2, 24))
        resp_q.get(timeout=600)
        uvicorn_log(f'10.0.1.14:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        time.sleep(0.2)


if __name__ == "__main__":
    main()
