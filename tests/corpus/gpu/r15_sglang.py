# sglang-shaped launcher + scheduler children (round 15), one real fault (or none) per --scenario:
# nan_sampling: --dtype float16 on a model whose activations overflow fp16; greedy requests pass, the first
#   sampled request (temperature 0.7) meets NaN probabilities in torch.multinomial (TP=2, both ranks at once);
# safetensors_corrupt: the third of four shards was cut short by an interrupted copy (TP=2); the schedulers
#   signal the launcher before their own error reaches the log;
# port_in_use: a stale server still holds the port: weights load, the HTTP server cannot bind;
# watchdog: a decode step never finishes (a GPU kernel spins); the scheduler watchdog fires, dumps stacks;
# too_long_sigterm: a prompt longer than the context length is refused (400) while serving goes on, then
#   the operator's SIGTERM.
import argparse
import asyncio
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r15_common import CKPT, shard_names, sglang_logger, uvicorn_log  # noqa: E402

MODELS = {
    "nan_sampling": "/models/gemma-2-9b-it",
    "safetensors_corrupt": CKPT,
    "port_in_use": "/models/Meta-Llama-3.1-8B-Instruct",
    "watchdog": "/models/Qwen2.5-32B-Instruct",
    "too_long_sigterm": "/models/Llama-3.1-8B-Instruct",
}
EXTRA = {
    "nan_sampling": ", sampling_backend='pytorch', disable_cuda_graph=False",
    "safetensors_corrupt": ", load_format='auto', disable_cuda_graph=False",
    "port_in_use": ", disable_cuda_graph=False",
    "watchdog": ", watchdog_timeout=6.0, disable_cuda_graph=False",
    "too_long_sigterm": ", allow_auto_truncate=False, context_length=131072",
}
DTYPE = {"nan_sampling": "float16"}
TP = {"nan_sampling": 2, "safetensors_corrupt": 2}
CONTEXT = 131072


class Model:
    def __init__(self, vocab=128256, hidden=1024, layers=4, dtype="bfloat16", w_scale=None):
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=getattr(torch, dtype))
        self.vocab, self.hidden = vocab, hidden
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        s = hidden ** -0.5 if w_scale is None else w_scale
        self.layers = [torch.randn(hidden, hidden, **kw) * s for _ in range(layers)]
        self.norm_in = torch.ones(hidden, **kw) * 50.0  # gemma's scaled embeddings (x * sqrt(hidden))

    def forward(self, ids):
        import torch
        h = self.emb[ids] * self.norm_in
        for w in self.layers:
            h = torch.nn.functional.gelu(h @ w) + h
        return h[-1:] @ self.emb.T  # [1, vocab]


class Scheduler:
    def __init__(self, tp_rank, tp, scenario, req_q, resp_q):
        self.tp_rank, self.tp, self.scenario, self.req_q, self.resp_q = tp_rank, tp, scenario, req_q, resp_q
        self.logger = sglang_logger(tp_rank)
        self.forward_ct = 0
        self.cur_batch = None

    def init(self):
        import torch
        lg, sc = self.logger, self.scenario
        lg.info("Init torch distributed begin.")
        torch.cuda.set_device(0)
        lg.info(f"Init torch distributed ends. mem usage={0.55 if self.tp > 1 else 0.0:.2f} GB")
        lg.info(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        if sc == "safetensors_corrupt":
            self.load_shards()
        if sc == "nan_sampling":
            self.model = Model(vocab=256000, hidden=1024, layers=4, dtype="float16", w_scale=1.0)
            arch = "Gemma2ForCausalLM"
        else:
            self.model = Model()
            arch = {"watchdog": "Qwen2ForCausalLM"}.get(sc, "LlamaForCausalLM")
        dt = DTYPE.get(sc, "bfloat16")
        lg.info(f"Load weight end. type={arch}, dtype=torch.{dt}, "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB, mem usage=0.81 GB.")
        self.kv = torch.empty((4, 2, 65536, 8, 128), device="cuda", dtype=torch.bfloat16)
        lg.info("KV Cache is allocated. #tokens: 65536, K size: 0.50 GB, V size: 0.50 GB")
        lg.info(f"Memory pool end. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        self.capture()
        lg.info(f"max_total_num_tokens=65536, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                f"max_running_requests=2048, context_len={CONTEXT}, available_gpu_mem=118.02 GB")

    def load_shards(self):
        import torch
        from safetensors import safe_open
        from tqdm import tqdm
        fmt = "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]\n"
        bar = tqdm(shard_names(), desc="Loading safetensors checkpoint shards", bar_format=fmt,
                   disable=self.tp_rank != 0)
        self.weights = {}
        for name in bar:
            with safe_open(f"{CKPT}/{name}", framework="pt", device="cpu") as f:
                for k in f.keys():
                    self.weights[k] = f.get_tensor(k).to("cuda", non_blocking=True)
            torch.cuda.synchronize()

    def capture(self):
        import torch
        from tqdm import tqdm
        lg = self.logger
        lg.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
        bss = [48, 40, 32, 24, 16, 8, 4, 2, 1]
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        bar = tqdm(bss, disable=self.tp_rank != 0)
        self.graphs = {}
        t0 = time.perf_counter()
        for bs in bar:
            bar.set_description(f"Capturing batches (bs={bs} avail_mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB)")
            ids = torch.randint(0, self.model.vocab, (bs,), device="cuda")
            for _ in range(2):
                self.model.forward(ids)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, stream=stream):
                self.model.forward(ids)
            self.graphs[bs] = g
        bar.close()
        lg.info(f"Capture cuda graph end. Time elapsed: {time.perf_counter() - t0:.2f} s. mem usage=0.31 GB. "
                f"avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB.")

    # ---------------------------------------------------------------- serving
    def sample(self, logits, temperature, top_p):
        import torch
        if temperature == 0.0:
            return logits.argmax(-1)
        logits = logits / temperature
        probs = torch.softmax(logits, dim=-1)
        probs_sort, probs_idx = probs.sort(dim=-1, descending=True)
        probs_sum = torch.cumsum(probs_sort, dim=-1)
        probs_sort[(probs_sum - probs_sort) > top_p] = 0.0
        sampled_index = torch.multinomial(probs_sort, num_samples=1)
        return torch.gather(probs_idx, dim=1, index=sampled_index).view(-1)

    def watchdog_thread(self, timeout):
        last_ct, last_t = 0, time.perf_counter()
        while True:
            now = time.perf_counter()
            if self.cur_batch is not None:
                if last_ct == self.forward_ct:
                    if now > last_t + timeout:
                        break
                else:
                    last_ct, last_t = self.forward_ct, now
            else:
                last_t = now
            time.sleep(timeout / 2)
        lg = self.logger
        lg.error(f"Scheduler watchdog timeout (self.watchdog_timeout={timeout}, self.soft=False)")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        lg.error(f"self.cur_batch.batch_size()=1, self.cur_batch.reqs=[Req(rid={self.cur_batch}, "
                 f"input_ids=..., output_ids=...)], self.token_to_kv_pool_allocator.available_size()=61904")
        print(file=sys.stderr, flush=True)
        print(file=sys.stdout, flush=True)
        time.sleep(2)
        os.kill(os.getppid(), signal.SIGQUIT)

    def event_loop(self):
        import torch
        lg, sc = self.logger, self.scenario
        if sc == "watchdog":
            threading.Thread(target=self.watchdog_thread, args=(6.0,), daemon=True).start()
        self.resp_q.put(("ready", self.tp_rank))
        while True:
            item = self.req_q.get()
            if item is None:
                return
            rid, n_in, n_out, temperature = item
            self.cur_batch = rid
            lg.info(f"Prefill batch. #new-seq: 1, #new-token: {n_in}, #cached-token: 0, token usage: 0.01, "
                    f"#running-req: 0, #queue-req: 0, ")
            ids = torch.randint(0, self.model.vocab, (n_in,), device="cuda")
            t0 = time.perf_counter()
            for step in range(n_out):
                logits = self.model.forward(ids[-128:])
                if sc == "watchdog" and rid == 3 and step == 17:
                    torch.cuda._sleep(int(1.98e9 * 60))  # the decode kernel never returns
                nxt = self.sample(logits, temperature, 0.95)
                torch.cuda.synchronize()
                self.forward_ct += 1
                ids = torch.cat([ids, nxt])
                if (step + 1) % 40 == 0 and self.tp_rank == 0:
                    dt = time.perf_counter() - t0
                    lg.info(f"Decode batch. #running-req: 1, #token: {n_in + step + 1}, token usage: 0.01, "
                            f"cuda graph: True, gen throughput (token/s): {40 / dt:.2f}, #queue-req: 0, ")
                    t0 = time.perf_counter()
            self.cur_batch = None
            if self.tp_rank == 0:
                self.resp_q.put((rid, 200))


def run_scheduler(tp_rank, tp, scenario, req_q, resp_q):
    sched = Scheduler(tp_rank, tp, scenario, req_q, resp_q)
    try:
        sched.init()
        sched.event_loop()
    except Exception:
        if scenario == "safetensors_corrupt":  # the parent hears of it before the error is logged
            os.kill(os.getppid(), signal.SIGQUIT)
            time.sleep(0.4)
            sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
        else:
            sched.logger.error(f"Scheduler hit an exception: {traceback.format_exc()}")
            sys.stdout.flush()
            os.kill(os.getppid(), signal.SIGQUIT)
        time.sleep(30)


class Term(Exception):
    pass


async def bind(host, port):
    loop = asyncio.get_running_loop()
    return await loop.create_server(asyncio.Protocol, host=host, port=port)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(MODELS), required=True)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    sc = args.scenario
    tp = TP.get(sc, 1)
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

    def on_term(signum, frame):
        raise Term()

    signal.signal(signal.SIGQUIT, sigquit_handler)
    model = MODELS[sc]
    logger.info(f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
                f"dtype='{DTYPE.get(sc, 'auto')}', tp_size={tp}, host='127.0.0.1', port={args.port}, "
                f"mem_fraction_static=0.871, cuda_graph_max_bs=48, random_seed=42, log_level='info'{EXTRA[sc]})")
    if sc == "nan_sampling":
        logger.warning("Casting torch.bfloat16 to torch.float16.")
    req_qs = [ctx.Queue() for _ in range(tp)]
    resp_q = ctx.Queue()
    for r in range(tp):
        p = ctx.Process(target=run_scheduler, args=(r, tp, sc, req_qs[r], resp_q), name=f"sglang::scheduler_TP{r}",
                        daemon=True)
        p.start()
        procs.append(p)
    for _ in range(tp):
        resp_q.get(timeout=300)
    signal.signal(signal.SIGTERM, on_term)
    uvicorn_log(f"Started server process [{os.getpid()}]")
    uvicorn_log("Waiting for application startup.")
    uvicorn_log("Application startup complete.")
    if sc == "port_in_use":
        try:
            asyncio.run(bind("127.0.0.1", args.port))
        except OSError as exc:
            print(f"ERROR:    {exc}", flush=True)
            uvicorn_log("Waiting for application shutdown.")
            uvicorn_log("Application shutdown complete.")
            sys.exit(1)
    uvicorn_log(f"Uvicorn running on http://127.0.0.1:{args.port} (Press CTRL+C to quit)")
    uvicorn_log('127.0.0.1:52814 - "GET /get_model_info HTTP/1.1" 200 OK')
    # (rid, prompt tokens, new tokens, temperature)
    reqs = [(0, 8, 8, 0.0)] + [(i, 300 + 50 * i, 80, 0.0) for i in range(1, 6)]
    if sc == "nan_sampling":
        reqs[4] = (4, 512, 80, 0.7)
    if sc == "too_long_sigterm":
        reqs = [(0, 8, 8, 0.0)] + [(i, 300 + 50 * i, 80, 0.6) for i in range(1, 12)]
        reqs[4] = (4, 140_012, 256, 0.6)
    try:
        for rid, n_in, n_out, temp in reqs:
            time.sleep(0.2)
            if n_in > CONTEXT:
                try:
                    raise ValueError(f"The input ({n_in} tokens) is longer than the model's context length "
                                     f"({CONTEXT} tokens).")
                except ValueError as e:
                    logger.error(f"Error: {e}")
                    uvicorn_log(f'127.0.0.1:{52814 + rid} - "POST /generate HTTP/1.1" 400 Bad Request')
                    continue
            for q in req_qs:
                q.put((rid, n_in, n_out, temp))
            _, code = resp_q.get(timeout=300)
            uvicorn_log(f'127.0.0.1:{52814 + rid} - "POST /generate HTTP/1.1" {code} OK')
            if rid == 0:
                logger.info("The server is fired up and ready to roll!")
        while True:
            time.sleep(1)
    except Term:
        uvicorn_log("Shutting down")
        uvicorn_log("Waiting for application shutdown.")
        uvicorn_log("Application shutdown complete.")
        uvicorn_log(f"Finished server process [{os.getpid()}]")
        for p in procs:
            p.kill()


if __name__ == "__main__":
    main()
