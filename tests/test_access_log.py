"""The access log of a real `campaign-dash serve`: tokens hidden however a request spells
them, in the query and in share paths."""

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.logs import redact_url
from tests.cli import clean_env
from tests.conftest import OWNER_TOKEN


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def raw_get(port: int, target: str) -> None:
    """The request target sent byte for byte: a client library would normalise `//`, `/./`,
    `;` or the query's spelling."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        while sock.recv(65536):
            pass


def serve_and_log(tmp_path: Path, requests: list[tuple[str, str]], share: bool = True) -> str:
    """Start `campaign-dash serve`, make the requests (`{share}` in a path is a fresh share
    token), stop it; everything it printed."""
    port = free_port()
    env = clean_env()
    env |= {
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{tmp_path / 'log.db'}",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "serve exited"
            try:
                httpx.get(f"{base}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.1)
        owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
        campaign = httpx.post(f"{base}/api/campaigns", json={"name": "c"}, headers=owner).json()
        token = httpx.post(f"{base}/api/campaigns/{campaign['id']}/shares", headers=owner).json()[
            "token"
        ]
        for method, path in requests:
            target = path.replace("{share}", token).replace("{owner}", OWNER_TOKEN)
            if method == "DELETE":
                httpx.delete(base + target, headers=owner)
            else:
                raw_get(port, target)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            output, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    return output.replace(token, "<<SHARE TOKEN>>")


SPELLINGS = [
    ("GET", "/login?token={owner}"),
    ("GET", "/login?TOKEN={owner}"),
    ("GET", "/login?%74oken={owner}"),
    ("GET", "/login?%54%4F%4B%45%4E={owner}"),
    ("GET", "/login?next=/&Token={owner}"),
    ("GET", "/login?next=%2Fs%2F{share}&token={owner}"),
    ("GET", "/login?next=/s/{share}.md"),
    ("GET", "/s/{share}"),
    ("GET", "/s/{share}.md"),
    ("GET", "/s/{share}.json?x=1"),
    ("GET", "/%73/{share}"),
    ("DELETE", "/api/shares/{share}"),
    # Shapes that reach no route (a 404) and are logged all the same:
    ("GET", "/login;token={owner}"),
    ("GET", "/login;x=1;TOKEN={owner}?next=/"),
    ("GET", "/login?x=1;token={owner}"),
    ("GET", "//s/{share}"),
    ("GET", "/s//{share}"),
    ("GET", "/./s/{share}.md"),
    ("GET", "/x/../s/{share}"),
    ("GET", "/s;v=1/{share}"),
    ("GET", "/api/shares//{share}"),
    ("GET", "/login/{owner}"),
    ("GET", "/{share}"),
    ("GET", "/login?next=/login%3Ftoken%3D{owner}"),
    ("GET", "/campaigns/1?t={share}"),
    ("DELETE", "/api/shares/{share}"),
    ("GET", "/s/{share}"),  # revoked by now: a 404, still no token
]


def test_the_access_log_hides_every_spelling_of_a_token(tmp_path: Path) -> None:
    output = serve_and_log(tmp_path, SPELLINGS)
    access = [line for line in output.splitlines() if " HTTP/1.1" in line]
    assert OWNER_TOKEN not in output
    assert "<<SHARE TOKEN>>" not in output, [x for x in access if "<<SHARE TOKEN>>" in x]
    # Every request was logged, with its token replaced and the rest intact.
    for expected in (
        '"GET /login?token=[redacted] HTTP/1.1" 303',
        '"GET /login?TOKEN=[redacted] HTTP/1.1"',
        '"GET /login?%74oken=[redacted] HTTP/1.1"',
        '"GET /login?%54%4F%4B%45%4E=[redacted] HTTP/1.1"',
        '"GET /login?next=/&Token=[redacted] HTTP/1.1"',
        '"GET /login?next=/s/[redacted]&token=[redacted] HTTP/1.1"',
        '"GET /login?next=/s/[redacted].md HTTP/1.1"',
        '"GET /s/[redacted] HTTP/1.1" 200',
        '"GET /s/[redacted].md HTTP/1.1" 200',
        '"GET /s/[redacted].json?x=1 HTTP/1.1" 200',
        '"DELETE /api/shares/[redacted] HTTP/1.1" 204',
        '"GET /s/[redacted] HTTP/1.1" 404',
        '"POST /api/campaigns/1/shares HTTP/1.1" 201',
        '"GET /login;token=[redacted] HTTP/1.1" 404',
        '"GET /login;x=1;TOKEN=[redacted]?next=/ HTTP/1.1" 404',
        '"GET /login?x=1;token=[redacted] HTTP/1.1"',
        '"GET //s/[redacted] HTTP/1.1" 404',
        '"GET /s//[redacted] HTTP/1.1" 404',
        '"GET /./s/[redacted].md HTTP/1.1"',
        '"GET /x/../s/[redacted] HTTP/1.1"',
        '"GET /s;v=1/[redacted] HTTP/1.1"',
        '"GET /api/shares//[redacted] HTTP/1.1"',
        '"GET /login/[redacted] HTTP/1.1" 404',
        '"GET /[redacted] HTTP/1.1" 404',
        '"GET /campaigns/1?t=[redacted] HTTP/1.1"',
    ):
        assert any(expected in line for line in access), (expected, access)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("/campaigns/1", "/campaigns/1"),
        ("/api/campaigns/3/shares", "/api/campaigns/3/shares"),
        ("/s/abc/events", "/s/[redacted]/events"),
        ("/api/attempts/1/log?offset=5&limit=9", "/api/attempts/1/log?offset=5&limit=9"),
        ("/login?csrf_token=abc&next=/", "/login?csrf_token=[redacted]&next=/"),
        ("/login?token", "/login?token"),
        ("/x/s/abc", "/x/s/abc"),  # only a share path starts with /s/
        ("/search?q=flashinfer_allreduce_fusion", "/search?q=flashinfer_allreduce_fusion"),
        ("/login;token=abc", "/login;token=[redacted]"),
        ("//s/abc", "//s/[redacted]"),
        ("/s//abc.json", "/s//[redacted].json"),
        ("/../s/abc", "/../s/[redacted]"),
        ("/q?a=1;csrf_token=abc&b=2", "/q?a=1;csrf_token=[redacted]&b=2"),
        ("/login?next=/login%3Ftoken%3Dabc", "/login?next=/login?token=[redacted]"),
        ("/x/" + "Zx9_" * 8, "/x/[redacted]"),  # shaped like a generated token
    ],
)
def test_redaction_leaves_what_is_not_a_secret(url: str, shown: str) -> None:
    assert redact_url(url) == shown
