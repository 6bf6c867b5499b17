"""Shared by the runner's tests: stand-in commands, host links, process checks."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli import clean_env
from tests.conftest import OWNER_TOKEN
from tests.sshd import Sshd, free_port

STANDIN = Path(__file__).resolve().parent / "standin"


def server_command(port: int, *extra: str) -> str:
    return f"{sys.executable} {STANDIN / 'server.py'} --port {port} " + " ".join(extra)


def bench_command(port: int, *extra: str) -> str:
    return f"{sys.executable} {STANDIN / 'bench.py'} --port {port} " + " ".join(extra)


def served_env(sshd: Sshd, database_url: str, runs_root: Path) -> dict[str, str]:
    """A `campaign-dash serve` environment whose GPU host is the test sshd."""
    return {
        **clean_env(),
        "CAMPAIGN_DASH_DATABASE_URL": database_url,
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_SSH_CONFIG": str(sshd.ssh_config),
        "CAMPAIGN_DASH_SSH_KNOWN_HOSTS": str(sshd.known_hosts),
        "CAMPAIGN_DASH_TRUSTED_HOSTS_FILE": str(sshd.trusted_hosts),
        "CAMPAIGN_DASH_SSH_AGENT": "false",
        "CAMPAIGN_DASH_RUNS_ROOT": str(runs_root),
    }


class StandInGPUs:
    """The stand-in nvidia-smi's state (tests/standin/nvidia_smi.py): GPUs, and the processes
    that hold their memory while they live. `install` puts it on a PATH as `nvidia-smi`."""

    def __init__(self, directory: Path, *gpus: dict[str, Any]) -> None:
        self.directory = directory
        (directory / "apps").mkdir(parents=True, exist_ok=True)
        self.gpus = list(gpus) or [{"index": 0, "memory_total": 143771, "memory_used": 0}]
        for gpu in self.gpus:
            gpu.setdefault("uuid", f"GPU-{gpu['index']:08x}-39c3-6e6a-ceb6-3d4d06d7e93f")
        self.write()

    def write(self, fail: dict[str, Any] | None = None) -> None:
        body = json.dumps({"gpus": self.gpus, "fail": fail})
        (self.directory / "gpus.json.tmp").write_text(body)
        os.replace(self.directory / "gpus.json.tmp", self.directory / "gpus.json")

    def install(self, bin_dir: Path) -> Path:
        bin_dir.mkdir(parents=True, exist_ok=True)
        program = bin_dir / "nvidia-smi"
        argv = [sys.executable, str(STANDIN / "nvidia_smi.py"), "--state", str(self.directory)]
        program.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n')
        program.chmod(0o755)
        return program

    def hold(
        self, pid: int, mib: int | str, *, gpu: int = 0, visible: bool = True, name: str = ""
    ) -> None:
        """Process `pid` holds `mib` of the GPU's memory until it ends; `visible` False: it
        is in another PID namespace (nvidia-smi in a container does not list it)."""
        app = {"pid": pid, "gpu": gpu, "used_memory": mib, "visible": visible,
               "process_name": name}  # fmt: skip
        (self.directory / "apps" / f"{pid}.json").write_text(json.dumps(app))

    def gpu_state_args(self, mib: int) -> tuple[str, ...]:
        """The stand-in server's options to hold `mib` on GPU 0 while it runs."""
        return ("--gpu-state", str(self.directory), "--gpu-mib", str(mib))


def session_processes(sid: int) -> list[str]:
    """`pgrep -s SID`: what is left of a run's session on the host (this machine)."""
    out = subprocess.run(["pgrep", "-s", str(sid)], capture_output=True, text=True, check=False)
    return out.stdout.split()


def port_listening(port: int) -> bool:
    out = subprocess.run(
        ["ss", "-Htln", f"sport = :{port}"], capture_output=True, text=True, check=False
    )
    return bool(out.stdout.strip())


__all__ = [
    "STANDIN",
    "StandInGPUs",
    "bench_command",
    "free_port",
    "port_listening",
    "served_env",
    "server_command",
    "session_processes",
    "standin_interpreter",
]


def standin_interpreter(directory: Path, packages: dict[str, str]) -> Path:
    """A `python3` whose installed packages are `packages` (name: version) as far as
    importlib.metadata can tell: this interpreter with a site directory of dist-info
    metadata on its path. What the runner asks a launch's interpreter before launching."""
    site = directory / "site"
    for name, version in packages.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    program = directory / "bin" / "python3"
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(
        f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(site))} exec {shlex.quote(sys.executable)} "$@"\n'
    )
    program.chmod(0o755)
    return program
