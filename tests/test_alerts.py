"""Alerts: the moments of an attempt the owner chose, POSTed to the campaign's webhooks from
an outbox (never on the ingest's path), masked like a share link, retried with backoff, a
failing webhook shown on the campaign page."""

import json
import queue
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from app import demo_logs, notifier
from app.alerts import mask_url
from app.models import Delivery
from tests.helpers import UI_WAIT_MS, attempt_of, make_attempt, make_campaign, wait_for
from tests.sshd import free_port


@dataclass
class Receiver:
    """A webhook on loopback: what it was sent, when; `hang` leaves every POST unanswered."""

    url: str
    received: "queue.Queue[tuple[float, dict[str, Any]]]" = field(default_factory=queue.Queue)
    status: int = 200
    hang: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def next(self, timeout: float = 10.0) -> tuple[float, dict[str, Any]]:
        return self.received.get(timeout=timeout)

    def nothing_more(self) -> bool:
        return self.received.empty()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    port = free_port()
    box = Receiver(f"http://127.0.0.1:{port}/hooks/T0/B0/s3cr3tTOKENabcd")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if box.hang.is_set():
                box.release.wait(30)
                return
            box.received.put((time.monotonic(), json.loads(body)))
            self.send_response(box.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box
    finally:
        box.release.set()
        server.shutdown()
        server.server_close()


def notify(api: httpx.Client, campaign_id: int, urls: list[str], events: list[str]) -> dict:
    response = api.patch(
        f"/api/campaigns/{campaign_id}", json={"notify": {"urls": urls, "events": events}}
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_alerts_are_set_on_the_campaign_masked_and_refused_when_malformed(
    api: httpx.Client, anonymous: httpx.Client, receiver: Receiver
) -> None:
    campaign = make_campaign(api)
    url = f"/api/campaigns/{campaign['id']}"
    for bad, said in (
        ({"urls": ["ftp://example.com/x"], "events": ["crashed"]}, "http:// or https://"),
        ({"urls": ["http://"], "events": []}, "host"),
        ({"urls": ["http://a.example/x y"], "events": []}, "no spaces"),
        ({"urls": [], "events": ["exploded"]}, "run_failed"),
        ({"urls": [f"http://h{i}.example/x" for i in range(11)], "events": []}, "10"),
    ):
        refused = api.patch(url, json={"notify": bad})
        assert refused.status_code == 422 and said in refused.text, (bad, refused.text)
    detail = notify(api, campaign["id"], [receiver.url, receiver.url], ["crashed", "ready"])
    assert detail["notify"]["events"] == ["crashed", "ready"]
    [hook] = detail["notify"]["webhooks"]
    assert hook["url"] == f"{receiver.url.split('/hooks')[0]}/…abcd" and hook["state"] == "unused"
    assert "s3cr3t" not in json.dumps(api.get(url).json())
    # Kept when given again (its history with it), gone when left out.
    again = notify(api, campaign["id"], [receiver.url], ["crashed"])
    assert [h["id"] for h in again["notify"]["webhooks"]] == [hook["id"]]
    assert notify(api, campaign["id"], [], [])["notify"] == {"events": [], "webhooks": []}
    # A share link's reader never sees where alerts go.
    notify(api, campaign["id"], [receiver.url], ["crashed"])
    token = api.post(f"{url}/shares", json={}).json()["token"]
    shared = anonymous.get(f"/s/{token}.json").text
    assert "notify" not in shared and "127.0.0.1" not in shared


@pytest.mark.serial  # it times the path from the log to the webhook
def test_a_crash_in_a_tailed_log_reaches_the_webhook_within_2_s_masked(
    api: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    campaign = make_campaign(api, name="EAGLE-3 on gpu-07.corp.example.com")
    notify(api, campaign["id"], [receiver.url], ["crashed"])
    log = tmp_path / "symm.log"
    log.write_text("\n".join(demo_logs.startup({}, ready=False)) + "\n")
    attempt = make_attempt(
        api, campaign["id"], title="Symmetric memory on gpu-07.corp.example.com",
        source=f"file://{log}",
    )  # fmt: skip
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "running", what="running")
    with log.open("a") as out:
        out.write("\n".join(demo_logs.crash_torch_symm_mem()) + "\n")
    written = time.monotonic()
    at, body = receiver.next()
    assert at - written < 2.0, f"the webhook heard of it {at - written:.2f} s after the write"
    assert body["event"] == "crashed"
    assert body["attempt"]["id"] == attempt["id"] and body["attempt"]["status"] == "crashed"
    assert body["attempt"]["root_cause"] == "KeyError: 12"
    assert body["attempt"]["error_class"] == "unsupported_arch"
    assert "KeyError: 12" in body["text"] and f"#{attempt['id']}" in body["text"]
    # Masked as a masked share link is: the host named in the title and the campaign.
    assert "gpu-07" not in json.dumps(body)
    assert body["campaign"]["id"] == campaign["id"]
    # Once per attempt and event; the webhook's history says it went through.
    hook = wait_for(
        lambda: (h := api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]["webhooks"][0])
        ["state"] == "ok" and h,
        what="the webhook marked ok",
    )  # fmt: skip
    assert hook["failures"] == 0 and hook["last_ok_at"]
    assert receiver.nothing_more()


def test_measured_and_better_wait_for_the_figures_and_unchosen_events_stay_quiet(
    api: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    campaign = make_campaign(api, baseline=82.0)
    notify(api, campaign["id"], [receiver.url], ["measured", "better"])
    log = tmp_path / "fast.log"
    lines = demo_logs.startup({}, ready=True)
    rng = random.Random(7)
    for run, value in enumerate((95.1, 95.4, 94.9)):
        lines += demo_logs.benchmark(run, value, rng)
    log.write_text("\n".join(lines) + "\n")
    attempt = make_attempt(api, campaign["id"], title="Graph max bs 128", source=f"file://{log}")
    events = {}
    for _ in range(2):
        _, body = receiver.next(timeout=20)
        events[body["event"]] = body
    assert set(events) == {"measured", "better"}
    # Sent once the three runs were in, not at the first.
    for body in events.values():
        assert "n=3" in body["text"] and body["attempt"]["call"] == "better", body["text"]
    assert attempt_of(api, attempt["id"])["stats"]["n"] == 3
    assert receiver.nothing_more()  # `ready` was not chosen


@pytest.mark.serial  # it times the live webhook's alert beside the dead ones
def test_a_dead_webhook_is_retried_shown_and_never_holds_up_a_live_one(
    api: httpx.Client, browser: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    campaign = make_campaign(api)
    refused = f"http://127.0.0.1:{free_port()}/dead/hook/abcdefgh"
    hanging = receiver.url
    # A second receiver that answers at once.
    live_box: queue.Queue[dict[str, Any]] = queue.Queue()
    port = free_port()

    class Quick(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_POST(self) -> None:
            live_box.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

    quick = ThreadingHTTPServer(("127.0.0.1", port), Quick)
    threading.Thread(target=quick.serve_forever, daemon=True).start()
    try:
        receiver.hang.set()  # never answers: each try waits out the 5 s timeout
        notify(api, campaign["id"], [hanging, refused, f"http://127.0.0.1:{port}/ok/hook"],
               ["crashed"])  # fmt: skip
        log = tmp_path / "crash.log"
        log.write_text(
            "\n".join(demo_logs.startup({}, ready=False) + demo_logs.crash_torch_symm_mem())
        )
        started = time.monotonic()
        make_attempt(api, campaign["id"], source=f"file://{log}")
        body = live_box.get(timeout=10)
        assert body["event"] == "crashed" and time.monotonic() - started < 3.0

        def failing() -> list[dict[str, Any]] | None:
            hooks = api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]["webhooks"]
            by_state = [h["state"] for h in hooks]
            return hooks if by_state == ["failing", "failing", "ok"] else None

        hooks = wait_for(failing, timeout=20, what="both dead webhooks marked failing")
        assert hooks[0]["last_error"] == "no answer within 5 s"
        assert "could not be reached" in hooks[1]["last_error"]
        # Retried with backoff: the refused one tries again 2 s after its first failure.
        wait_for(
            lambda: (
                api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]["webhooks"][1][
                    "failures"
                ]
                >= 2
            ),
            timeout=15,
            what="a second try",
        )
        page = browser.get(f"/campaigns/{campaign['id']}").text
        assert f"{refused.split('/dead')[0]}/…efgh" in page and "could not be reached" in page
        assert "abcdefgh" not in page
    finally:
        quick.shutdown()
        quick.server_close()


def test_retries_back_off_and_give_up_after_the_last_try() -> None:
    delays = [notifier.retry_delay(t) for t in range(1, notifier.MAX_TRIES)]
    assert delays == [2, 4, 8, 16, 32, 64, 128]
    assert notifier.retry_delay(20) == notifier.RETRY_CAP_S


@pytest.mark.both_databases
def test_a_due_delivery_is_claimed_by_one_dashboard_only(api: httpx.Client, app_under_test: Any,
                                                         receiver: Receiver) -> None:  # fmt: skip
    campaign = make_campaign(api)
    notify(api, campaign["id"], [receiver.url], ["ready"])
    attempt = make_attempt(api, campaign["id"])
    engine = app_under_test.app.state.engine
    app_under_test.app.state.notifier.stop()  # this test claims by hand
    with Session(engine) as session:
        webhook_id = api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]["webhooks"][0]
        session.add(Delivery(webhook_id=webhook_id["id"], attempt_id=attempt["id"], event="ready"))
        session.commit()
    now = notifier.utcnow()
    with Session(engine) as first, Session(engine) as second:
        mine = notifier.claim(first, now, skip=set())
        first.commit()
        theirs = notifier.claim(second, now, skip=set())
        second.commit()
    assert len(mine) == 1 and theirs == []
    with Session(engine) as session:
        [row] = session.exec(select(Delivery)).all()
        assert row.claimed_until is not None and row.sent_at is None


@pytest.mark.browser
def test_the_alerts_form_at_its_defaults_and_the_browsers_own_notification(
    api: httpx.Client,
    open_page,
    receiver: Receiver,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    page.context.grant_permissions(["notifications"])
    form = page.locator("#alerts-form")
    form.locator("textarea[name=add]").fill(receiver.url)
    form.locator("input[name=events][value=crashed]").check()
    form.locator("button").click()
    page.locator("#alerts .webhooks li").wait_for(timeout=UI_WAIT_MS)
    notify_out = api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]
    assert notify_out["events"] == ["crashed"]
    assert [h["url"] for h in notify_out["webhooks"]] == [
        f"{receiver.url.split('/hooks')[0]}/…abcd"
    ]
    assert "s3cr3t" not in page.content()

    page.locator("[data-browser-alerts]").check()
    page.wait_for_function(
        f"() => localStorage.getItem('campaign-dash:alerts:{campaign['id']}') === 'on'",
        timeout=UI_WAIT_MS,
    )
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    log = tmp_path / "crash.log"
    log.write_text("\n".join(demo_logs.startup({}, ready=False)) + "\n")
    attempt = make_attempt(api, campaign["id"], title="Torch symmetric memory",
                           source=f"file://{log}")  # fmt: skip
    page.locator(f"#attempt-{attempt['id']}[data-status=running]").wait_for(timeout=UI_WAIT_MS)
    with log.open("a") as out:
        out.write("\n".join(demo_logs.crash_torch_symm_mem()) + "\n")
    told = page.wait_for_function("() => window.__lastBrowserAlert", timeout=UI_WAIT_MS)
    assert told.json_value() == "Torch symmetric memory crashed: KeyError: 12"
    _, body = receiver.next()
    assert body["event"] == "crashed"
    # Removed from the form: gone, and nothing more is sent to it.
    page.locator("#alerts input[name=remove]").check()
    page.locator("#alerts-form button").click()
    page.locator("#alerts .webhooks").wait_for(state="detached", timeout=UI_WAIT_MS)
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["notify"]["webhooks"] == []


@pytest.mark.parametrize(
    "url,shown",
    [
        ("https://hooks.slack.com/services/T0/B0/s3cr3tTOKENabcd", "https://hooks.slack.com/…abcd"),
        # (the port once read as part of the tail: "http://127.0.0.1/…:1/x")
        ("http://127.0.0.1:1/x", "http://127.0.0.1:1/…"),
        ("http://127.0.0.1:8080/notify?token=s3cr3t9876", "http://127.0.0.1:8080/…9876"),
    ],
)
def test_a_webhook_is_shown_by_where_it_goes_never_by_its_secret(url: str, shown: str) -> None:
    assert mask_url(url) == shown
