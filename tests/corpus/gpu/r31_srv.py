# Server-shaped scenarios of round 31, one real fault (or none) per --scenario:
# vllm_long_mm: vLLM API server + EngineCore for a Qwen2-VL-style model; a plugin's M-RoPE position mixer multiplies
#   the int64 (t, h, w) position ids by an int64 section matrix on the GPU during the profile run: CUDA has no integer
#   matmul kernel ('"addmm_cuda" not implemented for 'Long''-style error), "EngineCore failed to start", then the
#   front end's generic "Engine core initialization failed" traceback after it;
# sg_fp8_kv: sglang launcher + scheduler with kv_cache_dtype=fp8_e4m3; the model's KV write stores bf16 k/v into the
#   fp8 pool without a cast: index_put's dtype check in the scheduler at the warmup request, traceback, sigquit;
# sg_regex_400: sglang server with regex-constrained generation; one client's regex has an unterminated group:
#   re.error logged at ERROR with a traceback, the request is aborted with 400, the server serves on; the operator's
#   SIGTERM ends it (no crash);
# oai_oom_retry: an OpenAI-compatible embeddings server; one request of 512 long inputs asks for an attention-score
#   buffer the card cannot hold: torch.OutOfMemoryError caught, logged with its traceback, 507 for that request, the
#   cache emptied, serving goes on; the worker recycles itself after its request limit (no crash).
# ruff: noqa: E501
import argparse
import logging
import os
import queue
import random
import re
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r31_common import VLLM_VER, SglangLauncher, access, vllm_engine_child, vllm_start_engine  # noqa: E402
from shapes_common import TinyModel, add_prefix, free_gb, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402


# ================================================================ vLLM: integer matmul in the profile run
QWEN_VL = "/models/Qwen2-VL-7B-Instruct-ext"


def mrope_positions(n, grid_w=28):
    """(t, h, w) ids of a flattened image+text sequence, mixed into rotary positions by the section matrix."""
    import torch

    t = torch.arange(n, device="cuda")
    pos = torch.stack([t // (grid_w * grid_w), (t // grid_w) % grid_w, t % grid_w], dim=1)  # int64 (n, 3)
    section = torch.zeros(3, 64, dtype=torch.long, device="cuda")
    section[0, :16] = 1
    section[1, 16:40] = 1
    section[2, 40:] = 1
    return pos @ section  # (n, 64) rotary position per frequency


def vllm_build():
    import torch

    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VLLM_VER}) with config: model='{QWEN_VL}', speculative_config=None, tokenizer='{QWEN_VL}', "
        f"skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, "
        f"max_seq_len=32768, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
        f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=qwen2-vl-ext, "
        f"enable_prefix_caching=False, chunked_prefill_enabled=True, compilation_config={{\"level\":3,\"use_cudagraph\":true}}")
    torch.cuda.set_device(0)
    vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
    vllm_logger("gpu_model_runner.py").info(f"Starting to load model {QWEN_VL}...")
    vllm_logger("registry.py").info("Loaded model plugin 'qwen2_vl_ext' (Qwen2VLExtForConditionalGeneration) from vllm.general_plugins")
    vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
    model = TinyModel(vocab=151936, hidden=2048)
    vllm_logger("default_loader.py").info("Loading weights took 4.11 seconds")
    vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and 4.734120 seconds")
    vllm_logger("gpu_model_runner.py").info("Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items of the maximum feature size.")
    model.forward(2048)
    rope_pos = mrope_positions(8192)  # dummy multimodal batch of the profile run
    del rope_pos
    vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {free_gb() * 0.8:.2f} GiB")
    vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 1,540,112 tokens")
    vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 14.02 seconds")
    return model


def vllm_child(in_q, out_q):
    vllm_engine_child(vllm_build, in_q, out_q, lambda eng, item: eng.forward(item))


def run_vllm_long_mm(a):
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VLLM_VER}")
    log.info(f"non-default args: {{'model_tag': '{QWEN_VL}', 'port': {a.port}, 'model': '{QWEN_VL}', 'trust_remote_code': True, 'max_model_len': 32768, 'limit_mm_per_prompt': {{'image': 4}}, 'served_model_name': ['qwen2-vl-ext']}}")
    vllm_logger("model.py").info("Resolved architecture: Qwen2VLExtForConditionalGeneration")
    vllm_logger("model.py").info("Using max model len 32768")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    p, in_q, out_q = vllm_start_engine(vllm_child)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    in_q.put(None)
    p.join(timeout=10)


# ================================================================ sglang: fp8 KV pool, uncast write
LLAMA = "/models/Meta-Llama-3.1-8B-Instruct"


def sg_fp8_sched(parent, in_q, out_q, port):
    import torch

    log = sglang_logger(0)
    log.info("Init torch distributed begin.")
    torch.cuda.set_device(0)
    log.info("Init torch distributed ends. mem usage=0.00 GB")
    log.info(f"Load weight begin. avail mem={free_gb():.2f} GB")
    model = TinyModel(vocab=128256, hidden=2048)
    log.info(f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={free_gb():.2f} GB, mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB.")
    layers, tokens, heads, dim = 16, 120_000, 8, 128
    k_pool = [torch.zeros(tokens, heads, dim, dtype=torch.float8_e4m3fn, device="cuda") for _ in range(layers)]
    v_pool = [torch.zeros(tokens, heads, dim, dtype=torch.float8_e4m3fn, device="cuda") for _ in range(layers)]
    gb = layers * tokens * heads * dim / 2**30
    log.info(f"KV Cache is allocated. #tokens: {tokens}, K size: {gb:.2f} GB, V size: {gb:.2f} GB")
    log.info(f"Memory pool end. avail mem={free_gb():.2f} GB")
    log.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={free_gb():.2f} GB")
    log.info("Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]")
    model.forward(160)
    log.info(f"Capture cuda graph end. Time elapsed: 2.87 s. mem usage=0.41 GB. avail mem={free_gb():.2f} GB.")
    log.info(f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem={free_gb():.2f} GB")
    out_q.put("READY")
    wk = torch.randn(heads * dim, 2048, device="cuda", dtype=torch.bfloat16) * 0.02
    while True:
        n = in_q.get()
        try:
            log.info(f"Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ")
            loc = torch.arange(n, device="cuda")
            ids = torch.randint(0, 128256, (n,), device="cuda")
            h = model.emb[ids]
            for layer in range(layers):
                k = (h @ wk.T).view(n, heads, dim)
                v = k * 0.5
                # MHATokenToKVPool.set_kv_buffer
                k_pool[layer][loc] = k
                v_pool[layer][loc] = v
                h = torch.relu(h @ model.layers[layer % 4])
            out_q.put(int((h @ model.head.T)[-1].argmax()))
        except Exception:
            log.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(parent, signal.SIGQUIT)
            time.sleep(30)


def run_sg_fp8_kv(a):
    L = SglangLauncher(LLAMA, a.port, ", kv_cache_dtype='fp8_e4m3', quantization=None")
    L.start(sg_fp8_sched, a.port)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{a.port} (Press CTRL+C to quit)")
    access(a.port - 1000, "GET", "/get_model_info", 200, "OK")
    L.in_q.put(7)  # the launcher's warmup /generate
    res = L.out_q.get(timeout=60)
    access(a.port - 999, "POST", "/generate", 200, "OK")
    L.log.info(f"The server is fired up and ready to roll! ({res})")


# ================================================================ sglang: a bad regex served past
BAD_REGEX = r'\{"name": "(?P<name>[A-Za-z ]{1,40}", "age": (?P<age>[0-9]{1,3})\}'
GOOD_REGEX = r'\{"city": "[A-Za-z ]{1,30}", "population": [0-9]{1,9}\}'


def sg_regex_sched(parent, in_q, out_q, port):
    import torch

    log = sglang_logger(0)
    torch.cuda.set_device(0)
    log.info(f"Load weight begin. avail mem={free_gb():.2f} GB")
    model = TinyModel(vocab=151936, hidden=2048)
    log.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={free_gb():.2f} GB, mem usage=1.23 GB.")
    log.info("KV Cache is allocated. #tokens: 412346, K size: 11.01 GB, V size: 11.01 GB")
    log.info("max_total_num_tokens=412346, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768")
    log.info("grammar_backend='outlines' (regex and json_schema constrained decoding enabled)")
    out_q.put("READY")
    served, t0, toks = 0, time.time(), 0
    while True:
        rid, n, rx = in_q.get()
        if rx is not None:
            try:
                fsm = re.compile(rx)
            except re.error:
                log.error(f"Failed to compile the regex of request {rid}; aborting it.\n{traceback.format_exc().rstrip()}")
                out_q.put((rid, 400))
                continue
            del fsm
        for _ in range(4):
            model.forward(n)
        toks += 4
        served += 1
        if served % 6 == 0:
            dt = time.time() - t0
            log.info(f"Decode batch. #running-req: {random.randint(2, 9)}, #token: {random.randint(900, 4000)}, token usage: 0.01, cuda graph: True, gen throughput (token/s): {toks * 40 / dt:.2f}, #queue-req: 0, ")
            t0, toks = time.time(), 0
        out_q.put((rid, 200))


def run_sg_regex_400(a):
    L = SglangLauncher("/models/Qwen2.5-7B-Instruct", a.port, ", grammar_backend='outlines'")
    L.start(sg_regex_sched, a.port)
    L.fired_up(a.port)

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        for p in L.procs:
            p.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(31)
    cport = 51200
    for rid in range(1, 100000):
        rx = GOOD_REGEX if rid % 4 == 0 else None
        if rid == 14:
            rx = BAD_REGEX
        L.in_q.put((rid, rng.randint(64, 900), rx))
        _, code = L.out_q.get(timeout=60)
        cport += 1
        access(cport, "POST", "/generate", code, "OK" if code == 200 else "Bad Request")
        time.sleep(0.15)


# ================================================================ embeddings server: OOM answered, serving goes on
def run_oai_oom_retry(a):
    import torch

    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03dZ %(levelname)s embed_server: %(message)s", datefmt="%Y-%m-%dT%H:%M:%S"))
    log = logging.getLogger("embed_server")
    log.handlers[:] = [h]
    log.setLevel(logging.INFO)
    log.propagate = False
    torch.cuda.set_device(0)
    log.info("loading /models/bge-m3 (XLMRobertaModel, 568M params, max_seq_len=8192, pooling=cls)")
    vocab, hidden, heads = 250002, 1024, 16
    torch.manual_seed(0)
    emb = torch.randn(vocab, hidden, device="cuda", dtype=torch.float16) * 0.02
    layers = [torch.randn(hidden, hidden, device="cuda", dtype=torch.float16) * 0.02 for _ in range(4)]
    log.info(f"model ready on cuda:0, {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://0.0.0.0:{a.port} (Press CTRL+C to quit)")

    def embed(batch, seq):
        ids = torch.randint(0, vocab, (batch, seq), device="cuda")
        x = emb[ids]
        # attention scores of the first layer, all heads at once
        scores = torch.empty(batch * heads, seq, seq, device="cuda", dtype=torch.float16)
        q = x.view(batch, seq, heads, hidden // heads).transpose(1, 2).reshape(batch * heads, seq, hidden // heads)
        torch.bmm(q, q.transpose(1, 2), out=scores)
        x = torch.softmax(scores.float(), -1).half().bmm(q).view(batch, heads, seq, -1).transpose(1, 2).reshape(batch, seq, hidden)
        for w in layers:
            x = torch.relu(x @ w)
        return torch.nn.functional.normalize(x[:, 0].float(), dim=-1)

    rng = random.Random(7)
    cport, limit = 38000, 48
    for i in range(1, limit + 1):
        batch, seq = rng.randint(1, 32), rng.choice([64, 128, 256, 512])
        if i == 19:  # a backfill job sends a whole corpus page at once
            batch, seq = 512, 8192
        cport += 1
        t0 = time.time()
        try:
            out = embed(batch, seq)
            torch.cuda.synchronize()
            uvicorn_log(f'10.2.7.14:{cport} - "POST /v1/embeddings HTTP/1.1" 200 OK')
            if i % 8 == 0:
                log.info(f"batch={batch} seq={seq} dim={out.shape[1]} latency={1000 * (time.time() - t0):.1f}ms queue=0")
        except torch.OutOfMemoryError:
            log.exception(f"request {i}: CUDA OOM embedding {batch} inputs x {seq} tokens; rejecting (507) and freeing the cache")
            torch.cuda.empty_cache()
            uvicorn_log(f'10.2.7.14:{cport} - "POST /v1/embeddings HTTP/1.1" 507 Insufficient Storage')
        time.sleep(0.1)
    log.info(f"Maximum request limit of {limit} exceeded. Terminating process.")
    uvicorn_log("Shutting down")
    uvicorn_log("Waiting for application shutdown.")
    uvicorn_log("Application shutdown complete.")
    uvicorn_log(f"Finished server process [{os.getpid()}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True, choices=["vllm_long_mm", "sg_fp8_kv", "sg_regex_400", "oai_oom_retry"])
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    globals()["run_" + a.scenario](a)


if __name__ == "__main__":
    main()
