"""A stand-in for an sglang server: sglang-like start-up lines, a server_args line,
/health and a completion endpoint on --port. Variants fail the ways real servers do."""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def say(line: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stdout.write(f"[{stamp}] {line}\n")
    sys.stdout.flush()


def hold_gpu_memory(state: str, mib: int, orphan_pid_file: str) -> None:
    holder = os.getpid()
    if orphan_pid_file:
        orphan = subprocess.Popen(
            [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"],
            start_new_session=True,
        )
        with open(orphan_pid_file, "w") as f:
            f.write(str(orphan.pid))
        holder = orphan.pid
    app = {"pid": holder, "gpu": 0, "used_memory": mib}
    with open(os.path.join(state, "apps", f"{holder}.json"), "w") as f:
        json.dump(app, f)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model-path", default="/models/stand-in")
    parser.add_argument("--enable-torch-symm-mem", action="store_true")
    parser.add_argument("--tp", type=int, default=1)
    # ok, crash (during start-up), hang (never ready), ignore-term, die-on-request
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--start-delay", type=float, default=0.3)
    # "Started server process" printed this long before /health answers 200.
    parser.add_argument("--health-delay", type=float, default=0.3)
    parser.add_argument("--die-after", type=int, default=0, help="requests before dying")
    parser.add_argument("--children", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ready-file", default="")
    # The stand-in nvidia-smi's state (tests/standin/nvidia_smi.py): the server holds
    # --gpu-mib of GPU 0 from loading its weights until it ends.
    parser.add_argument("--gpu-state", default="")
    parser.add_argument("--gpu-mib", type=int, default=0)
    # A helper that leaves the server's session (setsid) and holds the GPU memory instead,
    # outliving a stop of the session: its pid goes to this file.
    parser.add_argument("--gpu-orphan", default="")
    # The host's stack: a file naming its CUDA version, which a pivot (an upgrade) rewrites.
    # Below --crash-below-cuda the server prints --crash-lines' lines and exits, as a
    # library without this GPU's arch in that CUDA's build does.
    parser.add_argument("--stack", default="")
    parser.add_argument("--crash-below-cuda", type=float, default=0.0)
    parser.add_argument("--crash-lines", default="")
    args = parser.parse_args()

    say(
        f"server_args=ServerArgs(model_path='{args.model_path}', host='{args.host}', "
        f"port={args.port}, tp_size={args.tp}, "
        f"enable_torch_symm_mem={args.enable_torch_symm_mem}, api_key='sk-secret-123')"
    )
    # Like sglang's scheduler and detokenizer: processes of the server's own.
    children = [
        subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
        for _ in range(args.children)
    ]
    say("Load weight begin. avail mem=79.10 GB")
    if args.gpu_state:
        hold_gpu_memory(args.gpu_state, args.gpu_mib, args.gpu_orphan)
    time.sleep(args.start_delay)
    cuda = ""
    if args.stack:
        with open(args.stack) as stack:
            cuda = stack.read().strip()
    if cuda:
        say(f"CUDA runtime version: {cuda}")
    if args.crash_lines and (not cuda or float(cuda) < args.crash_below_cuda):
        with open(args.crash_lines) as lines:
            sys.stdout.write(lines.read())
        sys.stdout.flush()
        for child in children:
            child.kill()
        sys.exit(1)
    if args.mode == "crash":
        say("Scheduler hit an exception: Traceback (most recent call last):")
        sys.stdout.write(
            "Traceback (most recent call last):\n"
            '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2989, in run\n'
            "    self.event_loop()\n"
            "KeyError: 12\n"
        )
        sys.stdout.flush()
        for child in children:
            child.kill()
        sys.exit(3)
    if args.mode == "hang":
        say("Capture cuda graph begin. This can take up to several minutes.")
        while True:
            time.sleep(1)
    if args.mode == "ignore-term":
        signal.signal(signal.SIGTERM, lambda *_: say("SIGTERM received; ignoring it"))

    state = {"healthy": False, "requests": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *values: object) -> None:
            say(f"INFO:     {self.address_string()} - {format % values}")

        def _answer(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._answer(200 if state["healthy"] else 503, {})
            else:
                self._answer(404, {"detail": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            state["requests"] += 1
            if args.mode == "die-on-request" and state["requests"] > args.die_after:
                sys.stdout.write(
                    "Traceback (most recent call last):\n"
                    '  File "/sgl/python/sglang/srt/layers/attention.py", line 41, in forward\n'
                    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                )
                sys.stdout.flush()
                os._exit(1)
            self._answer(
                200, {"text": "x" * args.tokens, "usage": {"completion_tokens": args.tokens}}
            )

    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    say(f"INFO:     Started server process [{os.getpid()}]")
    say("INFO:     Waiting for application startup.")
    time.sleep(args.health_delay)
    state["healthy"] = True
    say("INFO:     Application startup complete.")
    say(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    say("The server is fired up and ready to roll!")
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(repr(time.time()))
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
