# Server-shaped scenarios of round 32, one real fault (or none) per --scenario:
# vllm_rmsnorm: vLLM API server + EngineCore; a model plugin builds its final RMSNorm with the config's
#   intermediate_size instead of hidden_size: F.rms_norm's normalized_shape check fails in the profile run,
#   "EngineCore failed to start", then the front end's generic "Engine core initialization failed" after it;
# sg_topk: sglang launcher + scheduler; the warmup request of a client default top_k=200000 (past the 151936-token
#   vocabulary) reaches torch.topk on the GPU: "selected index k out of range", scheduler traceback, sigquit;
# vis_b64_400: vLLM-style OpenAI server for a vision model; one request's image_url data URI is truncated base64:
#   binascii.Error at ERROR with a traceback, 400, serving goes on; the operator's SIGTERM ends it (no crash).
# ruff: noqa: E501
import argparse
import base64
import binascii
import os
import random
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r31_common import VLLM_VER, SglangLauncher, access, vllm_engine_child, vllm_start_engine  # noqa: E402
from shapes_common import TinyModel, add_prefix, free_gb, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402

MISTRAL = "/models/Mistral-Nemo-Instruct-2407-ext"


# ================================================================ vLLM: final norm of the wrong width
def vllm_build():
    import torch
    import torch.nn.functional as F

    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VLLM_VER}) with config: model='{MISTRAL}', speculative_config=None, tokenizer='{MISTRAL}', "
        f"skip_tokenizer_init=False, tokenizer_mode=mistral, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=65536, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, enforce_eager=False, "
        f"kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=nemo-ext, enable_prefix_caching=True, "
        f"chunked_prefill_enabled=True, compilation_config={{\"level\":3,\"use_cudagraph\":true}}")
    torch.cuda.set_device(0)
    vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
    vllm_logger("gpu_model_runner.py").info(f"Starting to load model {MISTRAL}...")
    vllm_logger("registry.py").info("Loaded model plugin 'nemo_ext' (MistralExtForCausalLM) from vllm.general_plugins")
    vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
    hidden, inter = 2048, 7168
    model = TinyModel(vocab=131072, hidden=hidden)
    norm_w = torch.ones(inter, device="cuda", dtype=torch.bfloat16)  # config.intermediate_size by mistake
    vllm_logger("default_loader.py").info("Loading weights took 3.87 seconds")
    vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and 4.120913 seconds")
    ids = torch.randint(0, 131072, (8192,), device="cuda")
    h = model.emb[ids]
    for w in model.layers:
        h = torch.relu(h @ w)
    h = F.rms_norm(h, (inter,), norm_w, 1e-5)  # profile run, dummy batch of max_num_batched_tokens
    vllm_logger("gpu_worker.py").info(f"Available KV cache memory: {free_gb() * 0.8:.2f} GiB")
    return model


def vllm_child(in_q, out_q):
    vllm_engine_child(vllm_build, in_q, out_q, lambda eng, item: eng.forward(item))


def run_vllm_rmsnorm(a):
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VLLM_VER}")
    log.info(f"non-default args: {{'model_tag': '{MISTRAL}', 'port': {a.port}, 'model': '{MISTRAL}', 'trust_remote_code': True, 'max_model_len': 65536, 'served_model_name': ['nemo-ext']}}")
    vllm_logger("model.py").info("Resolved architecture: MistralExtForCausalLM")
    vllm_logger("model.py").info("Using max model len 65536")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    p, in_q, out_q = vllm_start_engine(vllm_child)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    in_q.put(None)
    p.join(timeout=10)


# ================================================================ sglang: top_k past the vocabulary
QWEN = "/models/Qwen2.5-7B-Instruct"


def sg_topk_sched(parent, in_q, out_q, port):
    import torch

    log = sglang_logger(0)
    log.info("Init torch distributed begin.")
    torch.cuda.set_device(0)
    log.info("Init torch distributed ends. mem usage=0.00 GB")
    log.info(f"Load weight begin. avail mem={free_gb():.2f} GB")
    model = TinyModel(vocab=151936, hidden=2048)
    log.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={free_gb():.2f} GB, mem usage={torch.cuda.memory_allocated() / 2**30:.2f} GB.")
    log.info("KV Cache is allocated. #tokens: 398112, K size: 10.63 GB, V size: 10.63 GB")
    log.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={free_gb():.2f} GB")
    model.forward(160)
    log.info(f"Capture cuda graph end. Time elapsed: 3.02 s. mem usage=0.44 GB. avail mem={free_gb():.2f} GB.")
    log.info("max_total_num_tokens=398112, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768")
    out_q.put("READY")
    while True:
        n, top_k = in_q.get()
        try:
            log.info(f"Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ")
            ids = torch.randint(0, 151936, (n,), device="cuda")
            h = model.emb[ids]
            for w in model.layers:
                h = torch.relu(h @ w)
            logits = (h[-1:] @ model.head.T).float()
            probs = torch.softmax(logits / 0.7, -1)
            # top_k_top_p_min_p_sampling_from_probs_torch
            vals, idx = torch.topk(probs, k=top_k, dim=-1)
            out_q.put(int(idx[0, torch.multinomial(vals / vals.sum(-1, keepdim=True), 1)[0, 0]]))
        except Exception:
            log.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(parent, signal.SIGQUIT)
            time.sleep(30)


def run_sg_topk(a):
    L = SglangLauncher(QWEN, a.port, ", sampling_defaults='openai', preferred_sampling_params='{\"top_k\": 200000, \"temperature\": 0.7}'")
    L.start(sg_topk_sched, a.port)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{a.port} (Press CTRL+C to quit)")
    access(a.port - 1000, "GET", "/get_model_info", 200, "OK")
    L.in_q.put((7, 200000))  # the launcher's warmup /generate with the preferred sampling params
    res = L.out_q.get(timeout=60)
    access(a.port - 999, "POST", "/generate", 200, "OK")
    L.log.info(f"The server is fired up and ready to roll! ({res})")


# ================================================================ vision server: a truncated data URI served past
def run_vis_b64_400(a):
    import torch

    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    slog = vllm_logger("serving_chat.py")
    mlog = vllm_logger("loggers.py")
    log.info(f"vLLM API server version {VLLM_VER}")
    log.info(f"non-default args: {{'model_tag': '/models/Qwen2.5-VL-7B-Instruct', 'port': {a.port}, 'max_model_len': 16384, 'limit_mm_per_prompt': {{'image': 2}}}}")
    torch.cuda.set_device(0)
    model = TinyModel(vocab=151936, hidden=2048)
    patch = torch.randn(1176, 2048, device="cuda", dtype=torch.bfloat16) * 0.02
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")

    def on_term(signum, frame):
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(32)
    img = base64.b64encode(os.urandom(3 * 4000)).decode()
    cport, t0, toks = 40100, time.time(), 0
    for rid in range(1, 100000):
        uri = img
        if rid == 11:  # a client cut its JSON body at 8 KiB
            uri = img[:8191]
        cport += 1
        try:
            raw = base64.b64decode(uri, validate=True)
            pix = torch.frombuffer(bytearray(raw[: 1176 * 8]), dtype=torch.uint8).to("cuda").float().view(8, 1176) / 255
            (pix.bfloat16() @ patch).sum().item()
            for _ in range(3):
                model.forward(rng.randint(300, 1200))
            toks += rng.randint(40, 200)
            access(cport, "POST", "/v1/chat/completions", 200, "OK")
        except binascii.Error as e:
            slog.exception(f"Error in loading multi-modal data of request chatcmpl-{rid:08x}: {e}")
            access(cport, "POST", "/v1/chat/completions", 400, "Bad Request")
        if rid % 5 == 0:
            dt = time.time() - t0
            mlog.info(f"Engine 000: Avg prompt throughput: {toks * 6 / dt:.1f} tokens/s, Avg generation throughput: {toks / dt:.1f} tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache hit rate: 12.5%")
            t0, toks = time.time(), 0
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True, choices=["vllm_rmsnorm", "sg_topk", "vis_b64_400"])
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    globals()["run_" + a.scenario](a)


if __name__ == "__main__":
    main()
