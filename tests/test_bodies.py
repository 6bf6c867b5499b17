"""Request bodies on a real uvicorn: without the owner's credentials refused before they are
read (a 1 GiB upload is answered at once and the server's memory stays flat), and bounded by
their route's need with a 413."""

import json
import socket
import threading
from dataclasses import dataclass

import httpx
import pytest

from app.bodies import OWNER_BODY_BYTES, PUBLIC_BODY_BYTES
from tests.conftest import OWNER_TOKEN, LiveServer
from tests.helpers import csrf_of, make_attempt, make_campaign

GIB = 1 << 30
BLOCK = b"[" + b"1," * (1 << 19)  # 1 MiB of a JSON array that never ends


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    sent: int  # body bytes the client had sent when the answer was complete


def rss_bytes() -> int:
    """Resident memory of this process: the live server runs in one of its threads."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def upload(
    port: int, path: str, *, size: int, chunked: bool, headers: dict[str, str] | None = None
) -> Answer:
    """Stream `size` bytes to `path` from one thread while another reads the answer."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(size)}
    head = {"Host": "127.0.0.1", "Content-Type": "application/json", **framing, **(headers or {})}
    lines = [f"POST {path} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items()), "", ""]
    sock.sendall("\r\n".join(lines).encode())
    sent = 0

    def pump() -> None:
        nonlocal sent
        try:
            while sent < size:
                data = b"%x\r\n%s\r\n" % (len(BLOCK), BLOCK) if chunked else BLOCK
                sock.sendall(data)
                sent += len(BLOCK)
        except OSError:
            pass  # the server closed the connection: the refusal this test is about

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed without an answer after {received!r}"
        received += chunk
    sent_at_answer = sent
    head_bytes, _, rest = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head_bytes.decode().split("\r\n")
    answer_headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    length = int(answer_headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    sock.close()
    sender.join(timeout=30)
    return Answer(int(status_line.split()[1]), answer_headers, rest[:length], sent_at_answer)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize(
    "credentials",
    [{}, {"Authorization": "Bearer not-the-owner-token"}],
    ids=["none", "wrong-token"],
)
def test_a_1_gib_body_without_credentials_is_refused_unread(
    server: LiveServer, chunked: bool, credentials: dict[str, str]
) -> None:
    before = rss_bytes()
    answer = upload(server.port, "/api/campaigns", size=GIB, chunked=chunked, headers=credentials)
    assert answer.status == 401
    assert json.loads(answer.body)["detail"].startswith("owner token required")
    assert answer.headers["connection"] == "close"
    # Answered before the client got far: the server never waited for the body.
    assert answer.sent < 64 << 20, f"answered after {answer.sent >> 20} MiB"
    assert rss_bytes() - before < 64 << 20, "memory grew with the refused body"


def test_a_form_post_without_a_session_gets_the_login_page_unread(server: LiveServer) -> None:
    answer = upload(
        server.port, "/campaigns", size=GIB, chunked=False, headers={"Accept": "text/html"}
    )
    assert answer.status == 401
    assert b'action="/login"' in answer.body
    assert answer.sent < 64 << 20


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversize_body_with_credentials_is_413(
    server: LiveServer, api: httpx.Client, chunked: bool
) -> None:
    before = rss_bytes()
    answer = upload(
        server.port,
        "/api/campaigns",
        size=GIB,
        chunked=chunked,
        headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
    )
    assert answer.status == 413
    detail = json.loads(answer.body)["detail"]
    assert f"{OWNER_BODY_BYTES:,} bytes" in detail
    assert answer.sent < 64 << 20
    assert rss_bytes() - before < 64 << 20
    assert api.get("/api/campaigns").json() == []


def test_bodies_within_the_limit_pass_and_one_byte_more_is_413(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    note = {"body": "x" * 20_000}
    assert api.post(f"/api/campaigns/{campaign['id']}/notes", json=note).status_code == 201
    # The largest body a route validates fits with room to spare.
    attempt = make_attempt(
        api, campaign["id"], hypothesis="é" * 20_000, command="\u2028" * 20_000, flags="<" * 20_000
    )
    assert attempt["hypothesis"] == "é" * 20_000
    padding = OWNER_BODY_BYTES - len(b'{"body": ""}')
    exact = b'{"body": "' + b" " * padding + b'"}'
    assert len(exact) == OWNER_BODY_BYTES
    headers = {"Content-Type": "application/json"}
    accepted = api.post(f"/api/campaigns/{campaign['id']}/notes", content=exact, headers=headers)
    assert accepted.status_code == 422  # read in full and validated: a body of blanks
    over = api.post(f"/api/campaigns/{campaign['id']}/notes", content=exact + b" ", headers=headers)
    assert over.status_code == 413
    assert "detail" in over.json()


def test_an_oversize_form_is_413_beside_the_form(server: LiveServer, browser: httpx.Client) -> None:
    csrf = csrf_of(browser.get("/").text)
    response = browser.post(
        "/campaigns", data={"name": "x", "description": "y" * OWNER_BODY_BYTES, "csrf_token": csrf}
    )
    assert response.status_code == 413
    assert "too large" in response.text


def test_public_routes_take_small_bodies_only(server: LiveServer) -> None:
    answer = upload(server.port, "/login", size=GIB, chunked=False)
    assert answer.status == 413
    assert f"{PUBLIC_BODY_BYTES:,} bytes" in json.loads(answer.body)["detail"]
    assert answer.sent < 64 << 20
    with httpx.Client(base_url=server.url) as client:
        login = client.post("/login", data={"token": OWNER_TOKEN, "next": "/"})
        assert login.status_code == 303
