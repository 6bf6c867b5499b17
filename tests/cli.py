"""Running the real `campaign-dash` command in tests: one-shot runs and serving processes."""

import os
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


class Served(subprocess.Popen[str]):
    """A `campaign-dash serve` process whose output goes to a file: a pipe nobody reads
    fills with access-log lines and then stalls the server."""

    output_path: Path

    def printed(self) -> str:
        return self.output_path.read_text(errors="replace")


def launch(env: dict[str, str], cwd: Path, port: int) -> Served:
    output_path = cwd / f"serve-{port}-{time.monotonic_ns()}.out"
    with output_path.open("w") as output:
        process = Served(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            env=env,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    process.output_path = output_path
    return process


def wait_until_serving(process: Served, port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited: {process.printed()}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/login", timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def interrupt(process: Served) -> str:
    """Ctrl-C; what the process printed."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process.printed()


@contextmanager
def serving(env: dict[str, str], cwd: Path, port: int) -> Iterator[Served]:
    process = launch(env, cwd, port)
    try:
        wait_until_serving(process, port)
        yield process
    finally:
        if process.returncode is None:
            interrupt(process)


def clean_env() -> dict[str, str]:
    """This process's environment without any CAMPAIGN_DASH_ setting: a user's shell (whose
    dashboards' runtime files are the test worker's own, conftest's)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CAMPAIGN_DASH_") or k == "CAMPAIGN_DASH_RUNTIME_DIR"
    }
