"""How the dashboard is served: uvicorn's configuration and the bounds a server on a shared
network needs, which uvicorn lacks. Its h11 protocol starts no timer before a request's
headers are in and none while a body arrives, so a client that connects and sends nothing, or
a header byte a second (slowloris), or a body a byte a second, held a connection for ever."""

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.config import Settings

BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 5\r\nconnection: close\r\ncontent-length: 33\r\n\r\n"
    b"too many connections: retry soon\n"
)


@dataclass(frozen=True)
class Bounds:
    headers_s: float  # from connecting (or the last response) to a request's blank line
    body_s: float  # from the headers to the body's last byte
    keep_alive_s: float  # an idle connection between requests
    max_connections: int  # open at once, live streams included

    @classmethod
    def of(cls, settings: Settings) -> "Bounds":
        return cls(
            headers_s=settings.header_timeout_seconds,
            body_s=settings.body_timeout_seconds,
            keep_alive_s=settings.keep_alive_seconds,
            max_connections=settings.max_connections,
        )


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on reading a request, never on a response: a
    live stream (a long response to a request read long ago) is never cut by these."""

    bounds: ClassVar[Bounds]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._reading = ""  # what the deadline is for: "headers", "body" or nothing
        super().connection_made(transport)
        if len(self.connections) > self.bounds.max_connections:
            # Answered before reading anything: a 503 costs less than the request would.
            transport.write(BUSY)
            transport.close()
            return
        self._arm(self.bounds.headers_s)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_the_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            # uvicorn's keep-alive timer stops at the first byte of the next request; this
            # one does not, so a next request dribbled in is cut all the same.
            self._arm(self.bounds.headers_s)
            self._follow_the_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _follow_the_request(self) -> None:
        state = self.conn.their_state
        if state is h11.IDLE:
            return  # still reading headers: the deadline set when they were awaited holds
        if state is h11.SEND_BODY:
            if self._reading != "body":
                self._arm(self.bounds.body_s, reading="body")
            return
        self._disarm()  # the request is in: what follows is the response's time

    def _arm(self, seconds: float, reading: str = "headers") -> None:
        self._disarm()
        self._reading = reading
        self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._reading = ""

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            # A body cut short ends the app's wait on it as a disconnect does.
            self.transport.close()


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration with the bounds of `settings`, for `serve`, `demo` and tests."""
    bounds = Bounds.of(settings)
    protocol = type("BoundedH11Protocol", (BoundedH11Protocol,), {"bounds": bounds})
    return uvicorn.Config(
        app, http=protocol, timeout_keep_alive=max(1, round(bounds.keep_alive_s)), **options
    )
