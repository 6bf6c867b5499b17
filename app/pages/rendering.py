"""Jinja2 set-up and the one render() helper that picks the page or its partial."""

import hashlib
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from fastapi import Request
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.responses import HTMLResponse

from app.credentials import mask_secrets
from app.deps import is_owner, session_cookie
from app.forms import FormState
from app.markdown import render_markdown
from app.numbers import fmt_delta, fmt_judgement, fmt_number
from app.paths import resource_dir

# htmx from its CDN, pinned, with Subresource Integrity (the hash of the npm package's file).
# Live pages swap their fragments with static/app.js, not htmx's SSE extension.
HTMX_URL = "https://cdn.jsdelivr.net/npm/htmx.org@2.0.11/dist/htmx.min.js"
HTMX_SRI = "sha384-2OatzQy1H+Zd/IIrjr1TcuDGqLXeHhbooAyJY1KdQMKnr4LZ22k31GBLdYKHmVjg"

# Stands in for the owner's CSRF token in a rendering shared by every session; random per
# process, so no log line or note can forge it. Each stream or page puts its own token in.
CSRF_MARK = secrets.token_hex(16)
CSRF_BYTES = CSRF_MARK.encode()
# Where a page's kept rendering goes (`Splice`), its index between two of these.
SPLICE_MARK = secrets.token_hex(16)
SPLICE_BYTES = SPLICE_MARK.encode()


def fmt_filesize(size: int | None) -> str:
    if size is None:
        return "—"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GiB"


def iso_utc(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(resource_dir("templates")))
    env = templates.env
    # Templates are files of the release: checking each one's mtime at every include cost
    # a stat per card (a thousand on a large campaign's page).
    env.auto_reload = False
    env.globals.update(HTMX_URL=HTMX_URL, HTMX_SRI=HTMX_SRI)
    env.filters.update(
        number=fmt_number,
        filesize=fmt_filesize,
        delta=fmt_delta,
        judgement=lambda s: fmt_judgement(s.delta_pct, s.delta_ci95_pct, s.call.value, s.n),
        iso=iso_utc,
        markdown=render_markdown,
        # A command shown (not edited): its credentials stay off a screen someone may share.
        masked=mask_secrets,
        tojson_compact=lambda v: json.dumps(v, separators=(",", ":")),
        # A short stable key of any text, fit for an element id (a file path is not).
        digest=lambda v: hashlib.sha256(str(v).encode()).hexdigest()[:12],
        # Items as their renderings (by id), joined at once: a thousand cards written out
        # one by one cost a page two milliseconds.
        rendered=lambda items, html: Markup("".join(html[item.id] for item in items)),
    )
    return templates


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RenderCache(Generic[K, V]):
    """The latest rendering of each view, good until its campaign has a newer event (every
    change records one): a crowd opening one page costs one rendering, not one each."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: OrderedDict[K, tuple[int, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, cursor: int) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != cursor:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: K, cursor: int, value: V) -> None:
        with self._lock:
            self._entries[key] = (cursor, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def page_context(request: Request, context: dict[str, Any]) -> dict[str, Any]:
    owner = is_owner(request)
    csrf = request.app.state.auth.csrf_token(session_cookie(request)) if owner else ""
    return {
        "request": request, "csrf_token": csrf, "is_owner": owner, "forms": FormState(),
        **context,
    }  # fmt: skip


def render_partial(request: Request, name: str, context: dict[str, Any]) -> str:
    """A partial as text (for an SSE message): the same template the page includes."""
    templates: Jinja2Templates = request.app.state.templates
    return templates.get_template(name).render(page_context(request, context))


def render_fragment(
    templates: Jinja2Templates,
    name: str,
    context: dict[str, Any],
    *,
    is_owner: bool,
    csrf_token: str,
) -> str:
    """A partial rendered once for every reader of a live view, outside any request."""
    full = {"request": None, "csrf_token": csrf_token, "is_owner": is_owner, "forms": FormState()}
    return templates.get_template(name).render({**full, **context})


class Encoded(Protocol):
    def encoded(self, csrf_token: str) -> bytes: ...


class Splice:
    """A page's kept renderings (a campaign's timeline, its head), put in as UTF-8 bytes
    after the page is rendered: through the template, a megabyte of cards was copied,
    escaped and encoded again for every request."""

    def __init__(self) -> None:
        self.kept: list[Encoded] = []

    def __call__(self, kept: Encoded) -> Markup:
        self.kept.append(kept)
        return Markup(f"{SPLICE_MARK}{len(self.kept) - 1}{SPLICE_MARK}")

    def body(self, html: str, csrf_token: str) -> bytes:
        pieces = html.encode().split(SPLICE_BYTES)
        pieces[1::2] = [self.kept[int(i)].encoded(csrf_token) for i in pieces[1::2]]
        return b"".join(pieces)


def render(
    request: Request,
    page: str,
    context: dict[str, Any],
    *,
    partial: str | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """The full page, or only its partial when htmx asks (both from the same template)."""
    templates: Jinja2Templates = request.app.state.templates
    name = partial if partial and is_htmx(request) else page
    splice = Splice()
    full = {**page_context(request, context), "splice": splice}
    html = templates.get_template(name).render(full)
    if not splice.kept:
        return HTMLResponse(html, status_code=status_code)
    return HTMLResponse(splice.body(html, full["csrf_token"]), status_code=status_code)
