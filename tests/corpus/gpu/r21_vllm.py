# vLLM-shaped API server + EngineCore for round 21, one real fault (or none) per --scenario:
# free_mem: a process left over from an earlier run still holds part of the card (r21_run.sh starts it); the
#   worker's start-up check compares the measured free memory with gpu_memory_utilization 0.9 and refuses;
# sigbus_reload: an async-RL setup: the trainer (a separate process) saves the actor's weights to one shared
#   path and asks the server to reload them (/collective_rpc), then goes on and saves the next step's weights to
#   the same path while the engine is still reading the previous ones through safetensors' mmap: the file is
#   truncated under the mapping and the EngineCore dies of SIGBUS (PYTHONFAULTHANDLER=1 is set by the job);
# graph_generator: FULL CUDA graphs that include sampling (a custom sampler from the model's remote code) draw
#   from a seeded torch.Generator of the engine's own (--seed 1234) that is not the default generator: the
#   capture of the multinomial fails at start-up;
# tool_parse: healthy serving with --tool-call-parser hermes; the model's tool-call output is often not valid JSON,
#   the parser logs the exception and returns the text as content (200), serving goes on; then the operator's
#   SIGTERM (no crash).
import argparse
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r21_common import RL_CKPT, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
GiB = 1 << 30
MODELS = {
    "free_mem": "/models/Qwen3-14B",
    "sigbus_reload": "/ckpt/grpo-qwen3-4b/actor",
    "graph_generator": "/models/Llama-3.1-8B-Instruct-sampler",
    "tool_parse": "/models/Qwen2.5-7B-Instruct",
}
ARGS = {
    "free_mem": {"gpu_memory_utilization": 0.9, "max_model_len": 32768},
    "sigbus_reload": {"gpu_memory_utilization": 0.3, "max_model_len": 8192, "load_format": "safetensors",
                      "enable_sleep_mode": False, "worker_extension_cls": "rl.weight_sync.ReloadFromDiskExtension"},
    "graph_generator": {"seed": 1234, "trust_remote_code": True, "max_model_len": 8192,
                        "compilation_config": {"cudagraph_mode": "FULL", "cudagraph_capture_sizes": [1, 2, 4, 8, 16]}},
    "tool_parse": {"enable_auto_tool_choice": True, "tool_call_parser": "hermes", "max_model_len": 32768},
}


class EngineDeadError(Exception):
    pass


# ---------------------------------------------------------------- the model (real GPU work)
class Model:
    """Random-weight decoder; its weights can be loaded from (and are saved to) a safetensors file."""

    def __init__(self, vocab=32000, hidden=2048, inter=5632, layers=8, seed=0):
        import torch
        g = torch.Generator().manual_seed(seed)
        self.vocab, self.hidden, self.inter, self.n_layers = vocab, hidden, inter, layers
        self.w = {"embed_tokens.weight": torch.randn(vocab, hidden, generator=g) * 0.02,
                  "lm_head.weight": torch.randn(vocab, hidden, generator=g) * 0.02}
        for i in range(layers):
            self.w[f"layers.{i}.mlp.gate_up_proj.weight"] = torch.randn(2 * inter, hidden, generator=g) * 0.02
            self.w[f"layers.{i}.mlp.down_proj.weight"] = torch.randn(hidden, inter, generator=g) * 0.02
        self.w = {k: v.to(torch.bfloat16) for k, v in self.w.items()}

    @classmethod
    def empty(cls, vocab=32000, hidden=2048, inter=5632, layers=8):
        """Filled by the loader."""
        m = cls.__new__(cls)
        m.vocab, m.hidden, m.inter, m.n_layers, m.w = vocab, hidden, inter, layers, {}
        return m

    def to_cuda(self):
        self.w = {k: v.cuda() for k, v in self.w.items()}
        return self

    def hidden_states(self, ids):
        import torch
        h = self.w["embed_tokens.weight"][ids]
        for i in range(self.n_layers):
            gu = h @ self.w[f"layers.{i}.mlp.gate_up_proj.weight"].T
            g, u = gu.chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g) * u) @ self.w[f"layers.{i}.mlp.down_proj.weight"].T
        return h

    def logits(self, ids):
        return self.hidden_states(ids) @ self.w["lm_head.weight"].T

    def greedy(self, ids):
        return self.logits(ids).argmax(-1)


def serialize(step):
    from safetensors.torch import save
    return save(Model(seed=step).w, metadata={"format": "pt", "step": str(step)})


def write_weights(path, data, chunk=8 << 20, pause=0.05):
    """The trainer's save: the file is written in place (a network filesystem: ~160 MB/s)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        for i in range(0, len(data), chunk):
            f.write(data[i:i + chunk])
            f.flush()
            time.sleep(pause)


def trainer_main(q_to_server, q_from_server):
    """The RL trainer (another job; its own output is not in this log)."""
    sys.stdout = sys.stderr = open(os.devnull, "w")
    write_weights(RL_CKPT, serialize(0), pause=0.0)
    q_to_server.put(("ckpt", 0))
    for step in (1, 2, 3):
        q_from_server.get()  # the rollout batch came back
        write_weights(RL_CKPT, serialize(step), pause=0.0)  # after the optimizer step
        nxt = serialize(step + 1)  # the next step trains while the server reloads
        q_to_server.put(("reload", step))  # POST /collective_rpc {"method": "reload_weights"}; not awaited
        time.sleep(0.2)
        write_weights(RL_CKPT, nxt)  # save_steps=1: the next checkpoint goes to the same path


def log_config(log, sc, model):
    a = ARGS[sc]
    cc = a.get("compilation_config", {"level": 3, "cudagraph_mode": "FULL_AND_PIECEWISE"})
    log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
             f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
             f"trust_remote_code={a.get('trust_remote_code', False)}, dtype=torch.bfloat16, "
             f"max_seq_len={a.get('max_model_len', 32768)}, download_dir=None, "
             f"load_format={a.get('load_format', 'auto')}, tensor_parallel_size=1, pipeline_parallel_size=1, "
             f"data_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
             f"seed={a.get('seed', 0)}, served_model_name={model}, enable_prefix_caching=True, "
             f"chunked_prefill_enabled=True, compilation_config={cc}")


# ---------------------------------------------------------------- engine core
class Engine:
    def __init__(self, sc, model):
        import torch
        self.sc = sc
        a = ARGS[sc]
        log_config(vllm_logger("core.py"), sc, model)
        torch.cuda.set_device(0)
        if sc == "free_mem":
            self.check_free_memory(a["gpu_memory_utilization"])
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, "
                                              "TP rank 0, EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        if sc == "sigbus_reload":
            self.model = Model.empty()
            self.load_from_disk(RL_CKPT)
        else:
            self.model = Model().to_cuda()
        vllm_logger("default_loader.py").info(f"Loading weights took {time.perf_counter() - t0:.2f} seconds")
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and "
                f"{time.perf_counter() - t0 + 0.4:.6f} seconds")
        self.model.logits(torch.randint(0, 32000, (8192,), device="cuda"))
        torch.cuda.synchronize()
        free = torch.cuda.mem_get_info()[0]
        kv = min(4 * GiB, int(free * 0.5))
        self.kv = torch.empty(kv // 2, dtype=torch.bfloat16, device="cuda")
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {kv / GiB:.2f} GiB")
        per_token = 2 * 2 * 36 * 8 * 128
        vllm_logger("kv_cache_utils.py").info(f"GPU KV cache size: {kv // per_token:,} tokens")
        mml = a.get("max_model_len", 32768)
        vllm_logger("kv_cache_utils.py").info(f"Maximum concurrency for {mml:,} tokens per request: "
                                              f"{kv / per_token / mml:.2f}x")
        self.graphs = {}
        self.capture()

    def check_free_memory(self, util):
        """gpu_worker.init_device: the memory snapshot at start-up against the requested share of the card."""
        import torch
        free, total = torch.cuda.mem_get_info()
        requested = total * util
        if free < requested:
            raise ValueError(f"Free memory on device ({free / GiB:.2f}/{total / GiB:.2f} GiB) on startup is less "
                             f"than desired GPU memory utilization ({util}, {requested / GiB:.2f} GiB). Decrease GPU "
                             f"memory utilization or reduce GPU memory used by other processes.")

    def load_from_disk(self, path):
        import torch
        from safetensors import safe_open
        with safe_open(path, framework="pt", device="cpu") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                dst = self.model.w.get(name)
                if dst is not None and dst.is_cuda:
                    dst.copy_(t, non_blocking=False)
                else:
                    self.model.w[name] = t.cuda()
                torch.cuda.synchronize()
                time.sleep(0.08)  # per-parameter weight processing (the loader's weight_loader callbacks)

    # the custom sampler of the model's remote code: temperature, then a draw from the engine's own generator
    def sample(self, ids):
        import torch
        logits = self.model.logits(ids).float()
        probs = torch.softmax(logits / 0.7, -1)
        return torch.multinomial(probs, 1, generator=self.gen).view(-1)

    def capture(self):
        import torch
        from tqdm import tqdm
        sizes = [16, 8, 4, 2, 1]
        if self.sc == "graph_generator":
            self.gen = torch.Generator(device="cuda").manual_seed(ARGS[self.sc]["seed"])
            fn = self.sample
        else:
            fn = self.model.greedy
        pool = torch.cuda.graph_pool_handle()
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        before = torch.cuda.mem_get_info()[0]
        for bs in tqdm(sizes, desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt):
            ids = torch.zeros(bs, dtype=torch.long, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    fn(ids)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                out = fn(ids)
            self.graphs[bs] = (g, ids, out)
        took = (before - torch.cuda.mem_get_info()[0]) / GiB
        vllm_logger("gpu_model_runner.py").info(f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, "
                                                f"took {max(took, 0.01):.2f} GiB")

    def step(self, bs, n_out, seed):
        import torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, 32000, (bs,), device="cuda", generator=g)
        toks = []
        for _ in range(n_out):
            gbs = next(b for b in sorted(self.graphs) if b >= bs)
            graph, sid, out = self.graphs[gbs]
            sid[:bs].copy_(ids)
            graph.replay()
            ids = out[:bs].clone()
            toks.append(ids)
        return torch.stack(toks, 1).cpu().tolist()


def engine_core_main(sc, model, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log = vllm_logger("core.py")
    t0 = time.perf_counter()
    try:
        eng = Engine(sc, model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds")
    out_q.put(("READY", 0))
    while True:
        req = in_q.get()
        if req is None:
            return
        if req[0] == "reload":
            t = time.perf_counter()
            eng.load_from_disk(req[1])
            vllm_logger("weight_sync.py").info(f"reloaded weights from {req[1]} in {time.perf_counter() - t:.2f} s")
            out_q.put(("OK", None))
            continue
        _, rid, bs, n_out = req
        out_q.put(("DONE", eng.step(bs, n_out, seed=rid)))


def wait_ready(p, out_q):
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    last = time.time()
    while True:
        try:
            return out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                return None
            if time.time() - last >= 10:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last = time.time()


def get_reply(p, out_q, timeout=120):
    """The client side of the engine-core socket; notices a core process that died."""
    t_end = time.time() + timeout
    while time.time() < t_end:
        try:
            return out_q.get(timeout=0.5)
        except Exception:
            if not p.is_alive():
                vllm_logger("core_client.py").error("Engine core proc EngineCore_DP0 died unexpectedly, shutting "
                                                    "down client.")
                return ("ENGINE_CORE_DEAD", p.exitcode)
    return ("TIMEOUT", None)


# ---------------------------------------------------------------- hermes tool-call parser
PIECES = ['{"', 'name', '": "', 'get_weather', '", "', 'arguments', '": {', 'city', 'Paris', '"}', '}', ', ',
          '"unit": "celsius"', ' ', '\n', 'search_web', '"query', '": ', 'GPU', ' prices', '[', ']', '"', ':']


def hermes_extract(model_output):
    import json
    import re
    regex = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
    log = vllm_logger("hermes_tool_parser.py")
    try:
        matches = regex.findall(model_output)
        raw = [m[0] if m[0] else m[1] for m in matches]
        calls = [json.loads(r) for r in raw]
        return calls, None
    except Exception:
        log.exception("Error in extracting tool call from response.")
        return [], model_output


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    a = ARGS[sc]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {dict({'model_tag': model, 'port': args.port}, **a, model=model)}")
    vllm_logger("model.py").info(f"Resolved architecture: {'Qwen3ForCausalLM' if 'Qwen3' in model or 'grpo' in model else 'LlamaForCausalLM' if 'Llama' in model else 'Qwen2ForCausalLM'}")
    vllm_logger("model.py").info(f"Using max model len {a.get('max_model_len', 32768)}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    tq_in = tq_out = None
    if sc == "sigbus_reload":
        tq_in, tq_out = ctx.Queue(), ctx.Queue()
        ctx.Process(target=trainer_main, args=(tq_in, tq_out), name="trainer", daemon=True).start()
        tq_in.get(timeout=120)  # the first checkpoint is on disk
    p = ctx.Process(target=engine_core_main, args=(sc, model, in_q, out_q), name="EngineCore_DP0")
    p.start()
    if wait_ready(p, out_q) != "READY":
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
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/collective_rpc", "/metrics"):
        log.info(f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics') else 'POST'}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    stats = vllm_logger("loggers.py")
    p_tok = g_tok = 0
    last = time.time()
    port = 50311
    rid = 0

    def dead(what):
        try:
            raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
        except EngineDeadError:
            vllm_logger("serving_engine.py" if what == "rpc" else "async_llm.py").error(
                f"{'collective_rpc' if what == 'rpc' else 'AsyncLLM output_handler'} failed.\n"
                f"{traceback.format_exc().rstrip()}")
        uvicorn_log(f'10.0.3.7:{port} - "POST /{"collective_rpc" if what == "rpc" else "v1/chat/completions"} '
                    f'HTTP/1.1" 500 Internal Server Error')
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        sys.exit(1)

    while True:
        rid += 1
        port += 1
        if sc == "sigbus_reload":
            for _ in range(4):  # a rollout batch
                in_q.put(("gen", rid, 16, 24))
                status, _ = get_reply(p, out_q)
                if status != "DONE":
                    dead("gen")
                uvicorn_log(f'10.0.3.7:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
                p_tok += 16 * 310
                g_tok += 16 * 24
                rid += 1
                port += 1
            tq_out.put("rollouts")
            kind, step = tq_in.get(timeout=120)
            in_q.put(("reload", RL_CKPT))
            status, _ = get_reply(p, out_q)
            if status != "OK":
                dead("rpc")
            uvicorn_log(f'10.0.3.7:{port} - "POST /collective_rpc HTTP/1.1" 200 OK')
        elif sc == "tool_parse":
            tools = rid % 3 != 0
            in_q.put(("gen", rid, 1, 20))
            status, toks = get_reply(p, out_q)
            text = "".join(PIECES[t % len(PIECES)] for t in toks[0])
            if tools:
                out = "<tool_call>\n" + text + "\n</tool_call>"
                calls, content = hermes_extract(out)
            uvicorn_log(f'10.0.4.19:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
            p_tok += 1450 if tools else 380
            g_tok += 20
            time.sleep(0.25)
        else:
            in_q.put(("gen", rid, 8, 16))
            get_reply(p, out_q)
            uvicorn_log(f'10.0.4.19:{port} - "POST /v1/completions HTTP/1.1" 200 OK')
            time.sleep(0.2)
        if time.time() - last >= 2.0:
            el = time.time() - last
            stats.info(f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                       f"{g_tok / el:.1f} tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, "
                       f"Prefix cache hit rate: 12.5%")
            p_tok = g_tok = 0
            last = time.time()


if __name__ == "__main__":
    if os.environ.get("PYTHONFAULTHANDLER"):
        faulthandler.enable()
    main()
