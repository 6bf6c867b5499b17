# vLLM-shaped API server + EngineCore for round 28, one real fault (or none) per --scenario:
# int8_bmm: a W8A8 checkpoint whose MoE expert path falls back to a batched matmul of int8 activations by int8 weights:
#   CUDA's bmm has no int8 kernel; the profile run fails and the engine core fails to start;
# cpu_rlimit: the server is started from a shell with `ulimit -t` (CPU seconds, a login node's limit): the engine
#   core's busy loop uses up its CPU time while serving, the kernel kills it with SIGXCPU (no traceback); the front
#   end's last words are its ERROR line that the engine core died;
# bad_token_ids: the server serves completions; two requests carry prompt_token_ids past the vocabulary (a client
#   tokenizing with another model's tokenizer): each is answered 400 after the validation error; the server serves on
#   until the operator's SIGTERM (no crash).
# SHAPES_DRY=1 runs cpu_rlimit and bad_token_ids without torch/GPU (a local check of the shapes).
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import multiprocessing as mp
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import DRY, Decoder, add_prefix, vllm_logger

VER = "0.11.2"
MODELS = {"int8_bmm": "/models/Qwen3-30B-A3B-quantized.w8a8", "cpu_rlimit": "/models/Meta-Llama-3.1-8B-Instruct",
          "bad_token_ids": "/models/Qwen2.5-7B-Instruct"}
VOCAB = {"bad_token_ids": 152064}


def log_config(model, a):
    q = "compressed-tensors" if a.scenario == "int8_bmm" else "None"
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.max_model_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization={q}, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True")


class Engine:
    def __init__(self, model, a):
        log_config(model, a)
        self.a = a
        if not DRY:
            import torch

            torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        if a.scenario == "int8_bmm":
            vllm_logger("compressed_tensors_moe.py").info("Using CompressedTensorsW8A8Int8MoEMethod")
            vllm_logger("compressed_tensors_moe.py").warning("Fused int8 MoE kernel is not available for this configuration (group_size=-1, act_order=False); using the unfused batched-expert fallback.")
        self.dec = Decoder(vocab=VOCAB.get(a.scenario, 32000))
        vllm_logger("default_loader.py").info("Loading weights took 3.12 seconds")
        vllm_logger("gpu_model_runner.py").info(f"Model loading took {self.dec.gib():.4f} GiB and 3.581120 seconds")
        if a.scenario == "int8_bmm":
            self.experts_int8()
        else:
            self.dec.forward(2048)
        vllm_logger("gpu_worker.py").info("Available KV cache memory: 58.91 GiB")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 482,560 tokens")
        vllm_logger("kv_cache_utils.py").info(f"Maximum concurrency for {a.max_model_len:,} tokens per request: 58.91x")
        vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 12.47 seconds")

    def experts_int8(self):
        import torch

        E, topk, d, inter, n = 16, 4, 1024, 768, 2048
        w13 = torch.randint(-127, 127, (E, d, 2 * inter), dtype=torch.int8, device="cuda")
        w13_scale = torch.rand(E, 1, 2 * inter, device="cuda") * 1e-3
        x = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
        router = torch.randn(n, E, device="cuda").softmax(-1)
        _, ids = router.topk(topk, dim=-1)
        x_scale = x.abs().amax(-1, keepdim=True).float() / 127.0
        xq = (x.float() / x_scale).round().clamp(-127, 127).to(torch.int8)
        # tokens grouped per expert, padded to a common length
        per = torch.bincount(ids.flatten(), minlength=E)
        cap = int(per.max())
        xe = torch.zeros(E, cap, d, dtype=torch.int8, device="cuda")
        for e in range(E):
            rows = (ids == e).any(-1).nonzero().flatten()
            xe[e, :rows.numel()] = xq[rows]
        acc = torch.bmm(xe, w13)  # int8 x int8 -> int32 expected
        return (acc.float() * w13_scale).to(torch.bfloat16)

    def step(self, n, seed):
        return self.dec.forward(n, seed=seed)


def engine_core_main(model, a, in_q, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    log.info("Waiting for init message from front-end.")
    try:
        eng = Engine(model, a)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", None))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", None))
    while True:  # busy-polls its input queue, as the engine core's loop does between steps
        try:
            rid, n = in_q.get_nowait()
        except queue.Empty:
            continue
        out_q.put((rid, eng.step(n, rid)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=8192)
    a = ap.parse_args()
    model = MODELS[a.scenario]
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {{'model_tag': '{model}', 'host': '0.0.0.0', 'port': {a.port}, 'model': '{model}', 'max_model_len': {a.max_model_len}}}")
    arch = "Qwen3MoeForCausalLM" if a.scenario == "int8_bmm" else "Qwen2ForCausalLM" if "Qwen" in model else "LlamaForCausalLM"
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=2048.")
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(model, a, in_q, out_q), name="EngineCore_DP0")
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
    serve(a, model, in_q, out_q, p)


def serve(a, model, in_q, out_q, p):
    log = vllm_logger("api_server.py")
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    for r in ("/v1/models", "/v1/chat/completions", "/v1/completions", "/health", "/metrics"):
        vllm_logger("launcher.py").info(f"Route: {r}, Methods: {'GET' if r in ('/v1/models', '/health', '/metrics') else 'POST'}")
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)

    dead = threading.Event()

    def monitor():  # MPClient's engine-core monitor
        p.join()
        if not dead.is_set():
            dead.set()
            vllm_logger("core_client.py").error("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
            sys.stdout.flush()
            os._exit(1)

    threading.Thread(target=monitor, daemon=True).start()

    def on_term(signum, frame):
        dead.set()
        print("INFO:     Shutting down", flush=True)
        print("INFO:     Waiting for application shutdown.", flush=True)
        print("INFO:     Application shutdown complete.", flush=True)
        p.kill()
        print(f"INFO:     Finished server process [{os.getpid()}]", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(11)
    route = "/v1/completions" if a.scenario == "bad_token_ids" else "/v1/chat/completions"
    sc = vllm_logger("serving_completion.py" if a.scenario == "bad_token_ids" else "serving_chat.py")
    port, rid, t_stat, ptoks, gtoks = 48100, 0, time.time(), 0, 0
    for i in range(1, 100000):
        port += 1
        rid += 1
        n = rng.randint(200, 900)
        if a.scenario == "bad_token_ids":
            ids = [rng.randrange(0, 151000) for _ in range(n)]
            if i in (21, 38):  # a client that tokenized with Llama-3's tokenizer (ids up to 128k+) plus its own offsets
                ids[-3:] = [128000 + 25000, 128009 + 25000, 153001]
            try:
                mx = max(ids)
                if not DRY:
                    import torch

                    mx = int(torch.tensor(ids, device="cuda").max().item())
                if mx >= 151665 or mx < 0:  # 151643 regular + 22 special ids: the tokenizer's real size
                    raise ValueError(f"Token id {mx} is out of vocabulary")
            except ValueError:
                sc.error(f"Error in preprocessing prompt inputs\n{traceback.format_exc().rstrip()}")
                print(f'INFO:     10.42.7.30:{port} - "POST {route} HTTP/1.1" 400 Bad Request', flush=True)
                time.sleep(0.1)
                continue
        in_q.put((rid, n))
        while True:
            try:
                out_q.get(timeout=1.0)
                break
            except queue.Empty:
                if dead.is_set():
                    time.sleep(10)
        ptoks += n
        gtoks += rng.randint(40, 160)
        print(f'INFO:     10.42.7.30:{port} - "POST {route} HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.12)
        if time.time() - t_stat > 3:
            dt = time.time() - t_stat
            vllm_logger("loggers.py").info(f"Engine 000: Avg prompt throughput: {ptoks / dt:.1f} tokens/s, Avg generation throughput: {gtoks / dt:.1f} tokens/s, Running: {rng.randint(1, 6)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0.2, 1.5):.1f}%, Prefix cache hit rate: {rng.uniform(20, 60):.1f}%")
            t_stat, ptoks, gtoks = time.time(), 0, 0


if __name__ == "__main__":
    main()
