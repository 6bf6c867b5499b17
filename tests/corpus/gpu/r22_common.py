# Round 22: shared helpers for the r22_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r22_common.py --prep`, CPU only, run once by
# r22_run.sh) that writes the files some scenarios read:
# - a LoRA adapter folder whose adapter_config.json says r=16 while its tensors were trained with r=32 (the
#   config was copied from the previous adapter's folder);
# - a 4-shard safetensors checkpoint (the weights a vLLM engine core loads slowly enough for an operator's
#   Ctrl-C);
# - an HF-Trainer style checkpoint folder whose training_state.pt holds numpy values (best metric, RNG state);
# - the sbatch script of a Slurm training job (bash, `set -euo pipefail`).
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = os.environ.get("R22_ROOT", "/tmp/r22_files")  # R22_ROOT: elsewhere for a local dry run
LORA_DIR = f"{ROOT}/adapters/sql-lora-r32"
SHARDS_DIR = f"{ROOT}/models/Qwen2.5-14B-Instruct"
HF_OUT = f"{ROOT}/runs/deberta-nli/checkpoint-best"
SBATCH = f"{ROOT}/jobs/pretrain_350m.sbatch"

SBATCH_TEXT = r"""#!/bin/bash
#SBATCH --job-name=pretrain-350m
#SBATCH --nodes=1
#SBATCH --gpus-per-node=1
#SBATCH --time=04:00:00
#SBATCH --output=logs/%x-%j.out
set -euo pipefail

export OMP_NUM_THREADS=8
RUN_NAME="pretrain-350m-${SLURM_JOB_ID}"
OUT_DIR="@ROOT@/runs/${RUN_NAME}"
mkdir -p "$OUT_DIR"
echo "[$(date '+%F %T')] job ${SLURM_JOB_ID} on $(hostname) (${SLURM_NTASKS} tasks)"
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader
echo "[$(date '+%F %T')] launching torchrun (nproc_per_node=2)"
torchrun --nproc-per-node 2 --master-port "${MASTER_PORT:-29961}" "$SCRIPT_DIR/r22_tr.py" --scenario slurm_train \
  --out "$OUT_DIR"
echo "[$(date '+%F %T')] training finished, packing artifacts"
ARCHIVE="$OUT_DIR/../${RUN_NAME}-shard${SLURM_ARRAY_TASK_ID}.tar"
tar cf "$ARCHIVE" -C "$OUT_DIR" .
echo "[$(date '+%F %T')] uploaded $ARCHIVE"
"""


def make_lora():
    import json

    import torch
    from safetensors.torch import save_file

    torch.manual_seed(0)
    os.makedirs(LORA_DIR, exist_ok=True)
    r, hidden = 32, 2048
    w = {}
    for i in range(8):
        for m in ("q_proj", "v_proj"):
            pre = f"base_model.model.model.layers.{i}.self_attn.{m}"
            w[f"{pre}.lora_A.weight"] = (torch.randn(r, hidden) * 0.01).to(torch.bfloat16)
            w[f"{pre}.lora_B.weight"] = (torch.randn(hidden, r) * 0.01).to(torch.bfloat16)
    save_file(w, f"{LORA_DIR}/adapter_model.safetensors")
    cfg = {
        "base_model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.05,
        "target_modules": ["q_proj", "v_proj"],
        "bias": "none",
        "inference_mode": True,
    }
    with open(f"{LORA_DIR}/adapter_config.json", "w") as f:
        json.dump(cfg, f, indent=2)


def make_shards():
    import json

    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    os.makedirs(SHARDS_DIR, exist_ok=True)
    index = {}
    for s in range(4):
        name = f"model-{s + 1:05d}-of-00004.safetensors"
        w = {}
        for i in range(s * 6, s * 6 + 6):
            w[f"model.layers.{i}.mlp.gate_up_proj.weight"] = torch.randn(
                4096, 2048, generator=g
            ).to(torch.bfloat16)
            index[f"model.layers.{i}.mlp.gate_up_proj.weight"] = name
        save_file(w, f"{SHARDS_DIR}/{name}")
    with open(f"{SHARDS_DIR}/model.safetensors.index.json", "w") as f:
        json.dump(
            {"metadata": {"total_size": 24 * 4096 * 2048 * 2}, "weight_map": index}, f, indent=2
        )


def make_hf_out():
    import numpy as np
    import torch

    os.makedirs(HF_OUT, exist_ok=True)
    rng = np.random.default_rng(0)
    torch.save(
        {
            "epoch": 1,
            "global_step": 250,
            "best_metric": np.float64(0.8712),
            "best_model_checkpoint": HF_OUT,
            "numpy_rng": rng.bit_generator.state,
            "python_rng": None,
        },
        f"{HF_OUT}/training_state.pt",
    )


def make_sbatch():
    os.makedirs(os.path.dirname(SBATCH), exist_ok=True)
    with open(SBATCH, "w") as f:
        f.write(SBATCH_TEXT.replace("@ROOT@", ROOT))


if __name__ == "__main__":
    if "--prep" in sys.argv:
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_sbatch, make_lora, make_hf_out, make_shards):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
