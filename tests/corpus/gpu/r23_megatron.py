# A Megatron-style pre-training run for round 23 (argument dump, dataset building, iteration lines), --scenario:
# blend_abort: the blended dataset is given three --data-path prefixes but four blend weights (a fourth corpus was
#   dropped from the paths, not from the weights). The blending index (C++, libblendprefetch.so from
#   r23_common.py, loaded with ctypes) is built from the weights; its prefetch thread reaches the first sample
#   mapped to the fourth dataset and throws std::out_of_range, which nothing catches: std::terminate aborts
#   the process while the main thread trains (r23_run.sh sets PYTHONFAULTHANDLER=1, as the job script does).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r23_common import DRY, PREFETCH

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
DEV = "cpu" if DRY else "cuda"

ARGS = {
    "num_layers": 12, "hidden_size": 768, "num_attention_heads": 12, "seq_length": 1024,
    "micro_batch_size": 8, "global_batch_size": 64, "train_iters": 50000, "lr": 3e-4, "min_lr": 3e-5,
    "lr_warmup_iters": 2000, "bf16": True, "data_path": ["0.6", "/data/fineweb-edu/fineweb_edu_text_document",
                                                        "0.3", "/data/the-stack-v2/stack_py_text_document",
                                                        "0.095", "/data/openwebmath/owm_text_document",
                                                        "0.005", "/data/arxiv/arxiv_text_document"],
    "split": "990,8,2", "tokenizer_type": "GPT2BPETokenizer", "log_interval": 1, "save_interval": 1000,
}


def main():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    print("using world size: 1, data-parallel size: 1, context-parallel size: 1, tensor-model-parallel size: 1, "
          "pipeline-model-parallel size: 1", flush=True)
    print("------------------------ arguments ------------------------")
    for k in sorted(ARGS):
        print(f"  {k} {'.' * (48 - len(k))} {ARGS[k]}")
    print("-------------------- end of arguments ---------------------", flush=True)
    print("> initialized tensor model parallel with size 1")
    print("> initialized pipeline model parallel with size 1")
    print("> setting random seeds to 1234 ...", flush=True)
    torch.manual_seed(1234)
    d = 768 if not DRY else 64
    layer = nn.TransformerEncoderLayer(d, 12 if not DRY else 4, 4 * d, batch_first=True, norm_first=True)
    model = nn.ModuleDict({"embed": nn.Embedding(50304, d), "body": nn.TransformerEncoder(layer, 12 if not DRY else 1),
                           "head": nn.Linear(d, 50304, bias=False)}).to(DEV)
    n = sum(p.numel() for p in model.parameters())
    print(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    print("> building train, validation, and test datasets ...")
    print(" > datasets target sizes (minimum size):")
    print(f"    train:      {50000 * 64}")
    print(f"    validation: {(50000 // 1000 + 1) * 10 * 64}")
    print(f"    test:       {10 * 64}", flush=True)
    paths = ARGS["data_path"][1::2][:3]  # the fourth corpus was removed from the node's data folder
    weights = [float(w) for w in ARGS["data_path"][0::2]]
    sizes = []
    for i, p in enumerate(paths):
        size = [8_914_233, 2_930_112, 1_077_408][i]
        sizes.append(size)
        print(f"    reading sizes...\n    reading pointers...\n    reading document indices...")
        print(f"  > dataset {p}: {size} documents", flush=True)
    print(f" > building blended dataset (weights={weights}, datasets={len(paths)})", flush=True)
    lib = ctypes.CDLL(PREFETCH)
    lib.blend_start.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    w_arr = (ctypes.c_double * len(weights))(*weights)
    s_arr = (ctypes.c_int64 * len(sizes))(*sizes)
    lib.blend_start(w_arr, len(weights), s_arr, len(sizes), 50000 * 64, 0)
    print(" > elapsed time for building blendable dataset indices: 0.21 (sec)")
    print("> finished creating GPT datasets ...", flush=True)
    print(f"[after dataloaders are built] datetime: {time.strftime('%Y-%m-%d %H:%M:%S')} ")
    print("done with setup ...")
    print("training ...", flush=True)
    t_last = time.time()
    bs, seq = (8, 1024) if not DRY else (2, 32)
    for it in range(1, 50001):
        ids = torch.randint(0, 50304, (bs, seq + 1), device=DEV)
        mask = nn.Transformer.generate_square_subsequent_mask(seq, device=DEV)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            h = model["body"](model["embed"](ids[:, :-1]), mask=mask, is_causal=True)
            logits = model["head"](h)
        loss = F.cross_entropy(logits.float().reshape(-1, 50304), ids[:, 1:].reshape(-1))
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        el = (time.time() - t_last) * 1000
        t_last = time.time()
        print(f" [{time.strftime('%Y-%m-%d %H:%M:%S')}] iteration {it:>8}/   50000 | consumed samples: {it * 64:>12} | "
              f"elapsed time per iteration (ms): {el:.1f} | learning rate: {3e-4 * min(1, it / 2000):.6E} | "
              f"global batch size: {64:>5} | lm loss: {loss.item():.6E} | loss scale: 1.0 | grad norm: {gn.item():.3f} | "
              f"number of skipped iterations:   0 | number of nan iterations:   0 |", flush=True)


if __name__ == "__main__":
    main()
