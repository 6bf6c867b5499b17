# sglang-shaped launcher (TokenizerManager in the main process) + Scheduler child(ren) for round 27:
# unknown_arch: the scheduler (TP0) builds its ModelConfig with transformers' AutoConfig: the checkpoint's
#   model_type is newer than this transformers; the scheduler's traceback, then the launcher's sigquit line;
# tp4_shards: --load-format sharded_state with --tp 2 over a checkpoint saved with TP=4 (r27_common.py --prep
#   writes it): both scheduler ranks (interleaved) fail copying a TP=4 slice into a TP=2 parameter;
# stop_regex: a healthy server serving /generate and /v1/completions; two requests carry a stop regex with a
#   variable-width look-behind: re.compile fails, the request is answered 400 and the server serves on until the
#   operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import faulthandler
import multiprocessing as mp
import os
import random
import re
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r27_common import SH, SHARDED, UNKNOWN_MODEL, Decoder, sglang_logger  # noqa: E402

MODELS = {"unknown_arch": UNKNOWN_MODEL, "tp4_shards": SHARDED, "stop_regex": "/models/Qwen2.5-7B-Instruct"}


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def load_sharded(model, tp, tp_size):
    import torch
    from safetensors.torch import load_file

    d, inter, vocab = SH["hidden"], SH["inter"], SH["vocab"]
    kw = dict(device="cuda", dtype=torch.bfloat16)
    params = {"model.embed_tokens.weight": torch.empty(vocab // tp_size, d, **kw)}
    for i in range(SH["layers"]):
        params[f"model.layers.{i}.mlp.gate_up_proj.weight"] = torch.empty(2 * inter // tp_size, d, **kw)
        params[f"model.layers.{i}.mlp.down_proj.weight"] = torch.empty(d, inter // tp_size, **kw)
    state = load_file(f"{model}/model-rank-{tp}-part-0.safetensors", device="cuda")
    for name, t in state.items():
        params[name].copy_(t)
    return params


def run_scheduler(sc, model, tp, tp_size, writer, in_q, parent_pid):
    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(tp if tp_size > 1 else 0)
    try:
        import torch

        torch.cuda.set_device(0)
        if sc == "unknown_arch":
            from transformers import AutoConfig

            AutoConfig.from_pretrained(model, trust_remote_code=False, revision=None)
        lg.info("Init torch distributed begin.")
        torch.zeros(1, device="cuda")
        lg.info(f"Init torch distributed ends. mem usage={0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        if sc == "tp4_shards":
            time.sleep(0.2 * tp)
            load_sharded(model, tp, tp_size)
        dec = Decoder(vocab=32000, layers=4, tp=tp_size)
        lg.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
        lg.info("KV Cache is allocated. #tokens: 1290304, K size: 34.45 GB, V size: 34.45 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 5.11 s. mem usage=0.61 GB. avail mem={avail_gb():.2f} GB.")
        lg.info("max_total_num_tokens=1290304, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, available_gpu_mem=7.84 GB")
        writer.send({"status": "ready"})
        t_last, toks, fwd = time.time(), 0, 0
        while True:
            bs, n = in_q[tp].get()
            if n > 1:
                lg.info(f"Prefill batch. #new-seq: {bs}, #new-token: {n}, #cached-token: {n // 3}, token usage: 0.00, #running-req: {bs}, #queue-req: 0")
            dec.forward(max(n, 64), seed=fwd)
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
    ap.add_argument("--tp", type=int, default=1)
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    lf = "sharded_state" if sc == "tp4_shards" else "auto"
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', load_format='{lf}', "
        f"trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', device='cuda', served_model_name='{model}', host='0.0.0.0', port={args.port}, "
        f"mem_fraction_static=0.88, tp_size={args.tp}, stream_interval=1, random_seed=91114, watchdog_timeout=300, "
        f"log_level='info', enable_metrics=False)")
    procs = []

    def on_sigquit(signum, frame):
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, on_sigquit)
    in_q = [mp.Queue() for _ in range(args.tp)]
    readers = []
    for tp in range(args.tp):
        reader, writer = mp.Pipe(duplex=False)
        p = mp.Process(target=run_scheduler, args=(sc, model, tp, args.tp, writer, in_q, os.getpid()), daemon=True)
        p.start()
        writer.close()
        procs.append(p)
        readers.append(reader)
    for r in readers:
        r.recv()
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)", flush=True)
    print('INFO:     127.0.0.1:38712 - "GET /get_model_info HTTP/1.1" 200 OK', flush=True)
    for q in in_q:
        q.put((1, 6))
    print('INFO:     127.0.0.1:38720 - "POST /generate HTTP/1.1" 200 OK', flush=True)
    logger.info("The server is fired up and ready to roll!")

    def on_term(signum, frame):
        print("INFO:     Shutting down", flush=True)
        print("INFO:     Waiting for application shutdown.", flush=True)
        print("INFO:     Application shutdown complete.", flush=True)
        print(f"INFO:     Finished server process [{os.getpid()}]", flush=True)
        for p in procs:
            p.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    rng = random.Random(7)
    port = 50310
    for i in range(1, 100000):
        port += 1
        stop = [r"\n\n", r"</answer>"]
        if i in (17, 33):
            stop = [r"(?<=\d+)\s*$", r"</answer>"]  # a client's "stop after the final number" pattern
        try:
            for s in stop:
                re.compile(s)
        except re.error:
            logger.error(f"Error in request: {traceback.format_exc()}")
            print(f'INFO:     10.0.3.9:{port} - "POST /v1/completions HTTP/1.1" 400 Bad Request', flush=True)
            continue
        bs = rng.randint(1, 8)
        for q in in_q:
            q.put((bs, rng.randint(300, 1500)))
        print(f'INFO:     10.0.3.9:{port} - "POST /v1/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
