"""A small model server on the GPU, logging as servers do: a tiny GPT-2 of random weights
saved where a model would be (transformers, safetensors, a tokenizer of its own), a batch
loop on a thread, an aiohttp front end. `--mode` picks a real way for it to fail."""

import argparse
import asyncio
import json
import logging
import os
import sys
import threading
import time

logging.basicConfig(level=logging.INFO,
                    format="%(asctime)s %(levelname)s [%(name)s] %(message)s")  # fmt: skip
log = logging.getLogger("tiny_server")
parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--port", type=int, default=8100)
parser.add_argument("--mode", default="serve",
                    choices=["make", "serve", "cudnn_after_ready", "requests", "request_oom",
                             "oom_after_ready", "bad_token"])  # fmt: skip
parser.add_argument("--odd-at", type=int, default=-1,
                    help="requests: the request number whose body is a mode's bad one")
parser.add_argument("--seconds", type=float, default=6.0)
args = parser.parse_args()

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402


def make(path: str) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    os.makedirs(path, exist_ok=True)
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    words = "the server is up and the model answers every prompt with more words".split()
    tok.train_from_iterator([" ".join(words)] * 10, trainers.WordLevelTrainer(
        special_tokens=["[UNK]", "[EOS]"]))  # fmt: skip
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    fast.save_pretrained(path)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=fast.vocab_size,
                        n_positions=4096)  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(path)
    log.info("saved a %d-parameter model to %s", sum(p.numel() for p in
             GPT2LMHeadModel(config).parameters()), path)  # fmt: skip


if args.mode == "make":
    make(args.model)
    sys.exit(0)

if args.mode == "requests":
    import urllib.request

    for n in range(int(args.seconds)):
        fields = {"prompt": "the server is", "max_new_tokens": 16}
        if n == args.odd_at:
            # A batch of 4,096 prompts with room for 100,000 new tokens each; token ids past
            # the vocabulary, as a client with another model's tokenizer sends them.
            fields |= {"n": 4096, "max_new_tokens": 100_000, "input_ids": [5, 7, 50_000]}
        body = json.dumps(fields).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{args.port}/generate", body)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                print(answer.read().decode(), flush=True)
        except Exception as error:  # noqa: BLE001
            print(f"request {n}: {error}", flush=True)
        time.sleep(0.5)
    sys.exit(0)

log.info("server args: model=%s port=%d dtype=bfloat16 device=cuda:0", args.model, args.port)
log.info("Loading tokenizer from %s", args.model)
tokenizer = AutoTokenizer.from_pretrained(args.model)
log.info("Loading weights from %s", args.model)
model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16).cuda().eval()
log.info("Model loaded: %.1f MiB of GPU memory", torch.cuda.memory_allocated() / 2**20)
queue: "list[tuple[dict, asyncio.Future, asyncio.AbstractEventLoop]]" = []
lock = threading.Lock()


def batch_loop() -> None:
    tokens, started = 0, time.perf_counter()
    while True:
        with lock:
            batch, queue[:] = queue[:], []
        if not batch:
            time.sleep(0.01)
            continue
        prompts = [item[0]["prompt"] for item in batch]
        new = max(item[0].get("max_new_tokens", 16) for item in batch)
        ids = tokenizer(prompts, return_tensors="pt", padding=False).input_ids.cuda()
        odd = [item[0] for item in batch if "n" in item[0]]
        if odd and args.mode == "bad_token":
            ids = torch.tensor([odd[0]["input_ids"]], device="cuda")
        if odd and args.mode in ("request_oom", "oom_after_ready"):
            try:
                # The batch's KV cache, reserved before it runs: 2 layers x K and V.
                rows = odd[0]["n"] * (ids.shape[1] + odd[0]["max_new_tokens"])
                kv = torch.empty((2, 2, rows, model.config.n_embd), dtype=torch.bfloat16,
                                 device="cuda")  # fmt: skip
                del kv
            except torch.OutOfMemoryError:
                if args.mode == "oom_after_ready":
                    log.exception("Scheduler hit an exception")
                    os._exit(1)
                # A server that refuses the one request and goes on serving the others.
                log.exception("Request failed: the batch does not fit; it is dropped")
                for _, future, loop in batch:
                    loop.call_soon_threadsafe(future.set_result, "")
                continue
        if args.mode == "cudnn_after_ready" and tokens > 64:
            # A batch of a million rows, never budgeted for: SDPA's cuDNN kernel refuses it.
            ids = ids.repeat(1 << 20, 1)
            new = 2048
        try:
            with torch.no_grad():
                out = model.generate(ids, max_new_tokens=new, do_sample=False,
                                     pad_token_id=tokenizer.eos_token_id)  # fmt: skip
        except Exception:
            log.exception("Scheduler hit an exception")
            os._exit(1)
        tokens += out.numel() - ids.numel()
        elapsed = time.perf_counter() - started
        log.info("Decode batch. #running-req: %d, #token: %d, gen throughput (token/s): %.2f",
                 len(batch), tokens, tokens / elapsed)  # fmt: skip
        for (_, future, loop), row in zip(batch, out):
            loop.call_soon_threadsafe(future.set_result, tokenizer.decode(row))


async def generate(request):  # type: ignore[no-untyped-def]
    from aiohttp import web

    body = await request.json()
    future = asyncio.get_running_loop().create_future()
    with lock:
        queue.append((body, future, asyncio.get_running_loop()))
    return web.json_response({"text": await future})


async def health(request):  # type: ignore[no-untyped-def]
    from aiohttp import web

    return web.Response(text="ok")


async def main() -> None:
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/generate", generate)
    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", args.port).start()
    # As aiohttp's web.run_app says it.
    print(f"======== Running on http://0.0.0.0:{args.port} ========\n(Press CTRL+C to quit)",
          flush=True)  # fmt: skip
    await asyncio.sleep(args.seconds)
    log.info("Shutting down after %.0f s", args.seconds)
    await runner.cleanup()


threading.Thread(target=batch_loop, daemon=True).start()
asyncio.run(main())
