"""Wrong owner tokens, at the login or as an API's bearer token, cost a delay that doubles
with each one from the same client address, and the address is refused (429) until the
delay is over; the right token is taken at once after it. The wait is an asyncio sleep: a
guesser never holds up the loop."""

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

FIRST_DELAY_S = 0.25
MAX_DELAY_S = 30.0  # after 8 wrong tokens in a row: 2 guesses a minute at most
FORGET_AFTER_S = 15 * 60.0  # an address's wrong tokens, once it has stopped guessing
# Addresses remembered at once: a guesser spread over many addresses cannot grow this, it
# only pushes out the least recent ones (each then starts again at FIRST_DELAY_S).
MAX_ADDRESSES = 10_000
# asyncio may wake a sleeper up to its clock's resolution early: a guesser answered after
# its delay must not be refused for the few nanoseconds left.
SLACK_S = 0.005


@dataclass
class _Failures:
    count: int
    not_before: float  # monotonic: refused until then
    last: float


class TokenThrottle:
    """Per client address (behind a proxy all clients share one: the delay then falls on
    everyone, which is the safe side). Touched only from the event loop: no lock."""

    def __init__(self) -> None:
        self._addresses: OrderedDict[str, _Failures] = OrderedDict()

    def wait_left(self, address: str) -> float:
        """Seconds until `address` may try a token again (0: now)."""
        failures = self._addresses.get(address)
        if failures is None:
            return 0.0
        now = time.monotonic()
        if now - failures.last > FORGET_AFTER_S:
            del self._addresses[address]
            return 0.0
        left = failures.not_before - now
        return left if left > SLACK_S else 0.0

    def failed(self, address: str) -> float:
        """Records a wrong token; the delay it costs."""
        now = time.monotonic()
        failures = self._addresses.pop(address, None)
        count = (
            1 if failures is None or now - failures.last > FORGET_AFTER_S else failures.count + 1
        )
        delay = min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** min(count - 1, 32))
        self._addresses[address] = _Failures(count, now + delay, now)
        while len(self._addresses) > MAX_ADDRESSES:
            self._addresses.popitem(last=False)
        return delay

    def succeeded(self, address: str) -> None:
        self._addresses.pop(address, None)

    def __len__(self) -> int:
        return len(self._addresses)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def refusal_detail(wait_s: float) -> str:
    return f"Too many wrong tokens: try again in {math.ceil(wait_s)} s."


class BearerThrottle:
    """Before a request reaches its route (or its body is read): a bearer token on an
    owner's route is checked here against the throttle, so that guessing through the API
    costs what guessing at the login does. While an address waits out its delay it is
    refused, with any token: a 429 cannot tell a guesser which one was right."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        throttle: Callable[[Request], TokenThrottle],
        token_ok: Callable[[Request, str], bool],
        is_public: Callable[[str], bool],
        refused: Callable[[Request, float], Response],
    ) -> None:
        self.app = app
        self.throttle, self.token_ok = throttle, token_ok
        self.is_public, self.refused = is_public, refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await self.app(scope, receive, send)  # cookies and anonymous visitors: no guess
            return
        request = Request(scope)
        throttle = self.throttle(request)
        address = client_address(scope)
        wait = throttle.wait_left(address)
        if wait > 0:
            response = self.refused(request, wait)
            response.headers["Retry-After"] = str(math.ceil(wait))
            response.headers["Connection"] = "close"  # any body stays unread
            await response(scope, receive, send)
            return
        if self.token_ok(request, token.strip()):
            throttle.succeeded(address)
        else:
            await asyncio.sleep(throttle.failed(address))  # then the route's own 401
        await self.app(scope, receive, send)
