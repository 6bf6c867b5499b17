"""Request dependencies: the database session, the owner check, CSRF for forms."""

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlmodel import Session

from app.auth import SESSION_COOKIE, OwnerAuth
from app.config import Settings
from app.db import session_scope


class LoginRequired(Exception):
    """A page was asked for without a valid owner session."""


def get_session(request: Request) -> Iterator[Session]:
    """The request's unit of work; what it records is published after commit by the app's
    hook (app/changes.py)."""
    reading = request.method in ("GET", "HEAD")
    with session_scope(request.app.state.engine, snapshot=reading) as session:
        yield session


# scope="function": the transaction commits before the response leaves, so a client
# that reads right after a write sees it.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


def owner_auth(request: Request) -> OwnerAuth:
    auth: OwnerAuth = request.app.state.auth
    return auth


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def is_owner(request: Request) -> bool:
    auth = owner_auth(request)
    return auth.token_ok(bearer_token(request)) or auth.session_ok(session_cookie(request))


OWNER_TOKEN_REQUIRED = "owner token required (Authorization: Bearer <token>)"


def require_api_owner(request: Request) -> None:
    auth = owner_auth(request)
    if auth.token_ok(bearer_token(request)):
        return
    # The browser's cookie may read the API; writes through it would need CSRF
    # protection, so they take the bearer token (or go through the forms).
    if request.method in ("GET", "HEAD") and auth.session_ok(session_cookie(request)):
        return
    raise HTTPException(
        status_code=401, detail=OWNER_TOKEN_REQUIRED, headers={"WWW-Authenticate": "Bearer"}
    )


def require_page_owner(request: Request) -> None:
    if not is_owner(request):
        raise LoginRequired()


def session_cookie(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE)


async def require_csrf(request: Request) -> None:
    require_page_owner(request)
    if owner_auth(request).token_ok(bearer_token(request)):
        return  # a browser never sends the bearer token by itself: no forgery to fear
    form = await request.form()
    submitted = form.get("csrf_token")
    cookie = session_cookie(request)
    if not owner_auth(request).csrf_ok(cookie, submitted if isinstance(submitted, str) else None):
        raise HTTPException(status_code=403, detail="missing or wrong CSRF token: reload the page")
