"""Asking a host's runner program something: over the tails' SSH pool for an ssh alias,
as a local subprocess for `local`. Blocking: callers are the runner's threads."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.config import Settings
from app.runner import hostprog
from app.tailing.sources import BadSource, HostUnavailable, SourceURL, parse_source

PROGRAM = Path(hostprog.__file__).read_bytes()
MAX_ANSWER_BYTES = 2 << 20  # a benchmark's output tail, escaped, and a login banner
LOCAL = "local"


class HostAnswerError(Exception):
    """The host's program ran but answered with an error."""


def check_host(host: str) -> str:
    """`local`, an ssh alias or [user@]host[:port]; raises ValueError otherwise."""
    host = host.strip()
    if host == LOCAL:
        return host
    try:
        parse_source(f"ssh://{host}/")
    except BadSource as error:
        raise ValueError(f"not a host: {error}") from None
    return host


class HostLink:
    """One host as the runner sees it."""

    def __init__(self, settings: Settings, host: str) -> None:
        self.settings = settings
        self.host = host
        self.is_local = host == LOCAL

    def log_source(self, path: str) -> str:
        """The log source URL of a file on this host, for the ordinary tailer."""
        return f"file://{path}" if self.is_local else f"ssh://{self.host}{path}"

    def call(self, command: str, args: dict[str, Any], *, timeout_s: float = 30.0) -> Any:
        """Run one subcommand of the host program; its JSON answer. Raises HostUnavailable
        when the host cannot be asked, HostAnswerError when the program says it failed."""
        argv = [command, json.dumps(args)]
        out = self._local(argv, timeout_s) if self.is_local else self._remote(argv, timeout_s)
        # The answer is the last line: a login script may print before it.
        last = out.rstrip(b"\n").rpartition(b"\n")[2]
        try:
            answer = json.loads(last)
        except ValueError:
            raise HostAnswerError(f"{self.host}: an answer the runner cannot read") from None
        if isinstance(answer, dict) and "error" in answer and len(answer) == 1:
            raise HostAnswerError(f"{self.host}: {answer['error']}")
        return answer

    def _local(self, argv: list[str], timeout_s: float) -> bytes:
        try:
            result = subprocess.run(
                [sys.executable, "-", *argv],
                input=PROGRAM,
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HostUnavailable("no answer", "the runner program did not answer") from None
        if result.returncode != 0:
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise HostAnswerError(f"local: {why[-1] if why else 'the runner program failed'}")
        return result.stdout

    def _remote(self, argv: list[str], timeout_s: float) -> bytes:
        from app.tailer import ssh_options
        from app.tailing.ssh_source import SSHSource  # paramiko only when SSH is used

        url = parse_source(f"ssh://{self.host}/")
        source = SSHSource(SourceURL("ssh", "/", url.host, url.user, url.port),
                           ssh_options(self.settings))  # fmt: skip
        result = source.run_program(PROGRAM, argv, max_output=MAX_ANSWER_BYTES, timeout_s=timeout_s)
        if result.status == 127:
            raise HostUnavailable("error", "python3 not found on the host: the runner needs it")
        if result.status != 0:
            why = result.stderr.splitlines()[-1] if result.stderr else "the runner program failed"
            raise HostAnswerError(f"{self.host}: {why}")
        return result.stdout
