"""The running dashboard's HTTP API as the CLI verbs, `try` and the MCP server call it: the
dashboard found by its runtime file (app/runtime.py) or given by --url, each refusal one
line carrying the dashboard's own `detail`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from app import runtime

if TYPE_CHECKING:
    import httpx

# httpx (60 ms to import) is imported where a request is made: `diagnose` never needs it.

DEFAULT_URL = "http://127.0.0.1:8000"  # serve's default address
EXIT_ERROR = 2  # as `try` and `diagnose` say a refusal or bad usage


def limits() -> httpx.Limits:
    """Idle connections are let go of before the dashboard closes them (its keep-alive is
    5 s): one reused just as the server closes it fails the request with a reset."""
    import httpx

    return httpx.Limits(keepalive_expiry=2.0)


START_ONE = "start one with `campaign-dash serve`, or give --url URL with CAMPAIGN_DASH_TOKEN set"


class DashboardError(click.ClickException):
    """The dashboard could not be reached or refused the request: exit 2."""

    exit_code = EXIT_ERROR


@dataclass(frozen=True)
class Found:
    url: str
    token: str
    said: str | None = None  # which of several dashboards is used, and why


def _configured_token() -> str | None:
    token = os.environ.get("CAMPAIGN_DASH_TOKEN")
    if token:
        return token
    from app.config import Settings

    return Settings().token  # from .env


def _same_address(a: str, b: str) -> bool:
    first, second = urlsplit(a), urlsplit(b)
    loopback = {"127.0.0.1", "localhost", "::1"}
    hosts = {first.hostname, second.hostname}
    same_host = len(hosts) == 1 or hosts <= loopback
    return same_host and (first.port or 80) == (second.port or 80)


def _require_an_answer(url: str) -> None:
    """Nothing listening at the address is said as such, before any word on tokens."""
    import httpx

    try:
        httpx.get(url, timeout=3.0)
    except httpx.HTTPError as error:
        raise DashboardError(
            f"no dashboard answers at {url} ({error}): check the address, or start one with "
            "`campaign-dash serve`"
        ) from None


def find(url: str | None) -> Found:
    """The dashboard to talk to: `url` with CAMPAIGN_DASH_TOKEN (or the token of this user's
    dashboard listening there); without it, the one dashboard running here, or of several
    the one serving this directory's database, else the latest started."""
    dashboards = runtime.running()
    if url:
        url = url.rstrip("/")
        token = _configured_token() or next(
            (d.token for d in dashboards if _same_address(d.url, url)), None
        )
        if not token:
            _require_an_answer(url)
            raise DashboardError(
                f"no token for {url}: set CAMPAIGN_DASH_TOKEN to its owner token (a dashboard "
                "this user started on this machine needs none)"
            )
        return Found(url, token)
    if not dashboards:
        token = _configured_token()
        if token:
            return Found(DEFAULT_URL, token)
        raise DashboardError(
            f"no dashboard is running here (none has a runtime file in "
            f"{runtime.runtime_dir()}): {START_ONE}"
        )
    if len(dashboards) == 1:
        return Found(dashboards[0].url, dashboards[0].token)
    from app.config import Settings  # a quarter of a second: only where there is a choice

    ours = runtime.database_identity(Settings().database_url)
    chosen = next((d for d in dashboards if d.database == ours), dashboards[0])
    why = "it serves this directory's database" if chosen.database == ours else "it started last"
    others = ", ".join(d.url for d in dashboards if d is not chosen)
    said = (
        f"{len(dashboards)} dashboards run here: using {chosen.describe()}, as {why} "
        f"(also {others}; --url picks one)"
    )
    return Found(chosen.url, chosen.token, said)


def detail_of(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = response.text
    if isinstance(detail, list):  # a validation error: each field and what is wrong with it
        return "; ".join(
            f"{'.'.join(str(p) for p in d.get('loc', [])[1:]) or 'body'}: {d.get('msg')}"
            for d in detail
            if isinstance(d, dict)
        )
    return detail if isinstance(detail, str) else str(detail)


class Api:
    """One dashboard's API: each answer's JSON, or a DashboardError saying why not."""

    def __init__(self, found: Found, *, timeout: float = 30.0) -> None:
        import httpx

        self.url = found.url
        self.http = httpx.Client(
            base_url=found.url, headers={"Authorization": f"Bearer {found.token}"},
            timeout=timeout, limits=limits(),
        )  # fmt: skip

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        import httpx

        try:
            response = self.http.request(method, path, **options)
        except UnicodeEncodeError:
            # (an argument's bytes that are no UTF-8 reach Python as lone surrogates)
            raise click.UsageError("the text given is not UTF-8: nothing was sent") from None
        except httpx.TransportError as error:
            raise DashboardError(
                f"cannot reach the dashboard at {self.url} ({error}): is it running? {START_ONE}"
            ) from None
        if response.status_code == 401:
            raise DashboardError(
                f"the dashboard at {self.url} refused the token (CAMPAIGN_DASH_TOKEN, or the "
                "runtime file of a dashboard since restarted)"
            )
        if response.status_code >= 400:
            raise DashboardError(f"{detail_of(response)} ({response.status_code})")
        return response

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    def post(self, path: str, body: Any = None) -> Any:
        response = self.request("POST", path, json=body if body is not None else {})
        return response.json() if response.content else None

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body).json()

    def text(self, path: str) -> str:
        return self.request("GET", path).text

    def campaign_id(self, campaign: str | int) -> int:
        """CAMPAIGN as an id, a name, or the start of one name."""
        text = str(campaign).strip().lstrip("#")
        if text.isdigit():
            return int(text)
        name = str(campaign).strip()
        campaigns = self.get("/api/campaigns")
        named = [c["id"] for c in campaigns if c["name"] == name]
        if len(named) > 1:
            raise DashboardError(f"{len(named)} campaigns are named {name!r}: give its id")
        if not named:
            # The start of a long name, as typed ("EAGLE-3" for "EAGLE-3 speculative decoding
            # on 8x RTX PRO 6000 (PCIe)"), when it names one campaign alone.
            named = [c["id"] for c in campaigns if c["name"].lower().startswith(name.lower())]
            if len(named) > 1:
                raise DashboardError(
                    f"{len(named)} campaigns start with {name!r} "
                    f"(#{', #'.join(map(str, sorted(named)))}): give more of the name, or its id"
                )
        if not named:
            raise DashboardError(f"no campaign named {name!r}")
        return int(named[0])

    def new_campaign(self, body: dict[str, Any]) -> dict[str, Any]:
        """A campaign started, unless another has its name: a name two campaigns share stands
        for neither wherever a name is given (and a retried call must not make a second)."""
        name = str(body["name"]).strip()
        taken = [c["id"] for c in self.get("/api/campaigns") if c["name"] == name]
        if taken:
            raise DashboardError(
                f"campaign #{taken[0]} is named {name!r} already: use it, or give another name"
            )
        return self.post("/api/campaigns", body)


def attempt_id(attempt: str | int) -> int:
    """ATTEMPT as its id, `12` or `#12`."""
    text = str(attempt).strip().lstrip("#")
    if not text.isdigit():
        raise DashboardError(f"{attempt!r} is not an attempt's id (a number, as `attempts` lists)")
    return int(text)


def connect(url: str | None) -> Api:
    """An Api on the dashboard find() picks, saying on stderr which when there was a choice."""
    found = find(url)
    if found.said:
        click.echo(found.said, err=True)
    return Api(found)
