# vLLM-shaped scenarios for round 29 (API server + EngineCore child, or the offline LLM class), one real fault (or
# none) per --scenario:
# mark_dynamic: an out-of-tree model plugin adds its learned position table to the hidden states without indexing it by
#   the positions; eager runs at the profile size (2048 tokens) would pass, but the engine compiles the forward with
#   num_tokens marked dynamic and dynamo specializes the size to 2048: ConstraintViolationError in the EngineCore while
#   compiling, "EngineCore failed to start", then the front end's "Engine core initialization failed";
# lora_header: a server with --enable-lora serves chat requests; an operator loads a LoRA adapter whose
#   adapter_model.safetensors had its metadata rewritten in place by a "stamp" script (JSON grown, length prefix not
#   updated): safetensors' header parse fails in the engine core, the load request gets 400, requests for the adapter
#   get 404, and the server serves on until the operator's SIGTERM (no crash);
# offline_recursion: offline batch inference with a remote-code tokenizer whose greedy longest-match segmentation recurses
#   once per piece: one document holds a 6 KB base64 blob without spaces, the tokenizer hits Python's recursion limit
#   while the front end adds requests; the batch script dies with RecursionError.
# SHAPES_DRY=1 runs the shapes without a GPU (a local check); R29_DEV=cpu runs the real faults on the CPU where they can.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, vllm_logger  # noqa: E402

VER = "0.12.1"
ROOT = os.environ.get("R29_ROOT", "/tmp/r29_files")
DEV = os.environ.get("R29_DEV", "cuda")
MODELS = {"mark_dynamic": "/models/persimmon-style-4b-hf", "lora_header": "/models/Llama-3.1-8B-Instruct",
          "offline_recursion": "/models/internlm-style-7b-chat"}
ARCH = {"mark_dynamic": "PersimmonLearnedPosForCausalLM", "lora_header": "LlamaForCausalLM",
        "offline_recursion": "InternLM2ForCausalLM"}


def log_config(model, a):
    vllm_logger("core.py").info(
        f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
        f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"trust_remote_code={a.scenario != 'lora_header'}, dtype=torch.bfloat16, max_seq_len={a.max_model_len}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        f"quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, "
        f"served_model_name={model}, enable_prefix_caching=True, chunked_prefill_enabled=True, "
        f"compilation_config={{\"level\":3,\"debug_dump_path\":\"\",\"cache_dir\":\"\",\"backend\":\"\",\"custom_ops\":[\"none\"],"
        f"\"splitting_ops\":[\"vllm.unified_attention\",\"vllm.unified_attention_with_output\"],\"use_inductor\":true,"
        f"\"compile_sizes\":[],\"use_cudagraph\":true,\"cudagraph_num_of_warmups\":1,\"max_capture_size\":512}}")


# ---------------------------------------------------------------- mark_dynamic: the plugin model
def build_plugin_model(max_tokens=2048, hidden=1024, vocab=32000):
    import torch
    import torch.nn as nn

    class PersimmonLearnedPosModel(nn.Module):
        """The plugin's backbone: token embedding + learned absolute positions + MLP blocks."""

        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, hidden)
            # sized by the engine's max_num_batched_tokens at load time
            self.embed_positions = nn.Embedding(max_tokens, hidden)
            self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                                      nn.Linear(4 * hidden, hidden)) for _ in range(4))
            self.norm = nn.LayerNorm(hidden)

        def forward(self, input_ids, positions):
            h = self.embed_tokens(input_ids)
            h = h + self.embed_positions.weight
            for layer in self.layers:
                h = h + layer(h)
            return self.norm(h)

    return PersimmonLearnedPosModel().to(DEV, torch.bfloat16)


def vllm_backend(gm, example_inputs):
    """The engine's compile backend: the graph is split at attention ops and each piece compiled per shape; here the
    graph is handed back as it is (the fault happens before the backend's result is used)."""
    vllm_logger("backends.py").info("Compiling a graph for dynamic shape takes 0.84 s")
    return gm.forward


# ---------------------------------------------------------------- offline_recursion: the remote-code tokenizer
class InternLMStyleTokenizer:
    """A slow Python tokenizer shipped as remote code: whitespace pre-split, then greedy longest-match pieces."""

    def __init__(self):
        rng = random.Random(5)
        letters = "abcdefghijklmnopqrstuvwxyz"
        self.vocab = {c: i for i, c in enumerate(letters + letters.upper() + "0123456789+/=.,:;!?-'\"()")}
        words = ["the", "and", "model", "token", "data", "ing", "tion", "er", "re", "in", "on", "at", "en", "es", "al"]
        for w in words + ["".join(rng.choice(letters) for _ in range(rng.randint(2, 4))) for _ in range(3000)]:
            self.vocab.setdefault(w, len(self.vocab))
        self.max_piece = max(len(k) for k in self.vocab)

    def _segment(self, word):
        if not word:
            return []
        for n in range(min(self.max_piece, len(word)), 0, -1):
            if word[:n] in self.vocab:
                return [self.vocab[word[:n]]] + self._segment(word[n:])
        return [0] + self._segment(word[1:])

    def encode(self, text):
        ids = [1]
        for w in text.split():
            ids.extend(self._segment(w))
        return ids


def make_docs(n=4000):
    rng = random.Random(17)
    words = ["the", "model", "answer", "question", "data", "summary", "report", "section", "figure", "table", "result",
             "method", "analysis", "training", "evaluation", "appendix"]
    docs = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(40, 200)))
        if i == 2711:  # a scraped page with an inline image as a data URI
            b64 = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(6144))
            text += f' <img src="data:image/png;base64,{b64}==">'
        docs.append({"id": f"doc-{i:05d}", "prompt": f"Summarize the following document.\n\n{text}\n\nSummary:"})
    return docs


# ---------------------------------------------------------------- lora_header: the adapters on disk
def prep_loras():
    import torch
    from safetensors.torch import save_file

    base = f"{ROOT}/loras"
    for name, stamp in (("chat-adapter-v2", False), ("sql-adapter-v3", True)):
        d = f"{base}/{name}"
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(1)
        tensors = {}
        for i in range(4):
            for proj in ("q_proj", "v_proj"):
                tensors[f"base_model.model.model.layers.{i}.self_attn.{proj}.lora_A.weight"] = (torch.randn(16, 4096) * 0.01).bfloat16()
                tensors[f"base_model.model.model.layers.{i}.self_attn.{proj}.lora_B.weight"] = torch.zeros(4096 if proj == "q_proj" else 1024, 16).bfloat16()
        path = f"{d}/adapter_model.safetensors"
        save_file(tensors, path, metadata={"format": "pt"})
        if stamp:  # the team's "stamp provenance into the adapter" script edits the header JSON in place
            b = open(path, "rb").read()
            b = b.replace(b'"format":"pt"', b'"format":"pt","trained_by":"sft-pipeline-2.4","dataset":"spider+bird-dev"', 1)
            open(path, "wb").write(b)
        with open(f"{d}/adapter_config.json", "w") as f:
            json.dump({"base_model_name_or_path": "meta-llama/Llama-3.1-8B-Instruct", "peft_type": "LORA", "r": 16,
                       "lora_alpha": 32, "target_modules": ["q_proj", "v_proj"], "lora_dropout": 0.05}, f, indent=2)
    return base


def load_lora(path):
    """The worker's LoRA loader: config, then the tensors onto the GPU."""
    from safetensors import safe_open

    with open(os.path.join(path, "adapter_config.json")) as f:
        cfg = json.load(f)
    if cfg["r"] > 64:
        raise ValueError(f"LoRA rank {cfg['r']} is greater than max_lora_rank 64.")
    tensors = {}
    with safe_open(os.path.join(path, "adapter_model.safetensors"), framework="pt", device="cpu") as f:
        for k in f.keys():
            tensors[k] = f.get_tensor(k).to(DEV) if not DRY else f.get_tensor(k)
    return len(tensors)


# ---------------------------------------------------------------- the engine core
class Engine:
    def __init__(self, model, a):
        log_config(model, a)
        self.a = a
        if not DRY and DEV == "cuda":
            import torch

            torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        if a.scenario == "mark_dynamic":
            vllm_logger("registry.py").info("Registered out-of-tree model PersimmonLearnedPosForCausalLM from persimmon_plugin.models:PersimmonLearnedPosForCausalLM")
        self.dec = Decoder(vocab=128256 if a.scenario == "lora_header" else 92544)
        vllm_logger("default_loader.py").info("Loading weights took 2.87 seconds")
        if a.scenario == "lora_header":
            vllm_logger("punica_selector.py").info("Using PunicaWrapperGPU.")
        vllm_logger("gpu_model_runner.py").info(f"Model loading took {self.dec.gib():.4f} GiB and 3.412760 seconds")
        if a.scenario == "mark_dynamic":
            self.compile_plugin()
        self.dec.forward(2048)
        vllm_logger("gpu_worker.py").info("Available KV cache memory: 61.27 GiB")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 501,904 tokens")
        vllm_logger("kv_cache_utils.py").info(f"Maximum concurrency for {a.max_model_len:,} tokens per request: 61.27x")
        vllm_logger("gpu_model_runner.py").info("Graph capturing finished in 6 secs, took 0.41 GiB")
        vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 14.93 seconds")

    def compile_plugin(self):
        import hashlib

        import torch

        model = build_plugin_model()
        h = hashlib.sha256(b"persimmon-plugin").hexdigest()[:10]
        vllm_logger("backends.py").info(f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{h}/rank_0_0/backbone for vLLM's torch.compile")
        compiled = torch.compile(model.forward, backend=vllm_backend, fullgraph=True, dynamic=False)
        n = 2048  # the profile run: max_num_batched_tokens
        ids = torch.randint(0, 32000, (n,), device=DEV)
        pos = torch.arange(n, device=DEV)
        torch._dynamo.mark_dynamic(ids, 0)
        torch._dynamo.mark_dynamic(pos, 0)
        t0 = time.time()
        with torch.no_grad():
            compiled(ids, pos)
        vllm_logger("monitor.py").info(f"torch.compile takes {time.time() - t0:.2f} s in total")

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
        try:
            item = in_q.get(timeout=0.05)
        except queue.Empty:
            continue
        if item[0] == "SHUTDOWN":
            log.info("Shutdown initiated (timeout=0)")
            vllm_logger("core.py").info("Shutdown complete")
            sys.stdout.flush()
            os._exit(0)
        if item[0] == "LORA":
            _, rid, name, path = item
            try:
                n = load_lora(path)
                vllm_logger("worker_base.py").info(f"Loaded new LoRA adapter: name '{name}', path '{path}' ({n} tensors)")
                out_q.put((rid, "OK"))
            except Exception as e:
                vllm_logger("worker_base.py").error(f"Error loading LoRA adapter '{name}' from '{path}'\n{traceback.format_exc().rstrip()}")
                out_q.put((rid, f"ERR:{type(e).__name__}: {e}"))
            continue
        rid, n = item
        out_q.put((rid, eng.step(n, rid)))


def start_engine(model, a):
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
    return p, in_q, out_q


# ---------------------------------------------------------------- API server
def api_server(a):
    model = MODELS[a.scenario]
    if a.scenario == "lora_header":
        prep_loras()
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    extra = ", 'enable_lora': True, 'max_lora_rank': 64, 'max_loras': 4" if a.scenario == "lora_header" else ", 'trust_remote_code': True"
    log.info(f"non-default args: {{'model_tag': '{model}', 'host': '0.0.0.0', 'port': {a.port}, 'model': '{model}', 'max_model_len': {a.max_model_len}{extra}}}")
    vllm_logger("model.py").info(f"Resolved architecture: {ARCH[a.scenario]}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=2048.")
    if a.scenario == "lora_header":
        vllm_logger("api_server.py").warning("Using VLLM_ALLOW_RUNTIME_LORA_UPDATING: runtime LoRA updating is enabled; do not use in production.")
    p, in_q, out_q = start_engine(model, a)
    serve(a, model, in_q, out_q, p)


def serve(a, model, in_q, out_q, p):
    log = vllm_logger("api_server.py")
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{a.port}")
    for r in ("/v1/models", "/v1/chat/completions", "/v1/completions", "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/health", "/metrics"):
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

    def ask(item):
        in_q.put(item)
        while True:
            try:
                return out_q.get(timeout=2.0)
            except queue.Empty:
                if not p.is_alive():
                    vllm_logger("core_client.py").error("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
                    os._exit(1)

    rng = random.Random(29)
    loras = {}
    port, rid, t_stat, ptoks, gtoks = 51800, 0, time.time(), 0, 0
    sc = vllm_logger("serving_chat.py")
    for i in range(1, 100000):
        port += 1
        rid += 1
        if i in (6, 31):  # the operator loads adapters through the runtime endpoint
            name = "chat-adapter-v2" if i == 6 else "sql-adapter-v3"
            path = f"{ROOT}/loras/{name}"
            vllm_logger("serving_models.py").info(f"Loading LoRA adapter '{name}' from '{path}'")
            _, res = ask(("LORA", rid, name, path))
            if res == "OK":
                loras[name] = path
                vllm_logger("serving_models.py").info(f"Loaded new LoRA adapter: name '{name}', path '{path}'")
                print(f'INFO:     10.20.3.14:{port} - "POST /v1/load_lora_adapter HTTP/1.1" 200 OK', flush=True)
            else:
                vllm_logger("serving_models.py").error(f"Failed to load LoRA adapter '{name}': {res[4:]}")
                print(f'INFO:     10.20.3.14:{port} - "POST /v1/load_lora_adapter HTTP/1.1" 400 Bad Request', flush=True)
            time.sleep(0.1)
            continue
        want = None
        if i > 31 and i % 4 == 0:
            want = "sql-adapter-v3"
        elif i > 6 and i % 3 == 0:
            want = "chat-adapter-v2"
        if want and want not in loras:
            sc.error(f"Error with model error=ErrorInfo(message='The model `{want}` does not exist.', type='NotFoundError', param=None, code=404)")
            print(f'INFO:     10.20.7.92:{port} - "POST /v1/chat/completions HTTP/1.1" 404 Not Found', flush=True)
            time.sleep(0.1)
            continue
        n = rng.randint(200, 900)
        ask((rid, n))
        ptoks += n
        gtoks += rng.randint(40, 160)
        print(f'INFO:     10.20.7.{rng.choice([45, 92, 118])}:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.12)
        if time.time() - t_stat > 3:
            dt = time.time() - t_stat
            vllm_logger("loggers.py").info(f"Engine 000: Avg prompt throughput: {ptoks / dt:.1f} tokens/s, Avg generation throughput: {gtoks / dt:.1f} tokens/s, Running: {rng.randint(1, 6)} reqs, Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0.2, 1.5):.1f}%, Prefix cache hit rate: {rng.uniform(20, 60):.1f}%")
            t_stat, ptoks, gtoks = time.time(), 0, 0


# ---------------------------------------------------------------- offline batch script
def offline(a):
    from tqdm import tqdm

    model = MODELS[a.scenario]
    print(f"[batch_infer] loading {len(make_docs())} documents from /data/crawl-2026-10/summarize_batch_07.jsonl", flush=True)
    vllm_logger("utils.py").info(f"non-default args: {{'trust_remote_code': True, 'max_model_len': {a.max_model_len}, 'seed': 0, 'model': '{model}'}}")
    vllm_logger("model.py").info(f"Resolved architecture: {ARCH[a.scenario]}")
    vllm_logger("model.py").info(f"Using max model len {a.max_model_len}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    p, in_q, out_q = start_engine(model, a)
    tok = InternLMStyleTokenizer()

    def shutdown():
        try:
            in_q.put(("SHUTDOWN",))
            p.join(timeout=3)
        except Exception:
            pass

    import atexit

    atexit.register(shutdown)
    docs = make_docs()
    reqs = []
    for d in tqdm(docs, desc="Adding requests", unit="it"):
        reqs.append(tok.encode(d["prompt"]))
    done = 0
    for i in tqdm(range(0, len(reqs), 256), desc="Processed prompts"):
        in_q.put((i, 512))
        out_q.get()
        done += 256
    print(f"[batch_infer] wrote {done} summaries", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=8192)
    a = ap.parse_args()
    if a.scenario == "offline_recursion":
        offline(a)
    else:
        api_server(a)


if __name__ == "__main__":
    main()
