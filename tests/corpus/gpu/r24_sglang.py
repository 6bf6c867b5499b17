# sglang-shaped launcher + scheduler child for round 24, one real fault per --scenario:
# fsm_segv: the scheduler (started with spawn, faulthandler on) loads the weights and the KV cache on the GPU,
#   then its grammar backend builds the token automaton of the tokenizer through a C library (libtokfsm.so); the
#   fine-tuned tokenizer's added tokens refer to each other as merge parts (a cycle), so the C routine recurses
#   until the thread's stack is gone: SIGSEGV, faulthandler prints the Python stack; the launcher, waiting on the
#   scheduler's pipe, gets EOF: "Rank 0 scheduler is dead", the exit code, and its own traceback.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_common import DRY, TOKFSM, Decoder, sglang_logger  # noqa: E402

MODEL = "/models/Qwen2.5-14B-Instruct-sft-tools"
VOCAB = 151665


def avail_gb():
    if DRY:
        return 139.2
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def tokenizer_merge_parts():
    """left part of every token's last merge (-1: a base byte); the fine-tune's added tokens 151657..151664"""
    import numpy as np

    rng = np.random.default_rng(0)
    left = np.full(VOCAB, -1, dtype=np.int32)
    left[256:151643] = rng.integers(0, np.arange(256, 151643), dtype=np.int32)  # a merge's parts are older tokens
    # added tool-call tokens, registered as merges of each other in the fine-tune's tokenizer.json
    for t in range(151657, VOCAB):
        left[t] = t + 1 if t + 1 < VOCAB else 151657
    return left


def run_scheduler(writer):
    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(0)
    lg.info("Init torch distributed begin.")
    if not DRY:
        import torch

        torch.cuda.set_device(0)
        torch.zeros(1, device="cuda")
    lg.info("Init torch distributed ends. mem usage=0.00 GB")
    lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
    dec = Decoder(vocab=VOCAB, layers=4)
    lg.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
    if not DRY:
        import torch

        kv = torch.empty(2 << 30, dtype=torch.bfloat16, device="cuda")  # noqa: F841
    lg.info("KV Cache is allocated. #tokens: 524288, K size: 2.00 GB, V size: 2.00 GB")
    lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
    lg.info("Init grammar backend: xgrammar-compat (token automaton: native)")
    import ctypes

    import numpy as np

    left = tokenizer_merge_parts()
    depth = np.zeros(VOCAB, dtype=np.int32)
    lib = ctypes.CDLL(TOKFSM)
    t0 = time.perf_counter()
    maxd = lib.build_token_fsm(ctypes.c_void_p(left.ctypes.data), VOCAB, ctypes.c_void_p(depth.ctypes.data))
    lg.info(f"Token automaton built: {VOCAB} states, max merge depth {maxd}, {time.perf_counter() - t0:.2f} s")
    writer.send({"status": "ready", "max_total_num_tokens": 524288})
    while True:
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    logger.info(
        f"server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', tokenizer_mode='auto', "
        f"skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, dtype='auto', device='cuda', "
        f"served_model_name='{MODEL}', host='0.0.0.0', port={args.port}, mem_fraction_static=0.85, tp_size=1, "
        f"grammar_backend='xgrammar', tool_call_parser='qwen25', random_seed=1093384, log_level='info')")
    reader, writer = mp.Pipe(duplex=False)
    proc = mp.Process(target=run_scheduler, args=(writer,))
    proc.start()
    writer.close()
    launch_server(logger, proc, reader)


def launch_server(logger, proc, reader):
    try:
        data = reader.recv()
    except EOFError:
        logger.error("Rank 0 scheduler is dead. Please check if there are relevant logs.")
        proc.join()
        logger.error(f"Exit code: {proc.exitcode}")
        raise
    if data["status"] != "ready":
        raise RuntimeError("Initialization failed. Please see the error messages above.")


if __name__ == "__main__":
    main()
