"""ssh://[user@]host[:port]/abs/path: the follower run on the remote host, over a channel of
the app's connection pool (ssh_pool.py); and one-shot helper programs (show code) the same way.
paramiko lives in this module, ssh_pool.py and host_keys.py only.
"""

import json
import random
import re
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from app.tailing import follower, wire
from app.tailing.events import Data, Event, Opened, Rotated, State, from_follower
from app.tailing.host_keys import HostKeyNotTrusted, host_key_refusal
from app.tailing.sources import BadSource, HostUnavailable, SourceURL
from app.tailing.ssh_pool import Connection, ConnectionPool, Target, resolve
from app.tailing.status import TailStatus

# The remote follower writes at least once a second; this long without a byte means the
# peer is gone (paramiko's keepalive only sends, it never notices a dead peer).
DEAD_AFTER_S = 15.0
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.5, 60.0
UNTRUSTED_RETRY_S = 10.0
# The follower frames its events with wire.py's encoder: both go, in that order.
FOLLOWER_PROGRAM = Path(wire.__file__).read_bytes() + b"\n" + Path(follower.__file__).read_bytes()
PROGRAM_TIMEOUT_S = 20.0  # a one-shot program: connecting included


def program_command(args: Sequence[str]) -> str:
    """A remote Python program reads its code from stdin; every argument is quoted."""
    return " ".join(["exec python3 -", *(shlex.quote(a) for a in args)])


def remote_command(path: str, offset: int, identity: str | None) -> str:
    return program_command([path, str(offset), identity or "-"])


@dataclass(frozen=True)
class ProgramResult:
    status: int | None
    stdout: bytes
    stderr: str

    def answer(self) -> dict[str, Any] | None:
        """The program's JSON object: its last line (a login script may print before it),
        when it exited 0; None otherwise."""
        last = self.stdout.rstrip(b"\n").rpartition(b"\n")[2]
        try:
            found = json.loads(last) if self.status == 0 else None
        except ValueError:
            return None
        return found if isinstance(found, dict) else None

    def why_not(self, fallback: str) -> str:
        """What the program said last on stderr, as the reason it gave no answer."""
        return self.stderr.splitlines()[-1] if self.stderr else fallback


def _frames(channel: paramiko.Channel, stop: threading.Event) -> Iterator[tuple[object, ...]]:
    """The follower's frames from a channel, until it ends or `stop`; a peer silent for
    DEAD_AFTER_S is gone (ConnectionError)."""
    decoder = wire.Decoder()
    channel.settimeout(0.5)
    deadline = time.monotonic() + DEAD_AFTER_S
    while not stop.is_set():
        try:
            data = channel.recv(1 << 20)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise ConnectionError(f"no word from the host in {DEAD_AFTER_S:.0f} s") from None
            continue
        if not data:
            return
        deadline = time.monotonic() + DEAD_AFTER_S
        decoder.feed(data)
        yield from decoder.frames()


class SSHSource:
    def __init__(self, url: SourceURL, pool: ConnectionPool) -> None:
        self.url = url
        self.pool = pool

    def target(self) -> Target:
        return resolve(self.url, self.pool.options)

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        failures = 0
        while not stop.is_set():
            yield State(TailStatus.connecting, f"connecting to {self.url.host_label}")
            outcome: State | None = None
            try:
                for event in self._session(offset, identity, stop):
                    if isinstance(event, Data):
                        offset = event.offset + len(event.data)
                        failures = 0
                    elif isinstance(event, Rotated):
                        offset, identity = 0, event.identity or identity
                    elif isinstance(event, Opened):
                        identity = event.identity
                    elif isinstance(event, State) and event.state == TailStatus.connected:
                        failures = 0  # the host answered: the next drop starts the backoff anew
                    yield event
            except HostKeyNotTrusted as error:
                state, message, known = host_key_refusal(error)
                if known is None:
                    message += ": trust it to follow this log"
                yield State(
                    state,
                    message,
                    host_key=error.key_line,
                    known_host_key=known,
                    infrastructure=True,
                )
                stop.wait(UNTRUSTED_RETRY_S)
                continue
            except BadSource as error:
                # A host name no shell may see (a source stored before the API refused
                # it): retrying cannot help.
                yield State(TailStatus.error, str(error), infrastructure=True)
                return
            except paramiko.AuthenticationException as error:
                outcome = State(TailStatus.authentication_failed, str(error), infrastructure=True)
            except (OSError, EOFError, paramiko.SSHException, ConnectionError) as error:
                lost = isinstance(error, ConnectionError | EOFError) or "closed" in str(error)
                outcome = State(
                    TailStatus.connection_lost if lost else TailStatus.host_unreachable,
                    _reason(error),
                    infrastructure=True,
                )
            if stop.is_set():
                return
            failures += 1
            delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (failures - 1))
            delay *= random.uniform(0.8, 1.2)  # jitter: tails of one host do not stampede
            # The cause stays the state ("authentication failed"); the retry is its message.
            cause = outcome or State(TailStatus.connection_lost, "the connection ended")
            yield State(
                cause.state,
                f"{cause.message}; reconnecting in {max(1, round(delay))} s",
                retry_in=delay,
                infrastructure=True,
            )
            stop.wait(delay)

    def _session(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        target = self.target()
        connection = self.pool.acquire(target)
        broken = False
        channel = None
        try:
            channel = connection.start(
                remote_command(self.url.path, offset, identity), FOLLOWER_PROGRAM
            )
            yield State(TailStatus.connected, f"following {self.url.path} on {self.url.host_label}")
            for frame in _frames(channel, stop):
                yield from_follower(frame)
            if not stop.is_set():
                status = channel.recv_exit_status() if channel.exit_status_ready() else None
                stderr = channel.recv_stderr(4096).decode("utf-8", "replace").strip()
                if status == 127:
                    yield State(
                        TailStatus.error, "python3 not found on the host: the follower needs it"
                    )
                    raise ConnectionError("remote follower could not start")
                raise ConnectionError(stderr or "the remote follower stopped")
        except ConnectionError:
            broken = True  # a silent peer may still look connected: drop the connection
            raise
        except (OSError, EOFError, paramiko.SSHException):
            broken = not connection.alive
            raise
        finally:
            if channel is not None:
                channel.close()
            self.pool.release(target, connection, broken=broken)

    def open_program(self, code: bytes, args: Sequence[str]) -> "ProgramSession":
        """A program kept running on the host, asked a line at a time (ProgramSession)."""
        return ProgramSession(self, code, args)

    def run_program(
        self,
        code: bytes,
        args: Sequence[str],
        *,
        max_output: int,
        timeout_s: float = PROGRAM_TIMEOUT_S,
    ) -> ProgramResult:
        """Run a stdlib-only Python program on the host over the tails' pool: its code on
        stdin, its arguments quoted (so no shell reads them), its output capped. A host that
        cannot be reached raises HostUnavailable with the state a tail would show."""
        deadline = time.monotonic() + timeout_s
        target = self.target()
        connection = _acquire(self.pool, target)
        broken = False
        channel = None
        try:
            channel = connection.start(program_command(args), code)
            return _collect(channel, max_output, deadline)
        except (OSError, EOFError, paramiko.SSHException) as error:
            broken = not connection.alive
            raise HostUnavailable(TailStatus.connection_lost, _reason(error)) from None
        finally:
            if channel is not None:
                channel.close()
            self.pool.release(target, connection, broken=broken)


# Reads the program's code (its length first, as an argument) from stdin and runs it; what
# follows on stdin is the program's to read: requests, one a line.
BOOTSTRAP = (
    "import sys;n=int(sys.argv.pop(1));exec(compile(sys.stdin.buffer.read(n),'<runner>','exec'))"
)


def session_command(code: bytes, args: Sequence[str]) -> str:
    """A long-lived program: its code, then its requests, on stdin; arguments quoted."""
    quoted = (shlex.quote(a) for a in ("-c", BOOTSTRAP, str(len(code)), *args))
    return " ".join(["exec python3", *quoted])


class ProgramSession:
    """A program kept running on the host over one channel of the pool: a line asked,
    a line answered. Broken (HostUnavailable) when the host stops answering."""

    def __init__(self, source: "SSHSource", code: bytes, args: Sequence[str]) -> None:
        self._pool = source.pool
        self._target = source.target()
        self._connection = _acquire(self._pool, self._target)
        self._buffer = bytearray()
        self.closed = False
        try:
            self._channel = self._connection.open(session_command(code, args))
            self._channel.sendall(code)
        except (OSError, EOFError, paramiko.SSHException) as error:
            self.close(broken=True)
            raise HostUnavailable(TailStatus.connection_lost, _reason(error)) from None
        self._channel.settimeout(0.5)

    def request(self, line: bytes, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        try:
            self._channel.sendall(line.rstrip(b"\n") + b"\n")
            while (newline := self._buffer.find(b"\n")) < 0:
                if time.monotonic() > deadline:
                    raise HostUnavailable(TailStatus.no_answer, "the host did not answer in time")
                try:
                    data = self._channel.recv(1 << 16)
                except TimeoutError:
                    continue
                if not data:
                    status = self._channel.recv_exit_status()
                    if status == 127:
                        raise HostUnavailable(TailStatus.error, "python3 not found on the host")
                    stderr = self._channel.recv_stderr(4096).decode("utf-8", "replace")
                    raise HostUnavailable(TailStatus.connection_lost, stderr.strip() or "it ended")
                self._buffer += data
        except HostUnavailable:
            self.close(broken=True)
            raise
        except (OSError, EOFError, paramiko.SSHException) as error:
            self.close(broken=True)
            raise HostUnavailable(TailStatus.connection_lost, _reason(error)) from None
        reply = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return reply

    def close(self, *, broken: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        channel = getattr(self, "_channel", None)
        if channel is not None:
            channel.close()
        self._pool.release(self._target, self._connection, broken=broken)


def _acquire(pool: ConnectionPool, target: Target) -> Connection:
    try:
        return pool.acquire(target)
    except HostKeyNotTrusted as error:
        state, message, _ = host_key_refusal(error)
        raise HostUnavailable(state, message) from None
    except paramiko.AuthenticationException as error:
        raise HostUnavailable(TailStatus.authentication_failed, str(error)) from None
    except (OSError, EOFError, paramiko.SSHException) as error:
        raise unreachable(target.hostname, error) from None


# The resolver's "no such name" (EAI_NODATA, "no address for this name", where it exists)
_NO_SUCH_NAME = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def unreachable(host: str, error: BaseException) -> HostUnavailable:
    """A host that could not be reached. A name the resolver says no host has (a typo, not a
    network that is down: that is EAI_AGAIN) will not come back by waiting."""
    if isinstance(error, socket.gaierror) and error.errno in _NO_SUCH_NAME:
        return HostUnavailable(
            TailStatus.host_unreachable, f"no host is named {host!r} ({_reason(error)})",
            lasting=True,
        )  # fmt: skip
    return HostUnavailable(TailStatus.host_unreachable, _reason(error))


def _reason(error: BaseException) -> str:
    # paramiko's "[Errno None] Unable to connect...": the number says nothing.
    return re.sub(r"^\[Errno [^\]]*\] ", "", str(error)) or type(error).__name__


def _collect(channel: paramiko.Channel, max_output: int, deadline: float) -> ProgramResult:
    channel.settimeout(0.5)
    stdout = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise HostUnavailable(TailStatus.no_answer, "the host did not answer in time")
        try:
            data = channel.recv(1 << 16)
        except TimeoutError:
            continue
        if not data:
            break
        stdout += data
        if len(stdout) > max_output:
            raise HostUnavailable(
                TailStatus.error, f"the host answered more than {max_output} bytes"
            )
    if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
        raise HostUnavailable(TailStatus.no_answer, "the host did not say how the program ended")
    stderr = channel.recv_stderr(4096) if channel.recv_stderr_ready() else b""
    return ProgramResult(
        channel.recv_exit_status(), bytes(stdout), stderr.decode("utf-8", "replace").strip()
    )
