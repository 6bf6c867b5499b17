# vLLM-shaped API server + EngineCore for round 27, one real fault (or none) per --scenario:
# spm_tokenizer: the model folder was cloned without git-lfs: tokenizer.model is the LFS pointer text; the front
#   end's SentencePiece load fails before any engine core starts (no EngineCore lines);
# dist_port: VLLM_PORT points at a port that a leftover process (started by r27_run.sh) still listens on: the
#   engine core's torch.distributed TCP store cannot bind it; the engine core fails to start;
# json_schema: the server serves chat requests (a real decoder on the GPU, periodic stats); two requests carry a
#   response_format whose json_schema string is not JSON (the client cut it): each is answered 400 after the
#   front end logs the parse error's traceback; the server serves on until the operator's SIGTERM (no crash);
# fp8_kv: --kv-cache-dtype fp8 with the eager fallback attention backend, which reads the KV cache without
#   dequantizing it: the profile run's q @ k^T mixes bf16 and float8_e4m3fn; the engine core fails to start.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r27_common import GiB, SPM_MODEL, Decoder, add_prefix, vllm_logger  # noqa: E402

VER = "0.12.0"
MODELS = {"spm_tokenizer": SPM_MODEL, "dist_port": "/models/Qwen3-8B", "json_schema": "/models/Qwen2.5-7B-Instruct",
          "fp8_kv": "/models/Meta-Llama-3.1-8B-Instruct"}


def log_config(model, a):
    kvd = "fp8" if a.scenario == "fp8_kv" else "auto"
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a.max_model_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization=None, enforce_eager={a.scenario == 'fp8_kv'}, kv_cache_dtype={kvd}, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True")


class Engine:
    def __init__(self, model, a):
        import torch

        log_config(model, a)
        torch.cuda.set_device(0)
        if a.scenario == "dist_port":
            port = int(os.environ.get("VLLM_PORT", "29500"))
            vllm_logger("parallel_state.py").info(f"world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:{port} backend=nccl")
            import torch.distributed as dist
            import datetime
            dist.init_process_group(backend="nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=1, rank=0,
                                    timeout=datetime.timedelta(seconds=30))
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {model}...")
        if a.scenario == "fp8_kv":
            vllm_logger("cuda.py").warning("FlashAttention does not support kv_cache_dtype=fp8 on this build; falling back to the TORCH_SDPA (eager) backend.")
            vllm_logger("cuda.py").info("Using Torch SDPA backend on V1 engine.")
        else:
            vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        self.dec = Decoder()
        vllm_logger("default_loader.py").info("Loading weights took 2.94 seconds")
        vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and 3.418822 seconds")
        self.kv_dtype = torch.float8_e4m3fn if a.scenario == "fp8_kv" else torch.bfloat16
        self.kv = torch.zeros(4096 * 16, 8, 128, dtype=self.kv_dtype, device="cuda")
        self.profile_run()
        vllm_logger("gpu_worker.py").info("Available KV cache memory: 61.27 GiB")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 1,147,392 tokens")
        vllm_logger("kv_cache_utils.py").info(f"Maximum concurrency for {a.max_model_len:,} tokens per request: 140.06x")
        vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 14.82 seconds")

    def attention(self, q, slots):
        import torch

        k = q[:, :8, :]  # GQA: 8 KV heads
        self.kv[slots] = k.to(self.kv_dtype)
        keys = self.kv[slots]  # (n, 8, 128)
        scores = torch.matmul(q[:, :8, :].transpose(0, 1), keys.permute(1, 2, 0)) / 128 ** 0.5
        return torch.softmax(scores.float(), dim=-1)

    def profile_run(self):
        import torch

        n = 2048
        q = torch.randn(n, 32, 128, device="cuda", dtype=torch.bfloat16)
        slots = torch.arange(n, device="cuda")
        self.attention(q, slots)
        self.dec.forward(n)
        torch.cuda.synchronize()

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
    while True:
        rid, n = in_q.get()
        tok = eng.step(n, rid)
        out_q.put((rid, tok))


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
    extra = ", 'kv_cache_dtype': 'fp8'" if a.scenario == "fp8_kv" else ""
    log.info(f"non-default args: {{'model_tag': '{model}', 'host': '0.0.0.0', 'port': {a.port}, 'model': '{model}', 'max_model_len': {a.max_model_len}{extra}}}")
    arch = "MistralForCausalLM" if a.scenario == "spm_tokenizer" else "Qwen2ForCausalLM" if "Qwen" in model else "LlamaForCausalLM"
    vllm_logger("model.py").info(f"Resolved architecture: {arch}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=2048.")
    if a.scenario == "spm_tokenizer":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor()
        sp.Load(f"{model}/tokenizer.model")
        return
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

    def on_term(signum, frame):
        print("INFO:     Shutting down", flush=True)
        print("INFO:     Waiting for application shutdown.", flush=True)
        print("INFO:     Application shutdown complete.", flush=True)
        p.kill()
        print(f"INFO:     Finished server process [{os.getpid()}]", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(3)
    sc = vllm_logger("serving_chat.py")
    port, rid, t_stat, ptoks, gtoks = 51200, 0, time.time(), 0, 0
    good = '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}'
    for i in range(1, 100000):
        port += 1
        rid += 1
        schema = good
        if i in (23, 41):
            schema = good[:71]  # the client's 4 KiB form field cut the schema
        try:
            json.loads(schema)
        except json.JSONDecodeError:
            sc.exception("Error in preprocessing prompt inputs")
            print(f'INFO:     10.42.0.17:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request', flush=True)
            time.sleep(0.1)
            continue
        n = rng.randint(200, 900)
        in_q.put((rid, n))
        out_q.get()
        ptoks += n
        gtoks += rng.randint(40, 160)
        print(f'INFO:     10.42.0.17:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.12)
        if time.time() - t_stat > 3:
            dt = time.time() - t_stat
            vllm_logger("loggers.py").info(f"Engine 000: Avg prompt throughput: {ptoks / dt:.1f} tokens/s, Avg generation throughput: {gtoks / dt:.1f} tokens/s, Running: {rng.randint(1, 6)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0.2, 1.5):.1f}%, Prefix cache hit rate: {rng.uniform(20, 60):.1f}%")
            t_stat, ptoks, gtoks = time.time(), 0, 0


if __name__ == "__main__":
    main()
