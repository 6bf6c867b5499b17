# sglang-shaped launcher (TokenizerManager in the main process) + Scheduler and DetokenizerManager children for
# round 25, one real fault per --scenario:
# detok_negative: the server serves; the scheduler pads the finished slots of a decode batch with -1 on the GPU
#   (torch.where) and, after an aborted request, sends those padded ids on; the DetokenizerManager child decodes
#   them with the (real, HF `tokenizers`) tokenizer, which cannot convert a negative id: the detokenizer dies,
#   signals its parent, and the launcher kills the tree ("Received sigquit from a child process");
# fp8_fnuz: the checkpoint was quantized on MI300 (float8_e4m3fnuz weights); the scheduler's warm-up runs the
#   Triton block-dequant GEMM on them: Triton cannot compile that fp8 type for this NVIDIA GPU;
# shard_trunc: --tp 2 (two scheduler processes on the one GPU, both load every shard); the second safetensors
#   shard was cut short by an interrupted copy: both ranks fail while loading it.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import faulthandler
import logging
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r25_common import SHARDED, Decoder, sglang_logger  # noqa: E402

MODELS = {"detok_negative": "/models/Qwen2.5-7B-Instruct", "fp8_fnuz": "/models/Qwen3-30B-A3B-FP8-mi300",
          "shard_trunc": SHARDED}


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def build_tokenizer():
    """a word-level tokenizer (HF tokenizers) standing in for the model's"""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    words = ["<unk>", "<|im_start|>", "<|im_end|>"] + [f"w{i}" for i in range(32000 - 3)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    return tok


# ---------------------------------------------------------------- detokenizer (own process)
def run_detokenizer(in_q, out_q, parent_pid):
    lg = sglang_logger()
    tok = build_tokenizer()
    try:
        while True:
            msg = in_q.get()
            if msg is None:
                return
            rids, ids = msg
            texts = [tok.decode(row, skip_special_tokens=True) for row in ids]
            out_q.put((rids, [len(t) for t in texts]))
    except Exception:
        lg.error(f"DetokenizerManager hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)


# ---------------------------------------------------------------- fp8 dequant GEMM (Triton)
def w8a16_block_gemm(x, w_q, w_scale):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _w8a16_kernel(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(w_ptr + rn[None, :] * K + (k + rk)[:, None], mask=rn[None, :] < N, other=0.0)
            s = tl.load(s_ptr + pid_n)
            acc += tl.dot(a, (b.to(tl.float32) * s).to(tl.bfloat16))
        tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    M, K = x.shape
    N = w_q.shape[0]
    y = torch.empty(M, N, device=x.device, dtype=torch.bfloat16)
    _w8a16_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 128))](x, w_q, w_scale, y, M, N, K, BM=64, BN=128, BK=64)
    return y


# ---------------------------------------------------------------- scheduler (own process)
def run_scheduler(sc, tp, writer, in_q, detok_q, parent_pid):
    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(tp)
    try:
        import torch

        torch.cuda.set_device(0)
        lg.info("Init torch distributed begin.")
        torch.zeros(1, device="cuda")
        lg.info(f"Init torch distributed ends. mem usage={0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        if sc == "shard_trunc":
            load_shards(lg)
        dec = Decoder(vocab=32000, layers=4)
        if sc == "fp8_fnuz":
            lg.info("Using Triton w8a16 block FP8 GEMM for the MoE and linear layers (weight_block_size=[128, 128])")
            g = torch.Generator(device="cuda").manual_seed(0)
            w = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16, generator=g) * 0.02
            scale = torch.full((32,), float(w.abs().max()) / 240.0, device="cuda", dtype=torch.float32)
            w_q = (w / scale[0]).to(torch.float8_e4m3fnuz)  # the checkpoint's dtype (quantized for MI300)
        lg.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
        kv = torch.empty(1 << 30, dtype=torch.bfloat16, device="cuda")  # noqa: F841
        lg.info("KV Cache is allocated. #tokens: 262144, K size: 1.00 GB, V size: 1.00 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        if sc == "fp8_fnuz":
            x = torch.randn(16, 2048, device="cuda", dtype=torch.bfloat16)
            w8a16_block_gemm(x, w_q, scale)
            torch.cuda.synchronize()
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 3.21 s. mem usage=0.41 GB. avail mem={avail_gb():.2f} GB.")
        lg.info("max_total_num_tokens=262144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=32768")
        writer.send({"status": "ready", "max_total_num_tokens": 262144})
        serve_loop(lg, dec, in_q, detok_q)
    except Exception:
        lg.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)
        time.sleep(5)


def load_shards(lg):
    import json

    import torch
    from safetensors import safe_open
    from tqdm import tqdm

    with open(f"{SHARDED}/model.safetensors.index.json") as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    w = {}
    for fn in tqdm(files, desc="Loading safetensors checkpoint shards", bar_format="{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"):
        with safe_open(f"{SHARDED}/{fn}", framework="pt", device="cuda:0") as f:
            for k in f.keys():
                w[k] = f.get_tensor(k)
        time.sleep(0.5)
    torch.cuda.synchronize()
    return w


def serve_loop(lg, dec, in_q, detok_q):
    import torch

    n_batches, t_last, toks = 0, time.time(), 0
    while True:
        msg = in_q.get()
        if msg is None:
            return
        rids, aborted = msg
        bs = len(rids)
        g = torch.Generator(device="cuda").manual_seed(n_batches)
        logits = torch.randn(bs, 16, 32000, device="cuda", generator=g)
        nxt = logits.argmax(-1)  # 16 decode steps of the batch
        dec.forward(256, seed=n_batches)
        finished = torch.zeros(bs, 16, dtype=torch.bool, device="cuda")
        for i in aborted:
            finished[i, 4:] = True  # the aborted request's slots after its abort
        ids = torch.where(finished, torch.full_like(nxt, -1), nxt)
        detok_q.put((rids, ids.tolist()))
        n_batches += 1
        toks += bs * 16
        if time.time() - t_last > 2.0:
            lg.info(f"Decode batch. #running-req: {bs}, #token: {bs * 700 + n_batches % 97}, token usage: 0.01, cuda graph: True, gen throughput (token/s): {toks / (time.time() - t_last):.2f}, #queue-req: 0")
            t_last, toks = time.time(), 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--tp", type=int, default=1)
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    q = "'w8a16_fp8'" if sc == "fp8_fnuz" else "None"
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
        f"skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, dtype='auto', quantization={q}, "
        f"device='cuda', served_model_name='{model}', host='0.0.0.0', port={args.port}, mem_fraction_static=0.85, "
        f"tp_size={args.tp}, stream_interval=1, random_seed=28311, log_level='info', detokenizer_port=None)")

    procs = []

    def on_sigquit(signum, frame):
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, on_sigquit)
    in_q, detok_in, detok_out = mp.Queue(), mp.Queue(), mp.Queue()
    readers = []
    for tp in range(args.tp):
        reader, writer = mp.Pipe(duplex=False)
        p = mp.Process(target=run_scheduler, args=(sc, tp, writer, in_q, detok_in, os.getpid()))
        p.start()
        writer.close()
        procs.append(p)
        readers.append(reader)
    d = mp.Process(target=run_detokenizer, args=(detok_in, detok_out, os.getpid()))
    d.start()
    procs.append(d)
    for r in readers:
        try:
            data = r.recv()
        except EOFError:
            time.sleep(3)
            logger.error("Rank 0 scheduler is dead. Please check if there are relevant logs.")
            raise
        if data["status"] != "ready":
            raise RuntimeError("Initialization failed. Please see the error messages above.")
    logging.getLogger("uvicorn").handlers[:] = []
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)", flush=True)
    print(f'INFO:     127.0.0.1:45118 - "GET /get_model_info HTTP/1.1" 200 OK', flush=True)
    logger.info("The server is fired up and ready to roll!")
    port = 38010
    t0 = time.time()
    for b in range(1, 100000):
        rids = [f"{b:04x}{i:02x}c1e9" for i in range(4)]
        aborted = [2] if time.time() - t0 > 6 else []
        if aborted:
            logger.info(f"Abort request {rids[2]}: client disconnected")
        in_q.put((rids, aborted))
        detok_out.get(timeout=60)
        for i in range(4):
            port += 1
            print(f'INFO:     10.0.12.4:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.3)


if __name__ == "__main__":
    main()
