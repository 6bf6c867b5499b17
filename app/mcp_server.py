"""`campaign-dash mcp`: the campaigns as a Model Context Protocol server over stdio, for a
coding agent. Every tool asks the running dashboard's HTTP API (app/client.py): one source
of truth, and what the agent does shows live on the page the person watches. No tool
deletes anything; a refusal comes back as a tool error carrying the dashboard's detail."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from app.client import Api, DashboardError, Found, attempt_id, find

INSTRUCTIONS = """\
This server is the shared memory of GPU inference-server optimization campaigns: every \
attempt tried, its diagnosis, its benchmark figures judged against the baseline, and the \
verdicts (dead ends and adoptions) written on it. The loop to follow:
1. Before launching anything, and after any crash, call seen_before with the error line or \
log excerpt: if an earlier attempt died of it, read its verdict and what got past it.
2. try_attempt launches one attempt through the dashboard's runner; wait_for_attempt \
returns when it is measured, crashed or stopped.
3. record_verdict: eliminated (with the reason: it is what the next reader learns) or \
adopted. The call (better/worse/same/inconclusive) informs the verdict; it never makes it.
"""

WAIT_LIMIT_S = 600.0  # a tool call longer than this loses the agent's host's patience
# wait_for_attempt looks again after this, growing to WAIT_STEP_MAX_S: a run's state moves
# in seconds (launching, starting, ready) and then in minutes (loading, benchmarking).
WAIT_STEP_S, WAIT_STEP_MAX_S = 0.25, 2.0
FIGURES_KEPT = 10  # of a diagnosis's throughput figures, the latest: hundreds fill a context
DIAGNOSE_CHARS = 400_000  # of a longer text, its end: where a server's failure is written
ENDED = ("done", "failed")

Result = TypeVar("Result")
CampaignRef = Annotated[int | str, Field(description="A campaign's id or its exact name.")]
CampaignName = Annotated[str, Field(min_length=1, description="A name no campaign has yet.")]
Metric = Annotated[str, Field(description="What is measured, as its unit says it.")]
Baseline = Annotated[
    float | None,
    Field(
        allow_inf_nan=False,
        description="The figure to beat, as it stands today; none: not yet known.",
    ),
]
HigherIsBetter = Annotated[bool, Field(description="False for a latency: smaller is better.")]
Description = Annotated[str, Field(description="What the campaign is after, in a sentence or two.")]
AttemptRef = Annotated[int, Field(description="An attempt's id.")]
ErrorText = Annotated[str, Field(min_length=1, description="An error line or a log excerpt.")]
Query = Annotated[str, Field(min_length=1, description="Text to find, any case.")]
LogText = Annotated[str, Field(min_length=1, description="A server log, or its last part.")]
Title = Annotated[str, Field(description="What is tried, in a few words.")]
Host = Annotated[str, Field(description="An ssh alias (as ~/.ssh/config names it) or `local`.")]
ServerCommand = Annotated[str, Field(description="The server's launch command line.")]
Bench = Annotated[
    str | None,
    Field(
        description="Benchmark command run once the server is ready; none: the run ends at ready."
    ),
]
Repeat = Annotated[
    int | Literal["auto"],
    Field(description="Benchmark runs recorded (1-100), or `auto`: at least 3, more until the "
          "call against the baseline is clear."),
]  # fmt: skip
Hypothesis = Annotated[str, Field(description="What the attempt tests, in a sentence.")]
RetestOf = Annotated[int | None, Field(description="The attempt this one retests, if any.")]
WaitS = Annotated[float, Field(gt=0, le=WAIT_LIMIT_S, description="At most 600.")]
Verdict = Annotated[
    Literal["eliminated", "adopted"],
    Field(description="eliminated: a dead end; adopted: kept in the configuration from now on."),
]
Reason = Annotated[
    str, Field(min_length=1, description="Why: what the next person or agent learns from it.")
]
AsBaseline = Annotated[
    bool, Field(description="Adopted only: its figure becomes the campaign's baseline (a pivot).")
]
NoteBody = Annotated[str, Field(min_length=1, description="Markdown.")]
NoteAttempt = Annotated[int | None, Field(description="The attempt it is on.")]
NoteCampaign = Annotated[
    int | str | None, Field(description="Or the campaign as a whole (id or name).")
]
AttemptIds = Annotated[list[int], Field(min_length=2, max_length=8, description="2 to 8 ids.")]


class Dashboards:
    """The dashboard each call goes to, found again when the one used goes away (a restart
    writes a new runtime file with a new token)."""

    def __init__(self, url: str | None) -> None:
        self._url = url
        self._api: Api | None = None
        self._found: Found | None = None

    def api(self) -> Api:
        found = find(self._url)
        if found != self._found or self._api is None:
            if self._api is not None:
                self._api.close()
            self._api, self._found = Api(found), found
        return self._api


def build(dashboards: Dashboards) -> MCPServer:
    server = MCPServer("campaign-dash", instructions=INSTRUCTIONS)

    async def call(work: Callable[[Api], Result]) -> Result:
        def run() -> Result:
            try:
                return work(dashboards.api())
            except DashboardError as error:
                raise ToolError(error.message) from None

        return await anyio.to_thread.run_sync(run)

    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=reads)
    async def list_campaigns() -> list[dict[str, Any]]:
        """Every campaign (id, name, metric, baseline, attempt count), newest first. Cheap:
        call it first to learn the campaign's id or exact name."""
        return await call(lambda api: api.get("/api/campaigns"))

    @server.tool(annotations=writes)
    async def create_campaign(
        name: CampaignName,
        metric: Metric = "tok/s",
        baseline: Baseline = None,
        higher_is_better: HigherIsBetter = True,
        description: Description = "",
    ) -> dict[str, Any]:
        """Starts a campaign: what it measures and the figure to beat. Returns the campaign
        (its id or name is what the other tools take). Refused when a campaign has the name."""
        body: dict[str, Any] = {"name": name, "metric": metric, "description": description,
                                "higher_is_better": higher_is_better}  # fmt: skip
        if baseline is not None:
            body["baseline"] = baseline
        return await call(lambda api: api.new_campaign(body))

    @server.tool(annotations=reads)
    async def get_campaign(campaign: CampaignRef) -> dict[str, Any]:
        """A campaign's ledger: each attempt's hypothesis, flag change against the baseline,
        status, call with its 95 % interval, root cause and class, and verdict, in the order
        tried, with the notes written on each; `dead_ends` lists the eliminated ones with why;
        `notes` the campaign's own. Read it before proposing a hypothesis, so as not to try a
        dead end again. Two requests; a few KB per attempt."""

        def work(api: Api) -> dict[str, Any]:
            campaign_id = api.campaign_id(campaign)
            detail = api.get(f"/api/campaigns/{campaign_id}")
            notes: dict[int | None, list[dict[str, Any]]] = {}
            for note in api.get(f"/api/campaigns/{campaign_id}/notes"):
                notes.setdefault(note["attempt_id"], []).append(note_entry(note))
            ledger = [
                {**ledger_entry(a), "notes": notes.get(a["id"], [])} for a in detail.pop("attempts")
            ]
            dead_ends = [
                {"attempt_id": a["id"], "title": a["title"], "verdict": a["verdict"],
                 "root_cause": (a["diagnosis"] or {}).get("root_cause"), "notes": a["notes"]}
                for a in ledger if a["status"] == "eliminated"
            ]  # fmt: skip
            detail.pop("notify", None)
            own = notes.get(None, [])
            return {**detail, "notes": own, "dead_ends": dead_ends, "attempts": ledger}

        return await call(work)

    @server.tool(annotations=reads)
    async def get_attempt(attempt: AttemptRef) -> dict[str, Any]:
        """One attempt in full, as GET /api/attempts/{id}: status, run state, stats (call,
        delta_pct with delta_ci95_pct), figures, flags and flag_diff, environment and
        env_diff, diagnosis (root_cause, error_class, candidates, frame, excerpt), hints
        (what to try next), seen_before and verdict. Of the diagnosis's throughput figures
        only the latest 10 are kept. `notes`: what was written about it (dead ends, leads)."""

        def work(api: Api) -> dict[str, Any]:
            found = trimmed(api.get(f"/api/attempts/{attempt}"))
            notes = api.get(f"/api/attempts/{found['id']}/notes")
            return {**found, "notes": [note_entry(note) for note in notes]}

        return await call(work)

    @server.tool(annotations=reads)
    async def seen_before(text: ErrorText) -> dict[str, Any]:
        """Has this failure been met before, in any campaign? Returns {root_cause,
        error_class, fingerprint, matches: [{campaign_id, campaign, attempt_id, title,
        status, verdict, root_cause, error_class, fixed_by}]}, newest first; `fixed_by`
        lists the retests that got past it. Ask before launching a hypothesis and after any
        crash: a match's verdict is a dead end already paid for."""
        return await call(lambda api: api.post("/api/seen", {"text": text[-DIAGNOSE_CHARS:]}))

    @server.tool(annotations=reads)
    async def search(query: Query) -> list[dict[str, Any]]:
        """Campaigns, attempts and notes of every campaign whose title, verdict, notes, root
        cause, flags or command hold the text, best first: [{kind, campaign_id, attempt_id,
        title, snippet}]. For a failure, seen_before is the sharper question."""
        return await call(lambda api: api.get("/api/search", q=query))

    @server.tool(annotations=reads)
    async def diagnose_log(text: LogText) -> dict[str, Any]:
        """Reads a server log as the dashboard reads every attempt's: {ready, crashed,
        crashed_reason, root_cause (the one line that explains the failure), error_class,
        fingerprint, candidates (runners-up), frame (file, line, function), excerpt,
        throughput, hints}. Only the last 400,000 characters are read. Stores nothing."""

        return await call(
            lambda api: fewer_figures(api.post("/api/diagnose", {"text": text[-DIAGNOSE_CHARS:]}))
        )

    @server.tool(annotations=writes)
    async def try_attempt(
        campaign: CampaignRef,
        title: Title,
        host: Host,
        command: ServerCommand,
        bench: Bench = None,
        repeat: Repeat = 3,
        hypothesis: Hypothesis = "",
        retest_of: RetestOf = None,
    ) -> dict[str, Any]:
        """Launches one attempt through the dashboard's runner and returns at once with
        {attempt_id, url, state}: the runner starts the server detached on the host, waits
        for ready or a crash, runs the benchmark `repeat` times after a warm-up, records the
        figures and stops the server. Follow it with wait_for_attempt. Refused (a tool
        error) when the host is busy with another run or the port is taken."""

        def work(api: Api) -> dict[str, Any]:
            launch: dict[str, Any] = {"host": host, "command": command, "repeat": repeat}
            if bench:
                launch["bench"] = bench
            body: dict[str, Any] = {"title": title, "hypothesis": hypothesis, "launch": launch}
            if retest_of is not None:
                body["retest_of"] = retest_of
            made = api.post(f"/api/campaigns/{api.campaign_id(campaign)}/attempts", body)
            run = made.get("run") or {}
            return {"attempt_id": made["id"], "url": f"{api.url}/attempts/{made['id']}",
                    "state": run.get("state"), "status": made["status"]}  # fmt: skip

        return await call(work)

    @server.tool(annotations=reads)
    async def wait_for_attempt(
        attempt: AttemptRef, timeout_s: WaitS = WAIT_LIMIT_S
    ) -> dict[str, Any]:
        """Waits until a launched attempt's run ends (measured, crashed, not ready in time,
        stopped) or timeout_s passes, then returns {ended, state, outcome, status, attempt}
        with the attempt as get_attempt gives it. Not ended: call it again. The run goes on
        either way; nothing is stopped by a timeout."""
        deadline = time.monotonic() + timeout_s
        step = WAIT_STEP_S
        while True:
            found = await call(lambda api: api.get(f"/api/attempts/{attempt}"))
            run = found.get("run")
            if run is None:
                raise ToolError(f"attempt {attempt} was not launched by the dashboard: "
                                "it has no run to wait for")  # fmt: skip
            left = deadline - time.monotonic()
            if run["state"] in ENDED or left <= 0:
                return {"ended": run["state"] in ENDED, "state": run["state"],
                        "outcome": run.get("outcome"), "status": found["status"],
                        "attempt": trimmed(found)}  # fmt: skip
            await anyio.sleep(min(step, left))
            step = min(step * 2, WAIT_STEP_MAX_S)

    @server.tool(annotations=writes)
    async def record_verdict(
        attempt: AttemptRef, verdict: Verdict, reason: Reason, as_baseline: AsBaseline = False
    ) -> dict[str, Any]:
        """Records the verdict on an attempt, with its reason; the timeline shows it at once.
        Returns the attempt as get_attempt gives it."""
        if as_baseline and verdict != "adopted":
            raise ToolError("as_baseline goes with verdict `adopted` only")
        body = {"status": verdict, "verdict": reason, "set_baseline": as_baseline}
        return await call(lambda api: trimmed(api.patch(f"/api/attempts/{attempt}", body)))

    @server.tool(annotations=writes)
    async def add_note(
        body: NoteBody, attempt: NoteAttempt = None, campaign: NoteCampaign = None
    ) -> dict[str, Any]:
        """A markdown note on an attempt or on a campaign (give one of the two): a dead end's
        details, a lead for later. Returns the note."""
        if (attempt is None) == (campaign is None):
            raise ToolError("give attempt or campaign, one of the two")

        def work(api: Api) -> dict[str, Any]:
            if attempt is not None:
                return api.post(f"/api/attempts/{attempt}/notes", {"body": body})
            assert campaign is not None
            return api.post(f"/api/campaigns/{api.campaign_id(campaign)}/notes", {"body": body})

        return await call(work)

    @server.tool(annotations=reads)
    async def compare_attempts(attempts: AttemptIds) -> dict[str, Any]:
        """Attempts side by side, in the order given: {attempts: [attempt...]}, each as
        get_attempt gives it; read their stats, flag_diff and env_diff to see what differs."""
        ids = ",".join(str(attempt_id(a)) for a in attempts)
        found = await call(lambda api: api.get("/api/compare", ids=ids))
        return {"attempts": [trimmed(a) for a in found["attempts"]]}

    @server.resource("campaign://{campaign}/summary.md", mime_type="text/markdown")
    async def campaign_summary(campaign: str) -> str:
        """A campaign's story in markdown, as its share link tells it (secrets masked)."""

        def work() -> str:
            try:
                api = dashboards.api()
                return api.text(f"/api/campaigns/{api.campaign_id(campaign)}/summary.md")
            except DashboardError as error:
                raise ResourceError(error.message) from None

        return await anyio.to_thread.run_sync(work)

    return server


def ledger_entry(a: dict[str, Any]) -> dict[str, Any]:
    """An attempt as the ledger shows it: the API's fields that tell the story, no more."""
    stats, diagnosis = a.get("stats") or {}, a.get("diagnosis") or {}
    return {
        **{key: a.get(key) for key in ("id", "title", "hypothesis", "status", "verdict",
                                       "flag_diff", "env_diff", "retest_of", "blocked_by")},
        "stats": {key: stats.get(key) for key in ("n", "mean", "delta_pct", "delta_ci95_pct",
                                                  "call")},
        "diagnosis": {key: diagnosis.get(key) for key in ("crashed", "root_cause",
                                                          "error_class")} if diagnosis else None,
    }  # fmt: skip


def note_entry(note: dict[str, Any]) -> dict[str, Any]:
    """A note as an agent reads it: its markdown, not the page's HTML of it."""
    return {key: note.get(key) for key in ("id", "body", "created_at")}


def fewer_figures(diagnosis: dict[str, Any]) -> dict[str, Any]:
    figures = diagnosis.get("throughput") or []
    if len(figures) <= FIGURES_KEPT:
        return diagnosis
    return {**diagnosis, "throughput": figures[-FIGURES_KEPT:]}


def trimmed(attempt: dict[str, Any]) -> dict[str, Any]:
    diagnosis = attempt.get("diagnosis")
    return {**attempt, "diagnosis": fewer_figures(diagnosis)} if diagnosis else attempt


def serve_stdio(url: str | None) -> None:
    # Each request to the dashboard is the agent's business, not a line on the host's log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    dashboards = Dashboards(url)
    server = build(dashboards)
    # The settings, the URL parser and the HTTP client paid for before the first tool call
    # (half a second); none running yet: each call looks again, and says so if still none.
    with contextlib.suppress(DashboardError):
        dashboards.api()
    server.run("stdio")
