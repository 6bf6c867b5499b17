# sglang-shaped launcher (TokenizerManager in the main process) + Scheduler child(ren) for round 26:
# port_in_use: the scheduler comes up, then the HTTP server cannot bind its port: another process (started by
#   r26_run.sh before the launcher) already listens on it;
# watchdog: --tp 2 (two scheduler ranks on the one GPU, their lines interleaved); rank 1's custom all-reduce
#   handshake kernel spins on the GPU waiting for a peer flag that never comes; its forward never returns; the
#   scheduler's watchdog thread fires after 12 s, dumps the threads and sends SIGQUIT to the launcher;
# healthy_warn: a healthy start with real warnings (a deprecated API, a TypedStorage warning, a NCCL env var that
#   this build ignores), serving requests until the operator's SIGTERM (no crash).
# ruff: noqa: E501  (log lines kept as servers print them)
import argparse
import faulthandler
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r25_common import Decoder, sglang_logger  # noqa: E402
from r18_common import spin_until_peers  # noqa: E402

MODELS = {"port_in_use": "/models/Qwen3-8B", "watchdog": "/models/Llama-3.1-8B-Instruct", "healthy_warn": "/models/Qwen2.5-7B-Instruct"}


def avail_gb():
    import torch

    return torch.cuda.mem_get_info()[0] / 2**30


def run_scheduler(sc, tp, tp_size, writer, in_q, parent_pid):
    faulthandler.enable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lg = sglang_logger(tp if tp_size > 1 else 0)
    try:
        import torch
        import warnings

        torch.cuda.set_device(0)
        lg.info("Init torch distributed begin.")
        torch.zeros(1, device="cuda")
        if sc == "healthy_warn":
            warnings.simplefilter("default")
            x = torch.zeros(4, device="cuda")
            torch.tensor(x)  # copy-constructing (real UserWarning)
            torch.cuda.amp.autocast(dtype=torch.bfloat16)  # deprecated (real FutureWarning)
            torch.FloatTensor(4).storage()  # TypedStorage deprecation (real UserWarning)
        lg.info(f"Init torch distributed ends. mem usage={0.0:.2f} GB")
        if sc == "healthy_warn" and tp == 0:
            lg.warning("Disable cuda graph for the custom all-reduce is not supported on this topology: NVLink not detected.")
        lg.info(f"Load weight begin. avail mem={avail_gb():.2f} GB")
        time.sleep(0.3 * tp)
        dec = Decoder(vocab=32000, layers=4, tp=tp_size)
        lg.info(f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={avail_gb():.2f} GB, mem usage={dec.gib():.2f} GB.")
        lg.info("KV Cache is allocated. #tokens: 422144, K size: 1.61 GB, V size: 1.61 GB")
        lg.info(f"Memory pool end. avail mem={avail_gb():.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gb():.2f} GB")
        dec.forward(64)
        lg.info(f"Capture cuda graph end. Time elapsed: 4.02 s. mem usage=0.52 GB. avail mem={avail_gb():.2f} GB.")
        lg.info("max_total_num_tokens=422144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960")
        writer.send({"status": "ready"})
        state = {"t": time.time(), "fwd": 0}
        if sc == "watchdog":
            def watchdog():
                while True:
                    time.sleep(1)
                    if time.time() - state["t"] > 12:
                        lg.error("Scheduler watchdog timeout (self.watchdog_timeout=12, self.soft=False)")
                        sys.stdout.flush()
                        faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
                        sys.stdout.flush()
                        time.sleep(1)
                        os.kill(parent_pid, signal.SIGQUIT)
                        return
            threading.Thread(target=watchdog, daemon=True).start()
        t_last, toks = time.time(), 0
        while True:
            bs = in_q[tp].get()
            state["t"] = time.time()
            dec.forward(256, seed=state["fwd"])
            state["fwd"] += 1
            if sc == "watchdog" and state["fwd"] >= 40:
                custom_all_reduce(tp)
            toks += bs * 16
            if time.time() - t_last > 2.0:
                lg.info(f"Decode batch. #running-req: {bs}, #token: {bs * 611 + state['fwd'] % 89}, token usage: 0.01, cuda graph: True, gen throughput (token/s): {toks / (time.time() - t_last):.2f}, #queue-req: 0")
                t_last, toks = time.time(), 0
    except Exception:
        lg.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        os.kill(parent_pid, signal.SIGQUIT)
        time.sleep(5)


def custom_all_reduce(tp):
    if tp == 1:  # this rank's peer-flag handshake: the peers' arrivals never reach its flag
        spin_until_peers(2)


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
    logger.info(
        f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', load_format='auto', "
        f"trust_remote_code=False, dtype='auto', device='cuda', served_model_name='{model}', host='0.0.0.0', port={args.port}, "
        f"mem_fraction_static=0.85, tp_size={args.tp}, stream_interval=1, random_seed=51207, watchdog_timeout=12, "
        f"log_level='info', enable_custom_all_reduce={sc == 'watchdog'})")
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
        p = mp.Process(target=run_scheduler, args=(sc, tp, args.tp, writer, in_q, os.getpid()), daemon=True)
        p.start()
        writer.close()
        procs.append(p)
        readers.append(reader)
    for r in readers:
        r.recv()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("0.0.0.0", args.port))
    srv.listen(64)
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    print(f"INFO:     Uvicorn running on http://0.0.0.0:{args.port} (Press CTRL+C to quit)", flush=True)
    print('INFO:     127.0.0.1:45210 - "GET /get_model_info HTTP/1.1" 200 OK', flush=True)
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
    port = 41022
    for b in range(1, 100000):
        for q in in_q:
            q.put(4)
        for i in range(4):
            port += 1
            print(f'INFO:     10.0.7.21:{port} - "POST /generate HTTP/1.1" 200 OK', flush=True)
        time.sleep(0.25)


if __name__ == "__main__":
    main()
