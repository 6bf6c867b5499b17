"""Sends the alerts app/alerts.py queued: a thread that claims due deliveries (any dashboard
on the database may; a claim is a conditional update, so each is sent once), POSTs each to
its webhook from a small pool (one at a time per webhook: a dead one holds one thread, never
the others), and retries with backoff. What each webhook last did is kept on its row, for
the campaign page."""

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import Engine, or_, update
from sqlmodel import Session, col, select

from app import alerts, repo, views
from app.changes import record
from app.db import session_scope
from app.models import Attempt, Campaign, Delivery, Run, RunState, Webhook, utcnow
from app.numbers import fmt_number
from app.redact import Redactor
from app.stats import Call

log = logging.getLogger(__name__)

POLL_S = 1.0  # other dashboards' alerts, and retries coming due
CLAIM_S = 60.0  # a claim left by a dashboard that died is taken over after this
BATCH = 50
SENDERS = 4
MAX_TRIES = 8  # then the delivery is dead: 2, 4, ... 128 s apart, about four minutes
RETRY_CAP_S = 300.0
TIMEOUT = httpx.Timeout(5.0, connect=3.0)
# A `measured` alert waits for its figures at most this long (a run that never ends).
FIGURES_WAIT_S = 1800.0
ERROR_CHARS = 200


def _aware(moment: datetime) -> datetime:
    """SQLite gives its datetimes back without their zone: they are UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def retry_delay(tries: int) -> float:
    return min(2.0**tries, RETRY_CAP_S)


class Notifier:
    def __init__(self, engine: Engine, *, public_url: str | None = None) -> None:
        self.engine = engine
        self.public_url = (public_url or "").rstrip("/")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(SENDERS, thread_name_prefix="webhook")
        self._busy: set[int] = set()  # webhooks with a send under way here
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=TIMEOUT, follow_redirects=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="notifier", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """After the sends under way (each bounded by the timeout) have settled: the
        database they write to is closed next."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(POLL_S)
            self._wake.clear()
            try:
                self._dispatch()
            except Exception:
                log.exception("alerts: a pass over the due deliveries failed")

    def _dispatch(self) -> None:
        with self._lock:
            busy = set(self._busy)
        with session_scope(self.engine) as session:
            claimed = claim(session, utcnow(), skip=busy)
        by_webhook: dict[int, list[int]] = {}
        for delivery_id, webhook_id in claimed:
            by_webhook.setdefault(webhook_id, []).append(delivery_id)
        for webhook_id, ids in by_webhook.items():
            with self._lock:
                self._busy.add(webhook_id)
            self._pool.submit(self._send_all, webhook_id, ids)

    def _send_all(self, webhook_id: int, ids: list[int]) -> None:
        try:
            for delivery_id in ids:
                if self._stop.is_set():
                    return
                try:
                    self._send(delivery_id)
                except Exception:
                    log.exception("alerts: delivery %s failed to be sent", delivery_id)
        finally:
            with self._lock:
                self._busy.discard(webhook_id)
            self._wake.set()  # a retry or the next of this webhook's may be due

    def _send(self, delivery_id: int) -> None:
        with session_scope(self.engine) as session:
            prepared = prepare(session, delivery_id, self.public_url)
        if prepared is None:
            return
        url, payload = prepared
        error = post(self._client, url, payload)
        with session_scope(self.engine) as session:
            settle(session, delivery_id, error)


def claim(session: Session, now: datetime, *, skip: set[int]) -> list[tuple[int, int]]:
    """(delivery, webhook) of the due deliveries this dashboard now holds."""
    free = or_(col(Delivery.claimed_until).is_(None), col(Delivery.claimed_until) < now)
    query = (
        select(Delivery.id, Delivery.webhook_id)
        .where(col(Delivery.sent_at).is_(None), col(Delivery.due_at) <= now, free)
        .order_by(col(Delivery.due_at), col(Delivery.id))
        .limit(BATCH)
    )
    held = []
    for delivery_id, webhook_id in session.exec(query).all():
        if webhook_id in skip or delivery_id is None:
            continue
        taken = session.execute(
            update(Delivery)
            .where(col(Delivery.id) == delivery_id, free)
            .values(claimed_until=now + timedelta(seconds=CLAIM_S))
        )
        if getattr(taken, "rowcount", 0) == 1:
            held.append((delivery_id, webhook_id))
    return held


def prepare(
    session: Session, delivery_id: int, public_url: str
) -> tuple[str, dict[str, Any]] | None:
    """The URL and the JSON to send, or None: settled here (a `better` the call does not
    bear out is dropped) or put off (the figures not in yet)."""
    delivery = session.get(Delivery, delivery_id)
    if delivery is None or delivery.sent_at is not None:
        return None
    webhook = session.get(Webhook, delivery.webhook_id)
    attempt = session.get(Attempt, delivery.attempt_id)
    campaign = session.get(Campaign, attempt.campaign_id) if attempt else None
    if webhook is None or attempt is None or campaign is None:
        return None
    now = utcnow()
    waits = delivery.event in ("measured", "better")
    if waits and not _figures_in(session, attempt, delivery, now):
        delivery.due_at = now + timedelta(seconds=alerts.QUIET_S)
        delivery.claimed_until = None
        session.add(delivery)
        return None
    view = views.attempt_view(session, attempt)
    if delivery.event == "better" and view.stats.call != Call.better:
        delivery.sent_at, delivery.outcome = now, "dropped"
        session.add(delivery)
        return None
    return webhook.url, payload(delivery.event, campaign, view, public_url)


def _figures_in(session: Session, attempt: Attempt, delivery: Delivery, now: datetime) -> bool:
    if (now - _aware(delivery.created_at)).total_seconds() > FIGURES_WAIT_S:
        return True
    run = session.exec(
        select(Run).where(Run.attempt_id == attempt.id).order_by(col(Run.id).desc()).limit(1)
    ).first()
    if run is not None:
        return RunState(run.state) in (RunState.done, RunState.failed)
    newest = repo.newest_measurement_at(session, attempt_id=attempt.id or 0)
    return newest is None or (now - _aware(newest)).total_seconds() >= alerts.QUIET_S


def payload(event: str, campaign: Campaign, view: Any, public_url: str) -> dict[str, Any]:
    """Slack's and Mattermost's `text`, and the facts for any other receiver; hosts, users,
    paths and credentials masked as a masked share link masks them."""
    diagnosis = view.diagnosis or {}
    cause = diagnosis.get("root_cause")
    mask = Redactor.learning([campaign.name, view.title, view.command, cause or ""])
    figure = None
    if view.stats.mean is not None:
        figure = f"{fmt_number(view.stats.mean)} {campaign.metric}"
        if view.stats.n > 1 and view.stats.ci95:
            low, high = view.stats.ci95
            figure += f" (95 % {fmt_number(low)} to {fmt_number(high)}, n={view.stats.n})"
        if view.stats.delta_pct is not None:
            figure += f", {view.stats.delta_pct:+.1f} % against the baseline: {view.stats.call}"
    said = {
        "ready": "is ready",
        "crashed": f"crashed: {mask(cause)}" if cause else "crashed",
        "measured": f"measured {figure}" if figure else "was measured",
        "better": f"is better than the baseline: {figure}",
        "run_failed": f"run failed: {view.run.reason}" if view.run and view.run.reason
        else "run failed",
        "stalled": "has a silent log while it starts",
    }[event]  # fmt: skip
    link = f"{public_url}/attempts/{view.id}" if public_url else None
    text = f"{mask(campaign.name)}: #{view.id} {mask(view.title)} {mask(said)}"
    return {
        "text": text + (f" {link}" if link else ""),
        "event": event,
        "campaign": {"id": campaign.id, "name": mask(campaign.name)},
        "attempt": {
            "id": view.id,
            "title": mask(view.title),
            "status": str(view.status),
            "root_cause": mask(cause) if cause else None,
            "error_class": diagnosis.get("error_class"),
            "metric_value": view.metric_value,
            "delta_pct": view.stats.delta_pct,
            "call": str(view.stats.call),
            "url": link,
        },
    }


def post(client: httpx.Client, url: str, body: dict[str, Any]) -> str | None:
    """None when the webhook took it (2xx); otherwise what went wrong, without the URL."""
    try:
        response = client.post(url, json=body)
    except httpx.TimeoutException:
        return "no answer within 5 s"
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: could not be reached"
    if response.is_success:
        return None
    return f"answered {response.status_code} {response.reason_phrase}"[:ERROR_CHARS]


def settle(session: Session, delivery_id: int, error: str | None) -> None:
    """The send's outcome on the delivery and its webhook; the campaign page hears of a
    webhook that starts failing, dies, or comes back."""
    delivery = session.get(Delivery, delivery_id)
    if delivery is None:
        return
    webhook = session.get(Webhook, delivery.webhook_id)
    at = utcnow()
    delivery.tries += 1
    delivery.claimed_until = None
    was_failing = webhook is not None and webhook.failures > 0
    if error is None:
        delivery.sent_at, delivery.outcome = at, "sent"
        if webhook is not None:
            webhook.last_ok_at, webhook.failures = at, 0
    else:
        if delivery.tries >= MAX_TRIES:
            delivery.sent_at, delivery.outcome = at, "dead"
            if webhook is not None:
                webhook.dead += 1
        else:
            delivery.due_at = at + timedelta(seconds=retry_delay(delivery.tries))
        if webhook is not None:
            webhook.failures += 1
            webhook.last_error, webhook.last_error_at = error, at
    session.add(delivery)
    if webhook is not None:
        session.add(webhook)
        if was_failing != (webhook.failures > 0) or delivery.outcome == "dead":
            record(session, webhook.campaign_id, "campaign")
