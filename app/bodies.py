"""Request bodies: refused unread when the owner's credentials are missing, and bounded by
what their route needs (413). A pure ASGI middleware, because it must answer before anything
reads the body: FastAPI parses a body before the route's dependencies check the owner."""

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Anyone may post to these: the share pages (no body), login and logout (a token, a form).
PUBLIC_PREFIXES = ("/s/", "/login", "/logout", "/static/")
# The largest owner body is an attempt with four 20,000-character texts, JSON-escaped.
OWNER_BODY_BYTES = 1 << 20
PUBLIC_BODY_BYTES = 16 << 10


def body_limit(path: str) -> int:
    return PUBLIC_BODY_BYTES if is_public(path) else OWNER_BODY_BYTES


def is_public(path: str) -> bool:
    return path.startswith(PUBLIC_PREFIXES)


def too_large_detail(limit: int) -> str:
    return f"request body too large: this route takes at most {limit:,} bytes"


class BodyGuard:
    """Before a body is read: no owner credentials on an owner's route, 401 (the connection
    is closed, the body never read); a body over its route's limit, 413."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        is_owner: Callable[[Request], bool],
        unauthorized: Callable[[Request], Response],
        too_large: Callable[[Request, str], Response],
    ) -> None:
        self.app = app
        self.is_owner = is_owner
        self.unauthorized = unauthorized
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        declared = headers.get("content-length", "")
        length = int(declared) if declared.isdigit() else 0
        if not chunked and length == 0:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = scope["path"]
        if not is_public(path) and not self.is_owner(request):
            await self._refuse(self.unauthorized(request), scope, receive, send)
            return
        limit = body_limit(path)
        if length > limit:
            await self._refuse(
                self.too_large(request, too_large_detail(limit)), scope, receive, send
            )
            return
        await _Bounded(self.app, limit)(scope, receive, send)

    async def _refuse(self, response: Response, scope: Scope, receive: Receive, send: Send) -> None:
        # The rest of the body is never read: the connection ends with this answer.
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


class _Bounded:
    """A chunked body that passes its limit ends the read with a 413 (FastAPI and Starlette
    hand an HTTPException raised while reading to the app's error handler), and the
    connection with it, so that the rest is not read either."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self.received = 0
        self.over = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.limit:
                    self.over = True
                    raise HTTPException(status_code=413, detail=too_large_detail(self.limit))
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and self.over:
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, bounded_receive, closing_send)
