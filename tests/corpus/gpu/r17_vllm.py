# vLLM-shaped API server + EngineCore (round 17), --scenario missing_shard: the model folder's
# model.safetensors.index.json names four shards but the copy from the model store stopped after the third;
# the engine core loads shards 1-3 onto the GPU, then cannot open the fourth.
import argparse
import json
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r17_common import SHARDED, add_prefix, vllm_logger  # noqa: E402

VER = "0.12.0"
MODELS = {"missing_shard": SHARDED}
ARGS = {"missing_shard": {"max_model_len": 32768, "tokenizer_mode": "mistral", "config_format": "hf",
                          "load_format": "safetensors", "limit_mm_per_prompt": {"image": 0}}}


class EngineCore:
    def __init__(self, scenario, model):
        import torch
        from safetensors import safe_open
        from tqdm import tqdm
        self.log = vllm_logger("core.py")
        a = ARGS[scenario]
        self.log.info(f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
                      f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=mistral, revision=None, "
                      f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={a['max_model_len']}, "
                      f"download_dir=None, load_format=safetensors, tensor_parallel_size=1, "
                      f"pipeline_parallel_size=1, data_parallel_size=1, quantization=None, enforce_eager=False, "
                      f"kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={model}, "
                      f"enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, "
                      f"compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'}}")
        torch.cuda.set_device(0)
        vllm_logger("parallel_state.py").info("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, "
                                              "EP rank 0")
        rl = vllm_logger("gpu_model_runner.py")
        rl.info(f"Starting to load model {model}...")
        vllm_logger("cuda.py").info("Using Flash Attention backend on V1 engine.")
        t0 = time.perf_counter()
        with open(f"{model}/model.safetensors.index.json") as f:
            weight_map = json.load(f)["weight_map"]
        files = sorted(set(weight_map.values()))
        fmt = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]\n"
        self.params = {}
        for name in tqdm(files, desc="Loading safetensors checkpoint shards", bar_format=fmt):
            with safe_open(f"{model}/{name}", framework="pt", device="cpu") as f:
                for k in f.keys():
                    self.params[k] = f.get_tensor(k).to("cuda", dtype=torch.bfloat16, non_blocking=True)
            torch.cuda.synchronize()
        rl.info(f"Model loading took {torch.cuda.memory_allocated() / 2**30:.4f} GiB and "
                f"{time.perf_counter() - t0:.6f} seconds")


def engine_core_main(scenario, model, out_q):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    try:
        EngineCore(scenario, model)
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put(("FAILED", 0))
        time.sleep(0.3)
        sys.exit(1)
    out_q.put(("READY", 0))
    time.sleep(3600)


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
    nd = {"model_tag": model, "port": args.port, **a, "model": model}
    log.info(f"non-default args: {nd}")
    vllm_logger("model.py").info("Resolved architecture: MistralForCausalLM")
    vllm_logger("model.py").info(f"Using max model len {a['max_model_len']}")
    vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
    ctx = mp.get_context("spawn")
    out_q = ctx.Queue()
    p = ctx.Process(target=engine_core_main, args=(sc, model, out_q), name="EngineCore_DP0")
    p.start()
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status, _ = out_q.get(timeout=300)
    if status != "READY":
        p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")


if __name__ == "__main__":
    main()
