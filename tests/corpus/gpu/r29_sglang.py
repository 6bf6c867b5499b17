# sglang-shaped launcher + scheduler for round 29, one real fault (or none) per --scenario:
# ipc_stale: an RL job colocates its trainer with the sglang server and pushes new weights as CUDA IPC handles
#   (update_weights_from_tensor). The first push works; the trainer process is then restarted by its supervisor, and
#   the controller re-sends the handles it cached from the old trainer process, which has exited: the scheduler's
#   cudaIpcOpenMemHandle fails on the GPU, scheduler traceback, then the launcher's sigquit;
# vlm_bomb: a vision-language server serves image chat requests; one client sends a 31000x29000 scan: PIL's
#   decompression-bomb check refuses it in the tokenizer manager, the request gets 400, serving goes on until the
#   operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import base64
import faulthandler
import io
import multiprocessing as mp
import os
import random
import signal
import struct
import sys
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from r18_common import Decoder, sglang_logger  # noqa: E402

MODELS = {"ipc_stale": "/models/Qwen2.5-7B-Instruct", "vlm_bomb": "/models/Qwen2.5-VL-7B-Instruct"}


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


# ---------------------------------------------------------------- ipc_stale: the trainer side
def trainer_main(gen, conn):
    """One trainer process generation: computes its new lm_head shard, exports CUDA IPC handles, waits for the ack."""
    import cupy as cp

    cp.cuda.Device(0).use()
    rs = cp.random.RandomState(gen)
    bufs = {"lm_head.weight": rs.standard_normal((8192, 3584), dtype=cp.float32) * 0.02,
            "model.norm.weight": cp.ones((3584,), dtype=cp.float32)}
    cp.cuda.Device(0).synchronize()
    payload = {k: (cp.cuda.runtime.ipcGetMemHandle(v.data.ptr), v.shape, str(v.dtype)) for k, v in bufs.items()}
    conn.send(payload)
    conn.recv()  # the engine's ack
    del bufs
    cp.get_default_memory_pool().free_all_blocks()


def open_ipc(payload):
    """The scheduler's update_weights_from_tensor: open each handle, copy into the live weights, close."""
    import cupy as cp
    import torch

    out = {}
    for name, (handle, shape, dtype) in payload.items():
        ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)
        n = 1
        for s in shape:
            n *= s
        mem = cp.cuda.UnownedMemory(ptr, n * 4, None)
        arr = cp.ndarray(shape, dtype=cp.float32, memptr=cp.cuda.MemoryPointer(mem, 0))
        out[name] = torch.as_tensor(arr, device="cuda").to(torch.bfloat16).clone()
        torch.cuda.synchronize()
        cp.cuda.runtime.ipcCloseMemHandle(ptr)
    return out


# ---------------------------------------------------------------- vlm_bomb: images
def png_bytes(w, h, fill=0):
    """A real grayscale PNG of w x h (the bomb's IDAT is the compressed all-zero rows)."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    raw = zlib.compress((b"\x00" + bytes([fill]) * w) * (h if h <= 4096 else 64), 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def load_image(b64):
    """The tokenizer manager's image loader (base64 data URL -> RGB PIL image)."""
    from PIL import Image

    img = Image.open(io.BytesIO(base64.b64decode(b64)))
    img.load()
    return img.convert("RGB")


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
        dec = Decoder(vocab=152064, layers=4)
        arch = "Qwen2ForCausalLM" if sc == "ipc_stale" else "Qwen2_5_VLForConditionalGeneration"
        if sc == "vlm_bomb":
            vis = torch.randn(1176, 1280, device="cuda", dtype=torch.bfloat16) * 0.02
        lg.info(f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
        lg.info("KV Cache is allocated. #tokens: 1083392, K size: 29.02 GB, V size: 29.02 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 5.12 s. mem usage=0.61 GB. avail mem={avail_gb():.2f} GB.")
        lg.info("max_total_num_tokens=1083392, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, available_gpu_mem=7.86 GB")
        writer.send({"status": "ready"})
        t_last, toks, fwd = time.time(), 0, 0
        while True:
            item = in_q.get()
            if item[0] == "update_weights":
                _, payload, version = item
                lg.info(f"Update weights begin. avail mem={avail_gb():.2f} GB")
                w = open_ipc(payload)
                lg.info(f"Update weights end. version={version}, #tensors={len(w)}, avail mem={avail_gb():.2f} GB")
                writer.send({"status": "updated"})
                continue
            _, bs, n, patches = item
            if patches:
                emb = torch.randn(patches, 1176, device="cuda", dtype=torch.bfloat16) @ vis
                n += emb.shape[0] // 4
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
    args = ap.parse_args()
    sc = args.scenario
    model = MODELS[sc]
    logger = sglang_logger()
    mp.set_start_method("spawn", force=True)
    extra = ", enable_memory_saver=True, weight_loader_disable_mmap=False" if sc == "ipc_stale" else ", chat_template='qwen2-vl', disable_fast_image_processor=False"
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', load_format='auto', "
        f"trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', device='cuda', served_model_name='{model}', host='0.0.0.0', port={args.port}, "
        f"mem_fraction_static=0.8, tp_size=1, stream_interval=1, random_seed=731, watchdog_timeout=300, "
        f"sampling_backend='flashinfer', log_level='info', enable_metrics=False{extra})")
    procs = []

    def on_sigquit(signum, frame):
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    def on_term(signum, frame):
        print("INFO:     Shutting down", flush=True)
        print("INFO:     Waiting for application shutdown.", flush=True)
        print("INFO:     Application shutdown complete.", flush=True)
        print(f"INFO:     Finished server process [{os.getpid()}]", flush=True)
        for p in procs:
            if p.is_alive():
                p.kill()
        os._exit(0)

    signal.signal(signal.SIGQUIT, on_sigquit)
    signal.signal(signal.SIGTERM, on_term)
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
    in_q.put(("gen", 1, 6, 0))
    print('INFO:     127.0.0.1:52220 - "POST /generate HTTP/1.1" 200 OK', flush=True)
    logger.info("The server is fired up and ready to roll!")
    if sc == "ipc_stale":
        serve_rl(logger, in_q, reader)
    else:
        serve_vlm(logger, in_q)


def serve_rl(logger, in_q, reader):
    rng = random.Random(4)
    port = 43100
    cached = None
    ctx = mp.get_context("spawn")
    for step in range(1, 100):
        for _ in range(rng.randint(6, 10)):  # rollouts of this step
            port += 1
            in_q.put(("gen", rng.randint(8, 32), rng.randint(300, 1200), 0))
            print(f'INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK', flush=True)
            time.sleep(0.15)
        if step == 1:
            a, b = ctx.Pipe()
            tr = ctx.Process(target=trainer_main, args=(step, b), name="trainer-gen1")
            tr.start()
            cached = a.recv()
            in_q.put(("update_weights", cached, step))
            reader.recv()
            a.send("ack")
            tr.join()
            port += 1
            print(f'INFO:     127.0.0.1:{port} - "POST /update_weights_from_tensor HTTP/1.1" 200 OK', flush=True)
            print("[rl-controller] trainer rank 0 (pid %d) exited with code 0 after step 1; restarting (1/3)" % tr.pid, flush=True)
        elif step == 2:
            port += 1
            in_q.put(("update_weights", cached, step))
            reader.recv()
            print(f'INFO:     127.0.0.1:{port} - "POST /update_weights_from_tensor HTTP/1.1" 200 OK', flush=True)


def serve_vlm(logger, in_q):
    rng = random.Random(9)
    port = 47300
    small = [base64.b64encode(png_bytes(rng.choice([448, 640, 896]), rng.choice([448, 672]), rng.randint(0, 255))).decode() for _ in range(4)]
    bomb = base64.b64encode(png_bytes(31000, 29000)).decode()
    for i in range(1, 100000):
        port += 1
        b64 = bomb if i == 23 else rng.choice(small)
        try:
            img = load_image(b64)
        except Exception as e:
            logger.error(f"Error in request: {e}\n{traceback.format_exc().rstrip()}")
            print(f'INFO:     10.8.1.77:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request', flush=True)
            time.sleep(0.2)
            continue
        patches = (img.size[0] // 28) * (img.size[1] // 28) * 4
        in_q.put(("gen", rng.randint(1, 6), rng.randint(80, 400), patches))
        print(f'INFO:     10.8.1.{rng.choice([41, 77, 90])}:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
