"""Wrong owner tokens, at the login or as the API's bearer token, cost a delay that grows,
per client address, on a real uvicorn: meanwhile that address is refused (429) even with the
right token, other requests are answered at once (the wait is an asyncio sleep), and once
the delay is over the right token is taken immediately."""

import threading
import time

import httpx
import pytest

from app import throttle
from app.throttle import FIRST_DELAY_S, TokenThrottle
from tests.conftest import OWNER_TOKEN, LiveServer
from tests.helpers import wait_for
from tests.test_bodies import GIB, upload


def timed_login(client: httpx.Client, token: str, *, form: bool = False) -> tuple[int, float]:
    start = time.monotonic()
    if form:
        answer = client.post("/login", data={"token": token, "next": "/"})
    else:
        answer = client.get("/login", params={"token": token})
    return answer.status_code, time.monotonic() - start


def test_each_wrong_token_costs_more_and_the_right_one_then_logs_in_at_once(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        delays = []
        for attempt, form in enumerate((False, True, False)):
            status, took = timed_login(client, f"guess-{attempt}", form=form)
            assert status == 401
            delays.append(took)
        # 0.25 s, 0.5 s, 1 s: each at least its delay, each longer than the one before.
        for index, took in enumerate(delays):
            assert took >= FIRST_DELAY_S * 2**index * 0.95, delays
        assert delays[0] < delays[1] < delays[2], delays
        status, took = timed_login(client, OWNER_TOKEN)
        assert status == 303 and took < FIRST_DELAY_S, took
        assert client.get("/", headers={"Accept": "text/html"}).status_code == 200
        # Logged in: the count starts again.
        status, took = timed_login(client, "guess-after")
        assert status == 401 and took < FIRST_DELAY_S * 2 * 0.95, took


def test_while_a_delay_runs_the_address_is_refused_and_the_server_answers_others(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for attempt in range(3):  # 0.25 + 0.5 + 1 s
            assert timed_login(client, f"guess-{attempt}")[0] == 401
    slow: dict[str, tuple[int, float]] = {}

    def guess() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as guesser:
            slow["answer"] = timed_login(guesser, "guess-3")  # a 2 s delay

    guesser = threading.Thread(target=guess)
    guesser.start()
    with httpx.Client(base_url=server.url, timeout=30) as other:
        limiter: TokenThrottle = server.app.state.token_throttle
        wait_for(lambda: limiter.wait_left("127.0.0.1") > 1, what="the fourth guess's delay")
        refused = other.get("/login", params={"token": OWNER_TOKEN})
        assert refused.status_code == 429, "the right token skipped the delay"
        assert int(refused.headers["retry-after"]) >= 1
        assert "try again in" in refused.text and "set-cookie" not in refused.headers
        start = time.monotonic()
        assert other.get("/login").status_code == 200  # no token: the plain page
        assert other.get("/static/app.js").status_code == 200
        assert time.monotonic() - start < 0.5, "the event loop waited on the delay"
        assert guesser.is_alive(), "the guess was answered before its delay"
    guesser.join(timeout=30)
    status, took = slow["answer"]
    assert status == 401 and took >= 2 * 0.95, took
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert timed_login(client, OWNER_TOKEN)[0] == 303


def test_the_addresses_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throttle, "MAX_ADDRESSES", 100)
    limiter = TokenThrottle()
    for index in range(5000):
        limiter.failed(f"10.0.{index // 256}.{index % 256}")
    assert len(limiter) == 100
    assert limiter.wait_left("10.0.19.135") > 0  # the most recent are the ones kept
    assert limiter.wait_left("10.0.0.0") == 0


def timed_api(
    client: httpx.Client, token: str, method: str = "GET"
) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"}
    if method == "GET":
        answer = client.get("/api/campaigns", headers=headers)
    else:
        answer = client.post("/api/campaigns", headers=headers, json={"name": "guessed"})
    return answer, time.monotonic() - start


def test_each_wrong_bearer_token_costs_more_and_the_right_one_is_then_taken_at_once(
    server: LiveServer,
) -> None:
    # Before, the login was throttled and the API was not: a guesser asked the API instead,
    # a 401 at once for each guess, with or without a body.
    with httpx.Client(base_url=server.url, timeout=30) as client:
        delays = []
        for attempt, method in enumerate(("GET", "POST", "GET")):
            answer, took = timed_api(client, f"guess-{attempt}", method)
            assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
            delays.append(took)
        for index, took in enumerate(delays):
            assert took >= FIRST_DELAY_S * 2**index * 0.95, delays
        answer, took = timed_api(client, OWNER_TOKEN)
        assert answer.status_code == 200 and took < FIRST_DELAY_S, took
        answer, took = timed_api(client, "guess-after")  # the count started again
        assert answer.status_code == 401 and took < FIRST_DELAY_S * 2 * 0.95, took
    owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    names = [c["name"] for c in httpx.get(f"{server.url}/api/campaigns", headers=owner).json()]
    assert "guessed" not in names


def test_while_a_bearer_delay_runs_the_api_refuses_every_token_and_pages_still_answer(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for attempt in range(3):  # 0.25 + 0.5 + 1 s
            assert timed_api(client, f"guess-{attempt}")[0].status_code == 401
    slow: dict[str, tuple[httpx.Response, float]] = {}

    def guess() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as guesser:
            slow["answer"] = timed_api(guesser, "guess-3")  # a 2 s delay

    guesser = threading.Thread(target=guess)
    guesser.start()
    limiter: TokenThrottle = server.app.state.token_throttle
    wait_for(lambda: limiter.wait_left("127.0.0.1") > 1, what="the fourth guess's delay")
    with httpx.Client(base_url=server.url, timeout=30) as other:
        refused, _ = timed_api(other, OWNER_TOKEN)
        assert refused.status_code == 429, "the right token skipped the delay"
        assert refused.json()["detail"].startswith("Too many wrong tokens: try again in")
        assert int(refused.headers["retry-after"]) >= 1
        start = time.monotonic()
        assert other.get("/login").status_code == 200  # no token: nothing to throttle
        assert other.get("/static/app.js").status_code == 200
        assert time.monotonic() - start < 0.5, "the event loop waited on the delay"
    # A body sent with any token meanwhile is refused before it is read.
    answer = upload(server.port, "/api/campaigns", size=GIB, chunked=False,
                    headers={"Authorization": f"Bearer {OWNER_TOKEN}"})  # fmt: skip
    assert answer.status == 429 and answer.headers["connection"] == "close"
    assert answer.sent < 64 << 20, f"answered after {answer.sent >> 20} MiB"
    assert guesser.is_alive(), "the guess was answered before its delay"
    guesser.join(timeout=30)
    response, took = slow["answer"]
    assert response.status_code == 401 and took >= 2 * 0.95, took
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert timed_api(client, OWNER_TOKEN)[0].status_code == 200
