"""The campaign's verbs from the command line, for a person at a terminal and an agent at
the keyboard alike: each asks the running dashboard's API (app/client.py), prints plain
lines, or with --json one JSON document, and exits 0 done, 1 nothing found, 2 refused."""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from app.client import DashboardError, attempt_id, connect
from app.clitypes import FiniteFloatRange
from app.credentials import mask_secrets
from app.numbers import fmt_judgement, fmt_mean, fmt_number
from app.runner.outcomes import run_failure

EXIT_FOUND, EXIT_NOTHING = 0, 1
Command = TypeVar("Command", bound=Callable[..., Any])


def api_options(command: Command) -> Command:
    """--url and --json, shared by every verb."""
    command = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON document (the API's shapes) instead of "
                           "lines for people.")(command)  # fmt: skip
    return click.option("--url", default=None,
                        help="The dashboard's address. Defaults to the one `serve` runs on "
                        "this machine for this user (its runtime file holds a token too); "
                        "elsewhere give it with CAMPAIGN_DASH_TOKEN.")(command)  # fmt: skip


def emit(as_json: bool, document: Any, lines: Iterable[str]) -> None:
    if as_json:
        click.echo(json.dumps(document, ensure_ascii=False))
    else:
        for line in lines:
            click.echo(line)


def table(rows: list[list[str]], right: Iterable[int] = ()) -> list[str]:
    """Columns as wide as their widest cell; `right` ones aligned right (numbers)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    aligned = set(right)
    return [
        "  ".join(
            cell.rjust(widths[i]) if i in aligned else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def one_line(text: str | None, width: int = 100) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def figure(attempt: dict[str, Any]) -> str:
    """ "1,234.5 ± 12.0 (n=3), +3.1 % [+1.0, +5.2] better (n=3)", or the root cause."""
    metric = attempt.get("metric")
    stats = attempt.get("stats") or {}
    if metric:
        said = fmt_mean(metric["mean"], metric["spread"], metric["n"])
        interval = stats.get("delta_ci95_pct")
        judged = fmt_judgement(stats.get("delta_pct"), tuple(interval) if interval else None,
                               stats.get("call", ""), stats.get("n", 0))  # fmt: skip
        return f"{said}, {judged}" if judged else said
    if attempt.get("metric_value") is not None:
        return fmt_number(attempt["metric_value"])
    diagnosis = attempt.get("diagnosis") or {}
    if diagnosis.get("root_cause"):
        return f"{one_line(diagnosis['root_cause'], 80)} [{diagnosis.get('error_class')}]"
    return ""


def attempt_line(attempt: dict[str, Any]) -> list[str]:
    # (a launch the host refused tested nothing: the page folds it apart, as "refused")
    status = "refused launch" if attempt.get("lane") == "refused" else attempt["status"]
    failed = run_failure(attempt["status"], (attempt.get("run") or {}).get("outcome"))
    if failed:
        status = f"{status}, {failed}"
    return [f"#{attempt['id']}", status, one_line(attempt["title"], 50), figure(attempt)]


@click.command()
@api_options
def campaigns(url: str | None, as_json: bool) -> None:
    """Every campaign, newest first."""
    with connect(url) as api:
        found = api.get("/api/campaigns")
    rows = [["ID", "NAME", "METRIC", "BASELINE", "ATTEMPTS"]] + [
        [str(c["id"]), one_line(c["name"], 40),
         f"{c['metric']} ({'higher' if c['higher_is_better'] else 'lower'} is better)",
         fmt_number(c["baseline"]) if c["baseline"] is not None else "—",
         str(c["attempt_count"])]
        for c in found
    ]  # fmt: skip
    emit(as_json, found, table(rows, right=(0, 3, 4)) if found else ["No campaigns yet."])


@click.command("new")
@click.argument("name")
@click.option("--metric", default="tok/s", show_default=True,
              help="What is measured, as its unit says it.")  # fmt: skip
@click.option("--lower-is-better", is_flag=True,
              help="A latency, say: the smaller the figure, the better.")  # fmt: skip
@click.option("--baseline", type=FiniteFloatRange(), default=None,
              help="The figure to beat, as it stands today.")  # fmt: skip
@click.option("--target", type=FiniteFloatRange(), default=None, help="The figure aimed for.")
@click.option("--noise-pct", type=FiniteFloatRange(min=0, max=100), default=None,
              help="The benchmark's run-to-run noise, in percent (default 1).")  # fmt: skip
@click.option("--description", default="", help="What the campaign is after, in a sentence or two.")
@api_options
def new(
    name: str, metric: str, lower_is_better: bool, baseline: float | None, target: float | None,
    noise_pct: float | None, description: str, url: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Start a campaign: its NAME, what it measures and the figure to beat."""
    body: dict[str, Any] = {"name": name, "metric": metric, "higher_is_better": not lower_is_better,
                            "description": description}  # fmt: skip
    for field, value in (("baseline", baseline), ("target", target), ("noise_pct", noise_pct)):
        if value is not None:
            body[field] = value
    with connect(url) as api:
        made = api.new_campaign(body)
    said = f", baseline {fmt_number(made['baseline'])}" if made.get("baseline") is not None else ""
    emit(as_json, made, [f"Campaign #{made['id']} {made['name']} ({made['metric']}{said})."])


@click.command()
@click.argument("campaign")
@click.option("--status", default=None,
              help="Only the attempts with this status: proposed, running, ready, measured, "
              "crashed, blocked, adopted or eliminated.")  # fmt: skip
@api_options
def attempts(campaign: str, status: str | None, url: str | None, as_json: bool) -> None:
    """A campaign's attempts in the order they were tried, one line each: its status, and
    its figure against the baseline or its root cause. CAMPAIGN is an id or a name."""
    from app.models import Status

    if status is not None and status not in {s.value for s in Status}:
        known = ", ".join(s.value for s in Status)
        raise click.BadParameter(f"{status!r} is not a status ({known})", param_hint="--status")
    with connect(url) as api:
        detail = api.get(f"/api/campaigns/{api.campaign_id(campaign)}")
    chosen = [a for a in detail["attempts"] if status is None or a["status"] == status]
    refused = sum(a.get("lane") == "refused" for a in chosen)
    tried = len(chosen) - refused
    count = f"{tried} attempt{'' if tried == 1 else 's'}" + (
        f" and {refused} refused launch{'' if refused == 1 else 'es'}" if refused else ""
    )
    heading = f"{detail['name']} (campaign #{detail['id']}): {count}"
    emit(as_json, chosen, [heading, *table([attempt_line(a) for a in chosen])] if chosen
         else [heading])  # fmt: skip


@click.command()
@click.argument("attempt")
@api_options
def show(attempt: str, url: str | None, as_json: bool) -> None:
    """One attempt: its call against the baseline, figures, flag and environment changes,
    root cause, hints, where the same failure was seen before, verdict and notes."""
    with connect(url) as api:
        found = api.get(f"/api/attempts/{attempt_id(attempt)}")
        notes = api.get(f"/api/attempts/{found['id']}/notes")
    emit(as_json, {**found, "notes": notes}, describe_attempt(found, notes))


def describe_attempt(a: dict[str, Any], notes: list[dict[str, Any]]) -> list[str]:
    lines = [f"#{a['id']} {a['title']}: {a['status']} (campaign #{a['campaign_id']})"]
    if a.get("hypothesis"):
        lines.append(f"Hypothesis: {one_line(a['hypothesis'], 200)}")
    if a.get("command"):
        lines.append(f"Command: {mask_secrets(a['command'])}")
    run = a.get("run")
    if run:
        lines.append(f"Run: {run['state']} on {run['host']}"
                     + (f", {run['outcome']}" if run.get("outcome") else "")
                     + (f": {run['reason']}" if run.get("reason") else ""))  # fmt: skip
    said = figure(a) if a.get("metric") or a.get("metric_value") is not None else ""
    if said:
        lines.append(f"Result: {said}")
    for label, f in (a.get("figures") or {}).items():
        interval = f.get("ci95")
        spread = f" [{fmt_number(interval[0])}, {fmt_number(interval[1])}]" if interval else ""
        lines.append(f"  {label}: {fmt_number(f['mean'])} {f['unit']}{spread} (n={f['n']})")
    if a.get("flag_diff"):
        lines.append(f"Flags against #{a['flag_diff']['baseline_attempt_id']}: "
                     f"{a['flag_diff']['summary']}")  # fmt: skip
    if a.get("env_diff") and a["env_diff"].get("summary"):
        lines.append(f"Environment against #{a['env_diff']['baseline_attempt_id']}: "
                     f"{a['env_diff']['summary']}")  # fmt: skip
    diagnosis = a.get("diagnosis") or {}
    if diagnosis.get("root_cause"):
        lines.append(f"Root cause [{diagnosis.get('error_class')}]: {diagnosis['root_cause']}")
    elif diagnosis.get("crashed"):
        lines.append(f"Crashed: {diagnosis.get('crashed_reason') or 'no root cause found'}")
    for hint in a.get("hints") or []:
        lines.append(f"  hint ({hint['source']}): {hint['text']}")
    for seen in a.get("seen_before") or []:
        verdict = f": {one_line(seen['verdict'], 120)}" if seen.get("verdict") else ""
        lines.append(f"Seen before: #{seen['attempt_id']} {seen['title']} (campaign "
                     f"#{seen['campaign_id']}), {seen['status']}{verdict}")  # fmt: skip
    if a.get("verdict"):
        lines.append(f"Verdict: {a['verdict']}")
    lines.extend(f"Note: {one_line(note['body'], 200)}" for note in notes)
    return lines


@click.command()
@click.argument("attempt")
@click.option("--because", required=True, help="Why it is a dead end: the verdict others read.")
@api_options
def eliminate(attempt: str, because: str, url: str | None, as_json: bool) -> None:
    """Mark an attempt a dead end, with the reason."""
    with connect(url) as api:
        done = api.patch(f"/api/attempts/{attempt_id(attempt)}",
                         {"status": "eliminated", "verdict": because})  # fmt: skip
    emit(as_json, done, [f"#{done['id']} {done['title']}: eliminated: {done['verdict']}"])


@click.command()
@click.argument("attempt")
@click.option("--as-baseline", is_flag=True,
              help="Its figure becomes the campaign's baseline too (a pivot: what comes "
              "next is measured against it).")  # fmt: skip
@click.option("--because", default=None, help="The verdict, if it needs saying.")
@api_options
def adopt(
    attempt: str, as_baseline: bool, because: str | None, url: str | None, as_json: bool
) -> None:
    """Adopt an attempt: it stays in the configuration from now on."""
    body: dict[str, Any] = {"status": "adopted", "set_baseline": as_baseline}
    if because:
        body["verdict"] = because
    with connect(url) as api:
        done = api.patch(f"/api/attempts/{attempt_id(attempt)}", body)
    baseline = ", the campaign's baseline now" if as_baseline else ""
    emit(as_json, done, [f"#{done['id']} {done['title']}: adopted{baseline}"])


@click.command()
@click.argument("words", nargs=-1, required=True)
@click.option("--campaign", default=None, help="Note the campaign as a whole (id or name) "
              "instead of one attempt.")  # fmt: skip
@api_options
def note(words: tuple[str, ...], campaign: str | None, url: str | None, as_json: bool) -> None:
    """`note ATTEMPT TEXT`, or `note --campaign CAMPAIGN TEXT`: a markdown note, on the
    timeline at once. TEXT `-` reads it from standard input."""
    if campaign is None and len(words) < 2:
        raise click.UsageError("give ATTEMPT and TEXT, or --campaign CAMPAIGN and TEXT")
    if campaign is not None and len(words) > 1 and _ATTEMPT_ID.fullmatch(words[0]):
        # (`note 11 --campaign 1 "text"` would store "11 text" on the campaign)
        raise click.UsageError(
            "give ATTEMPT or --campaign CAMPAIGN, not both (quote a campaign note that starts "
            "with a number)"
        )
    target, rest = (None, words) if campaign is not None else (words[0], words[1:])
    body = _stdin_text("the note") if rest == ("-",) else " ".join(rest)
    if not body.strip():
        raise click.UsageError("the note is empty: give TEXT, or - with the note on standard input")
    with connect(url) as api:
        if campaign is not None:
            made = api.post(f"/api/campaigns/{api.campaign_id(campaign)}/notes", {"body": body})
            where = f"campaign #{made['campaign_id']}"
        else:
            made = api.post(f"/api/attempts/{attempt_id(target or '')}/notes", {"body": body})
            where = f"#{made['attempt_id']}"
    emit(as_json, made, [f"Noted on {where} (note {made['id']})."])


_ATTEMPT_ID = re.compile(r"#?\d+")


def _stdin_text(what: str) -> str:
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise click.UsageError(f"{what} on standard input is not UTF-8: nothing was sent") from None


@click.command()
@click.argument("text")
@api_options
def search(text: str, url: str | None, as_json: bool) -> None:
    """Campaigns, attempts and notes of every campaign holding TEXT (titles, verdicts,
    notes, root causes, flags), best first. Exit 1 when nothing matches."""
    with connect(url) as api:
        hits = api.get("/api/search", q=text)
    emit(as_json, hits, [
        f"{hit['kind']} " + (f"#{hit['attempt_id']} " if hit.get("attempt_id") else "")
        + f"(campaign #{hit['campaign_id']}) {one_line(hit['title'], 60)}: "
        + one_line(hit["snippet"], 100)
        for hit in hits
    ] or [f"Nothing matches {text!r}."])  # fmt: skip
    sys.exit(EXIT_FOUND if hits else EXIT_NOTHING)


@click.command()
@click.argument("text", required=False)
@click.option("--log", "log_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="A server log to read instead of TEXT (`-`: standard input): its root "
              "cause is looked up.")  # fmt: skip
@api_options
def seen(text: str | None, log_path: str | None, url: str | None, as_json: bool) -> None:
    """Has this failure been met before? TEXT is an error line or a log excerpt; the
    attempts of any campaign that died of it are listed with their verdicts and what got
    past them. Ask before launching, and after a crash. Exit 1 when never seen."""
    if (text is None) == (log_path is None):
        raise click.UsageError("give TEXT or --log FILE")
    if text is not None and not text.strip():
        raise click.UsageError("TEXT is empty: give an error line or a log excerpt")
    body: dict[str, Any] = {"text": text or ""}
    if log_path is not None:
        body = _read_log(log_path)
    with connect(url) as api:
        found = api.post("/api/seen", body)
    emit(as_json, found, describe_seen(found))
    sys.exit(EXIT_FOUND if found["matches"] else EXIT_NOTHING)


def _read_log(path: str) -> dict[str, Any]:
    """Diagnosed here, the whole file streamed: what is sent is its root cause."""
    from app.diagnosis import Diagnoser
    from app.logbytes import TextCheck

    diagnoser = Diagnoser()
    check = TextCheck("standard input" if path == "-" else path, "seen --log", piped=path == "-")
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        with stream:
            while chunk := stream.read(4 << 20):
                if refused := check.refusal(chunk):
                    raise DashboardError(refused)
                diagnoser.feed(chunk)
    except OSError as error:
        raise DashboardError(f"cannot read {path}: {error.strerror or error}") from None
    found = diagnoser.diagnosis()
    if refused := check.never_decided(found.bytes_read):
        raise DashboardError(refused)
    if not found.root_cause:
        why = f" ({found.crashed_reason})" if found.crashed_reason else ""
        raise DashboardError(f"{path}: the log shows no failure to look up{why}")
    frame_file = found.frame.file if found.frame is not None else None
    return {"text": found.root_cause, "fingerprint": found.fingerprint, "frame_file": frame_file}


def describe_seen(found: dict[str, Any]) -> list[str]:
    lines = []
    if found.get("root_cause"):
        lines.append(f"Root cause [{found.get('error_class')}]: {found['root_cause']}")
    if not found["matches"]:
        return [*lines, "Never seen before in any campaign."]
    count = len(found["matches"])
    lines.append(f"Seen before in {count} attempt{'' if count == 1 else 's'}:")
    for match in found["matches"]:
        verdict = f": {one_line(match['verdict'], 120)}" if match.get("verdict") else ""
        lines.append(f"  #{match['attempt_id']} {match['title']} (campaign "
                     f"\"{match['campaign']}\"), {match['status']}{verdict}")  # fmt: skip
        lines.extend(f"    got past it: #{fix['attempt_id']} {fix['title']} ({fix['status']})"
                     for fix in match["fixed_by"])  # fmt: skip
    return lines


@click.command()
@click.argument("ids", nargs=-1, required=True)
@api_options
def compare(ids: tuple[str, ...], url: str | None, as_json: bool) -> None:
    """2 to 8 attempts side by side: status, figure against the baseline, root cause,
    flag and environment changes."""
    if not 2 <= len(ids) <= 8:
        raise click.UsageError("compare takes 2 to 8 attempt ids")
    wanted = ",".join(str(attempt_id(i)) for i in ids)
    with connect(url) as api:
        found = api.get("/api/compare", ids=wanted)["attempts"]
    emit(as_json, {"attempts": found}, side_by_side(found, shutil.get_terminal_size().columns))


def side_by_side(found: list[dict[str, Any]], columns: int) -> list[str]:
    """One column an attempt, as wide as the terminal allows; a long cell (the flag or
    environment changes compare exists to show) wraps onto more lines instead of being cut."""
    names = ["", "title", "status", "result", "flags", "environment"]
    width = max(24, (columns - max(map(len, names)) - 2 * len(found)) // max(len(found), 1))
    cells = [
        [f"#{a['id']}" for a in found],
        [a["title"] for a in found],
        [a["status"] for a in found],
        [figure(a) for a in found],
        [(a.get("flag_diff") or {}).get("summary") or "" for a in found],
        [(a.get("env_diff") or {}).get("summary") or "" for a in found],
    ]
    rows = []
    for name, row in zip(names, cells, strict=True):
        wrapped = [textwrap.wrap(" ".join(cell.split()), width) or [""] for cell in row]
        for depth in range(max(map(len, wrapped))):
            shown = [lines[depth] if depth < len(lines) else "" for lines in wrapped]
            rows.append([name if depth == 0 else "", *shown])
    return table(rows)


@click.command()
@click.argument("campaign")
@click.option("--format", "form", type=click.Choice(["md", "json", "csv"]), default="md",
              show_default=True, help="md: the story as the share page tells it; json: "
              "the same as data; csv: one row per benchmark run.")  # fmt: skip
@api_options
def export(campaign: str, form: str, url: str | None, as_json: bool) -> None:
    """A campaign written out for a report or a spreadsheet, on standard output (secrets
    masked, as everywhere). --json is --format json."""
    given = click.get_current_context().get_parameter_source("form")
    if as_json and form != "json" and given is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError(f"--json is --format json: not with --format {form}")
    form = "json" if as_json else form
    with connect(url) as api:
        campaign_id = api.campaign_id(campaign)
        path = {"md": "summary.md", "json": "summary.json", "csv": "runs.csv"}[form]
        text = api.text(f"/api/campaigns/{campaign_id}/{path}")
    click.echo(text, nl=not text.endswith("\n"))


VERBS = [new, campaigns, attempts, show, eliminate, adopt, note, search, seen, compare, export]
