"""Shared by the runner's tests: stand-in commands, host links, process checks."""

import subprocess
import sys
from pathlib import Path

from tests.sshd import free_port

STANDIN = Path(__file__).resolve().parent / "standin"


def server_command(port: int, *extra: str) -> str:
    return f"{sys.executable} {STANDIN / 'server.py'} --port {port} " + " ".join(extra)


def bench_command(port: int, *extra: str) -> str:
    return f"{sys.executable} {STANDIN / 'bench.py'} --port {port} " + " ".join(extra)


def session_processes(sid: int) -> list[str]:
    """`pgrep -s SID`: what is left of a run's session on the host (this machine)."""
    out = subprocess.run(["pgrep", "-s", str(sid)], capture_output=True, text=True, check=False)
    return out.stdout.split()


def port_listening(port: int) -> bool:
    out = subprocess.run(
        ["ss", "-Htln", f"sport = :{port}"], capture_output=True, text=True, check=False
    )
    return bool(out.stdout.strip())


__all__ = ["bench_command", "free_port", "port_listening", "server_command", "session_processes"]
