"""`campaign-dash try`: one attempt of the loop, asked of the running dashboard's API;
prints the attempt's URL and its progress, exits by how it ended."""

import functools
import json
import shlex
import threading
from collections.abc import Callable
from typing import Any

import click
import httpx

from app.client import Api, Found, detail_of
from app.numbers import fmt_judgement, fmt_mean
from app.runner.outcomes import EXIT_OK, EXIT_REFUSED, RunOutcome

# The run's changes wake the CLI through the campaign's event stream (Wakeups); it also
# looks this often in case an event is missed, and at POLL_S when the stream is not there.
FALLBACK_POLL_S = 1.0
POLL_S = 0.25


class Refused(click.ClickException):
    exit_code = EXIT_REFUSED


class Wakeups:
    """The campaign's event stream (GET /api/campaigns/{id}/events), read in a thread: an
    `attempt` event of ours wakes the progress loop at once instead of at its next look."""

    def __init__(self, client: httpx.Client, campaign_id: int) -> None:
        self.campaign_id = campaign_id
        self.attempt_id: int | None = None  # until the POST answers, any attempt wakes
        self.connected = threading.Event()
        self._changed = threading.Event()
        self._stream = httpx.Client(
            base_url=client.base_url,
            headers=client.headers,
            timeout=httpx.Timeout(10.0, read=None),  # quiet between changes (heartbeats)
        )
        self._path = f"/api/campaigns/{campaign_id}/events"
        self._thread = threading.Thread(target=self._read, name="wakeups", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            with self._stream.stream("GET", self._path) as response:
                if response.status_code != 200:
                    return
                self.connected.set()
                # What changed before the stream's cursor: one look now covers it.
                self._changed.set()
                event = None
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event == "attempt" and self._ours(line[5:]):
                        self._changed.set()
        except (httpx.HTTPError, RuntimeError):
            pass  # closed, or the stream went away: the loop looks on its own
        finally:
            self.connected.clear()

    def _ours(self, data: str) -> bool:
        if self.attempt_id is None:
            return True
        try:
            return bool(json.loads(data).get("id") == self.attempt_id)
        except (ValueError, AttributeError):
            return True

    def wait(self) -> None:
        """Until the attempt changed, or the fallback look is due."""
        self._changed.wait(FALLBACK_POLL_S if self.connected.is_set() else POLL_S)
        self._changed.clear()

    def close(self) -> None:
        self._stream.close()


def _progress(attempt: dict[str, Any]) -> str:
    run = attempt["run"]
    said = run["state"]
    if run.get("bench_progress"):  # counted as the pages count it (app/runner/wording.py)
        said += f" ({run['bench_progress']})"
    if run.get("reason") and run["reason"] != run["state"]:  # not "launching: launching"
        said += f": {run['reason']}"
    elif run["state"] == "starting" and run.get("last_line"):
        said += f": {run['last_line'][:160]}"
    return said


def run_try(
    *,
    found: Found,
    campaign: str,
    title: str,
    launch: dict[str, Any],
    hypothesis: str,
    retest_of: int | None,
    as_json: bool = False,
) -> int:
    """The exit status; `as_json`: the progress on stderr, the attempt as it ended on stdout."""
    say = functools.partial(click.echo, err=as_json)
    with Api(found) as api:
        wakeups = Wakeups(api.http, api.campaign_id(campaign))
        try:
            code, attempt = _launch_and_follow(
                api.http, found.url, wakeups.campaign_id, title, launch, hypothesis,
                retest_of, wakeups, say,
            )  # fmt: skip
        except httpx.TransportError as error:  # before the launch was answered: nothing ran
            raise Refused(f"cannot reach the dashboard at {found.url}: {error}") from None
        finally:
            wakeups.close()
    if as_json:
        click.echo(json.dumps(attempt, ensure_ascii=False))
    return code


def _launch_and_follow(
    client: httpx.Client, base: str, campaign_id: int, title: str, launch: dict[str, Any],
    hypothesis: str, retest_of: int | None, wakeups: Wakeups, say: Callable[..., None],
) -> tuple[int, dict[str, Any]]:  # fmt: skip
    body: dict[str, Any] = {"title": title, "hypothesis": hypothesis, "launch": launch}
    if retest_of is not None:
        body["retest_of"] = retest_of
    response = client.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    if response.status_code == 401:
        raise Refused("the dashboard refused the token (CAMPAIGN_DASH_TOKEN)")
    if response.status_code != 201:
        raise Refused(f"{response.status_code}: {detail_of(response)}")
    attempt = response.json()
    wakeups.attempt_id = attempt["id"]
    say(f"{base}/attempts/{attempt['id']}")
    shown = gpu_said = None
    try:
        while True:
            said = _progress(attempt)
            if said != shown:
                say(f"  {said}")
                shown = said
            gpu_note = attempt["run"].get("gpu_note")
            if gpu_note and gpu_note != gpu_said:  # once: a skipped GPU check is no detail
                say(f"  {gpu_note}")
                gpu_said = gpu_note
            run = attempt["run"]
            if run["state"] in ("done", "failed"):
                break
            wakeups.wait()
            response = client.get(f"/api/attempts/{attempt['id']}")
            if response.status_code != 200:
                raise Refused(f"{response.status_code}: {detail_of(response)}")
            attempt = response.json()
    except KeyboardInterrupt:
        client.post(f"/api/attempts/{attempt['id']}/stop")
        click.echo("  interrupted: asked the dashboard to stop the run", err=True)
        return 130, attempt
    except httpx.TransportError as error:
        # The server runs detached on the host and its run is in the database: nothing is
        # lost, and the person must know not to launch it again by hand.
        run = attempt["run"]
        click.echo(
            f"  the dashboard at {base} went away ({error}); the run goes on on {run['host']}"
            f" (pid {run.get('pid') or 'not yet known'}), and a restarted dashboard finishes"
            f" it: watch it at {base}/attempts/{attempt['id']}",
            err=True,
        )
        return EXIT_REFUSED, attempt
    if run.get("auto_said"):
        say(f"  {run['auto_said']}")
    metric = attempt.get("metric")
    if metric:
        stats = attempt["stats"]
        interval = tuple(stats["delta_ci95_pct"]) if stats["delta_ci95_pct"] else None
        said = fmt_judgement(stats["delta_pct"], interval, stats["call"], stats["n"])
        change = f", {said} against the baseline" if said else ""
        say(f"  {fmt_mean(metric['mean'], metric['spread'], metric['n'])}{change}")
    outcome = run.get("outcome") or RunOutcome.infrastructure
    say(f"  {attempt['status']}" + ("" if outcome == attempt["status"] else f": {outcome}"))
    # How the run ended, as the exit status says it (RunOutcome's table); one a newer
    # dashboard knows and this CLI does not is no result to go on from.
    known = RunOutcome.read(outcome)
    code = known.exit_code if known is not None else EXIT_REFUSED
    if code == EXIT_OK and run["state"] == "failed":
        # Measured, but the stop was not proven: the next launch on that host would be
        # measured against what is left there. A loop of `try` should stop and say so.
        click.echo(f"  {run.get('reason') or 'the run failed after its figures'}", err=True)
        return EXIT_REFUSED, attempt
    return code, attempt


def command_text(words: tuple[str, ...]) -> str:
    """One word is a shell command line as typed; several are quoted back together."""
    return words[0] if len(words) == 1 else shlex.join(words)
