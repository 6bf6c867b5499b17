"""A real `campaign-dash serve` on raw sockets: clients that connect and send nothing, dribble
their headers (slowloris) or their body are cut after a bound; past the connection cap a new
one is answered 503; a live stream, a long response, is never cut by these bounds."""

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from app import client
from app.config import Settings
from tests.cli import Served, clean_env, free_port, serving
from tests.conftest import CLIENT_LIMITS, OWNER_TOKEN

HEADERS_S = 1.5
BODY_S = 2.0
MAX_CONNECTIONS = 12


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, int]]:
    """One server for the module: starting one (migrations on a fresh file) is the slow part."""
    tmp_path = tmp_path_factory.mktemp("bounds")
    env = clean_env() | {
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{tmp_path / 'd.db'}",
        "CAMPAIGN_DASH_HEADER_TIMEOUT_SECONDS": str(HEADERS_S),
        "CAMPAIGN_DASH_BODY_TIMEOUT_SECONDS": str(BODY_S),
        "CAMPAIGN_DASH_KEEP_ALIVE_SECONDS": "1",
        "CAMPAIGN_DASH_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "CAMPAIGN_DASH_HEARTBEAT_SECONDS": "0.5",
    }
    port = free_port()
    with serving(env, tmp_path, port) as process:
        yield process, port


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (a read sees the end), without waiting."""
    sock.settimeout(0.001)
    try:
        return sock.recv(65536) == b""
    except TimeoutError:
        return False
    except OSError:
        return True  # reset
    finally:
        sock.settimeout(10)


def dribble(sock: socket.socket, data: bytes, every_s: float, limit_s: float) -> float | None:
    """Send `data` a byte at a time; how long until the server cut the connection (None: it
    never did within `limit_s`)."""
    start = time.monotonic()
    for byte in data:
        if time.monotonic() - start > limit_s:
            return None
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return time.monotonic() - start
        if closed_by_server(sock):
            return time.monotonic() - start
        time.sleep(every_s)  # the slow client's pace, not a wait on the server
    return None


def test_a_slowloris_is_cut_after_the_header_bound(served: tuple[Served, int]) -> None:
    _, port = served
    sock = connect(port)
    headers = b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-a: " + b"a" * 200 + b"\r\n\r\n"
    cut = dribble(sock, headers, every_s=0.1, limit_s=HEADERS_S * 4)
    assert cut is not None, "a header byte every 0.1 s held the connection"
    assert HEADERS_S * 0.8 < cut < HEADERS_S + 1.5, cut


def test_a_slowloris_on_a_kept_alive_connection_is_cut_too(served: tuple[Served, int]) -> None:
    """uvicorn's keep-alive timer stops at the next request's first byte."""
    _, port = served
    sock = connect(port)
    sock.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b" 200 " in sock.recv(65536)
    cut = dribble(sock, b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-a: b\r\n" * 30, 0.1, HEADERS_S * 4)
    assert cut is not None and cut < HEADERS_S + 1.5, cut


def test_a_connection_that_sends_nothing_is_closed(served: tuple[Served, int]) -> None:
    _, port = served
    sock = connect(port)
    start = time.monotonic()
    sock.settimeout(HEADERS_S * 4)
    try:
        assert sock.recv(1) == b""
    except TimeoutError:
        pytest.fail("an idle connection was kept open")
    except ConnectionResetError:
        pass
    assert time.monotonic() - start < HEADERS_S + 1.5


def test_a_body_dribbled_in_is_cut_after_the_body_bound(served: tuple[Served, int]) -> None:
    _, port = served
    sock = connect(port)
    sock.sendall(
        b"POST /api/campaigns HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer " + OWNER_TOKEN.encode() + b"\r\ncontent-length: 400\r\n\r\n"
    )
    cut = dribble(sock, b'{"name": "' + b"n" * 380 + b'"}', every_s=0.1, limit_s=BODY_S * 4)
    assert cut is not None, "a body byte every 0.1 s held the connection"
    assert BODY_S * 0.8 < cut < BODY_S + 1.5, cut


def test_past_the_cap_a_new_connection_is_answered_503_at_once(
    served: tuple[Served, int],
) -> None:
    _, port = served
    socks = [connect(port) for _ in range(MAX_CONNECTIONS + 3)]
    answers = []
    for sock in socks:
        sock.settimeout(0.2)
        try:
            answers.append(sock.recv(65536))  # those within the cap get nothing unasked
        except TimeoutError:
            answers.append(None)
    refused = [i for i, answer in enumerate(answers) if answer and b" 503 " in answer]
    # The last ones, at once (the fixture's start-up probe may still be counted as it closes).
    assert refused and refused == list(range(refused[0], len(socks))), answers
    assert MAX_CONNECTIONS - 1 <= refused[0] <= MAX_CONNECTIONS, refused
    assert b"too many connections" in (answers[refused[0]] or b"")
    for sock in socks:
        sock.close()

    def served_again() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    deadline = time.monotonic() + 10
    while not served_again():
        assert time.monotonic() < deadline, "no room after the held connections closed"
        time.sleep(0.05)


def test_a_live_stream_outlives_every_bound(served: tuple[Served, int]) -> None:
    _, port = served
    base = f"http://127.0.0.1:{port}"
    owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    campaign = httpx.post(f"{base}/api/campaigns", json={"name": "c"}, headers=owner).json()
    outlive = max(HEADERS_S, BODY_S) + 2
    with httpx.stream(
        "GET", f"{base}/api/campaigns/{campaign['id']}/events", headers=owner, timeout=10
    ) as stream:
        assert stream.status_code == 200
        start = time.monotonic()
        for _ in stream.iter_bytes():  # heartbeats every 0.5 s
            if time.monotonic() - start > outlive:
                break
        assert time.monotonic() - start > outlive, "the stream ended early"


def test_our_clients_let_go_of_an_idle_connection_before_the_dashboard_does() -> None:
    # A connection reused just as the server's keep-alive closes it resets the request: the
    # tests' clients and the CLI's (`try`, the verbs, `mcp`) must expire theirs first (a GET
    # failed so in CI).
    server_keeps = Settings(_env_file=None).keep_alive_seconds  # type: ignore[call-arg]
    for limits in (CLIENT_LIMITS, client.limits()):
        assert limits.keepalive_expiry is not None
        assert limits.keepalive_expiry < server_keeps / 2
