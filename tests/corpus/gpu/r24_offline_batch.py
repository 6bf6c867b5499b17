# The user's offline batch script of round 24 (run as `python3 r24_offline_batch.py`): it has no
# `if __name__ == "__main__":` guard, and it touches CUDA before building the engine (see r24_vllm.py).
# ruff: noqa: E501
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_vllm import LLM, SamplingParams  # noqa: E402

MODEL = "/models/Qwen2.5-7B-Instruct"
print(f"GPU: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'}, torch {torch.__version__}")
prompts = [f"Summarize support ticket #{i} in one sentence." for i in range(2000)]
print(f"loaded {len(prompts)} prompts")

llm = LLM(model=MODEL, max_model_len=8192, gpu_memory_utilization=0.90, seed=0)
outputs = llm.generate(prompts, SamplingParams(temperature=0.2, top_p=0.9, max_tokens=256))
with open("summaries.jsonl", "w") as f:
    for o in outputs:
        f.write(json.dumps({"text": o}) + "\n")
