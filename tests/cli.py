"""Running the real `campaign-dash` command in tests: one-shot runs and serving processes."""

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def launch(env: dict[str, str], cwd: Path, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_until_serving(process: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited: {process.stdout.read() if process.stdout else ''}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def interrupt(process: subprocess.Popen[str]) -> str:
    """Ctrl-C; what the process printed."""
    process.send_signal(signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output or ""


@contextmanager
def serving(env: dict[str, str], cwd: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    process = launch(env, cwd, port)
    try:
        wait_until_serving(process, port)
        yield process
    finally:
        if process.returncode is None:
            interrupt(process)
