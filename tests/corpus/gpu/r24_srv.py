# Servers of round 24 that log per-request errors and go on serving (a small bf16 model on the GPU; a client
# thread in the same process sends real HTTP requests to the real server), --scenario:
# topk_served_past: an aiohttp completions server; one client asks for top_k=50000 on a 32000-token vocabulary:
#   torch.topk refuses k (aiohttp logs "Error handling request" with the traceback and answers 500); the server
#   goes on serving until the operator's SIGTERM (r24_run.sh);
# rerank_served_past: a werkzeug (WSGI) reranker; one request has no documents (torch.stack of an empty list) and
#   one sends 120000 documents at once (their embeddings do not fit on the card: CUDA out of memory); werkzeug
#   logs "Error on request:" with each traceback and answers 500; the server goes on serving until the operator's
#   Ctrl-C (SIGINT); started by the node's start.sh in r24_run.sh's build scenario too (which never gets here);
# bench: an aiohttp OpenAI-style server (max_model_len 2048: longer prompts get a 400) and a benchmark client in
#   the same terminal; 100 requests, a few refused, then the benchmark's result table (no crash).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r24_common import DRY  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--port", type=int, default=8080)
args = ap.parse_args()

V, D, LAYERS = 32000, 2048, 4


class Model:
    def __init__(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)
        dev = "cpu" if DRY else "cuda"
        kw = dict(device=dev, dtype=torch.float32 if DRY else torch.bfloat16)
        self.dev = dev
        self.emb = torch.randn(V, D, **kw) * 0.02
        self.head = torch.randn(V, D, **kw) * 0.02
        self.blocks = [(torch.randn(2 * 5632, D, **kw) * 0.02, torch.randn(D, 5632, **kw) * 0.02) for _ in range(LAYERS)]
        self.lock = threading.Lock()

    def hidden(self, ids):
        F = self.torch.nn.functional
        h = self.emb[ids]
        for gu, down in self.blocks:
            g, u = (h @ gu.T).chunk(2, -1)
            h = h + (F.silu(g) * u) @ down.T
        return h

    def generate(self, prompt_len, max_tokens, temperature, top_k, seed):
        torch = self.torch
        g = torch.Generator(device=self.dev).manual_seed(seed)
        ids = torch.randint(0, V, (1, prompt_len), device=self.dev, generator=g)
        out = []
        with self.lock, torch.no_grad():
            for _ in range(max_tokens):
                logits = (self.hidden(ids[:, -512:])[:, -1] @ self.head.T).float() / max(temperature, 1e-5)
                if top_k > 0:
                    vals, idx = torch.topk(logits, top_k, dim=-1)
                    nxt = idx.gather(-1, torch.multinomial(torch.softmax(vals, -1), 1, generator=g))
                else:
                    nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=g)
                ids = torch.cat([ids, nxt], 1)
                out.append(int(nxt))
        return out

    def rerank(self, query_len, doc_lens):
        """cross-encoder stand-in: each (query, document) pair attends over itself; score = mean of the last state"""
        torch = self.torch
        with self.lock, torch.no_grad():
            n = max(doc_lens) + query_len if doc_lens else query_len
            pairs = [torch.randint(0, V, (query_len + dl,), device=self.dev) for dl in doc_lens]
            x = torch.stack([torch.nn.functional.pad(p, (0, n - p.numel())) for p in pairs])  # [docs, n]
            h = self.emb[x]  # [docs, n, D]
            q = h.view(h.size(0), n, 16, D // 16).transpose(1, 2)
            att = torch.softmax(q @ q.transpose(-1, -2) / 11.3, -1)  # [docs, 16, n, n]
            h = (att @ q).transpose(1, 2).reshape(h.shape)
            return h[:, -1].float().mean(-1).tolist()


def client(port, plan, path, results, delay=0.05):
    """send the planned requests one after another (real HTTP), record (status, seconds, tokens)"""
    time.sleep(1.0)
    for body in plan:
        t0 = time.perf_counter()
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "User-Agent": "python-httpx/0.28.1"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                data = json.loads(r.read())
                results.append((r.status, time.perf_counter() - t0, data.get("usage", {}).get("completion_tokens", 0), body))
        except urllib.error.HTTPError as e:
            e.read()
            results.append((e.code, time.perf_counter() - t0, 0, body))
        except Exception as e:  # noqa: BLE001
            results.append((0, time.perf_counter() - t0, 0, body))
            print(f"client: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        time.sleep(delay)


# ---------------------------------------------------------------- aiohttp servers
def aiohttp_app(model, max_model_len=None):
    from aiohttp import web

    log = logging.getLogger("server")

    async def completions(request):
        body = await request.json()
        prompt_len = body.get("prompt_len", 32)
        if max_model_len and prompt_len + body.get("max_tokens", 16) > max_model_len:
            return web.json_response({"object": "error", "message": f"This model's maximum context length is {max_model_len} tokens. However, you requested {prompt_len + body.get('max_tokens', 16)} tokens ({prompt_len} in the messages, {body.get('max_tokens', 16)} in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400}, status=400)
        t0 = time.perf_counter()
        toks = model.generate(prompt_len, body.get("max_tokens", 16), body.get("temperature", 1.0),
                              body.get("top_k", -1), body.get("seed", 0))
        log.info("request %s: prompt %d tokens, generated %d tokens in %.2f s", request.headers.get("X-Request-Id", "-"),
                 prompt_len, len(toks), time.perf_counter() - t0)
        return web.json_response({"object": "text_completion", "model": "qwen2.5-1.5b-instruct-sft",
                                  "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                                  "usage": {"prompt_tokens": prompt_len, "completion_tokens": len(toks)}})

    async def health(request):
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    return app


def topk_served_past():
    from aiohttp import web

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    log = logging.getLogger("server")
    log.info("loading model qwen2.5-1.5b-instruct-sft (bfloat16) on %s", "cpu" if DRY else "cuda:0")
    model = Model()
    log.info("model ready: %d layers, vocab %d", LAYERS, V)
    plan = []
    for i in range(1, 400):
        body = {"prompt_len": 40 + i * 53 % 300, "max_tokens": 12, "temperature": 0.8, "top_k": 40, "seed": i}
        if i == 9:
            body["top_k"] = 50000  # a client that means "no top-k filtering"
        plan.append(body)
    threading.Thread(target=client, args=(args.port, plan, "/v1/completions", []), daemon=True).start()
    web.run_app(aiohttp_app(model), host="0.0.0.0", port=args.port)
    log.info("server stopped")


def bench():
    import asyncio
    import random
    import statistics

    from aiohttp import web

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    log = logging.getLogger("server")
    log.info("loading model qwen2.5-1.5b-instruct-sft (bfloat16) on %s, max_model_len=2048", "cpu" if DRY else "cuda:0")
    model = Model()

    rnd = random.Random(7)
    n = 100
    plan = [{"prompt_len": min(int(rnd.lognormvariate(6.0, 0.8)), 4000), "max_tokens": rnd.choice([16, 32, 64]),
             "temperature": 0.7, "top_k": 50, "seed": i} for i in range(n)]
    results = []

    def run_bench():
        time.sleep(0.5)
        print("Namespace(backend='openai', base_url=None, host='127.0.0.1', port=%d, endpoint='/v1/completions', "
              "dataset_name='random', model='qwen2.5-1.5b-instruct-sft', num_prompts=%d, request_rate=inf, "
              "max_concurrency=1, seed=7)" % (args.port, n), flush=True)
        print("Starting initial single prompt test run...", flush=True)
        client(args.port, plan[:1], "/v1/completions", [], delay=0)
        print("Initial test run completed. Starting main benchmark run...", flush=True)
        t0 = time.perf_counter()
        client(args.port, plan, "/v1/completions", results, delay=0)
        dur = time.perf_counter() - t0
        ok = [r for r in results if r[0] == 200]
        lat = [r[1] * 1000 for r in ok]
        out_tok = sum(r[2] for r in ok)
        in_tok = sum(r[3]["prompt_len"] for r in ok)
        for st, _, _, body in results:
            if st != 200:
                print(f"Request failed: HTTP {st} (prompt_len={body['prompt_len']}, max_tokens={body['max_tokens']})", flush=True)
        print("============ Serving Benchmark Result ============")
        print("{:<40} {:<10}".format("Successful requests:", len(ok)))
        print("{:<40} {:<10}".format("Failed requests:", len(results) - len(ok)))
        print("{:<40} {:<10.2f}".format("Benchmark duration (s):", dur))
        print("{:<40} {:<10}".format("Total input tokens:", in_tok))
        print("{:<40} {:<10}".format("Total generated tokens:", out_tok))
        print("{:<40} {:<10.2f}".format("Request throughput (req/s):", len(ok) / dur))
        print("{:<40} {:<10.2f}".format("Output token throughput (tok/s):", out_tok / dur))
        print("{:<40} {:<10.2f}".format("Total Token throughput (tok/s):", (in_tok + out_tok) / dur))
        print("{s:{c}^{n}}".format(s="End-to-end Latency", n=50, c="-"))
        print("{:<40} {:<10.2f}".format("Mean E2EL (ms):", statistics.mean(lat)))
        print("{:<40} {:<10.2f}".format("Median E2EL (ms):", statistics.median(lat)))
        print("{:<40} {:<10.2f}".format("P99 E2EL (ms):", sorted(lat)[int(len(lat) * 0.99) - 1]))
        print("=" * 50, flush=True)
        os.kill(os.getpid(), 2)  # the benchmark script's wrapper stops the server when the run ends (Ctrl-C)

    threading.Thread(target=run_bench, daemon=True).start()
    try:
        web.run_app(aiohttp_app(model, max_model_len=2048), host="0.0.0.0", port=args.port)
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    log.info("server stopped")


# ---------------------------------------------------------------- werkzeug reranker
def rerank_served_past():
    from werkzeug.serving import run_simple
    from werkzeug.wrappers import Request, Response

    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] reranker: loading bge-reranker-v2-m3-ft (bfloat16) on {'cpu' if DRY else 'cuda:0'}", flush=True)
    model = Model()

    @Request.application
    def app(request):
        if request.path == "/health":
            return Response("ok")
        body = json.loads(request.get_data())
        docs = body["documents"]
        scores = model.rerank(body.get("query_len", 24), [d["len"] for d in docs])
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return Response(json.dumps({"results": [{"index": i, "relevance_score": scores[i]} for i in order[: body.get("top_n", 5)]]}),
                        mimetype="application/json")

    plan = []
    for i in range(1, 400):
        body = {"query_len": 16 + i % 20, "documents": [{"len": 64 + (i * 31 + j * 17) % 400} for j in range(8 + i % 24)], "top_n": 5}
        if i == 6:
            body["documents"] = []  # a client whose retrieval step found nothing
        if i == 13:
            body["documents"] = [{"len": 384} for _ in range(120000)]  # a batch job that sends the whole corpus at once
        plan.append(body)
    threading.Thread(target=client, args=(args.port, plan, "/rerank", []), daemon=True).start()
    run_simple("0.0.0.0", args.port, app, threaded=True)


if __name__ == "__main__":
    {"topk_served_past": topk_served_past, "rerank_served_past": rerank_served_past, "bench": bench}[args.scenario]()
