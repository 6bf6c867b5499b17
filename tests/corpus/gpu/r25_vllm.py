# vLLM-shaped API server + EngineCore for round 25, one real fault (or none) per --scenario:
# dead_blocktable: the engine serves chat requests (paged KV cache, CUDA-graph decode) until a request whose
#   prompt fills max_model_len is admitted with room for its max_tokens; its decode positions run past the
#   request's block table (128 blocks of 16 tokens): the block-table gather's bounds assert fires on the GPU and
#   surfaces at the next sync of the sampled tokens. The engine tells the front-end first (EngineDeadError, the
#   in-flight requests answered 500) and prints its own traceback after;
# dead_specdec: speculative decoding with an EAGLE draft head trained for another target (its fc layer expects
#   2 x 4096 features, the target's hidden size is 2048). Requests with max_tokens=1 (prefill only, no drafting)
#   are served; the first request that decodes runs the drafter: a shape mismatch in the draft's fc. Here the
#   engine prints its traceback first, then the front-end's EngineDeadError;
# prompt_400: requests longer than max_model_len are refused with 400 (the front-end's length check on the real
#   token count), the server serves on until the operator's SIGTERM (no crash);
# alloc_conf: PYTORCH_CUDA_ALLOC_CONF with a malformed option (set by r25_run.sh): the engine's first CUDA
#   allocation fails while the allocator parses it;
# capture_cpu: the decode step builds its position tensor from a Python list (a host tensor copied to the GPU)
#   inside the CUDA-graph capture.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r25_common import GiB, Decoder, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.2"
MODELS = {"dead_blocktable": "/models/Qwen2.5-7B-Instruct", "dead_specdec": "/models/Llama-3.1-8B-Instruct",
          "prompt_400": "/models/Qwen2.5-14B-Instruct", "alloc_conf": "/models/Qwen2.5-7B-Instruct",
          "capture_cpu": "/models/Mistral-7B-Instruct-v0.3"}


class EngineDeadError(Exception):
    pass


EngineDeadError.__module__ = "vllm.v1.engine.exceptions"


def log_config(model, a):
    spec = ("SpeculativeConfig(method='eagle', model='/models/EAGLE-LLaMA3-Instruct-8B', num_spec_tokens=3)"
            if a.scenario == "dead_specdec" else "None")
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config={spec}, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.max_model_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
        f"compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'}}")


class Engine:
    BLOCK = 16

    def __init__(self, model, a):
        import torch

        self.a, self.sc = a, a.scenario
        log_config(model, a)
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info(
            "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        self.dec = Decoder()
        if self.sc == "dead_specdec":
            rl.info("Loading drafter model...")
            g = torch.Generator(device="cuda").manual_seed(1)
            # EAGLE head of the 8B target: fc maps [embed; hidden] (2 x 4096) to 4096
            self.draft_fc = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16, generator=g) * 0.01
            self.draft_head = self.dec.head
            vllm_logger("eagle.py").info("Loading EAGLE LM head weight from the target model.")
        torch.cuda.synchronize()
        vllm_logger("default_loader.py").info(f"Loading weights took {time.perf_counter() - t0 + 3.4:.2f} seconds")
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and {time.perf_counter() - t0 + 4.1:.6f} seconds")
        vllm_logger("backends.py").info("Using cache directory: /root/.cache/vllm/torch_compile_cache/8d2e41c7aa/rank_0_0/backbone for vLLM's torch.compile")
        vllm_logger("monitor.py").info("torch.compile takes 14.82 s in total")
        self.dec.forward(2048)
        torch.cuda.synchronize()
        total = torch.cuda.mem_get_info()[1]
        kv_bytes = 4096 * self.BLOCK * 2 * 8 * 128 * 2
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {0.9 * total / GiB - 16.4:.2f} GiB")
        vllm_logger("kv_cache_utils.py").info(f"GPU KV cache size: {4096 * self.BLOCK:,} tokens")
        vllm_logger("kv_cache_utils.py").info(
            f"Maximum concurrency for {a.max_model_len:,} tokens per request: {4096 * self.BLOCK / a.max_model_len:.2f}x")
        self.kv = torch.zeros(4096, self.BLOCK, 2, 8 * 128, device="cuda", dtype=torch.bfloat16)
        assert self.kv.numel() * 2 == kv_bytes
        self.max_blocks = a.max_model_len // self.BLOCK
        self.capture()

    def capture(self):
        import torch
        from tqdm import tqdm

        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        t0 = time.perf_counter()
        self.graphs = {}
        pool = torch.cuda.graph_pool_handle()
        for bs in tqdm([8, 4, 2, 1], desc="Capturing CUDA graphs (decode, FULL)", bar_format=fmt):
            ids = torch.zeros(bs, dtype=torch.long, device="cuda")
            bt = torch.zeros(bs, self.max_blocks, dtype=torch.int64, device="cuda")
            pos = torch.zeros(bs, dtype=torch.int64, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                self.decode(ids, bt, pos, [0] * bs)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                out = self.decode(ids, bt, pos, [0] * bs)
            self.graphs[bs] = (g, ids, bt, pos, out)
        vllm_logger("gpu_model_runner.py").info(
            f"Graph capturing finished in {time.perf_counter() - t0:.0f} secs, took 0.38 GiB")

    def decode(self, ids, block_table, positions, pos_list):
        import torch

        d = self.dec
        if self.sc == "capture_cpu":
            # rotary positions of the batch, built from the scheduler's per-request lengths
            positions = torch.tensor(pos_list, dtype=torch.int64, device="cuda")
        h = d.emb[ids]
        blk = block_table.gather(1, (positions // self.BLOCK).unsqueeze(1)).squeeze(1)
        slot = self.kv[blk, positions % self.BLOCK, 0]  # this token's cached key row
        h = h + torch.cat([slot, slot], dim=-1) * 0  # (attention over the cached rows elided)
        for L in d.layers:
            g_, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        return (h @ d.head.T).argmax(-1), h

    def draft(self, ids, hidden):
        import torch

        x = torch.cat([self.dec.emb[ids], hidden], dim=-1)
        x = torch.nn.functional.linear(x, self.draft_fc)
        return (x @ self.draft_head.T).argmax(-1)

    def step(self, reqs):
        """reqs: list of (prompt_len, max_tokens); returns the generated ids"""
        import torch

        bs = len(reqs)
        for i, (plen, _) in enumerate(reqs):
            self.dec.forward(min(plen, 8192), seed=plen + i)  # prefill
        graph, sid, sbt, spos, (out, hid) = self.graphs[next(b for b in sorted(self.graphs) if b >= bs)]
        nblk = [(plen + mt + self.BLOCK - 1) // self.BLOCK for plen, mt in reqs]
        bt = torch.zeros(len(sid), self.max_blocks, dtype=torch.int64)
        for i, n in enumerate(nblk):
            n = min(n, self.max_blocks)  # the block table holds max_model_len / block_size blocks
            bt[i, :n] = torch.arange(i * self.max_blocks, i * self.max_blocks + n) % 4096
        sbt.copy_(bt.cuda())
        ids = torch.randint(0, 32000, (bs,), device="cuda")
        steps = max(mt for _, mt in reqs) - 1
        toks = [ids]
        for k in range(steps):
            sid[:bs].copy_(ids)
            spos[:bs].copy_(torch.tensor([plen + k for plen, _ in reqs], device="cuda"))
            graph.replay()
            ids = out[:bs].clone()
            toks.append(ids)
            if self.sc == "dead_specdec" and k % 4 == 0:
                toks.append(self.draft(ids, hid[:bs]))
        return torch.stack(toks, 1).tolist()


def engine_core_main(model, a, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")

    def on_signal(signum, frame):
        raise SystemExit()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log = vllm_logger("core.py")
    log.info("Waiting for init message from front-end.")
    t0 = time.perf_counter()
    try:
        eng = Engine(model, a)
    except SystemExit:
        return
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED",))
        time.sleep(0.3)
        sys.exit(1)
    log.info(f"init engine (profile, create kv cache, warmup model) took {time.perf_counter() - t0:.2f} seconds")
    out_q.put(("READY",))
    try:
        while True:
            req = in_q.get()
            if req is None:
                return
            _, rid, reqs = req
            try:
                out_q.put(("DONE", rid, eng.step(reqs)))
            except Exception:
                if a.scenario == "dead_blocktable":  # the front-end hears first, the traceback follows
                    out_q.put(("DEAD",))
                    time.sleep(0.6)
                    log.exception("EngineCore encountered a fatal error.")
                else:
                    log.exception("EngineCore encountered a fatal error.")
                    time.sleep(0.3)
                    out_q.put(("DEAD",))
                sys.stdout.flush()
                time.sleep(0.5)
                os._exit(1)
    except SystemExit:
        return


def count_tokens(prompt):
    """the chat template + tokenizer stand-in: the real number of tokens of the request's text"""
    return len(prompt.split()) + 11


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    a = ap.parse_args()
    sc = a.scenario
    model = MODELS[sc]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    nd = {"model_tag": model, "port": a.port, "model": model, "max_model_len": a.max_model_len}
    if sc == "dead_specdec":
        nd["speculative_config"] = {"method": "eagle", "model": "/models/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 3}
    log.info(f"non-default args: {nd}")
    arch = {"dead_specdec": "LlamaForCausalLM", "capture_cpu": "MistralForCausalLM"}.get(sc, "Qwen2ForCausalLM")
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(model, a, in_q, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status, last = None, time.time()
    while status is None:
        try:
            status = out_q.get(timeout=1.0)[0]
        except Exception:
            if not p.is_alive():
                break
            if time.time() - last >= 10:
                ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
                last = time.time()
    if status != "READY":
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
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    log.info("Available routes are:")
    for r in ("/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/metrics"):
        log.info(f"Route: {r}, Methods: {'GET' if r in ('/health', '/v1/models', '/metrics') else 'POST'}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    serve(a, in_q, out_q, p)


def serve(a, in_q, out_q, p):
    import random

    rnd = random.Random(7)
    stats = vllm_logger("loggers.py")
    chat = vllm_logger("serving_chat.py")
    last, port, p_tok, g_tok = time.time(), 51230, 0, 0
    t_start = time.time()
    for rid in range(1, 100000):
        port += 4
        el_all = time.time() - t_start
        if a.scenario == "dead_specdec":
            reqs = [(rnd.randint(200, 900), 1)] * 4 if el_all < 7 else [(rnd.randint(200, 900), 64)] * 2
        elif a.scenario == "dead_blocktable":
            reqs = [(rnd.randint(300, 1500), 48) for _ in range(3)]
            if el_all > 8:  # a long document summary whose prompt fills the context
                reqs.append((a.max_model_len - 5, 48))
        else:
            reqs = [(rnd.randint(300, 4000), 32) for _ in range(4)]
        ok = []
        for j, (plen, mt) in enumerate(reqs):
            if a.scenario == "prompt_400" and rid % 5 == 3 and j == 0:
                plen = a.max_model_len + rnd.randint(1000, 9000)
            prompt = " ".join(["tok"] * (plen - 11))
            try:
                n = count_tokens(prompt)
                if n > a.max_model_len:
                    raise ValueError(f"This model's maximum context length is {a.max_model_len} tokens. However, your request has {n} input tokens. Please reduce the length of the input messages.")
                ok.append((n, mt, port + j))
            except ValueError:
                chat.exception("Error in preprocessing prompt inputs")
                uvicorn_log(f'10.42.3.9:{port + j} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')
        in_q.put(("gen", rid, [(n, mt) for n, mt, _ in ok]))
        msg = out_q.get(timeout=120)
        if msg[0] == "DEAD":
            try:
                raise EngineDeadError("EngineCore encountered an issue. See stack trace (above) for the root cause.")
            except EngineDeadError:
                vllm_logger("async_llm.py").error("AsyncLLM output_handler failed.\n" + traceback.format_exc().rstrip())
            for _, _, pt in ok:
                uvicorn_log(f'10.42.3.9:{pt} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
            vllm_logger("launcher.py").error("Engine failed, terminating server.")
            uvicorn_log("Shutting down")
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            uvicorn_log(f"Finished server process [{os.getpid()}]")
            p.join(timeout=5)
            sys.exit(1)
        for _, _, pt in ok:
            uvicorn_log(f'10.42.3.9:{pt} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        p_tok += sum(n for n, _, _ in ok)
        g_tok += sum(mt for _, mt, _ in ok)
        time.sleep(0.25)
        if time.time() - last >= 3.0:
            el = time.time() - last
            stats.info(
                f"Engine 000: Avg prompt throughput: {p_tok / el:.1f} tokens/s, Avg generation throughput: "
                f"{g_tok / el:.1f} tokens/s, Running: {len(ok)} reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, "
                f"Prefix cache hit rate: 8.3%")
            p_tok = g_tok = 0
            last = time.time()


if __name__ == "__main__":
    main()
