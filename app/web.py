"""The application factory: everything the app depends on comes in through `create_app`."""

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from sse_starlette.sse import AppStatus
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, RedirectResponse, Response

from app import alerts, changes, repo
from app.auth import AuthRefresher, OwnerAuth
from app.bodies import BodyGuard, is_public
from app.config import Settings
from app.db import REQUEST_THREADS, is_postgres, make_engine, session_scope
from app.deps import OWNER_TOKEN_REQUIRED, LoginRequired, is_owner, owner_auth
from app.errors import Conflict, Invalid, NotFound, StorageFull
from app.forms import FormRefused
from app.headers import SecurityHeaders, docs_policy
from app.live import Bus, Hub, PostgresRelay, SqliteRelay
from app.notifier import Notifier
from app.pages.campaign_renders import CampaignRenders
from app.pages.rendering import is_htmx, make_templates, render
from app.paths import resource_dir
from app.pauses import Pauses
from app.routes import (
    api_attempts,
    api_campaigns,
    api_runs,
    api_search,
    api_watches,
    events,
    frame_source,
    launch_pages,
    pages,
    shares,
)
from app.runner.manager import RunManager
from app.tailer import Tailer
from app.tailing.factory import LogSources
from app.throttle import BearerThrottle, TokenThrottle, refusal_detail
from app.watching import Watcher

_STATUS = {NotFound: 404, Conflict: 409, Invalid: 422, StorageFull: 507}


def wants_json(request: Request) -> bool:
    if request.url.path.startswith("/api/"):
        return True
    # htmx asks with Accept */*: it swaps what comes back into the page, so never JSON.
    return not is_htmx(request) and "text/html" not in request.headers.get("accept", "")


def error_response(request: Request, status_code: int, detail: object) -> Response:
    if wants_json(request):
        return JSONResponse({"detail": detail}, status_code=status_code)
    response = render(
        request,
        "pages/error.html",
        {"status_code": status_code, "detail": detail},
        partial="partials/_error.html",
        status_code=status_code,
    )
    # An htmx form shows its refusal above the page instead of replacing its target.
    response.headers.update({"HX-Retarget": "#flash", "HX-Reswap": "innerHTML"})
    return response


_OWNED = re.compile(r"^/(campaigns|attempts)/(\d+)(?:/|$)")


def page_holding(path: str) -> str:
    """The page whose form posts to `path` (/campaigns/7/launch: campaign 7's page)."""
    owned = _OWNED.match(path)
    return f"/{owned[1]}/{owned[2]}" if owned else "/"


def login_page(request: Request) -> Response:
    return render(
        request, "pages/login.html", {"error": None, "next": request.url.path}, status_code=401
    )


def unauthorized(request: Request) -> Response:
    """What a request without the owner's credentials gets, before its body is read."""
    if request.url.path.startswith("/api/"):
        return JSONResponse(
            {"detail": OWNER_TOKEN_REQUIRED},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return login_page(request)


def api_docs(request: Request) -> Response:
    """Swagger UI, with a policy for its inline script. The app comes from the request: an
    endpoint closing over it stays in FastAPI's module-level caches, and so would the app."""
    app = request.app
    page = get_swagger_ui_html(openapi_url=app.openapi_url or "", title=f"{app.title} API")
    page.headers["Content-Security-Policy"] = docs_policy(bytes(page.body))
    return page


def create_app(settings: Settings) -> FastAPI:
    """The app over a database already prepared (migrated, its secrets made: `serve` and
    `db upgrade` do it under the start-up lock). Building it touches neither the database
    nor the network; its lifespan reads the owner's credentials, then starts the work."""
    engine = make_engine(settings.database_url)
    auth = OwnerAuth(engine, settings.token)
    refresher = AuthRefresher(auth)
    bus = Bus()
    auth.on_revoke = bus.publish_all
    sources = LogSources(settings)  # this app's SSH connections, closed with it
    pauses = Pauses(on_change=bus.touch)
    tailer = Tailer(
        engine,
        stall_after_s=settings.stall_seconds,
        log_cap_bytes=int(settings.log_cap_mib * (1 << 20)),
        source_factory=sources.open,
        pauses=pauses,
    )

    runner = RunManager(engine, settings, sources)
    notifier = Notifier(engine, public_url=settings.public_url)
    watcher = Watcher(engine, sources)
    changes.on_wake(engine, alerts.WAKE, notifier.wake)

    def after_commit(
        campaign_ids: frozenset[int], attempt_ids: frozenset[int], changed_ids: frozenset[int]
    ) -> None:
        """Every commit on this engine that recorded something: pages hear of it, the
        tailer looks at the attempts whose log may be followed or stopped now, the runner
        at the runs that were asked for or asked to stop, and the drivers of the changed
        attempts' runs wake (what their log said, a stop asked for)."""
        for campaign_id in sorted(campaign_ids):
            bus.publish(campaign_id)
        if attempt_ids:
            tailer.look_at(attempt_ids)
            runner.look()
        if changed_ids:
            runner.changed(changed_ids)

    changes.on_commit(engine, after_commit)

    def from_other_instances(campaign_id: int) -> None:
        bus.publish(campaign_id)
        tailer.wake()  # an attempt closed over there may be one this instance follows

    relay = (
        PostgresRelay(settings.database_url, from_other_instances)
        if is_postgres(settings.database_url)
        else SqliteRelay(engine, from_other_instances)
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The connection pool is sized for this many request threads (app/db.py).
        anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
        await asyncio.to_thread(auth.refresh)
        # Blocking work (SSH reads, catching up a large log) runs in the tailer's threads.
        if relay is not None:
            relay.start()
        await asyncio.to_thread(tailer.start)
        await asyncio.to_thread(runner.start)
        notifier.start()
        watcher.start()
        refresher.start()
        # sse-starlette's hook on uvicorn's Ctrl-C and SIGTERM sets this flag.
        closer = asyncio.create_task(app.state.live.close_on_exit(lambda: AppStatus.should_exit))
        app.state.loop = asyncio.get_running_loop()  # whoever stops the server closes the hub
        app.state.serving = True
        yield
        app.state.serving = False
        closer.cancel()
        await asyncio.to_thread(refresher.stop)
        if relay is not None:
            await asyncio.to_thread(relay.stop)
        await asyncio.to_thread(runner.stop_all)
        await asyncio.to_thread(notifier.stop)
        await asyncio.to_thread(watcher.stop)
        await asyncio.to_thread(tailer.stop_all)
        await asyncio.to_thread(sources.close)
        engine.dispose()

    app = FastAPI(
        title="campaign-dash",
        summary="Optimization campaigns on GPU inference servers: attempts, diagnoses, timeline.",
        lifespan=lifespan,
        docs_url=None,  # served below, with a policy for its inline script
        redoc_url=None,
    )

    app.add_api_route("/docs", api_docs, include_in_schema=False)

    app.state.settings = settings
    app.state.engine = engine
    app.state.auth = auth
    app.state.token_throttle = TokenThrottle()
    app.state.templates = make_templates()
    app.state.tailer = tailer
    app.state.sources = sources
    app.state.runner = runner
    app.state.notifier = notifier
    app.state.watcher = watcher
    app.state.bus = bus
    app.state.live = Hub(
        bus,
        lambda: session_scope(engine, snapshot=True),
        repo.events_after,
        repo.newest_event_id,
        heartbeat_s=settings.heartbeat_seconds,
    )
    app.state.share_limiter = anyio.CapacityLimiter(shares.SHARE_THREADS)
    app.state.share_renders = shares.RenderedShares()
    app.state.pauses = pauses
    app.state.campaign_renders = CampaignRenders(app.state.templates, pauses)
    app.state.frame_source_limiter = anyio.CapacityLimiter(frame_source.FETCHES_AT_ONCE)

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, _exc: LoginRequired) -> Response:
        return login_page(request)

    app.add_middleware(
        BodyGuard,
        is_owner=is_owner,
        unauthorized=unauthorized,
        too_large=lambda request, detail: error_response(request, 413, detail),
    )
    app.add_middleware(
        BearerThrottle,  # outside the BodyGuard: its 401 for a wrong token comes after the delay
        throttle=lambda request: request.app.state.token_throttle,
        token_ok=lambda request, token: owner_auth(request).token_ok(token),
        is_public=is_public,
        refused=lambda request, wait: error_response(request, 429, refusal_detail(wait)),
    )
    app.add_middleware(SecurityHeaders)  # outermost: on refusals too

    for error_type, status_code in _STATUS.items():

        async def domain_error(
            request: Request, exc: Exception, code: int = status_code
        ) -> Response:
            return error_response(request, code, str(exc))

        app.add_exception_handler(error_type, domain_error)

    @app.exception_handler(FormRefused)
    async def form_refused(request: Request, exc: FormRefused) -> Response:
        # Rendering reads the database: off the event loop.
        return await anyio.to_thread.run_sync(pages.refused_answer, request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405 and request.method == "GET" and not wants_json(request):
            # A form's address left in the address bar by its refusal, opened or pasted:
            # the page that holds the form, not "Method Not Allowed".
            return RedirectResponse(page_holding(request.url.path), status_code=303)
        response = error_response(request, exc.status_code, exc.detail)
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        if not wants_json(request):  # a page's address, cut short or mistyped
            detail = "; ".join(
                f"{e['loc'][-1] if e['loc'] else 'request'}: {e['msg']}" for e in errors
            )
            return error_response(request, 422, detail)
        return JSONResponse({"detail": errors}, status_code=422)

    app.mount("/static", StaticFiles(directory=resource_dir("static")), name="static")
    app.include_router(api_campaigns.router)
    app.include_router(api_attempts.router)
    app.include_router(api_runs.router)
    app.include_router(api_search.router)
    app.include_router(api_watches.router)
    app.include_router(frame_source.router)
    app.include_router(events.router)
    app.include_router(shares.owner_router)
    app.include_router(shares.public_router)
    app.include_router(pages.router)
    app.include_router(launch_pages.router)
    return app
