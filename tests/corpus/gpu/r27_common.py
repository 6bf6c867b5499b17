# Round 27: shared helpers for the r27_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r27_common.py --prep`, CPU only, run once by r27_run.sh) that
# writes what some scenarios load:
# - a Mistral-style model folder cloned without git-lfs: its tokenizer.model is the LFS pointer text;
# - a model folder whose config.json names a model_type this transformers does not know;
# - a "sharded_state" checkpoint saved with TP=4 (one safetensors file per rank), loaded later with TP=2;
# - a pre-tokenized dataset of two shards of which only the first was copied;
# - an output folder whose `ckpt` path is a file (a stale symlink target that a copy turned into a file).
# ruff: noqa: E501  (log lines kept as servers print them)
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R27_ROOT", "/tmp/r27_files")
SPM_MODEL = f"{ROOT}/models/Mistral-7B-Instruct-v0.1"
UNKNOWN_MODEL = f"{ROOT}/models/Step-4-Flash"
SHARDED = f"{ROOT}/models/Llama-3.1-8B-Instruct-sharded-tp4"
DATA = f"{ROOT}/data/tokenized-fineweb-edu"
OUTDIR = f"{ROOT}/runs/llama-sft-0412"
GiB = 1 << 30
SH = dict(hidden=1024, inter=2816, layers=2, vocab=32000)


def make_spm():
    os.makedirs(SPM_MODEL, exist_ok=True)
    with open(f"{SPM_MODEL}/tokenizer.model", "w") as f:
        f.write("version https://git-lfs.github.com/spec/v1\noid sha256:dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055\nsize 493443\n")
    with open(f"{SPM_MODEL}/config.json", "w") as f:
        json.dump({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32,
                   "vocab_size": 32000, "torch_dtype": "bfloat16", "max_position_embeddings": 32768}, f, indent=2)
    with open(f"{SPM_MODEL}/tokenizer_config.json", "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "legacy": False}, f, indent=2)


def make_unknown():
    os.makedirs(UNKNOWN_MODEL, exist_ok=True)
    with open(f"{UNKNOWN_MODEL}/config.json", "w") as f:
        json.dump({"architectures": ["Step4FlashForCausalLM"], "model_type": "step4_flash_moe", "hidden_size": 4096,
                   "num_hidden_layers": 48, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 128896,
                   "torch_dtype": "bfloat16", "max_position_embeddings": 262144}, f, indent=2)


def make_sharded():
    import torch
    from safetensors.torch import save_file

    os.makedirs(SHARDED, exist_ok=True)
    torch.manual_seed(0)
    d, inter, vocab = SH["hidden"], SH["inter"], SH["vocab"]
    for r in range(4):
        t = {"model.embed_tokens.weight": torch.randn(vocab // 4, d, dtype=torch.bfloat16) * 0.02}
        for i in range(SH["layers"]):
            p = f"model.layers.{i}."
            t[p + "mlp.gate_up_proj.weight"] = torch.randn(2 * inter // 4, d, dtype=torch.bfloat16) * 0.02
            t[p + "mlp.down_proj.weight"] = torch.randn(d, inter // 4, dtype=torch.bfloat16) * 0.02
        save_file(t, f"{SHARDED}/model-rank-{r}-part-0.safetensors", metadata={"format": "pt"})
    with open(f"{SHARDED}/config.json", "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": d, "intermediate_size": inter,
                   "num_hidden_layers": SH["layers"], "vocab_size": vocab, "torch_dtype": "bfloat16"}, f, indent=2)


def make_data():
    import numpy as np

    os.makedirs(DATA, exist_ok=True)
    np.random.default_rng(0).integers(0, 32000, size=(2048, 1025), dtype=np.uint16).tofile(f"{DATA}/train-00000-of-00002.bin")
    with open(f"{DATA}/index.json", "w") as f:
        json.dump({"shards": ["train-00000-of-00002.bin", "train-00001-of-00002.bin"], "seq_len": 1025, "dtype": "uint16"}, f)


def make_outdir():
    os.makedirs(OUTDIR, exist_ok=True)
    with open(f"{OUTDIR}/ckpt", "w") as f:
        f.write("../../shared/ckpt/llama-sft-0412\n")


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_spm, make_unknown, make_sharded, make_data, make_outdir):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
