"""SSH connections, as OpenSSH would make them: ~/.ssh/config (Host aliases, HostName, User,
Port, IdentityFile, ProxyJump), ssh-agent, the dashboard's known_hosts then ~/.ssh/known_hosts.
One connection per host, shared by the channels on it, another one past sshd's MaxSessions.
The app owns its pool (app/tailing/factory.py): two apps in one process share nothing.
"""

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from app.tailing.host_keys import HostKeyNotTrusted, RefuseAndRemember
from app.tailing.sources import SourceURL, check_host_name, check_user_name

CHANNELS_PER_CONNECTION = 10  # sshd's MaxSessions default
CONNECT_TIMEOUT_S = 10.0
WINDOW_BYTES = 8 << 20  # measured: a bigger window slows loopback down (LIMITS.md)
MAX_PACKET_BYTES = 256 << 10
# paramiko's own rekey every 2^29 bytes collides with channel closes and kills long
# streams (paramiko #822): leave rekeying to the server.
REKEY_NEVER = 1 << 62
CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes256-ctr")


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
    # The last guard before paramiko hands the name to a shell (`Match exec "... %h"`): a
    # source stored before the API refused such names, or one built without parse_source.
    check_host_name(url.host or "")
    if url.user is not None:
        check_user_name(url.user)
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


class Connection:
    def __init__(
        self, client: paramiko.SSHClient, via: "tuple[Target, Connection] | None" = None
    ) -> None:
        self.client = client
        self.channels = 0
        self.via = via  # the ProxyJump connection this one tunnels through

    @property
    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()

    def open(self, command: str) -> paramiko.Channel:
        """A channel running `command`, its stdin left open for the caller to write."""
        transport = self.client.get_transport()
        assert transport is not None
        channel = transport.open_session(timeout=CONNECT_TIMEOUT_S)
        try:
            channel.exec_command(command)
        except BaseException:
            channel.close()
            raise
        return channel

    def start(self, command: str, code: bytes) -> paramiko.Channel:
        """A channel running `command` with the program's code on its stdin (then closed)."""
        transport = self.client.get_transport()
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


class ConnectionPool:
    """One SSH connection per host, shared by its channels, a new one past MaxSessions."""

    def __init__(self, options: SSHOptions) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._connections: dict[Target, list[Connection]] = {}
        self._connecting: dict[Target, threading.Lock] = {}

    def acquire(self, target: Target) -> Connection:
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
            connection = Connection(*self._connect(target))
            connection.channels = 1
            with self._lock:
                self._connections.setdefault(target, []).append(connection)
            return connection

    def release(self, target: Target, connection: Connection, *, broken: bool = False) -> None:
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
    ) -> tuple[paramiko.SSHClient, tuple[Target, Connection] | None]:
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
        client.set_missing_host_key_policy(RefuseAndRemember())
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
