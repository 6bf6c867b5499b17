# Round 17: shared helpers (loggers come from shapes_common) and the prep step that builds the files the
# scenarios load (run once by r17_run.sh before the scenarios, CPU only):
# - a 4-shard safetensors checkpoint whose model.safetensors.index.json names a fourth shard that never
#   arrived (the copy from the model store stopped after shard 3);
# - a model folder whose config.json has a model_type newer than the installed transformers;
# - a training checkpoint written by rank 1 of a two-GPU job (its storages are tagged cuda:1).
# `python3 r17_common.py --prep`
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shapes_common import add_prefix, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r17_models"
SHARDED = f"{ROOT}/Mistral-Small-3.1-24B-Instruct-2503"
NEWTYPE = f"{ROOT}/Kimi-K3-Instruct"
CKPT_DIR = "/tmp/r17_ckpt/contrastive-run-0907"
N_SHARDS = 4
# stand-in sizes (the real 24B shards are ~5 GB each): 40 layers over 4 shards
LAYERS = 40
HIDDEN = 512
INTER = 1024
VOCAB = 32768


def shard_name(i):
    return f"model-{i:05d}-of-{N_SHARDS:05d}.safetensors"


def make_sharded():
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(SHARDED, exist_ok=True)
    with open(f"{SHARDED}/config.json", "w") as f:
        json.dump({"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "head_dim": 128,
                   "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 32768,
                   "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
                   "num_hidden_layers": LAYERS, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                   "rope_theta": 1000000000.0, "sliding_window": None, "tie_word_embeddings": False,
                   "torch_dtype": "bfloat16", "vocab_size": 131072}, f, indent=2)
    rng = np.random.default_rng(0)
    weight_map = {}
    per = LAYERS // N_SHARDS
    for s in range(1, N_SHARDS + 1):
        tensors = {}
        if s == 1:
            tensors["model.embed_tokens.weight"] = (rng.standard_normal((VOCAB, HIDDEN)) * 0.02).astype(np.float16)
        for layer in range((s - 1) * per, s * per):
            p = f"model.layers.{layer}"
            tensors[f"{p}.input_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float16)
            tensors[f"{p}.post_attention_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float16)
            for n, shape in (("self_attn.q_proj", (HIDDEN, HIDDEN)), ("self_attn.k_proj", (HIDDEN // 4, HIDDEN)),
                             ("self_attn.v_proj", (HIDDEN // 4, HIDDEN)), ("self_attn.o_proj", (HIDDEN, HIDDEN)),
                             ("mlp.gate_proj", (INTER, HIDDEN)), ("mlp.up_proj", (INTER, HIDDEN)),
                             ("mlp.down_proj", (HIDDEN, INTER))):
                tensors[f"{p}.{n}.weight"] = (rng.standard_normal(shape) * 0.02).astype(np.float16)
        if s == N_SHARDS:
            tensors["model.norm.weight"] = np.ones(HIDDEN, dtype=np.float16)
            tensors["lm_head.weight"] = (rng.standard_normal((VOCAB, HIDDEN)) * 0.02).astype(np.float16)
        for k in tensors:
            weight_map[k] = shard_name(s)
        if s < N_SHARDS:  # the fourth shard never arrived
            save_file(tensors, f"{SHARDED}/{shard_name(s)}", metadata={"format": "pt"})
    with open(f"{SHARDED}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": 48022443008}, "weight_map": dict(sorted(weight_map.items()))}, f,
                  indent=2)
    with open(f"{SHARDED}/generation_config.json", "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2, "temperature": 0.15}, f, indent=2)


def make_newtype():
    os.makedirs(NEWTYPE, exist_ok=True)
    with open(f"{NEWTYPE}/config.json", "w") as f:
        json.dump({"architectures": ["KimiK3ForCausalLM"], "auto_map": {}, "bos_token_id": 163584,
                   "eos_token_id": 163586, "hidden_size": 7168, "intermediate_size": 18432,
                   "max_position_embeddings": 262144, "model_type": "kimi_k3", "moe_intermediate_size": 2048,
                   "n_routed_experts": 384, "num_attention_heads": 64, "num_experts_per_tok": 8,
                   "num_hidden_layers": 61, "num_key_value_heads": 64, "rope_theta": 50000.0,
                   "torch_dtype": "bfloat16", "transformers_version": "5.21.0", "vocab_size": 163840}, f, indent=2)
    with open(f"{NEWTYPE}/generation_config.json", "w") as f:
        json.dump({"bos_token_id": 163584, "eos_token_id": 163586, "transformers_version": "5.21.0"}, f, indent=2)


def make_ckpt():
    """rank 1 of the two-GPU job saved last.pt from cuda:1 (its storages carry the location tag 'cuda:1')."""
    import torch
    import torch.nn as nn
    sys.path.insert(0, HERE)

    def tag_cuda1(storage):
        return "cuda:1"

    def never(storage, location):
        return None

    torch.serialization.register_package(5, tag_cuda1, never)
    torch.manual_seed(0)
    d, vocab = 768, 32000
    model = nn.ModuleDict({"emb": nn.Embedding(vocab, d), "proj": nn.Linear(d, 256, bias=False)})
    os.makedirs(CKPT_DIR, exist_ok=True)
    torch.save({"step": 3000, "model": model.state_dict(), "rng": torch.get_rng_state(),
                "args": {"lr": 2e-4, "batch_size": 64, "world_size": 2}}, f"{CKPT_DIR}/last.pt")


def line_buffer_c_stdout():
    """Make the C library's stdout line-buffered, as on a terminal (CUDA's device printf goes through it)."""
    import ctypes
    libc = ctypes.CDLL(None)
    stdout_p = ctypes.c_void_p.in_dll(libc, "stdout")
    libc.setvbuf(stdout_p, None, 1, 0)  # _IOLBF


if __name__ == "__main__":
    if "--prep" in sys.argv:
        make_sharded()
        make_newtype()
        make_ckpt()
        print("prep done")
