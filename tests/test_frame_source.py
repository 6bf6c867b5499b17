""" "Show code": the lines around the diagnosis's frame, read from the log's own host over the
tails' SSH pool (a real OpenSSH sshd on loopback) or from this machine for file:// logs."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.frame_source import SourceNotShown, read_frame_source
from app.tailing import code_window
from app.tailing.code_window import MAX_KEPT_BYTES, MAX_LINE_CHARS, MAX_SCAN_BYTES
from app.tailing.factory import LogSources
from tests.conftest import OWNER_TOKEN, running
from tests.helpers import attempt_of, make_attempt, make_campaign, stored_log, wait_for
from tests.sshd import Sshd, free_port

HX = {"HX-Request": "true"}
FAILING = 'return TABLE[arch]  # <script>alert("x")</script> & more'


def code_file(path: Path, count: int = 100, failing_at: int = 40) -> Path:
    """A module of `count` numbered lines; line `failing_at` is the one that raised."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"    value_{n} = table[{n}]" for n in range(1, count + 1)]
    lines[failing_at - 1] = "    " + FAILING
    path.write_text("\n".join(lines) + "\n")
    return path


def crash_log(code: str | Path, line: int = 40) -> bytes:
    return (
        "[2026-02-27 13:21:27 TP0] Load weight begin.\n"
        "[2026-02-27 13:21:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/threading.py", line 1010, in run\n'
        "    self._target(*self._args, **self._kwargs)\n"
        f'  File "{code}", line {line}, in get_arch_table\n'
        "    return TABLE[arch]\n"
        "KeyError: 12\n"
    ).encode()


def diagnosed(api: httpx.Client, source: str) -> dict[str, Any]:
    """An attempt following `source`, once its diagnosis names a frame."""
    attempt = make_attempt(api, make_campaign(api)["id"], source=source)

    def with_frame() -> dict[str, Any] | None:
        body = attempt_of(api, attempt["id"])
        return body if (body["diagnosis"] or {}).get("frame") else None

    return wait_for(with_frame, what="a diagnosis with its frame")


@contextmanager
def page_client(api: httpx.Client) -> Iterator[httpx.Client]:
    """The owner in a browser without JavaScript: the login cookie, HTML asked for."""
    headers = {"Accept": "text/html"}
    with httpx.Client(base_url=str(api.base_url), headers=headers, timeout=30) as client:
        assert client.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        yield client


@pytest.fixture
def owner_pages(ssh_api: httpx.Client) -> Iterator[httpx.Client]:
    with page_client(ssh_api) as client:
        yield client


def failing_span(html: str) -> str:
    marked = r'<span class="line failing" aria-current="true"><span class="no">(\d+)'
    match = re.search(marked, html)
    assert match, "no line is marked as the failing one"
    return match.group(1)


def test_show_code_reads_the_frame_s_lines_from_the_remote_host_over_the_tail_s_connection(
    ssh_api: httpx.Client, owner_pages: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    code = code_file(tmp_path / "remote" / "sglang" / "srt" / "torch_symm_mem.py")
    log = tmp_path / "remote" / "server.log"
    log.write_bytes(crash_log(code))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    assert attempt["diagnosis"]["frame"] == {
        "file": str(code), "line": 40, "function": "get_arch_table",
    }  # fmt: skip
    connections = sshd.session_pids()

    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["file"] == str(code) and body["line"] == 40 and body["host"] == sshd.alias
    assert body["first_line"] == 25 and body["truncated"] is False
    assert body["lines"] == code.read_text().splitlines()[24:55]
    assert body["lines"][40 - body["first_line"]] == "    " + FAILING
    # The tail's connection, a channel more: no second login to the host.
    assert sshd.session_pids() == connections

    page = owner_pages.get(f"/attempts/{attempt['id']}").text
    button = f'href="/attempts/{attempt["id"]}/frame-source"'
    assert button in page and "show code" in page
    assert re.search(rf'<div id="frame-source-{attempt["id"]}-[0-9a-f]+"[^>]*hx-preserve', page)
    fragment = owner_pages.get(f"/attempts/{attempt['id']}/frame-source", headers=HX)
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert fragment.text.lstrip().startswith(f'<div id="frame-source-{attempt["id"]}-')
    assert "hx-preserve" not in fragment.text  # what was fetched replaces the placeholder
    assert failing_span(fragment.text) == "40"
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more" in fragment.text
    assert "<script>alert" not in fragment.text
    # Without JavaScript the button is a link to a page of its own.
    whole = owner_pages.get(f"/attempts/{attempt['id']}/frame-source")
    assert whole.status_code == 200 and "<html" in whole.text and failing_span(whole.text) == "40"
    assert f'href="/attempts/{attempt["id"]}#diagnosis"' in whole.text


def test_a_hostile_frame_path_runs_nothing_and_is_read_literally(
    ssh_api: httpx.Client, ssh_settings: Settings, sshd: Sshd, tmp_path: Path
) -> None:
    marker = f"pwned-{os.getpid()}-{time.time_ns()}"
    pwned = [Path.home() / marker, tmp_path / marker, Path("/tmp") / marker]
    hostile = f"x; touch {marker}; echo $(touch {marker}) 'q' `touch {marker}` a&b|c>d.py"
    code = code_file(tmp_path / "remote dir" / hostile)
    log = tmp_path / "server.log"
    log.write_bytes(crash_log(code))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    assert attempt["diagnosis"]["frame"]["file"] == str(code)
    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 200, response.text
    assert response.json()["lines"][15] == "    " + FAILING

    # Named but not there: the literal name is looked for, and nothing else happens.
    missing = tmp_path / f"$(touch {marker}).py"
    log.write_bytes(crash_log(missing))
    other = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    refused = ssh_api.get(f"/api/attempts/{other['id']}/frame-source")
    assert refused.status_code == 404 and str(missing) in refused.json()["detail"]

    # Double quotes never make a frame of a traceback line; asked for directly, they are
    # as literal as the rest.
    quoted = code_file(tmp_path / f'say "hi" $(touch {marker}) `touch {marker}`.py')
    with LogSources(ssh_settings) as sources:
        answer = read_frame_source(
            sources, f"ssh://{sshd.alias}{log}", {"file": str(quoted), "line": 40}
        )
    assert answer.lines[15] == "    " + FAILING
    assert not any(path.exists() for path in pwned)


def test_a_missing_remote_file_is_a_clear_404_on_the_api_and_the_page(
    ssh_api: httpx.Client, owner_pages: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    gone = tmp_path / "was-here" / "model_runner.py"
    log = tmp_path / "server.log"
    log.write_bytes(crash_log(gone))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 404
    assert response.json() == {"detail": f"{sshd.alias}: {gone}: no such file"}
    # htmx swaps only what succeeded: the refusal comes as the fragment, readable.
    fragment = owner_pages.get(f"/attempts/{attempt['id']}/frame-source", headers=HX)
    assert fragment.status_code == 200
    assert 'role="alert"' in fragment.text and f"{gone}: no such file" in fragment.text
    page = owner_pages.get(f"/attempts/{attempt['id']}/frame-source")
    assert page.status_code == 404 and f"{gone}: no such file" in page.text


def test_long_lines_and_large_files_are_cut_to_the_caps(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    # Minified code: every line of the window is 200 KB long.
    minified = tmp_path / "bundle.py"
    minified.write_text("".join(f"{n:06d}" + "x" * 200_000 + "\n" for n in range(1, 61)))
    log = tmp_path / "minified.log"
    log.write_bytes(crash_log(minified))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["truncated"] is True and len(body["lines"]) == 31
    assert all(len(text) == MAX_LINE_CHARS for text in body["lines"])
    assert body["lines"][15].startswith("000040x")
    assert len(response.content) < MAX_KEPT_BYTES + 4096  # not 6 MB of the file

    # A line past the first MAX_SCAN_BYTES of a huge file is not looked for.
    huge = tmp_path / "generated.py"
    row = b"# " + b"g" * 97 + b"\n"
    huge.write_bytes(row * (MAX_SCAN_BYTES // len(row) + 1000))
    far = MAX_SCAN_BYTES // len(row) + 500
    log.write_bytes(crash_log(huge, line=far))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    refused = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert refused.status_code == 422
    assert f"line {far} of {huge} lies past its first" in refused.json()["detail"]


def test_refusals_are_clear_answers_never_500(tmp_path: Path) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'dash.db'}", token=OWNER_TOKEN
    )
    with running(settings) as (_, api), page_client(api) as pages:

        def ask(code: str | Path, line: int = 40) -> httpx.Response:
            log = tmp_path / f"log-{time.time_ns()}.log"
            log.write_bytes(crash_log(code, line))
            attempt = diagnosed(api, f"file://{log}")
            answer = api.get(f"/api/attempts/{attempt['id']}/frame-source")
            fragment = pages.get(f"/attempts/{attempt['id']}/frame-source", headers=HX)
            assert 'role="alert"' in fragment.text or answer.status_code == 200
            return answer

        code = code_file(tmp_path / "local" / "sglang.py")
        assert ask(code).json()["lines"][15] == "    " + FAILING
        assert ask(code).json()["host"] == "this machine"
        cases = [
            (ask(tmp_path / "dash.db", 1), 403, "one of the dashboard's own files"),
            (ask("/proc/self/environ", 1), 403, "kernel pseudo-file"),
            (ask(tmp_path), 422, "is a folder"),
            (ask(code, 500), 404, "has 100 lines: line 500 is past its end"),
            (ask("sglang/srt/server.py"), 422, "not an absolute path"),
        ]
        for response, status, words in cases:
            assert response.status_code == status, response.text
            assert words in response.json()["detail"]

        plain = tmp_path / "plain.log"
        plain.write_bytes(b"RuntimeError: no traceback printed\n")
        attempt = make_attempt(api, make_campaign(api)["id"], source=f"file://{plain}")
        wait_for(lambda: attempt_of(api, attempt["id"])["diagnosis"], what="a diagnosis")
        no_frame = api.get(f"/api/attempts/{attempt['id']}/frame-source")
        assert no_frame.status_code == 404 and "no frame" in no_frame.json()["detail"]
        assert api.get("/api/attempts/999999/frame-source").status_code == 404

        with httpx.Client(base_url=str(api.base_url), timeout=30) as stranger:
            assert stranger.get(f"/api/attempts/{attempt['id']}/frame-source").status_code == 401
            page = stranger.get(
                f"/attempts/{attempt['id']}/frame-source", headers={"Accept": "text/html"}
            )
            assert page.status_code == 401 and 'id="login"' in page.text


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file: no permission to deny")
def test_a_file_the_ssh_user_may_not_read_is_403(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    code = code_file(tmp_path / "secret.py")
    code.chmod(0)
    log = tmp_path / "server.log"
    log.write_bytes(crash_log(code))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 403 and "permission denied" in response.json()["detail"]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become nobody"
)
def test_the_helper_run_as_a_user_who_may_not_read_says_permission() -> None:
    """As root reads everything, the helper is run the way the host runs it (its code on
    stdin, `python3 - PATH LINE`) as nobody, in a folder nobody can reach (pytest's are
    private)."""
    folder = Path(tempfile.mkdtemp(prefix="frame-source-"))
    folder.chmod(0o755)
    try:
        _run_as_nobody(folder)
    finally:
        shutil.rmtree(folder)


def _run_as_nobody(folder: Path) -> None:
    code = code_file(folder / "secret.py")
    code.chmod(0o600)
    helper = Path(code_window.__file__).read_bytes()
    become_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    run = subprocess.run(
        [*become_nobody, sys.executable, "-", str(code), "40"],
        input=helper, capture_output=True, check=True, timeout=30,
    )  # fmt: skip
    answer = json.loads(run.stdout)
    assert answer == {"error": "permission", "message": f"{code}: permission denied"}
    code.chmod(0o644)
    run = subprocess.run(
        [*become_nobody, sys.executable, "-", str(code), "40"],
        input=helper, capture_output=True, check=True, timeout=30,
    )  # fmt: skip
    assert json.loads(run.stdout)["lines"][15] == "    " + FAILING


def test_an_untrusted_host_key_and_an_unreachable_host_are_502(
    ssh_api: httpx.Client, ssh_settings: Settings, sshd: Sshd, tmp_path: Path
) -> None:
    code = code_file(tmp_path / "remote.py")
    log = tmp_path / "server.log"
    log.write_bytes(crash_log(code))
    frame = {"file": str(code), "line": 40, "function": None}
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    untrusting = ssh_settings.model_copy(update={"ssh_known_hosts": empty})
    with LogSources(untrusting) as sources, pytest.raises(SourceNotShown) as refused:
        read_frame_source(sources, f"ssh://{sshd.alias}{log}", frame)
    assert refused.value.status_code == 502
    assert "host key not trusted" in refused.value.detail
    assert sshd.host_fingerprint in refused.value.detail

    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    assert stored_log(ssh_api, attempt["id"]) == log.read_bytes()
    sshd.stop()  # the host goes away, with the tail's connection
    response = ssh_api.get(f"/api/attempts/{attempt['id']}/frame-source")
    assert response.status_code == 502, response.text
    detail = response.json()["detail"]
    assert detail.startswith(f"{sshd.alias}: host unreachable: ") or detail.startswith(
        f"{sshd.alias}: connection lost: "
    ), detail

    port = free_port()
    nobody = f"ssh://127.0.0.1:{port}{log}"
    with LogSources(ssh_settings) as sources, pytest.raises(SourceNotShown) as unreachable:
        read_frame_source(sources, nobody, frame)
    assert unreachable.value.status_code == 502
    assert unreachable.value.detail.startswith(f"127.0.0.1:{port}: host unreachable: ")


class SilentHost:
    """Takes SSH connections and says nothing (a host whose sshd hangs) until released."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.release, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            with suppress(TimeoutError):
                self.held.append(self.sock.accept()[0])
            if self.release.is_set():
                while self.held:
                    self.held.pop().close()

    def close(self) -> None:
        self.release.set()
        self.done.set()
        self.thread.join(5)
        self.sock.close()


def test_a_host_that_never_answers_holds_no_other_request(tmp_path: Path) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'dash.db'}", token=OWNER_TOKEN
    )
    silent = SilentHost()
    with running(settings) as (_, api), ThreadPoolExecutor(1) as pool:
        log = tmp_path / "server.log"
        log.write_bytes(crash_log(code_file(tmp_path / "code.py")))
        attempt = diagnosed(api, f"file://{log}")
        # The same log, now said to be on a host that hangs: the diagnosis stays.
        moved = api.patch(
            f"/api/attempts/{attempt['id']}", json={"source": f"ssh://127.0.0.1:{silent.port}{log}"}
        )
        assert moved.status_code == 200
        fetch = pool.submit(api.get, f"/api/attempts/{attempt['id']}/frame-source")
        wait_for(lambda: len(silent.held) >= 1, what="the fetch (or the tail) connecting")
        for _ in range(20):
            assert api.get(f"/api/attempts/{attempt['id']}").status_code == 200
        assert not fetch.done()  # answered one after another while the fetch waits
        silent.release.set()  # the host hangs up
        response = fetch.result(timeout=30)
        assert response.status_code == 502, response.text
        assert response.json()["detail"].startswith(f"127.0.0.1:{silent.port}: "), response.text
    silent.close()


def test_show_code_in_chromium_marks_the_failing_line_and_stays_through_live_updates(
    ssh_api: httpx.Client,
    sshd: Sshd,
    tmp_path: Path,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    code = code_file(tmp_path / "remote" / "torch_symm_mem.py")
    log = tmp_path / "server.log"
    log.write_bytes(crash_log(code))
    attempt = diagnosed(ssh_api, f"ssh://{sshd.alias}{log}")
    page = open_page(f"/attempts/{attempt['id']}", base=str(ssh_api.base_url))
    page.locator("#live-status.on").wait_for(timeout=10_000)
    page.get_by_role("link", name="show code").click()
    failing = page.locator(".frame-source .line.failing")
    failing.wait_for(timeout=10_000)
    assert failing.inner_text().rstrip("\n") == "40    " + FAILING
    assert page.locator(".frame-source .line").count() == 31
    assert page.url.endswith(f"/attempts/{attempt['id']}")  # swapped in, not navigated

    # The log goes on: the summary is swapped live, the code shown stays.
    with log.open("ab") as out:
        out.write(b"[2026-02-27 13:21:31 TP0] shutting down the scheduler\n")
    page.locator("#log-{}".format(attempt["id"]), has_text="shutting down").wait_for(timeout=10_000)
    assert failing.inner_text().rstrip("\n") == "40    " + FAILING
    assert page.dialogs == []  # type: ignore[attr-defined]
