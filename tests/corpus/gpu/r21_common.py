# Round 21: shared helpers for the r21_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds
# - the prep step (`python3 r21_common.py --prep`, CPU only, run once by r21_run.sh) that writes the files some
#   scenarios read: a tiny Llama checkpoint folder (config + safetensors) and the output folder of an FSDP
#   fine-tune saved with SHARDED_STATE_DICT (config.json, a torch.distributed.checkpoint folder
#   pytorch_model_fsdp_0/, trainer_state.json; no consolidated weights file);
# - `--hold-lock PATH SECONDS`: another job on the node that took a file lock and is stuck while holding it
#   (PATH "jit" is the fused-MoE JIT cache lock of r21_sglang.py);
# - `--hold-gpu FRACTION SECONDS`: a process left over from an earlier run that still holds part of the GPU memory.
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R21_ROOT", "/tmp/r21_files")  # R21_ROOT: elsewhere for a local dry run
TINY_LLAMA = f"{ROOT}/Llama-3.2-1B-Instruct-sft"
FSDP_OUT = f"{ROOT}/runs/qwen2-1.5b-fsdp-sft/checkpoint-1200"
JIT_CACHE = f"{ROOT}/jit_cache"
JIT_LOCK = f"{JIT_CACHE}/fused_moe/.fused_moe_kernel_E8_N14336_bf16.lock"
RL_CKPT = f"{ROOT}/rl-sync/actor/model.safetensors"


def tiny_llama_config(**kw):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                       num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096,
                       rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, **kw)


def make_tiny_llama():
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    LlamaForCausalLM(tiny_llama_config()).save_pretrained(TINY_LLAMA)


def make_fsdp_out():
    """What HF Trainer + FSDP (state_dict_type SHARDED_STATE_DICT) leaves in a checkpoint folder."""
    import json

    import torch
    import torch.distributed.checkpoint as dcp
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    cfg = tiny_llama_config()
    m = LlamaForCausalLM(cfg)
    os.makedirs(FSDP_OUT, exist_ok=True)
    cfg.save_pretrained(FSDP_OUT)
    m.generation_config.save_pretrained(FSDP_OUT)
    dcp.save({"model": m.state_dict()}, checkpoint_id=f"{FSDP_OUT}/pytorch_model_fsdp_0")
    with open(f"{FSDP_OUT}/trainer_state.json", "w") as f:
        json.dump({"global_step": 1200, "epoch": 2.0, "best_metric": None, "log_history": []}, f, indent=2)
    torch.save({"lr": [2e-5]}, f"{FSDP_OUT}/scheduler.pt")


def hold_lock(path, seconds):
    from filelock import FileLock
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock = FileLock(path)
    lock.acquire()
    print(f"holding {path} (pid {os.getpid()})", flush=True)
    time.sleep(seconds)


def hold_gpu(fraction, seconds):
    import torch
    total = torch.cuda.mem_get_info()[1]
    x = torch.empty(int(total * fraction), dtype=torch.uint8, device="cuda")
    x[:: 1 << 20].fill_(1)
    torch.cuda.synchronize()
    print(f"holding {x.numel() / 2**30:.1f} GiB of {total / 2**30:.1f} GiB (pid {os.getpid()})", flush=True)
    time.sleep(seconds)


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_tiny_llama, make_fsdp_out):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
    elif "--hold-lock" in sys.argv:
        i = sys.argv.index("--hold-lock")
        hold_lock(JIT_LOCK if sys.argv[i + 1] == "jit" else sys.argv[i + 1], float(sys.argv[i + 2]))
    elif "--hold-gpu" in sys.argv:
        i = sys.argv.index("--hold-gpu")
        hold_gpu(float(sys.argv[i + 1]), float(sys.argv[i + 2]))
