"""Security headers on every response: a Content-Security-Policy that lets the pages run
our own files and the pinned htmx files from the CDN and nothing else, no framing, no
MIME sniffing, no referrer (share tokens are in paths) leaving the site, and no copy kept
by a browser or a proxy of anything but the static files."""

import base64
import hashlib
import re

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.pages.rendering import HTMX_SRI, HTMX_URL

# Nothing inline: an injected <script> or style="..." does not run, even if escaping failed.
PAGE_POLICY = "; ".join(
    [
        "default-src 'none'",
        f"script-src 'self' {HTMX_URL} '{HTMX_SRI}'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",  # htmx requests and the live event streams
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)

SWAGGER_CDN = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/"
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.S)


def docs_policy(html: bytes) -> str:
    """FastAPI's Swagger page: its CDN files, and its one inline script by hash."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'"
        for script in _INLINE_SCRIPT.findall(html)
    )
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {SWAGGER_CDN} {hashes}",
            f"style-src {SWAGGER_CDN}",
            "img-src 'self' data: https://fastapi.tiangolo.com",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ]
    )


SECURITY_HEADERS = {
    "content-security-policy": PAGE_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


# Owner pages and API answers hold the owner's data: a shared machine's browser cache or
# a proxy must not keep them. Share pages too: their URL is their secret, and a revoked
# link must stop showing the campaign, which a cached copy would go on doing. The static
# files hold nothing private, and are the ones worth caching.
NO_STORE = "no-store"
CACHEABLE_PREFIX = "/static/"


class SecurityHeaders:
    """Adds the headers to every HTTP response that does not set its own (the docs page
    sets its own policy)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cacheable = str(scope.get("path", "")).startswith(CACHEABLE_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
                if not cacheable:
                    headers["cache-control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_with_headers)
