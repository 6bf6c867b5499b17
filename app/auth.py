"""The owner's token, the browser sessions opened with it, and CSRF tokens for forms.

Checks run in memory (no query per request, none on the event loop); `refresh` reloads the
stored token hash and the open sessions, so a `token reset` or a logout by another process
takes effect on a running dashboard within `REFRESH_S`."""

import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import Callable

from sqlalchemy import Engine

from app import repo
from app.db import session_scope
from app.runtime import new_token

OWNER_TOKEN_HASH = "owner_token_sha256"
SIGNING_KEY = "signing_key"
SESSION_COOKIE = "campaign_dash_session"
# Where the serving dashboard's owner token comes from, recorded by `serve` as it starts: a
# `token reset` in another terminal cannot see that dashboard's environment, and a token
# taken from CAMPAIGN_DASH_TOKEN is one no reset of the stored hash changes.
TOKEN_FROM = "owner_token_from"
FROM_ENVIRONMENT, FROM_DATABASE = "environment", "database"
REFRESH_S = 0.5
SESSION_MAX_AGE_S = 60 * 60 * 24 * 30

log = logging.getLogger(__name__)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class OwnerAuth:
    """Every comparison of a secret is constant-time (timing attacks); sessions are stored
    only as hashes, so a copy of the database opens none of them."""

    def __init__(self, engine: Engine, configured_token: str | None) -> None:
        self._engine = engine
        self._configured_hash = sha256_hex(configured_token) if configured_token else None
        self._token_hash = ""
        self._key = b""
        self._sessions: frozenset[str] = frozenset()
        # Sessions this process opened (True) or ended (False) while a refresh read the
        # database: its read may be older than them, so they are applied over it.
        self._changed_meanwhile: dict[str, bool] | None = None
        self._lock = threading.Lock()
        # The token of this process's runtime file (app/runtime.py), for the CLI and the MCP
        # server of the same user: in memory only, it dies with the process.
        self._runtime_hash = ""
        # Called when a credential stops being valid: open live streams check theirs.
        self.on_revoke: Callable[[], None] = lambda: None

    def refresh(self) -> None:
        with self._lock:
            self._changed_meanwhile = {}
        try:
            with session_scope(self._engine) as session:
                key = repo.get_secret(session, name=SIGNING_KEY) or ""
                stored = repo.get_secret(session, name=OWNER_TOKEN_HASH) or ""
                read = set(repo.list_owner_sessions(session))
        except BaseException:
            with self._lock:
                self._changed_meanwhile = None
            raise
        with self._lock:
            changed, self._changed_meanwhile = self._changed_meanwhile or {}, None
            read |= {digest for digest, opened in changed.items() if opened}
            sessions = frozenset(read - {d for d, opened in changed.items() if not opened})
            revoked = bool(self._sessions - sessions) or (
                bool(self._token_hash) and self._token_hash != (self._configured_hash or stored)
            )
            self._key = key.encode()
            self._token_hash = self._configured_hash or stored
            self._sessions = sessions
        if revoked:
            self.on_revoke()

    def accept_runtime_token(self, token: str) -> None:
        self._runtime_hash = sha256_hex(token)

    def token_ok(self, token: str | None) -> bool:
        if not token:
            return False
        digest = sha256_hex(token)
        # Both compared, whatever the first says: how long it takes tells nothing.
        owner = bool(self._token_hash) and hmac.compare_digest(digest, self._token_hash)
        runtime = bool(self._runtime_hash) and hmac.compare_digest(digest, self._runtime_hash)
        return owner or runtime

    def open_session(self) -> str:
        """A new browser session's cookie value; each login gets its own."""
        cookie = new_token()
        digest = sha256_hex(cookie)
        with session_scope(self._engine) as session:
            repo.add_owner_session(session, token_hash=digest)
        with self._lock:
            self._sessions = self._sessions | {digest}
            if self._changed_meanwhile is not None:
                self._changed_meanwhile[digest] = True
        return cookie

    def end_session(self, cookie: str | None) -> None:
        if not cookie:
            return
        digest = sha256_hex(cookie)
        with session_scope(self._engine) as session:
            repo.delete_owner_session(session, token_hash=digest)
        with self._lock:
            self._sessions = self._sessions - {digest}
            if self._changed_meanwhile is not None:
                self._changed_meanwhile[digest] = False
        self.on_revoke()

    def session_ok(self, cookie: str | None) -> bool:
        # A set lookup of a hash: the cookie is 256 random bits, nothing to learn by timing.
        return bool(cookie) and sha256_hex(str(cookie)) in self._sessions

    def csrf_token(self, cookie: str | None) -> str:
        """Bound to the browser session: a token copied from one session fails in another."""
        return self._sign("csrf:" + (sha256_hex(cookie) if cookie else self._token_hash))

    def csrf_ok(self, cookie: str | None, submitted: str | None) -> bool:
        return bool(submitted) and hmac.compare_digest(str(submitted), self.csrf_token(cookie))

    def _sign(self, message: str) -> str:
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()


class AuthRefresher:
    """Reloads the owner's credentials in a thread of its own while the app serves."""

    def __init__(self, auth: OwnerAuth, every_s: float = REFRESH_S) -> None:
        self._auth, self._every_s = auth, every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="auth-refresh", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                self._auth.refresh()
            except Exception:
                # Kept credentials stay valid; the next round tries again.
                log.exception("reloading the owner's credentials failed")


def ensure_owner_secrets(engine: Engine, configured_token: str | None) -> str | None:
    """Create the signing key and, without a configured token, the owner token; returns a
    token just generated, to print once (None if none was made)."""
    generated = None
    with session_scope(engine) as session:
        if repo.get_secret(session, name=SIGNING_KEY) is None:
            repo.set_secret(session, name=SIGNING_KEY, value=secrets.token_hex(32))
        if not configured_token and repo.get_secret(session, name=OWNER_TOKEN_HASH) is None:
            generated = new_token()
            repo.set_secret(session, name=OWNER_TOKEN_HASH, value=sha256_hex(generated))
    return generated


def reset_owner_token(engine: Engine) -> str:
    """A new owner token; every browser session ends with the old one."""
    token = new_token()
    with session_scope(engine) as session:
        repo.set_secret(session, name=OWNER_TOKEN_HASH, value=sha256_hex(token))
        repo.delete_owner_session(session, token_hash=None)
    return token
