# Helpers of round 31 that shapes_common.py lacks: an sglang launcher that owns scheduler children and answers their
# SIGQUIT, a vLLM front end that starts an EngineCore child, and uvicorn's access-log line.
import multiprocessing as mp
import os
import queue
import signal
import sys
import time

from shapes_common import add_prefix, sglang_logger, uvicorn_log, vllm_logger

VLLM_VER = "0.13.0"


def access(port, method, path, code, reason):
    uvicorn_log(f'127.0.0.1:{port} - "{method} {path} HTTP/1.1" {code} {reason}')


# ---------------------------------------------------------------- sglang
class SglangLauncher:
    """The launcher process: spawns one scheduler child (TP0), waits for READY, kills the tree on SIGQUIT."""

    def __init__(self, model, port, extra=""):
        self.log = sglang_logger()
        self.procs = []
        self.log.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                      f"host='127.0.0.1', port={port}, mem_fraction_static=0.871, max_running_requests=None, "
                      f"chunked_prefill_size=8192, tp_size=1, stream_interval=1, random_seed=1234, "
                      f"log_level='info', attention_backend='fa3', sampling_backend='flashinfer'{extra})")
        signal.signal(signal.SIGQUIT, self._on_sigquit)

    def _on_sigquit(self, signum, frame):
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        self.log.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        time.sleep(1.0)
        for p in self.procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    def start(self, target, *args):
        ctx = mp.get_context("spawn")
        self.in_q, self.out_q = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=target, args=(os.getpid(), self.in_q, self.out_q) + args, name="sglang::scheduler")
        p.start()
        self.procs.append(p)
        while True:
            try:
                msg = self.out_q.get(timeout=1.0)
                if msg == "READY":
                    return
            except queue.Empty:
                if not p.is_alive():
                    raise RuntimeError("Initialization failed. Please see the error messages above.")

    def fired_up(self, port):
        uvicorn_log(f"Started server process [{os.getpid()}]")
        uvicorn_log("Waiting for application startup.")
        uvicorn_log("Application startup complete.")
        uvicorn_log(f"Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)")
        access(port - 1000, "GET", "/get_model_info", 200, "OK")
        access(port - 999, "POST", "/generate", 200, "OK")
        self.log.info("The server is fired up and ready to roll!")


# ---------------------------------------------------------------- vLLM
def vllm_engine_child(build, in_q, out_q, serve):
    """EngineCore process body: build() makes the engine (may raise), serve(engine, item) answers requests."""
    add_prefix(f"(EngineCore_DP0 pid={os.getpid()}) ")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = vllm_logger("core.py")
    log.info("Waiting for init message from front-end.")
    try:
        eng = build()
    except Exception:
        log.exception("EngineCore failed to start.")
        out_q.put("FAILED")
        time.sleep(0.3)
        sys.exit(1)
    out_q.put("READY")
    while True:
        item = in_q.get()
        if item is None:
            os._exit(0)
        out_q.put(serve(eng, item))


def vllm_start_engine(target, *args):
    ctx = mp.get_context("spawn")
    in_q, out_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=target, args=(in_q, out_q) + args, name="EngineCore_DP0")
    p.start()
    vllm_logger("utils.py").info("Waiting for 1 local, 0 remote core engine proc(s) to start.")
    status = None
    while status is None:
        try:
            status = out_q.get(timeout=1.0)
        except queue.Empty:
            if not p.is_alive():
                break
    if status != "READY":
        p.join(timeout=5)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    return p, in_q, out_q
