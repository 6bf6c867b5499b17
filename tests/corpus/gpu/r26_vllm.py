# vLLM-shaped scenarios for round 26, one real fault per --scenario:
# offline_nan: offline batch inference (LLM.generate, the "Processed prompts" bar); the model runs in fp16 and one
#   layer's activations overflow to inf for long prompts, the logits become NaN and the sampler's
#   torch.multinomial refuses the probability tensor (the offline script dies, no server);
# graph_item: API server + EngineCore; the decode step reads the batch's max sequence length with .item() (a
#   device->host sync) inside the CUDA-graph capture: capture fails, the engine core fails to start.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r25_common import GiB, Decoder, add_prefix, uvicorn_log, vllm_logger  # noqa: E402

VER = "0.11.1"


def offline_nan():
    import torch
    from tqdm import tqdm

    model = "/models/Phi-3-medium-4k-instruct"
    vllm_logger("utils.py").info("non-default args: {'model': '%s', 'dtype': 'float16', 'max_model_len': 4096, 'enforce_eager': True, 'disable_log_stats': True}" % model)
    vllm_logger("model.py").info("Resolved architecture: Phi3ForCausalLM")
    vllm_logger("model.py").warning("Casting torch.bfloat16 to torch.float16.")
    vllm_logger("model.py").info("Using max model len 4096")
    vllm_logger("core.py").info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', tokenizer='{model}', dtype=torch.float16, max_seq_len=4096, enforce_eager=True, kv_cache_dtype=auto, device_config=cuda, seed=0")
    torch.cuda.set_device(0)
    dec = Decoder()
    for L in dec.layers:
        L["gate_up"] = L["gate_up"].half()
        L["down"] = L["down"].half() * 40  # the fine-tune's last MLPs have large down-projections
    dec.emb, dec.head = dec.emb.half(), dec.head.half()
    vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and 6.204113 seconds")
    vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 231,424 tokens")
    vllm_logger("core.py").info("init engine (profile, create kv cache, warmup model) took 21.77 seconds")
    vllm_logger("llm.py").info("Supported tasks: ['generate']")
    prompts = [400 + 37 * (i % 50) for i in range(256)]
    fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
    for _ in tqdm(range(len(prompts)), desc="Adding requests", bar_format=fmt):
        pass
    bar = tqdm(total=len(prompts), desc="Processed prompts", bar_format=fmt, postfix="est. speed input: 0.00 toks/s, output: 0.00 toks/s")
    for i in range(0, len(prompts), 8):
        g = torch.Generator(device="cuda").manual_seed(i)
        scale = 5.0 if i >= 96 else 0.001  # the batch of the long few-shot prompts: larger activations
        h = torch.randn(8, 2048, device="cuda", generator=g).half() * scale
        for L in dec.layers:
            g_, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        logits = (h @ dec.head.T).float()
        probs = torch.softmax(logits / 0.7, dim=-1)
        torch.multinomial(probs, num_samples=1)
        time.sleep(0.15)
        bar.update(8)
        bar.set_postfix_str(f"est. speed input: {sum(prompts[:i + 8]) / bar.format_dict['elapsed']:.2f} toks/s, output: {128 * (i + 8) / bar.format_dict['elapsed']:.2f} toks/s")


# ---------------------------------------------------------------- graph_item: API server + EngineCore
class Engine:
    def __init__(self, model):
        import torch

        vllm_logger("core.py").info(
            f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, tokenizer='{model}', "
            f"dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, quantization=None, enforce_eager=False, "
            f"kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={model}, enable_prefix_caching=True, "
            f"compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE', 'cudagraph_capture_sizes': [16, 8, 4, 2, 1]}}")
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0")
        vllm_logger("gpu_model_runner.py").info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using FlashInfer backend on V1 engine.")
        self.dec = Decoder()
        vllm_logger("default_loader.py").info("Loading weights took 3.87 seconds")
        vllm_logger("gpu_model_runner.py").info(f"Model loading took {torch.cuda.memory_allocated() / GiB:.4f} GiB and 4.412208 seconds")
        vllm_logger("monitor.py").info("torch.compile takes 17.40 s in total")
        vllm_logger("gpu_worker.py").info("Available KV cache memory: 98.61 GiB")
        vllm_logger("kv_cache_utils.py").info("GPU KV cache size: 1,846,272 tokens")
        vllm_logger("kv_cache_utils.py").info("Maximum concurrency for 8,192 tokens per request: 225.38x")
        self.capture()

    def decode(self, ids, seq_lens):
        import torch

        d = self.dec
        # the attention wrapper plans its split-k work from the batch's longest sequence
        max_len = int(seq_lens.max().item())
        splits = max(1, max_len // 512)
        h = d.emb[ids] * (1.0 / splits)
        for L in d.layers:
            g_, u = (h @ L["gate_up"].T).chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        return (h @ d.head.T).argmax(-1)

    def capture(self):
        import torch
        from tqdm import tqdm

        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
        pool = torch.cuda.graph_pool_handle()
        for bs in tqdm([16, 8, 4, 2, 1], desc="Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", bar_format=fmt):
            ids = torch.zeros(bs, dtype=torch.long, device="cuda")
            sl = torch.ones(bs, dtype=torch.int32, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                self.decode(ids, sl)  # warm-up outside the capture
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                self.decode(ids, sl)


def engine_core_main(model, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    log = vllm_logger("core.py")
    log.info("Waiting for init message from front-end.")
    try:
        Engine(model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put("FAILED")
        time.sleep(0.3)
        sys.exit(1)
    out_q.put("READY")
    time.sleep(3600)


def graph_item(a):
    model = "/models/gemma-2-9b-it"
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    log = vllm_logger("api_server.py")
    log.info(f"vLLM API server version {VER}")
    log.info(f"non-default args: {{'model_tag': '{model}', 'port': {a.port}, 'model': '{model}', 'max_model_len': 8192, 'compilation_config': {{'cudagraph_mode': 'FULL_AND_PIECEWISE'}}}}")
    vllm_logger("model.py").info("Resolved architecture: Gemma2ForCausalLM")
    vllm_logger("model.py").info("Using max model len 8192")
    ctx = mp.get_context("spawn")
    out_q = ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(model, out_q), name="EngineCore_DP0")
    p.start()
    ul = vllm_logger("utils.py")
    ul.info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status = None
    while status is None:
        try:
            status = out_q.get(timeout=1.0)
        except Exception:
            if not p.is_alive():
                break
    if status != "READY":
        p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    if a.scenario == "offline_nan":
        offline_nan()
    else:
        graph_item(a)
