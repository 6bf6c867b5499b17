# Round 15: shared helpers (loggers come from shapes_common) and the prep step that builds the files the
# scenarios load: a 4-shard safetensors checkpoint whose third shard was cut short by an interrupted copy.
# `python3 r15_common.py --prep` (run once by r15_run.sh before the scenarios).
# `python3 r15_common.py --hold-port PORT SECONDS` keeps a listening socket open (a stale server).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shapes_common import add_prefix, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r15_models"
CKPT = f"{ROOT}/Qwen2.5-14B-Instruct"
N_SHARDS = 4
HIDDEN, INTER, LAYERS = 1024, 2816, 8


def shard_names():
    return [f"model-{i:05d}-of-{N_SHARDS:05d}.safetensors" for i in range(1, N_SHARDS + 1)]


def make_ckpt():
    import json

    import torch
    from safetensors.torch import save_file
    os.makedirs(CKPT, exist_ok=True)
    per = LAYERS // N_SHARDS
    index = {"metadata": {"total_size": 0}, "weight_map": {}}
    for s, name in enumerate(shard_names()):
        t = {}
        for i in range(s * per, (s + 1) * per):
            p = f"model.layers.{i}"
            t[f"{p}.self_attn.qkv_proj.weight"] = torch.randn(3 * HIDDEN, HIDDEN, dtype=torch.bfloat16) * 0.02
            t[f"{p}.self_attn.o_proj.weight"] = torch.randn(HIDDEN, HIDDEN, dtype=torch.bfloat16) * 0.02
            t[f"{p}.mlp.gate_up_proj.weight"] = torch.randn(2 * INTER, HIDDEN, dtype=torch.bfloat16) * 0.02
            t[f"{p}.mlp.down_proj.weight"] = torch.randn(HIDDEN, INTER, dtype=torch.bfloat16) * 0.02
        for k, v in t.items():
            index["weight_map"][k] = name
            index["metadata"]["total_size"] += v.numel() * 2
        save_file(t, f"{CKPT}/{name}", metadata={"format": "pt"})
    with open(f"{CKPT}/model.safetensors.index.json", "w") as f:
        json.dump(index, f, indent=2)
    with open(f"{CKPT}/config.json", "w") as f:
        json.dump({"architectures": ["Qwen2ForCausalLM"], "hidden_size": HIDDEN, "intermediate_size": INTER,
                   "num_hidden_layers": LAYERS, "torch_dtype": "bfloat16", "vocab_size": 152064}, f, indent=2)
    # the copy of shard 3 was interrupted (rsync killed): only the first 40 % of the file arrived
    fn = f"{CKPT}/{shard_names()[2]}"
    data = open(fn, "rb").read()
    with open(fn, "wb") as f:
        f.write(data[: int(len(data) * 0.4)])


def hold_port(port, seconds):
    import socket
    import time
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    time.sleep(seconds)


if __name__ == "__main__":
    if "--prep" in sys.argv:
        make_ckpt()
        print("prep done")
    elif "--hold-port" in sys.argv:
        i = sys.argv.index("--hold-port")
        hold_port(int(sys.argv[i + 1]), float(sys.argv[i + 2]))
