# vLLM-shaped crash: an API-server parent, an EngineCore_0 child whose real GPU error ends start-up, the parent's wrapper.
import argparse
import atexit
import multiprocessing as mp
import os
import sys
import time
from multiprocessing.connection import wait

from shapes_common import (add_prefix, fault_assert, fault_illegal, fault_oom, free_gb, vllm_logger,
                           warm_gpu)

# scenario -> (fault, order): "above" = the child dies first and its traceback precedes the parent's
# wrapper; "below" = the child reports failure over the handshake, its log reaches the file late.
SCENARIOS = {
    "oom_above": ("oom", "above"),
    "oom_below": ("oom", "below"),
    "illegal_above": ("illegal", "above"),
    "assert_below": ("assert", "below"),
}


class EngineCore:
    def __init__(self, fault):
        log = vllm_logger("core.py")
        log.info("Initializing a V1 LLM engine (v0.10.2) with config: model='/models/Qwen2.5-7B-Instruct', "
                 "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, enforce_eager=False")
        wlog = vllm_logger("gpu_model_runner.py")
        avail = warm_gpu()
        wlog.info("Starting to load model /models/Qwen2.5-7B-Instruct...")
        time.sleep(0.3)
        wlog.info(f"Model loading took 0.03 GiB and 0.41 seconds (free {avail:.2f} GiB)")
        self.profile_run(fault)
        self.initialize_kv_cache(fault)
        self.capture_model(fault)

    def profile_run(self, fault):
        if fault == "assert":
            vllm_logger("gpu_model_runner.py").info("Profiling the model with dummy inputs")
            fault_assert(vocab=152064)

    def initialize_kv_cache(self, fault):
        log = vllm_logger("kv_cache_utils.py")
        log.info(f"GPU KV cache size: 12,000,000 tokens (free {free_gb():.2f} GiB)")
        if fault == "oom":
            self.kv = fault_oom()

    def capture_model(self, fault):
        vllm_logger("gpu_model_runner.py").info("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)")
        if fault == "illegal":
            fault_illegal()


def run_engine_core(fault, order, conn):
    add_prefix(f"(EngineCore_0 pid={os.getpid()}) ")
    log = vllm_logger("core.py")
    try:
        EngineCore(fault)
        conn.send(("READY", 0))
    except Exception as e:
        if order == "below":
            conn.send(("FAILED", 1))  # handshake says failed; the log below reaches the file late
            time.sleep(0.8)
        log.exception("EngineCore failed to start.")
        raise e


def wait_for_engine_startup(proc, conn):
    while True:
        ready = wait([conn, proc.sentinel], timeout=120)
        if conn in ready and conn.poll():
            status, code = conn.recv()
            if status == "READY":
                return
            raise RuntimeError("Engine core initialization failed. See root cause above. "
                               f"Failed core proc(s): {{'{proc.name}': {code}}}")
        if proc.sentinel in ready:
            proc.join()
            raise RuntimeError("Engine core initialization failed. See root cause above. "
                               f"Failed core proc(s): {{'{proc.name}': {proc.exitcode}}}")


def run_server(args):
    log = vllm_logger("api_server.py")
    log.info("vLLM API server version 0.10.2")
    log.info(f"non-default args: {{'model': '/models/Qwen2.5-7B-Instruct', 'port': {args.port}, 'scenario': '{args.scenario}'}}")
    fault, order = SCENARIOS[args.scenario]
    ctx = mp.get_context("spawn")
    rd, wr = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=run_engine_core, name="EngineCore_0", args=(fault, order, wr))
    proc.start()
    atexit.register(lambda: proc.join(timeout=5))  # shutdown waits for the engine process
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    wait_for_engine_startup(proc, rd)
    log.info(f"Starting vLLM API server 0 on http://0.0.0.0:{args.port}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    add_prefix(f"(APIServer pid={os.getpid()}) ")
    run_server(args)


if __name__ == "__main__":
    main()
