# Round 25: shared helpers for the r25_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r25_common.py --prep`, CPU only, run once by r25_run.sh) that
# writes what the sglang shard scenario loads: a two-shard safetensors checkpoint (config.json, the index) whose
# second shard was cut short by an interrupted copy (rsync --partial).
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
# ruff: noqa: E501  (log lines kept as servers print them)
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R25_ROOT", "/tmp/r25_files")
SHARDED = f"{ROOT}/models/Llama-3.2-3B-Instruct-ft"
GiB = 1 << 30


def make_sharded():
    import torch
    from safetensors.torch import save_file

    os.makedirs(SHARDED, exist_ok=True)
    torch.manual_seed(0)
    d, inter, layers, vocab = 1024, 2816, 8, 32000
    tensors = {"model.embed_tokens.weight": torch.randn(vocab, d, dtype=torch.bfloat16) * 0.02}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name, shape in (("self_attn.q_proj.weight", (d, d)), ("self_attn.k_proj.weight", (256, d)),
                            ("self_attn.v_proj.weight", (256, d)), ("self_attn.o_proj.weight", (d, d)),
                            ("mlp.gate_proj.weight", (inter, d)), ("mlp.up_proj.weight", (inter, d)),
                            ("mlp.down_proj.weight", (d, inter)), ("input_layernorm.weight", (d,)),
                            ("post_attention_layernorm.weight", (d,))):
            tensors[p + name] = torch.randn(*shape, dtype=torch.bfloat16) * 0.02
    tensors["model.norm.weight"] = torch.ones(d, dtype=torch.bfloat16)
    tensors["lm_head.weight"] = torch.randn(vocab, d, dtype=torch.bfloat16) * 0.02
    names = list(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    wmap = {}
    for fn, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, f"{SHARDED}/{fn}", metadata={"format": "pt"})
        wmap.update({k: fn for k in keys})
    with open(f"{SHARDED}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": sum(t.numel() * 2 for t in tensors.values())}, "weight_map": wmap}, f, indent=2)
    with open(f"{SHARDED}/config.json", "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": d, "intermediate_size": inter,
                   "num_hidden_layers": layers, "num_attention_heads": 8, "num_key_value_heads": 2,
                   "vocab_size": vocab, "torch_dtype": "bfloat16", "max_position_embeddings": 131072}, f, indent=2)
    # the copy of the second shard was interrupted: rsync --partial left its first 60%
    p2 = f"{SHARDED}/model-00002-of-00002.safetensors"
    size = os.path.getsize(p2)
    os.truncate(p2, int(size * 0.6))


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_sharded,):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
