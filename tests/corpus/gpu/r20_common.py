# Round 20: shared helpers for the r20_* scenarios. Loggers and the small GPU decoder come from r18_common /
# shapes_common; this adds the prep step (`python3 r20_common.py --prep`, CPU only, run once by r20_run.sh) that
# writes the files some scenarios read:
# - a tiny Llama checkpoint folder whose model.safetensors is the HTML page a gated model hub answered with
#   (the download script saved the login page under the weights' name);
# - a tiny Llama causal-LM checkpoint (config with a pad token) that a classifier fine-tune starts from;
# - a torch.distributed.checkpoint (DCP) folder of a run whose vocabulary was 32000 rows;
# - a pre-tokenized corpus (int32 .npy, 2.4 GB) and a shard folder where one shard is a FIFO (a stalled network
#   mount: opening it blocks until a writer comes, which never happens);
# - a file where a JAX job expects its persistent compilation cache directory.
# SHAPES_DRY=1: no GPU (a local check of the process shapes).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import DRY, Decoder, add_prefix, sglang_logger, ts, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r20_files"
HTML_CKPT = f"{ROOT}/Llama-3.2-1B-Instruct"
SEQCLS_BASE = f"{ROOT}/tinyllama-v2-base"
DCP_CKPT = f"{ROOT}/pretrain-run-0412/step_12000"
CORPUS = f"{ROOT}/corpus/fineweb-edu-sample.tokens.npy"
SHARDS = f"{ROOT}/shards"
JAX_CACHE = f"{ROOT}/jax_cache"

HTML = """<!DOCTYPE html>
<html class="" lang="en">
<head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0, user-scalable=no" />
    <title>Access to model meta-llama/Llama-3.2-1B-Instruct is restricted</title>
    <link rel="stylesheet" href="/front/build/kube-1d2f3/style.css" />
</head>
<body>
  <main>
    <h1>Access to model meta-llama/Llama-3.2-1B-Instruct is restricted.</h1>
    <p>You must have access to it and be authenticated to access it. Please log in.</p>
  </main>
</body>
</html>
"""


def tiny_llama_config(**kw):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                       num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096,
                       rms_norm_eps=1e-5, tie_word_embeddings=False, **kw)


def make_html_ckpt():
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(0)
    m = LlamaForCausalLM(tiny_llama_config(bos_token_id=1, eos_token_id=2))
    m.save_pretrained(HTML_CKPT)
    with open(f"{HTML_CKPT}/model.safetensors", "w") as f:  # what `curl -L -o model.safetensors` got
        f.write(HTML)


def make_seqcls_base():
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(1)
    m = LlamaForCausalLM(tiny_llama_config(bos_token_id=1, eos_token_id=2, pad_token_id=0))
    m.save_pretrained(SEQCLS_BASE)


def build_model(vocab, d=512, layers=4):
    """The pretraining run's small decoder-only LM (embedding, pre-norm MLP blocks, untied head)."""
    import torch.nn as nn
    blocks = [nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
              for _ in range(layers)]
    return nn.ModuleDict({"embed": nn.Embedding(vocab, d), "blocks": nn.ModuleList(blocks),
                          "final_norm": nn.LayerNorm(d), "head": nn.Linear(d, vocab, bias=False)})


def make_dcp_ckpt():
    import torch
    import torch.distributed.checkpoint as dcp
    torch.manual_seed(0)
    m = build_model(vocab=32000)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
    state = {"model": m.state_dict(), "step": 12000}
    os.makedirs(DCP_CKPT, exist_ok=True)
    dcp.save(state, checkpoint_id=DCP_CKPT)
    del opt


def make_corpus():
    import numpy as np
    os.makedirs(os.path.dirname(CORPUS), exist_ok=True)
    n = 600_000_000
    arr = np.lib.format.open_memmap(CORPUS, mode="w+", dtype=np.int32, shape=(n,))
    step = 50_000_000
    rng = np.random.default_rng(0)
    block = rng.integers(0, 128256, size=step, dtype=np.int32)
    for i in range(0, n, step):
        arr[i:i + step] = block[: min(step, n - i)]
    arr.flush()
    del arr


def make_shards():
    import numpy as np
    os.makedirs(SHARDS, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(16):
        p = f"{SHARDS}/shard-{i:05d}.bin"
        if i == 7:
            if os.path.exists(p):
                os.remove(p)
            os.mkfifo(p)
        else:
            rng.integers(0, 32000, size=64 * 1024, dtype=np.int32).tofile(p)


def make_jax_cache_file():
    os.makedirs(ROOT, exist_ok=True)
    with open(JAX_CACHE, "w") as f:  # a stale file where the cache directory should be
        f.write("")


if __name__ == "__main__":
    if "--prep" in sys.argv:
        import time
        t0 = time.time()
        os.makedirs(ROOT, exist_ok=True)
        for fn in (make_html_ckpt, make_seqcls_base, make_dcp_ckpt, make_shards, make_jax_cache_file, make_corpus):
            try:
                fn()
                print(f"prep {fn.__name__} ok ({time.time() - t0:.1f} s)", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"prep {fn.__name__} FAILED: {type(e).__name__}: {e}", flush=True)
