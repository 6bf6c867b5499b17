# sglang-shaped launcher + TP scheduler children meeting real GPU/host faults (round 11):
# nan: fp16 logits over a near-zero temperature overflow, multinomial refuses the NaN probabilities;
# watchdog: a decode kernel that never ends (a spinning kernel), the scheduler's watchdog fires, SIGQUIT;
# mxfp8: an MX-format fp8 GEMM (e8m0 block scales) at weight load on a Hopper card;
# port: the HTTP front end's port is taken (a real asyncio bind error);
# ctrlc: healthy, serving, then the operator's Ctrl-C (SIGINT to the whole process group).
import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes_common import sglang_logger, uvicorn_log  # noqa: E402

MODEL = "/models/Qwen2.5-14B-Instruct"


class Model:
    def __init__(self, vocab=152064, hidden=2048, dtype="float16"):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=getattr(torch, dtype))
        self.vocab = vocab
        self.emb = torch.randn(vocab, hidden, **kw)
        self.layers = [torch.randn(hidden, hidden, **kw) * (1.0 / hidden ** 0.5) for _ in range(4)]
        self.head = torch.randn(vocab, hidden, **kw) * 0.02

    def logits(self, ids):
        import torch
        h = self.emb[ids]
        for w in self.layers:
            h = torch.nn.functional.gelu(h @ w) + h
        return (h[:, -1] @ self.head.T)  # [bs, vocab] in fp16

    def sample(self, logits, temperatures):
        import torch
        logits = logits / temperatures[:, None]
        probs = torch.softmax(logits, dim=-1)
        return torch.multinomial(probs, num_samples=1)


def mx_gemm_warmup():
    """The MXFP8 linear's warm-up GEMM: fp8 e4m3 operands with e8m0 scales per 32-element block."""
    import torch
    M = N = K = 256
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    sa = torch.full((M * K // 32,), 127, dtype=torch.uint8, device="cuda").view(torch.float8_e8m0fnu)
    sb = torch.full((N * K // 32,), 127, dtype=torch.uint8, device="cuda").view(torch.float8_e8m0fnu)
    out = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    return out


class Scheduler:
    def __init__(self, tp_rank, tp_size, scenario, req_q, resp_q, step_barrier):
        self.tp_rank, self.tp_size, self.scenario = tp_rank, tp_size, scenario
        self.req_q, self.resp_q, self.step_barrier = req_q, resp_q, step_barrier
        self.logger = sglang_logger(tp_rank)
        self.forward_ct = 0
        self.cur_batch = None
        self.watchdog_timeout = 8.0

    def init(self):
        import torch
        lg = self.logger
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        time.sleep(0.2)
        lg.info(f"Init torch distributed ends. mem usage=0.00 GB")
        lg.info(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        if self.scenario == "mxfp8":
            lg.info("Using MXFP8 linear method (block size 32) for all linear layers.")
            mx_gemm_warmup()
        self.model = Model()
        lg.info(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.float16, "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB, mem usage=1.25 GB.")
        lg.info("KV Cache is allocated. #tokens: 1311216, K size: 60.02 GB, V size: 60.02 GB")
        lg.info(f"Memory pool end. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        ids = torch.randint(0, self.model.vocab, (8, 16), device="cuda")
        self.model.logits(ids)
        torch.cuda.synchronize()
        lg.info(f"Capture cuda graph end. Time elapsed: 1.84 s. mem usage=0.41 GB. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB.")
        lg.info("max_total_num_tokens=1311216, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                "max_running_requests=4096, context_len=32768, available_gpu_mem=12.31 GB")

    def watchdog_thread(self):
        last_ct, last_time = 0, time.perf_counter()
        while True:
            now = time.perf_counter()
            if self.cur_batch is not None:
                if last_ct == self.forward_ct:
                    if now > last_time + self.watchdog_timeout:
                        break
                else:
                    last_ct, last_time = self.forward_ct, now
            else:
                last_time = now
            time.sleep(self.watchdog_timeout // 2)
        rid, bs, n_in = self.cur_batch
        self.logger.error(f"self.cur_batch.batch_size()={bs}, self.cur_batch.reqs=[Req(rid={rid}, input_ids={n_in} tokens)], "
                          f"self.token_to_kv_pool_allocator.available_size()=1309114, self.tree_cache.evictable_size()=1811, ")
        try:
            subprocess.run(["py-spy", "dump", "--pid", str(os.getpid())], capture_output=True, timeout=5)
        except Exception as e:
            self.logger.error(f"Pyspy failed to dump PID {os.getpid()}. Error: {e}")
        self.logger.error(f"Watchdog timeout (self.watchdog_timeout={self.watchdog_timeout})")
        print(file=sys.stderr, flush=True)
        print(file=sys.stdout, flush=True)
        time.sleep(2)
        os.kill(os.getppid(), signal.SIGQUIT)

    def event_loop(self):
        import torch
        threading.Thread(target=self.watchdog_thread, daemon=True).start()
        self.resp_q.put(("ready", self.tp_rank))
        lg = self.logger
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, bs, n_in, n_out, temp, stall_at = item
            self.cur_batch = (rid, bs, n_in)
            lead = self.tp_rank == 0
            if lead:
                lg.info(f"Prefill batch. #new-seq: {bs}, #new-token: {bs * n_in}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ")
            ids = torch.randint(0, self.model.vocab, (bs, n_in), device="cuda")
            temps = torch.full((bs,), temp, device="cuda", dtype=torch.float16)
            t0 = time.perf_counter()
            for step in range(n_out):
                if step == stall_at and self.tp_rank == 0:
                    torch.cuda._sleep(int(2e11))  # a decode kernel that never finishes
                nxt = self.model.sample(self.model.logits(ids[:, -16:]), temps)
                ids = torch.cat([ids, nxt], dim=1)
                int(nxt[0, 0].item())
                if self.step_barrier is not None:
                    self.step_barrier.wait()  # stand-in for the TP all-reduce of each step
                self.forward_ct += 1
                if lead and (step + 1) % 60 == 0:
                    dt = time.perf_counter() - t0
                    lg.info(f"Decode batch. #running-req: {bs}, #token: {bs * (n_in + step + 1)}, token usage: 0.01, "
                            f"cuda graph: True, gen throughput (token/s): {bs * 60 / dt:.2f}, #queue-req: 0, ")
                    t0 = time.perf_counter()
            self.cur_batch = None
            if lead:
                self.resp_q.put((rid, 200))


def run_scheduler(tp_rank, tp_size, scenario, req_q, resp_q, step_barrier):
    sched = Scheduler(tp_rank, tp_size, scenario, req_q, resp_q, step_barrier)
    try:
        sched.init()
        sched.event_loop()
    except Exception:
        sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
        sys.stdout.flush()
        os.kill(os.getppid(), signal.SIGQUIT)
        time.sleep(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["nan", "watchdog", "mxfp8", "port", "ctrlc"], required=True)
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    logger = sglang_logger()
    ctx = mp.get_context("spawn")
    procs = []

    def sigquit_handler(signum, frame):
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        time.sleep(1.5)
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, sigquit_handler)
    extra = {"mxfp8": ", quantization='mxfp8'", "watchdog": ", watchdog_timeout=8"}.get(args.scenario, "")
    logger.info(f"server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', dtype='float16', "
                f"tp_size={args.tp}, host='127.0.0.1', port={args.port}, mem_fraction_static=0.85, "
                f"cuda_graph_max_bs=160, random_seed=1234, log_level='info'{extra})")
    req_qs = [ctx.Queue() for _ in range(args.tp)]
    resp_q = ctx.Queue()
    barrier = ctx.Barrier(args.tp) if args.scenario == "watchdog" else None
    for r in range(args.tp):
        p = ctx.Process(target=run_scheduler, args=(r, args.tp, args.scenario, req_qs[r], resp_q, barrier),
                        name=f"sglang::scheduler_TP{r}")
        p.start()
        procs.append(p)
    for _ in range(args.tp):
        resp_q.get(timeout=300)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    if args.scenario == "port":
        import asyncio

        async def serve():
            return await asyncio.get_running_loop().create_server(asyncio.Protocol, "127.0.0.1", args.port)
        try:
            asyncio.run(serve())
        except OSError as exc:
            print(f"ERROR:    {exc}", flush=True)
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            for p in procs:
                p.kill()
            sys.exit(1)
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:51320 - "GET /get_model_info HTTP/1.1" 200 OK')
    # (rid, batch, prompt tokens, new tokens, temperature, decode step that stalls)
    reqs = [(0, 1, 8, 8, 0.7, -1)] + [(i, 8, 96, 120, 0.7, -1) for i in range(1, 5)]
    if args.scenario == "nan":
        reqs[3] = (3, 8, 96, 120, 1e-6, -1)  # a client asks for "greedy" with temperature=1e-06
    if args.scenario == "watchdog":
        reqs[2] = (2, 8, 96, 120, 0.7, 57)
    try:
        for rid, bs, n_in, n_out, temp, stall in reqs:
            time.sleep(0.2)
            for q in req_qs:
                q.put((rid, bs, n_in, n_out, temp, stall))
            _, code = resp_q.get(timeout=300)
            uvicorn_log(f'127.0.0.1:{51320 + rid} - "POST /generate HTTP/1.1" {code} OK')
            if rid == 0:
                logger.info("The server is fired up and ready to roll!")
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()


if __name__ == "__main__":
    main()
