"""A real OpenSSH sshd on a free loopback port, with its own host key, client key and config."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
# What sshd gives a session without SetEnv; the fixture puts its own bin folder first.
SESSION_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip


@dataclass
class Sshd:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    alias: str = "gpu-box"

    @property
    def host_public_key(self) -> str:
        return (self.directory / "host_key.pub").read_text().split()[1]

    @property
    def host_fingerprint(self) -> str:
        out = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", str(self.directory / "host_key.pub")],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        return out.stdout.split()[1]

    @property
    def ssh_config(self) -> Path:
        return self.directory / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.directory / "known_hosts"

    @property
    def trusted_hosts(self) -> Path:
        return self.directory / "trusted_hosts"

    @property
    def bin(self) -> Path:
        """First on the PATH of the sessions' commands: a test's stand-in programs
        (its nvidia-smi) go here. Empty at first, like a host without them."""
        return self.directory / "bin"

    def trust(self) -> None:
        key = (self.directory / "host_key.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key[0]} {key[1]}\n")

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        out = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in out.stdout.split()]

    def stop(self) -> None:
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_sshd(directory: Path, *, max_sessions: int = 10) -> Sshd:
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    keygen(directory / "host_key")
    keygen(directory / "client_key")
    shutil.copy(directory / "client_key.pub", directory / "authorized_keys")
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
    (directory / "bin").mkdir(exist_ok=True)
    port = free_port()
    (directory / "sshd_config").write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {directory / 'host_key'}\n"
        f"PidFile {directory / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {directory / 'authorized_keys'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "UsePAM no\nStrictModes no\nPermitRootLogin yes\nLogLevel ERROR\n"
        f"MaxSessions {max_sessions}\nMaxStartups 100:30:200\n"
        "ClientAliveInterval 0\n"
        f'SetEnv "PATH={directory / "bin"}:{SESSION_PATH}"\n'
    )
    process = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(directory / "sshd_config")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                err = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"sshd did not start: {err}") from None
            time.sleep(0.05)
    server = Sshd(directory, port, process)
    server.ssh_config.write_text(
        f"Host {server.alias}\n"
        "  HostName 127.0.0.1\n"
        f"  Port {port}\n"
        f"  User {os.environ.get('USER', 'root')}\n"
        f"  IdentityFile {directory / 'client_key'}\n"
    )
    server.trust()
    return server
