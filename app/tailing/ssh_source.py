"""ssh://[user@]host[:port]/abs/path: the follower run on the remote host over paramiko.

As OpenSSH would: ~/.ssh/config (Host aliases, HostName, User, Port, IdentityFile,
ProxyJump), ssh-agent, ~/.ssh/known_hosts plus the dashboard's own known_hosts. Unknown
or changed host keys are refused, never added: the owner trusts a key explicitly.
One connection per host, shared by the tails on it (a channel each), another one when
sshd's MaxSessions is reached. paramiko lives in this module only.
"""

import base64
import hashlib
import random
import re
import shlex
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from app.tailing import follower
from app.tailing.events import Data, Event, Opened, Rotated, State
from app.tailing.file_source import translate
from app.tailing.sources import HostUnavailable, SourceURL

CHANNELS_PER_CONNECTION = 10  # sshd's MaxSessions default
CONNECT_TIMEOUT_S = 10.0
# The remote follower writes at least once a second; this long without a byte means the
# peer is gone (paramiko's keepalive only sends, it never notices a dead peer).
DEAD_AFTER_S = 15.0
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.5, 60.0
UNTRUSTED_RETRY_S = 10.0
WINDOW_BYTES = 8 << 20  # measured: a bigger window slows loopback down (LIMITS.md)
MAX_PACKET_BYTES = 256 << 10
# paramiko's own rekey every 2^29 bytes collides with channel closes and kills long
# streams (paramiko #822): leave rekeying to the server.
REKEY_NEVER = 1 << 62
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr")
FOLLOWER_CODE = Path(follower.__file__).read_bytes()
PROGRAM_TIMEOUT_S = 20.0  # a one-shot program: connecting included


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class HostKeyNotTrusted(Exception):
    """The host offered `key`; `known` is the different key on record for it, if any."""

    def __init__(
        self, hostname: str, key: paramiko.PKey, known: paramiko.PKey | None = None
    ) -> None:
        self.hostname, self.key, self.known = hostname, key, known
        what = "changed" if known is not None else "not trusted"
        super().__init__(f"host key {what}: {key.get_name()} {fingerprint(key)}")


class _RefuseAndRemember(paramiko.MissingHostKeyPolicy):
    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        raise HostKeyNotTrusted(hostname, key)


@dataclass(frozen=True)
class Target:
    """Where to connect, after ~/.ssh/config: the key of the connection pool."""

    hostname: str
    port: int
    username: str | None
    identity_files: tuple[str, ...]
    proxy_jump: str | None
    known_hosts_name: str  # "host" or "[host]:port", as known_hosts spells it


@dataclass
class SSHOptions:
    config_path: Path = Path.home() / ".ssh" / "config"
    known_hosts: tuple[Path, ...] = (Path.home() / ".ssh" / "known_hosts",)
    trusted_hosts_file: Path = Path("campaign-dash.known_hosts")
    use_agent: bool = True


def resolve(url: SourceURL, options: SSHOptions) -> Target:
    config = paramiko.SSHConfig()
    if options.config_path.is_file():
        config = paramiko.SSHConfig.from_path(str(options.config_path))
    found: dict[str, Any] = config.lookup(url.host or "")
    hostname = found.get("hostname", url.host or "")
    port = url.port or int(found.get("port", 22))
    username = url.user or found.get("user")
    files = tuple(str(Path(f).expanduser()) for f in found.get("identityfile", []))
    jump = found.get("proxyjump")
    name = hostname if port == 22 else f"[{hostname}]:{port}"
    return Target(hostname, port, username, files, jump if jump != "none" else None, name)


def trust_host_key(options: SSHOptions, target: Target, key_line: str) -> None:
    """Write an offered host key into the dashboard's own known_hosts (an owner's action),
    in place of any key it held for that host name, and for that name only. The file is
    read before ~/.ssh/known_hosts, so a replaced key overrides an old one kept there
    (that file is the user's: the dashboard never writes it)."""
    path = options.trusted_hosts_file
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = [
        line
        for line in (path.read_text().splitlines() if path.is_file() else [])
        if line.split(" ", 1)[0] != target.known_hosts_name
    ]
    kept.append(f"{target.known_hosts_name} {key_line.strip()}")
    # Written whole and renamed: a tail reading the file meanwhile sees the old or the new.
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(kept) + "\n")
    temporary.replace(path)


class _Connection:
    def __init__(
        self, client: paramiko.SSHClient, via: "tuple[Target, _Connection] | None" = None
    ) -> None:
        self.client = client
        self.channels = 0
        self.via = via  # the ProxyJump connection this one tunnels through

    @property
    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()


class ConnectionPool:
    """One SSH connection per host, shared by its tails, a new one past MaxSessions."""

    def __init__(self, options: SSHOptions) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._connections: dict[Target, list[_Connection]] = {}
        self._connecting: dict[Target, threading.Lock] = {}

    def acquire(self, target: Target) -> _Connection:
        # One connection attempt per host at a time: tails starting together share it.
        with self._lock:
            connecting = self._connecting.setdefault(target, threading.Lock())
        with connecting:
            with self._lock:
                pool = [c for c in self._connections.get(target, []) if c.alive]
                self._connections[target] = pool
                for connection in pool:
                    if connection.channels < CHANNELS_PER_CONNECTION:
                        connection.channels += 1
                        return connection
            connection = _Connection(*self._connect(target))
            connection.channels = 1
            with self._lock:
                self._connections.setdefault(target, []).append(connection)
            return connection

    def release(self, target: Target, connection: _Connection, *, broken: bool = False) -> None:
        with self._lock:
            connection.channels -= 1
            if broken or (connection.channels <= 0 and not connection.alive):
                pool = self._connections.get(target, [])
                if connection in pool:
                    pool.remove(connection)
                close = True
            else:
                close = False
        if close:
            connection.client.close()
            if connection.via is not None:
                self.release(*connection.via)

    def close_all(self) -> None:
        with self._lock:
            connections = [c for pool in self._connections.values() for c in pool]
            self._connections.clear()
        for connection in connections:
            connection.client.close()

    def _connect(
        self, target: Target
    ) -> tuple[paramiko.SSHClient, tuple[Target, _Connection] | None]:
        sock, via = None, None
        if target.proxy_jump:
            # "[user@]host[:port]", the first hop when several are given.
            hop = target.proxy_jump.split(",")[0]
            user, _, hostport = hop.rpartition("@")
            host, _, port = hostport.partition(":")
            jump_url = SourceURL(
                "ssh", "/", host=host, user=user or None, port=int(port) if port.isdigit() else None
            )
            jump = resolve(jump_url, self.options)
            jump_connection = self.acquire(jump)
            via = (jump, jump_connection)
            transport = jump_connection.client.get_transport()
            assert transport is not None
            sock = transport.open_channel(
                "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0)
            )
        client = paramiko.SSHClient()
        # The owner's explicit choices first: paramiko takes the first key of a type it finds.
        for path in (self.options.trusted_hosts_file, *self.options.known_hosts):
            if path.is_file():
                client.load_host_keys(str(path))
        client.set_missing_host_key_policy(_RefuseAndRemember())
        try:
            client.connect(
                target.hostname,
                port=target.port,
                username=target.username,
                key_filename=list(target.identity_files) or None,
                allow_agent=self.options.use_agent,
                look_for_keys=not target.identity_files,
                timeout=CONNECT_TIMEOUT_S,
                banner_timeout=CONNECT_TIMEOUT_S,
                auth_timeout=CONNECT_TIMEOUT_S,
                sock=sock,
                transport_factory=_tuned_transport,
            )
        except BaseException as error:
            client.close()
            if via is not None:
                self.release(*via)
            if isinstance(error, paramiko.BadHostKeyException):
                raise HostKeyNotTrusted(
                    target.known_hosts_name, error.key, error.expected_key
                ) from None
            raise
        return client, via


def _tuned_transport(sock: Any, **kwargs: Any) -> paramiko.Transport:
    transport = paramiko.Transport(
        sock, default_window_size=WINDOW_BYTES, default_max_packet_size=MAX_PACKET_BYTES, **kwargs
    )
    options = transport.get_security_options()
    options.ciphers = tuple(c for c in CIPHERS if c in options.ciphers) or options.ciphers
    transport.packetizer.REKEY_BYTES = REKEY_NEVER
    transport.packetizer.REKEY_PACKETS = REKEY_NEVER
    return transport


_default_pool: ConnectionPool | None = None
_default_pool_lock = threading.Lock()


def default_pool(options: SSHOptions) -> ConnectionPool:
    global _default_pool
    with _default_pool_lock:
        if _default_pool is None or _default_pool.options != options:
            _default_pool = ConnectionPool(options)
        return _default_pool


def close_pools() -> None:
    with _default_pool_lock:
        if _default_pool is not None:
            _default_pool.close_all()


def program_command(args: Sequence[str]) -> str:
    """A remote Python program reads its code from stdin; every argument is quoted."""
    return " ".join(["exec python3 -", *(shlex.quote(a) for a in args)])


def remote_command(path: str, offset: int, identity: str | None) -> str:
    return program_command([path, str(offset), identity or "-"])


def host_key_refusal(error: HostKeyNotTrusted) -> tuple[str, str, str | None]:
    """The state, the sentence and the known key's fingerprint of a refused host key."""
    offered = f"{error.key.get_name()} {fingerprint(error.key)}"
    if error.known is None:
        return "host key not trusted", f"host key not trusted ({offered})", None
    known = f"{error.known.get_name()} {fingerprint(error.known)}"
    message = f"host key changed: the host now offers {offered}, known until now as {known}"
    return "host key changed", message, known


@dataclass(frozen=True)
class ProgramResult:
    status: int | None
    stdout: bytes
    stderr: str


class _FrameReader:
    """Parses the follower's frames from a channel; notices a silent (dead) peer."""

    def __init__(self, channel: paramiko.Channel, stop: threading.Event) -> None:
        self.channel = channel
        self.stop = stop
        self.buffer = bytearray()
        channel.settimeout(0.5)

    def _fill(self) -> bool:
        deadline = time.monotonic() + DEAD_AFTER_S
        while not self.stop.is_set():
            try:
                data = self.channel.recv(1 << 20)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise ConnectionError(
                        f"no word from the host in {DEAD_AFTER_S:.0f} s"
                    ) from None
                continue
            if not data:
                return False
            self.buffer += data
            return True
        return False

    def events(self) -> Iterator[tuple[Any, ...]]:
        while True:
            newline = self.buffer.find(b"\n")
            while newline < 0:
                if not self._fill():
                    return
                newline = self.buffer.find(b"\n")
            header = bytes(self.buffer[:newline]).decode("utf-8", "replace")
            del self.buffer[: newline + 1]
            parts = header.split(" ", 2)
            if parts[0] == "D":
                offset, length = int(parts[1]), int(parts[2])
                while len(self.buffer) < length:
                    if not self._fill():
                        return
                data = bytes(self.buffer[:length])
                del self.buffer[:length]
                yield ("D", offset, data)
            elif parts[0] == "E":
                yield ("E", int(parts[1]), parts[2] if len(parts) > 2 else "")
            elif parts[0] == "N":
                yield ("N", header[2:])  # a sentence: spaces and all
            else:
                yield tuple(parts)


class SSHSource:
    def __init__(self, url: SourceURL, options: SSHOptions | None = None) -> None:
        self.url = url
        self.options = options or SSHOptions()
        self.pool = default_pool(self.options)

    def target(self) -> Target:
        return resolve(self.url, self.options)

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        failures = 0
        while not stop.is_set():
            yield State("connecting", f"connecting to {self.url.host_label}")
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
                    elif isinstance(event, State) and event.state == "connected":
                        failures = 0  # the host answered: the next drop starts the backoff anew
                    yield event
            except HostKeyNotTrusted as error:
                key_line = f"{error.key.get_name()} {error.key.get_base64()}"
                state, message, known = host_key_refusal(error)
                if known is None:
                    message += ": trust it to follow this log"
                yield State(
                    state, message, host_key=key_line, known_host_key=known, infrastructure=True
                )
                stop.wait(UNTRUSTED_RETRY_S)
                continue
            except paramiko.AuthenticationException as error:
                outcome = State("authentication failed", str(error), infrastructure=True)
            except (OSError, EOFError, paramiko.SSHException, ConnectionError) as error:
                lost = isinstance(error, ConnectionError | EOFError) or "closed" in str(error)
                outcome = State(
                    "connection lost" if lost else "host unreachable",
                    str(error) or type(error).__name__,
                    infrastructure=True,
                )
            if stop.is_set():
                return
            failures += 1
            delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (failures - 1))
            delay *= random.uniform(0.8, 1.2)  # jitter: tails of one host do not stampede
            # The cause stays the state ("authentication failed"); the retry is its message.
            cause = outcome or State("connection lost", "the connection ended")
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
            channel = _start(connection, remote_command(self.url.path, offset, identity),
                             FOLLOWER_CODE)  # fmt: skip
            yield State("connected", f"following {self.url.path} on {self.url.host_label}")
            for raw in _FrameReader(channel, stop).events():
                yield translate(raw)
            if not stop.is_set():
                status = channel.recv_exit_status() if channel.exit_status_ready() else None
                stderr = channel.recv_stderr(4096).decode("utf-8", "replace").strip()
                if status == 127:
                    yield State("error", "python3 not found on the host: the follower needs it")
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
        try:
            connection = self.pool.acquire(target)
        except HostKeyNotTrusted as error:
            state, message, _ = host_key_refusal(error)
            raise HostUnavailable(state, message) from None
        except paramiko.AuthenticationException as error:
            raise HostUnavailable("authentication failed", str(error)) from None
        except (OSError, EOFError, paramiko.SSHException) as error:
            raise HostUnavailable("host unreachable", _reason(error)) from None
        broken = False
        channel = None
        try:
            channel = _start(connection, program_command(args), code)
            return _collect(channel, max_output, deadline)
        except (OSError, EOFError, paramiko.SSHException) as error:
            broken = not connection.alive
            raise HostUnavailable("connection lost", _reason(error)) from None
        finally:
            if channel is not None:
                channel.close()
            self.pool.release(target, connection, broken=broken)


def _start(connection: _Connection, command: str, code: bytes) -> paramiko.Channel:
    """A channel running `command` with the program's code on its stdin (then closed)."""
    transport = connection.client.get_transport()
    assert transport is not None
    channel = transport.open_session(timeout=CONNECT_TIMEOUT_S)
    try:
        channel.exec_command(command)
        channel.sendall(code)
        channel.shutdown_write()
    except BaseException:
        channel.close()
        raise
    return channel


def _reason(error: BaseException) -> str:
    # paramiko's "[Errno None] Unable to connect...": the number says nothing.
    return re.sub(r"^\[Errno [^\]]*\] ", "", str(error)) or type(error).__name__


def _collect(channel: paramiko.Channel, max_output: int, deadline: float) -> ProgramResult:
    channel.settimeout(0.5)
    stdout = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise HostUnavailable("no answer", "the host did not answer in time")
        try:
            data = channel.recv(1 << 16)
        except TimeoutError:
            continue
        if not data:
            break
        stdout += data
        if len(stdout) > max_output:
            raise HostUnavailable("error", f"the host answered more than {max_output} bytes")
    if not channel.status_event.wait(max(0.0, deadline - time.monotonic())):
        raise HostUnavailable("no answer", "the host did not say how the program ended")
    stderr = channel.recv_stderr(4096) if channel.recv_stderr_ready() else b""
    return ProgramResult(
        channel.recv_exit_status(), bytes(stdout), stderr.decode("utf-8", "replace").strip()
    )
