# vLLM- and sglang-shaped servers for round 30, one real fault (or none) per --scenario:
# vllm_dtype: API server + EngineCore; a model whose "lm_head_bias adapter" was saved in float32 is loaded without a
#   dtype cast, the profile run's F.linear gets a bf16 input and a float32 weight: "expected mat1 and mat2 to have the
#   same dtype" in the EngineCore, "EngineCore failed to start", the front end's "Engine core initialization failed";
# vllm_gqa: offline LLM batch; a converted checkpoint's config says num_key_value_heads=6 while the k_proj weights hold
#   8 heads: the profile run's .view() of k to (tokens, 6, 128) fails; the batch script dies with the engine;
# vllm_seed: API server serving completions; one client sends seed=18446744073709551616 (2**64): the engine's
#   per-request torch.Generator.manual_seed raises, the request gets 500, the server serves on until SIGTERM (no crash);
# sg_pool: sglang launcher + scheduler started with max_running_requests=512 over a req_to_token pool of 256 slots: a
#   burst of requests exhausts the pool, alloc() returns None and the scheduler subscripts it (TypeError), sigquit;
# sg_topk_n: sglang scheduler samples n completions per request from its top-k=40 truncated distribution with
#   torch.multinomial(replacement=False); a request with n=64 asks for more samples than categories: RuntimeError
#   "cannot sample n_sample > prob_dist.size(-1) samples without replacement", scheduler traceback, sigquit.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import multiprocessing as mp
import os
import queue
import random
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import Decoder  # noqa: E402
from shapes_common import add_prefix, sglang_logger, vllm_logger  # noqa: E402

VER = "0.13.0"
MODELS = {"vllm_dtype": "/models/Mistral-7B-Instruct-v0.3-biasfix", "vllm_gqa": "/models/yi-6b-chat-converted",
          "vllm_seed": "/models/Qwen2.5-7B-Instruct", "sg_pool": "/models/Llama-3.1-8B-Instruct",
          "sg_topk_n": "/models/Qwen2.5-Math-7B-Instruct"}
ARCH = {"vllm_dtype": "MistralForCausalLM", "vllm_gqa": "LlamaForCausalLM", "vllm_seed": "Qwen2ForCausalLM",
        "sg_pool": "LlamaForCausalLM", "sg_topk_n": "Qwen2ForCausalLM"}


def gib_free():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


# ================================================================ vLLM
def log_config(sc, model, max_len):
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={max_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
        f"compilation_config={{\"level\":3,\"backend\":\"\",\"custom_ops\":[\"none\"],\"use_inductor\":true,"
        f"\"use_cudagraph\":true,\"cudagraph_num_of_warmups\":1,\"max_capture_size\":512}}")


class Engine:
    def __init__(self, sc, model, max_len):
        import torch

        log_config(sc, model, max_len)
        self.sc = sc
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        self.dec = Decoder(vocab=32768 if sc == "vllm_dtype" else 152064, hidden=4096 if sc != "vllm_seed" else 3584, inter=8192)
        kw = dict(device="cuda")
        torch.manual_seed(1)
        if sc == "vllm_dtype":
            # lm_head_bias.safetensors (float32) is copied into a parameter created from its own tensor: no cast
            self.bias_proj = torch.randn(32768, 4096, **kw) * 0.01
        if sc == "vllm_gqa":
            self.wq = torch.randn(4096, 4096, dtype=torch.bfloat16, **kw) * 0.02
            self.wk = torch.randn(1024, 4096, dtype=torch.bfloat16, **kw) * 0.02  # 8 kv heads x 128
        vllm_logger("default_loader.py").info("Loading weights took 3.04 seconds")
        vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and 3.618312 seconds")
        self.profile(2048)
        vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {gib_free() * 0.85:.2f} GiB")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 1,153,408 tokens")
        vllm_logger("kv_cache_utils.py").info(f"Maximum concurrency for {max_len:,} tokens per request: 35.20x")
        vllm_logger("gpu_model_runner.py").info("Graph capturing finished in 7 secs, took 0.47 GiB")
        vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 16.21 seconds")

    def profile(self, n):
        import torch
        import torch.nn.functional as F

        x = torch.randn(n, 4096, device="cuda", dtype=torch.bfloat16)
        if self.sc == "vllm_gqa":
            num_heads, num_kv_heads, head_dim = 32, 6, 128  # from config.json
            q = F.linear(x, self.wq).view(n, num_heads, head_dim)
            k = F.linear(x, self.wk).view(n, num_kv_heads, head_dim)
            del q, k
        if self.sc == "vllm_dtype":
            F.linear(x, self.bias_proj)
        self.dec.forward(n)
        torch.cuda.synchronize()

    def step(self, n, seed, user_seed=None):
        import torch

        if user_seed is not None:  # per-request generator for seeded sampling
            g = torch.Generator(device="cuda")
            g.manual_seed(user_seed)
        return self.dec.forward(n, seed=seed)


def engine_core_main(sc, model, max_len, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    log.info("Waiting for init message from front-end.")
    try:
        eng = Engine(sc, model, max_len)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", None))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", None))
    while True:
        try:
            item = in_q.get(timeout=0.05)
        except queue.Empty:
            continue
        if item[0] == "SHUTDOWN":
            log.info("Shutdown initiated (timeout=0)")
            log.info("Shutdown complete")
            sys.stdout.flush()
            os._exit(0)
        rid, n, user_seed = item
        try:
            out_q.put((rid, eng.step(n, rid, user_seed)))
        except Exception as e:
            vllm_logger("core.py").error(f"Request cmpl-{rid:08x} failed while preparing its sampling state\n{traceback.format_exc().rstrip()}")
            out_q.put((rid, f"ERR:{type(e).__name__}: {e}"))


def start_engine(sc, model, max_len):
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, max_len, in_q, out_q), name="EngineCore_DP0")
    p.start()
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status = None
    while status is None:
        try:
            status, _ = out_q.get(timeout=1.0)
        except Exception:
            if not p.is_alive():
                break
    if status != "READY":
        p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    return p, in_q, out_q


def vllm_api(a):
    sc, model, max_len = a.scenario, MODELS[a.scenario], 32768
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {{'model_tag': '{model}', 'host': '0.0.0.0', 'port': {a.port}, 'model': '{model}', 'max_model_len': {max_len}, 'gpu_memory_utilization': 0.85}}")
    vllm_logger("model.py").info(f"Resolved architecture: {ARCH[sc]}")
    vllm_logger("model.py").info(f"Using max model len {max_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=2048.")
    p, in_q, out_q = start_engine(sc, model, max_len)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    for r in ("/v1/models", "/v1/chat/completions", "/v1/completions", "/health", "/metrics"):
        vllm_logger("launcher.py").info(f"Route: {r}, Methods: {'GET' if r in ('/v1/models', '/health', '/metrics') else 'POST'}")
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)

    def on_term(signum, frame):
        print("INFO:     Shutting down", flush=True)
        print("INFO:     Waiting for application shutdown.", flush=True)
        print("INFO:     Application shutdown complete.", flush=True)
        in_q.put(("SHUTDOWN",))
        p.join(timeout=3)
        p.kill()
        print(f"INFO:     Finished server process [{os.getpid()}]", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(30)
    port, t_stat, ptoks, gtoks = 40200, time.time(), 0, 0
    for i in range(1, 100000):
        port += 1
        user_seed = None
        if i % 5 == 0:
            user_seed = rng.randint(0, 2**31)
        if i == 27:  # a client that derives its seed from a 64-bit hash plus one
            user_seed = 2**64
        n = rng.randint(100, 1500)
        in_q.put((i, n, user_seed))
        while True:
            try:
                _, res = out_q.get(timeout=2.0)
                break
            except queue.Empty:
                if not p.is_alive():
                    vllm_logger("core_client.py").error("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
                    os._exit(1)
        if isinstance(res, str) and res.startswith("ERR:"):
            vllm_logger("serving_completion.py").error(f"Error in completion generation: {res[4:]}")
            print(f'INFO:     10.4.0.{rng.choice([12, 31, 56])}:{port} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error', flush=True)
        else:
            ptoks += n
            gtoks += rng.randint(30, 200)
            print(f'INFO:     10.4.0.{rng.choice([12, 31, 56])}:{port} - "POST /v1/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.12)
        if time.time() - t_stat > 3:
            dt = time.time() - t_stat
            vllm_logger("loggers.py").info(f"Engine 000: Avg prompt throughput: {ptoks / dt:.1f} tokens/s, Avg generation throughput: {gtoks / dt:.1f} tokens/s, Running: {rng.randint(1, 5)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0.3, 2.1):.1f}%, Prefix cache hit rate: {rng.uniform(10, 45):.1f}%")
            t_stat, ptoks, gtoks = time.time(), 0, 0


def vllm_offline(a):
    from tqdm import tqdm

    sc, model, max_len = a.scenario, MODELS[a.scenario], 4096
    print(f"[eval_yi] {time.strftime('%F %T')} loading 1319 prompts from /data/gsm8k/test.jsonl", flush=True)
    vllm_logger("utils.py").info(f"non-default args: {{'max_model_len': {max_len}, 'seed': 0, 'model': '{model}', 'dtype': 'bfloat16'}}")
    vllm_logger("model.py").info(f"Resolved architecture: {ARCH[sc]}")
    vllm_logger("model.py").info(f"Using max model len {max_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=2048.")
    p, in_q, out_q = start_engine(sc, model, max_len)
    for _ in tqdm(range(1319), desc="Adding requests"):
        pass
    for i in tqdm(range(0, 1319, 64), desc="Processed prompts"):
        in_q.put((i, 512, None))
        out_q.get()
    in_q.put(("SHUTDOWN",))


# ================================================================ sglang
def run_scheduler(sc, model, writer, in_q, parent_pid):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(0)
    try:
        import torch

        torch.cuda.set_device(0)
        lg.info("Init torch distributed begin.")
        torch.zeros(1, device="cuda")
        lg.info("Init torch distributed ends. mem usage=0.00 GB")
        lg.info(f"Load weight begin. avail mem={gib_free():.2f} GB")
        dec = Decoder(vocab=128256 if sc == "sg_pool" else 152064, hidden=4096 if sc == "sg_pool" else 3584, layers=4)
        lg.info(f"Load weight end. type={ARCH[sc]}, dtype=torch.bfloat16, avail mem={gib_free():.2f} GB, mem usage={dec.gib():.2f} GB.")
        pool_size = 256 if sc == "sg_pool" else 4096
        lg.info("KV Cache is allocated. #tokens: 412864, K size: 25.20 GB, V size: 25.20 GB")
        lg.info(f"Memory pool end. avail mem={gib_free():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={gib_free():.2f} GB")
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 4.87 s. mem usage=0.55 GB. avail mem={gib_free():.2f} GB.")
        max_running = 512 if sc == "sg_pool" else 4096
        lg.info(f"max_total_num_tokens=412864, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests={max_running}, context_len=131072, available_gpu_mem=9.41 GB")
        writer.send({"status": "ready"})
        # req_to_token pool: free slot list, alloc returns None when it cannot serve the whole batch
        free_slots = list(range(pool_size))
        req_to_token = torch.zeros(pool_size, 8192, dtype=torch.int32, device="cuda")
        running = []
        t_last, toks = time.time(), 0
        rng = random.Random(3)
        while True:
            item = in_q.get()
            _, bs, n, nsamp = item

            def alloc(need):
                if need > len(free_slots):
                    return None
                out = free_slots[:need]
                del free_slots[:need]
                return out

            req_pool_indices = alloc(bs)
            new_idx = []
            for i in range(bs):
                new_idx.append(req_pool_indices[i])
            req_to_token[torch.tensor(new_idx, device="cuda")] = 0
            running.extend(new_idx)
            lg.info(f"Prefill batch. #new-seq: {bs}, #new-token: {n}, #cached-token: {n // 4}, token usage: {len(running) / 4000:.2f}, #running-req: {len(running)}, #queue-req: {rng.randint(0, 40) if sc == 'sg_pool' else 0}")
            dec.forward(max(n, 64))
            if nsamp:
                logits = torch.randn(bs, 152064, device="cuda")
                top = torch.topk(logits, 40, dim=-1)
                probs = torch.softmax(top.values, dim=-1)
                samples = torch.multinomial(probs, num_samples=nsamp, replacement=False)
                torch.gather(top.indices, 1, samples)
            if sc == "sg_topk_n" or len(running) > pool_size // 2 and sc != "sg_pool":
                for r in running:
                    free_slots.append(r)
                running.clear()
            toks += bs * 40
            if time.time() - t_last > 2.0:
                lg.info(f"Decode batch. #running-req: {len(running)}, #token: {len(running) * 700 + 13}, token usage: {len(running) / 4000:.2f}, cuda graph: True, gen throughput (token/s): {toks / (time.time() - t_last):.2f}, #queue-req: 0")
                t_last, toks = time.time(), 0
    except Exception:
        lg.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)
        time.sleep(5)


def sglang_main(a):
    sc = a.scenario
    model = MODELS[sc]
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    extra = ", max_running_requests=512, schedule_policy='lpm'" if sc == "sg_pool" else ", sampling_backend='pytorch', enable_mixed_chunk=False"
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', load_format='auto', "
        f"trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', device='cuda', served_model_name='{model}', host='0.0.0.0', port={a.port}, "
        f"mem_fraction_static=0.82, tp_size=1, stream_interval=1, random_seed=1234, watchdog_timeout=300, log_level='info'{extra})")
    procs = []

    def on_sigquit(signum, frame):
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, on_sigquit)
    in_q = mp.Queue()
    reader, writer = mp.Pipe(duplex=False)
    p = mp.Process(target=run_scheduler, args=(sc, model, writer, in_q, os.getpid()), daemon=True)
    p.start()
    writer.close()
    procs.append(p)
    reader.recv()
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{a.port} (Press CTRL+C to quit)", flush=True)
    print('INFO:     127.0.0.1:50112 - "GET /get_model_info HTTP/1.1" 200 OK', flush=True)
    in_q.put(("gen", 1, 6, 0))
    print('INFO:     127.0.0.1:50118 - "POST /generate HTTP/1.1" 200 OK', flush=True)
    logger.info("The server is fired up and ready to roll!")
    rng = random.Random(11)
    port = 36000
    for i in range(1, 100000):
        port += 1
        if sc == "sg_pool":
            bs = rng.randint(20, 60) if i > 8 else rng.randint(1, 4)  # the nightly eval's burst starts
            in_q.put(("gen", bs, bs * rng.randint(200, 600), 0))
            for _ in range(min(bs, 6)):
                port += 1
                print(f'INFO:     10.2.5.{rng.choice([8, 19, 33])}:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        else:
            nsamp = 8 if i % 3 else 16
            if i == 21:
                nsamp = 64  # a best-of-64 request from the RL data pipeline
            in_q.put(("gen", rng.randint(1, 4), rng.randint(100, 800), nsamp))
            print(f'INFO:     10.2.5.{rng.choice([8, 19, 33])}:{port} - "POST /generate HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    if a.scenario.startswith("sg_"):
        sglang_main(a)
    elif a.scenario == "vllm_gqa":
        vllm_offline(a)
    else:
        vllm_api(a)


if __name__ == "__main__":
    main()
