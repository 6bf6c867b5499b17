"""The live streams' HTTP response: SSE bytes, encoded once for every reader, written as
they come. sse-starlette's response spends a cancel scope and a timer on every message (its
send timeout; 15 us of loop time a message in-process, against 2.3 us here) and a ping task
on every connection. Here heartbeats come from the broadcaster (app/live.py), a change
reaches an idle reader's socket straight from the broadcaster (`write_now`), and a send
stuck on a reader that takes no bytes is found by one slow look per connection."""

import math
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping
from typing import Any, cast

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

WriteNow = Callable[[bytes], bool]


class LiveStream(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: Callable[[WriteNow], AsyncGenerator[bytes, None]],
        *,
        headers: Mapping[str, str],
        send_timeout_s: float,
    ) -> None:
        self.chunks = chunks(self.write_now)
        self._asgi_send: Send | None = None
        self.status_code = 200
        self.background = None
        self.send_timeout_s = send_timeout_s
        self.init_headers(headers)
        self._sending_since = math.inf  # while a send waits for the reader: since when

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        if scope["method"] == "HEAD":  # the headers only: the stream would never end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        self._asgi_send = send
        async with anyio.create_task_group() as group:
            group.start_soon(self._hang_up_on_disconnect, receive, group.cancel_scope)
            group.start_soon(self._cut_when_stuck, group.cancel_scope)
            try:
                async for chunk in self.chunks:
                    await self._send(send, chunk, more=True)
                await self._send(send, b"", more=False)
            finally:
                self._asgi_send = None
                group.cancel_scope.cancel()
                await self.chunks.aclose()  # its subscription ends now, not when collected
        if self.background is not None:
            await self.background()

    def write_now(self, body: bytes) -> bool:
        """Hand `body` to the server at once, from whatever runs on the loop, if it takes it
        without waiting: uvicorn writes to the socket's buffer unless the reader is behind,
        and then it waits before writing anything. False, nothing written, when it would
        wait (or failed): the caller sends it the ordinary way, from the stream's task.
        Call it only while the stream waits for its next chunk, never during a send."""
        if self._asgi_send is None:
            return False
        message = {"type": "http.response.body", "body": body, "more_body": True}
        step = cast(Coroutine[Any, Any, None], self._asgi_send(message))
        try:
            step.send(None)
        except StopIteration:
            return True
        except Exception:
            return False  # the stream's own send meets it again, and ends the stream
        step.close()
        return False

    async def _send(self, send: Send, chunk: bytes, *, more: bool) -> None:
        self._sending_since = time.monotonic()
        await send({"type": "http.response.body", "body": chunk, "more_body": more})
        self._sending_since = math.inf

    @staticmethod
    async def _hang_up_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async def _cut_when_stuck(self, scope: anyio.CancelScope) -> None:
        """A reader that takes no bytes for send_timeout_s (its socket full) is cut, found
        within twice that: one look per period, not a timer per message."""
        while True:
            await anyio.sleep(self.send_timeout_s)
            if time.monotonic() - self._sending_since > self.send_timeout_s:
                scope.cancel()
                return
