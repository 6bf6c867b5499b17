# A vLLM-shaped offline engine for round 24 (the `LLM` entry point: engine config, the spawn start method once CUDA
# is initialized, an EngineCore process started with multiprocessing, its start-up handshake), used by
# r24_offline_batch.py, a user's batch script with no `if __name__ == "__main__":` guard. The EngineCore child,
# started with spawn, re-runs the user's script while it bootstraps; the script builds a second LLM there and
# multiprocessing refuses to start a process from a process that is still bootstrapping (the child's traceback);
# the parent sees its engine core exit during start-up.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_common import DRY, Decoder, add_prefix, vllm_logger  # noqa: E402

VER = "0.11.2"
vllm_logger("__init__.py").info("Automatically detected platform cuda.")


class SamplingParams:
    def __init__(self, temperature=1.0, top_p=1.0, max_tokens=16):
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens


def run_engine_core(model, max_model_len, ready_w):
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    vllm_logger("core.py").info("Waiting for init message from front-end.")
    dec = Decoder()
    vllm_logger("gpu_model_runner.py").info(f"Model loading took {dec.gib():.4f} GiB")
    ready_w.send("READY")
    while True:
        time.sleep(1)


class LLM:
    def __init__(self, model, max_model_len=8192, gpu_memory_utilization=0.9, tensor_parallel_size=1, seed=0):
        args = dict(model=model, max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization, seed=seed)
        if tensor_parallel_size != 1:
            args["tensor_parallel_size"] = tensor_parallel_size
        vllm_logger("utils.py").info(f"non-default args: {args}")
        vllm_logger("model.py").info("Resolved architecture: Qwen2ForCausalLM")
        vllm_logger("model.py").info(f"Using max model len {max_model_len}")
        vllm_logger("scheduler.py").info("Chunked prefill is enabled with max_num_batched_tokens=8192.")
        if not DRY:
            import torch

            cuda_init = torch.cuda.is_initialized()
        else:
            cuda_init = True
        method = "fork"
        if cuda_init:
            vllm_logger("multiproc_worker_utils.py").warning(
                "We must use the `spawn` multiprocessing start method. Overriding VLLM_WORKER_MULTIPROC_METHOD to 'spawn'. "
                "See https://docs.vllm.ai/en/latest/usage/troubleshooting.html#python-multiprocessing for more information. "
                "Reasons: CUDA is initialized")
            method = "spawn"
        vllm_logger("core.py").info(
            f"Initializing a V1 LLM engine (v{VER}) with config: model='{model}', speculative_config=None, "
            f"tokenizer='{model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            f"trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={max_model_len}, download_dir=None, "
            f"load_format=auto, tensor_parallel_size={tensor_parallel_size}, pipeline_parallel_size=1, "
            f"data_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
            f"device_config=cuda, seed={seed}, served_model_name={model}, enable_prefix_caching=True, "
            f"chunked_prefill_enabled=True, compilation_config={{'level': 3, 'cudagraph_mode': 'FULL_AND_PIECEWISE'}}")
        ctx = mp.get_context(method)
        ready_r, ready_w = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=run_engine_core, name="EngineCore_DP0", args=(model, max_model_len, ready_w))
        self.proc.start()
        ready_w.close()
        self.wait_for_engine_startup(ready_r)

    def wait_for_engine_startup(self, ready_r):
        t_end = time.time() + 600
        while time.time() < t_end:
            if ready_r.poll(0.2):
                try:
                    if ready_r.recv() == "READY":
                        return
                except EOFError:
                    pass
            if self.proc.exitcode is not None:
                raise RuntimeError("Engine core initialization failed. See root cause above. "
                                   f"Failed core proc(s): {{'{self.proc.name}': {self.proc.exitcode}}}")
        raise TimeoutError("Timed out waiting for engines to send initial message on input socket.")

    def generate(self, prompts, params):
        raise NotImplementedError
