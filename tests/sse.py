"""Read Server-Sent Events from a live server, with bounded waits."""

import queue
import threading
import time
from dataclasses import dataclass, field

import anyio
import httpx


@dataclass
class Message:
    event: str
    data: str
    id: str | None


def sse_field(line: str) -> tuple[str, str]:
    """One `name: value` line of a message (one leading space of the value dropped)."""
    name, _, value = line.partition(":")
    return name, value[1:] if value.startswith(" ") else value


@dataclass
class SSEReader:
    """Reads a stream in a thread; `next()` waits a bounded time for the next message. Made
    once the stream has said hello: its reader has joined, so no later change is missed."""

    client: httpx.Client
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None

    def __post_init__(self) -> None:
        self._messages: queue.Queue[Message | None] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError(f"no answer from {self.url} in 30 s")

    def _run(self) -> None:
        try:
            with self.client.stream("GET", self.url, headers=self.headers, timeout=30) as response:
                self.status = response.status_code
                if response.status_code != 200:
                    return
                event, data, ident = "message", [], None
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line == "":
                        if data or event != "message":
                            self._messages.put(Message(event, "\n".join(data), ident))
                        if event == "hello":
                            self._ready.set()  # joined its broadcaster: no change is missed
                        event, data, ident = "message", [], None
                    elif line.startswith(":"):
                        continue
                    else:
                        name, value = sse_field(line)
                        if name == "event":
                            event = value
                        elif name == "data":
                            data.append(value)
                        elif name == "id":
                            ident = value
        except (httpx.HTTPError, anyio.ClosedResourceError):
            pass  # the server went away (the in-process one says so with a closed stream)
        finally:
            self._ready.set()
            self._messages.put(None)

    def next(
        self, timeout: float = 10.0, skip: tuple[str, ...] = ("heartbeat", "hello")
    ) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            # Heartbeats come more often than the timeout: the wait is bounded in all.
            message = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
            if message is None:
                raise AssertionError("the stream ended")
            if message.event not in skip:
                return message

    def until(self, predicate, timeout: float = 10.0) -> Message:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no matching message in time")
            message = self.next(timeout=left, skip=())
            if predicate(message):
                return message

    def close(self) -> None:
        self._stop.set()
