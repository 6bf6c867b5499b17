# sglang-shaped launcher + scheduler for round 28, one real fault per --scenario:
# topk_range: the server serves; a request's sampling params carry top_k=200000 (a client's "no limit"), larger than
#   the vocabulary: the sampler's torch.topk fails on the GPU in the scheduler; scheduler traceback, then sigquit;
# triton_silu: the scheduler's fused SiLU-and-mul Triton kernel calls tl.sigmoid on bf16 values loaded without an
#   upcast: Triton refuses the dtype while compiling during CUDA-graph capture; scheduler traceback, then sigquit.
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import faulthandler
import multiprocessing as mp
import os
import random
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r18_common import Decoder, sglang_logger

MODELS = {"topk_range": "/models/Llama-3.2-3B-Instruct", "triton_silu": "/models/Qwen2.5-14B-Instruct"}


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def build_silu():
    import triton
    import triton.language as tl

    @triton.jit
    def silu_and_mul_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < d
        gate = tl.load(x_ptr + row * 2 * d + offs, mask=mask)
        up = tl.load(x_ptr + row * 2 * d + d + offs, mask=mask)
        out = gate * tl.sigmoid(gate) * up
        tl.store(out_ptr + row * d + offs, out, mask=mask)

    def silu_and_mul(x):
        import torch

        n, d2 = x.shape
        d = d2 // 2
        out = torch.empty(n, d, dtype=x.dtype, device=x.device)
        silu_and_mul_kernel[(n,)](x, out, d, BLOCK=triton.next_power_of_2(d))
        return out

    return silu_and_mul


def run_scheduler(sc, model, writer, in_q, parent_pid):
    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(0)
    try:
        import torch

        torch.cuda.set_device(0)
        lg.info("Init torch distributed begin.")
        torch.zeros(1, device="cuda")
        lg.info(f"Init torch distributed ends. mem usage={0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        vocab = 128256 if sc == "topk_range" else 152064
        dec = Decoder(vocab=vocab, layers=4)
        arch = "LlamaForCausalLM" if sc == "topk_range" else "Qwen2ForCausalLM"
        lg.info(f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
        lg.info("KV Cache is allocated. #tokens: 911424, K size: 31.29 GB, V size: 31.29 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        if sc == "triton_silu":
            silu = build_silu()
            for bs in (1, 2, 4, 8, 16, 24, 32):
                x = torch.randn(bs, 2 * 13824, device="cuda", dtype=torch.bfloat16)
                silu(x)
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 4.87 s. mem usage=0.55 GB. avail mem={avail_gb():.2f} GB.")
        lg.info("max_total_num_tokens=911424, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=8.12 GB")
        writer.send({"status": "ready"})
        t_last, toks, fwd = time.time(), 0, 0
        while True:
            bs, n, top_k = in_q.get()
            if n > 1:
                lg.info(f"Prefill batch. #new-seq: {bs}, #new-token: {n}, #cached-token: {n // 3}, token usage: 0.00, #running-req: {bs}, #queue-req: 0")
            dec.forward(max(n, 64), seed=fwd)
            logits = torch.randn(bs, vocab, device="cuda", dtype=torch.float32)
            vals, idx = torch.topk(logits, k=top_k, dim=-1)  # top-k sampling renorm
            probs = torch.softmax(vals, -1)
            _ = idx.gather(-1, torch.multinomial(probs, 1))
            fwd += 1
            toks += bs * 32
            if time.time() - t_last > 2.0:
                lg.info(f"Decode batch. #running-req: {bs}, #token: {bs * 517 + fwd % 97}, token usage: 0.00, cuda graph: True, gen throughput (token/s): {toks / (time.time() - t_last):.2f}, #queue-req: 0")
                t_last, toks = time.time(), 0
    except Exception:
        lg.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)
        time.sleep(5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', load_format='auto', "
        f"trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', device='cuda', served_model_name='{model}', host='0.0.0.0', port={args.port}, "
        f"mem_fraction_static=0.85, tp_size=1, stream_interval=1, random_seed=3171, watchdog_timeout=300, "
        f"sampling_backend='pytorch', log_level='info', enable_metrics=False)")
    procs = []

    def on_sigquit(signum, frame):
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, on_sigquit)
    in_q = mp.Queue()
    reader, writer = mp.Pipe(duplex=False)
    p = mp.Process(target=run_scheduler, args=(sc, model, writer, in_q, os.getpid()), daemon=True)
    p.start()
    writer.close()
    procs.append(p)
    reader.recv()
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)", flush=True)
    print('INFO:     127.0.0.1:52214 - "GET /get_model_info HTTP/1.1" 200 OK', flush=True)
    in_q.put((1, 6, 1))
    print('INFO:     127.0.0.1:52220 - "POST /generate HTTP/1.1" 200 OK', flush=True)
    logger.info("The server is fired up and ready to roll!")
    rng = random.Random(2)
    port = 41720
    for i in range(1, 100000):
        port += 1
        top_k = 200000 if i == 27 else rng.choice([20, 40, 50])
        bs = rng.randint(1, 8)
        in_q.put((bs, rng.randint(300, 1500), top_k))
        if top_k > 1000:  # a streaming request: no access line until it finishes
            time.sleep(0.2)
            continue
        print(f'INFO:     10.0.5.12:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
