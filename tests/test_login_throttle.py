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

# What a fourth wrong token in a row costs (0.25, 0.5, 1, then 2 s): a request faster than
# this after three was not throttled as a fourth guess, however loaded the machine.
NEXT_DELAY_S = FIRST_DELAY_S * 2**3 * 0.95


def test_the_delay_doubles_from_a_quarter_second_up_to_its_cap() -> None:
    limiter = TokenThrottle()
    delays = [limiter.failed("10.0.0.1") for _ in range(10)]
    assert delays == [min(throttle.MAX_DELAY_S, FIRST_DELAY_S * 2**i) for i in range(10)]
    assert delays[:4] == [0.25, 0.5, 1.0, 2.0] and delays[-1] == throttle.MAX_DELAY_S
    assert limiter.failed("10.0.0.2") == FIRST_DELAY_S  # per address
    limiter.succeeded("10.0.0.1")
    assert limiter.failed("10.0.0.1") == FIRST_DELAY_S  # a right token starts it again


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
        # 0.25 s, 0.5 s, 1 s: each at least its delay (the schedule itself is
        # test_the_delay_doubles_from_a_quarter_second_up_to_its_cap's). Wall times are
        # bounded below only: a loaded machine adds to any of them, in any order.
        for index, took in enumerate(delays):
            assert took >= FIRST_DELAY_S * 2**index * 0.95, delays
        # The right token is not made to wait: a fourth wrong one would cost 2 s.
        status, took = timed_login(client, OWNER_TOKEN)
        assert status == 303 and took < NEXT_DELAY_S, took
        assert client.get("/", headers={"Accept": "text/html"}).status_code == 200
        # Logged in: the count starts again, at the first delay, not the fourth.
        status, took = timed_login(client, "guess-after")
        assert status == 401 and FIRST_DELAY_S * 0.95 <= took < NEXT_DELAY_S, took


def test_while_a_delay_runs_the_address_is_refused_and_the_server_answers_others(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        # 0.25 + 0.5 + 1 + 2 s: the fifth guess then waits 4 s, time enough to look at the
        # server while it waits, however loaded the machine.
        for attempt in range(4):
            assert timed_login(client, f"guess-{attempt}")[0] == 401
    slow: dict[str, tuple[int, float]] = {}

    def guess() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as guesser:
            slow["answer"] = timed_login(guesser, "guess-4")  # a 4 s delay

    guesser = threading.Thread(target=guess)
    guesser.start()
    with httpx.Client(base_url=server.url, timeout=30) as other:
        limiter: TokenThrottle = server.app.state.token_throttle
        wait_for(lambda: limiter.wait_left("127.0.0.1") > 3, what="the fifth guess's delay")
        refused = other.get("/login", params={"token": OWNER_TOKEN})
        assert refused.status_code == 429, "the right token skipped the delay"
        assert int(refused.headers["retry-after"]) >= 1
        assert "try again in" in refused.text and "set-cookie" not in refused.headers
        # Answered while the guess still waits: a loop blocked by its delay would answer
        # only once the delay is over, however fast the machine.
        left, start = limiter.wait_left("127.0.0.1"), time.monotonic()
        assert other.get("/login").status_code == 200  # no token: the plain page
        assert other.get("/static/app.js").status_code == 200
        assert time.monotonic() - start < left, "the event loop waited on the delay"
        assert guesser.is_alive(), "the guess was answered before its delay"
    guesser.join(timeout=30)
    status, took = slow["answer"]
    assert status == 401 and took >= 4 * 0.95, took
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
        assert answer.status_code == 200 and took < NEXT_DELAY_S, took
        answer, took = timed_api(client, "guess-after")  # the count started again
        assert answer.status_code == 401 and FIRST_DELAY_S * 0.95 <= took < NEXT_DELAY_S, took
    owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    names = [c["name"] for c in httpx.get(f"{server.url}/api/campaigns", headers=owner).json()]
    assert "guessed" not in names


def test_while_a_bearer_delay_runs_the_api_refuses_every_token_and_pages_still_answer(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        # 0.25 + 0.5 + 1 + 2 s: the fifth guess then waits 4 s, time enough to look at the
        # server while it waits, however loaded the machine.
        for attempt in range(4):
            assert timed_api(client, f"guess-{attempt}")[0].status_code == 401
    slow: dict[str, tuple[httpx.Response, float]] = {}

    def guess() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as guesser:
            slow["answer"] = timed_api(guesser, "guess-4")  # a 4 s delay

    guesser = threading.Thread(target=guess)
    guesser.start()
    limiter: TokenThrottle = server.app.state.token_throttle
    wait_for(lambda: limiter.wait_left("127.0.0.1") > 3, what="the fifth guess's delay")
    with httpx.Client(base_url=server.url, timeout=30) as other:
        refused, _ = timed_api(other, OWNER_TOKEN)
        assert refused.status_code == 429, "the right token skipped the delay"
        assert refused.json()["detail"].startswith("Too many wrong tokens: try again in")
        assert int(refused.headers["retry-after"]) >= 1
        left, start = limiter.wait_left("127.0.0.1"), time.monotonic()
        assert other.get("/login").status_code == 200  # no token: nothing to throttle
        assert other.get("/static/app.js").status_code == 200
        assert time.monotonic() - start < left, "the event loop waited on the delay"
    # A body sent with any token meanwhile is refused before it is read.
    answer = upload(server.port, "/api/campaigns", size=GIB, chunked=False,
                    headers={"Authorization": f"Bearer {OWNER_TOKEN}"})  # fmt: skip
    assert answer.status == 429 and answer.headers["connection"] == "close"
    assert answer.sent < 64 << 20, f"answered after {answer.sent >> 20} MiB"
    assert guesser.is_alive(), "the guess was answered before its delay"
    guesser.join(timeout=30)
    response, took = slow["answer"]
    assert response.status_code == 401 and took >= 4 * 0.95, took
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert timed_api(client, OWNER_TOKEN)[0].status_code == 200
