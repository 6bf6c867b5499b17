"""The owner's token, the browser session derived from it, and CSRF tokens for forms."""

import hashlib
import hmac
import secrets

from sqlalchemy import Engine

from app import repo
from app.db import session_scope

OWNER_TOKEN_HASH = "owner_token_sha256"
SIGNING_KEY = "signing_key"
SESSION_COOKIE = "campaign_dash_session"


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


class OwnerAuth:
    """Checks the owner's credentials; every comparison is constant-time (timing attacks)."""

    def __init__(self, token_hash: str, signing_key: str) -> None:
        self._token_hash = token_hash
        self._key = signing_key.encode()

    def token_ok(self, token: str | None) -> bool:
        if not token:
            return False
        return hmac.compare_digest(sha256_hex(token), self._token_hash)

    def session_value(self) -> str:
        # Bound to the token: a new owner token ends every existing browser session.
        return self._sign("session:" + self._token_hash)

    def session_ok(self, cookie: str | None) -> bool:
        return bool(cookie) and hmac.compare_digest(str(cookie), self.session_value())

    def csrf_token(self) -> str:
        return self._sign("csrf:" + self._token_hash)

    def csrf_ok(self, submitted: str | None) -> bool:
        return bool(submitted) and hmac.compare_digest(str(submitted), self.csrf_token())

    def _sign(self, message: str) -> str:
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()


def load_owner_auth(engine: Engine, configured_token: str | None) -> tuple[OwnerAuth, str | None]:
    """The owner's auth, and a freshly generated token to print once (None if none was made)."""
    generated = None
    with session_scope(engine) as session:
        key = repo.get_secret(session, name=SIGNING_KEY)
        if key is None:
            key = secrets.token_hex(32)
            repo.set_secret(session, name=SIGNING_KEY, value=key)
        if configured_token:
            token_hash = sha256_hex(configured_token)
        else:
            stored = repo.get_secret(session, name=OWNER_TOKEN_HASH)
            if stored is None:
                generated = new_token()
                stored = sha256_hex(generated)
                repo.set_secret(session, name=OWNER_TOKEN_HASH, value=stored)
            token_hash = stored
    return OwnerAuth(token_hash, key), generated


def reset_owner_token(engine: Engine) -> str:
    token = new_token()
    with session_scope(engine) as session:
        repo.set_secret(session, name=OWNER_TOKEN_HASH, value=sha256_hex(token))
    return token
