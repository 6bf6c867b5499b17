"""Alerts: the moments of an attempt a campaign's owner asked to hear of, queued for each of
its webhooks in the transaction of the change itself (an outbox), so an alert is never lost
to a crash between the change and the send, and the ingest never waits on a webhook. The
sending is app/notifier.py's."""

from datetime import timedelta

import httpx
from sqlmodel import Session, col, select

from app import changes
from app.models import Attempt, Campaign, Delivery, Status, Webhook, utcnow

EVENTS = ("ready", "crashed", "measured", "better", "run_failed", "stalled")
BY_STATUS = {Status.ready: "ready", Status.crashed: "crashed", Status.measured: "measured"}
WAKE = "alerts"
# `measured` and `better` wait for the figures to be in: a launched attempt's run to end, a
# followed log's measurements to stop arriving for this long.
QUIET_S = 3.0


def mask_url(url: str) -> str:
    """A webhook's URL holds its secret (Slack's path, a token in the query): scheme, host
    and port only, and the last four characters of the rest, as a share link's token is
    shown (a rest that short is all secret: none of it)."""
    parsed = httpx.URL(url)
    port = f":{parsed.port}" if parsed.port is not None else ""
    rest = parsed.raw_path.decode("ascii", "replace")
    return f"{parsed.scheme}://{parsed.host}{port}/…{rest[-4:] if len(rest) > 8 else ''}"


def on_status(session: Session, attempt: Attempt, status: Status) -> None:
    event = BY_STATUS.get(status)
    if event is not None:
        queue(session, attempt, event)
        if event == "measured":
            # Told only when the call, once the figures are in, says better (the sender's).
            queue(session, attempt, "better")


def queue(session: Session, attempt: Attempt, event: str) -> None:
    """One delivery of `event` to each of the campaign's webhooks, if it asked for it; once
    per attempt and event."""
    campaign = session.get(Campaign, attempt.campaign_id)
    if campaign is None or event not in (campaign.notify_events or ()) or attempt.id is None:
        return
    hooks = session.exec(select(Webhook.id).where(Webhook.campaign_id == campaign.id)).all()
    if not hooks:
        return
    queued = set(
        session.exec(
            select(Delivery.webhook_id).where(
                Delivery.attempt_id == attempt.id,
                Delivery.event == event,
                col(Delivery.webhook_id).in_(hooks),
            )
        ).all()
    )
    due = utcnow()
    if event in ("measured", "better"):
        due += timedelta(seconds=QUIET_S)
    for webhook_id in hooks:
        if webhook_id is not None and webhook_id not in queued:
            session.add(
                Delivery(webhook_id=webhook_id, attempt_id=attempt.id, event=event, due_at=due)
            )
    changes.wake_after_commit(session, WAKE)


def set_notify(session: Session, campaign: Campaign, urls: list[str], events: list[str]) -> None:
    """The campaign's alerts as given: a webhook kept keeps its history; one left out goes,
    with what it still had to send."""
    assert campaign.id is not None
    campaign.notify_events = list(events) or None
    session.add(campaign)
    kept = {}
    for webhook in session.exec(select(Webhook).where(Webhook.campaign_id == campaign.id)).all():
        if webhook.url in urls and webhook.url not in kept:
            kept[webhook.url] = webhook
        else:
            session.delete(webhook)
    for url in urls:
        if url not in kept:
            session.add(Webhook(campaign_id=campaign.id, url=url))
    changes.record(session, campaign.id, "campaign")


def webhooks(session: Session, campaign_id: int) -> list[Webhook]:
    query = select(Webhook).where(Webhook.campaign_id == campaign_id).order_by(col(Webhook.id))
    return list(session.exec(query).all())
