"""Turn rows into what the API returns and the pages show, with baselines and deltas."""

import base64
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from sqlmodel import Session

from app import alerts, repo
from app import environment as env
from app.credentials import mask_secrets
from app.diagnosis.lines import decode
from app.domain import Judgement, change_in_force, judge, lane_of
from app.flags import FlagSet, LoggedArgs, flag_diff, masked, masked_diff
from app.hints import hints_for
from app.markdown import render_markdown
from app.models import (
    Attempt,
    BaselineChange,
    Campaign,
    Lane,
    Note,
    Run,
    Status,
    TailState,
    Webhook,
)
from app.pauses import pause_message
from app.repo import stored_log
from app.runner.outcomes import RunOutcome
from app.runner.views import run_view
from app.schemas import (
    AttemptOut,
    BaselineOut,
    BaselineRefOut,
    CampaignDetailOut,
    CampaignOut,
    EnvDiffOut,
    EnvironmentOut,
    FigureOut,
    FlagChangeOut,
    FlagDiffOut,
    FlagsOut,
    MetricOut,
    NoteOut,
    NotifyOut,
    RunOut,
    SearchHitOut,
    SeenBeforeOut,
    StatsOut,
    TailOut,
    WebhookOut,
)
from app.stats import Call, summarize
from app.tailing.status import TailStatus


@dataclass(frozen=True)
class AttemptFilter:
    """The campaign page's filter: one status, and text found in what a card says or
    hides (title, root cause and class, verdict, #id, hypothesis, flags), any case.
    static/app.js filters by the same rules in the browser."""

    status: Status | None = None
    q: str = ""

    @property
    def active(self) -> bool:
        return self.status is not None or bool(self.q)

    def matches(self, attempt: AttemptOut) -> bool:
        if self.status is not None and attempt.status != self.status:
            return False
        if not self.q:
            return True
        diagnosis = attempt.diagnosis or {}
        text = " ".join(
            str(part or "")
            for part in (
                f"#{attempt.id}", attempt.title, diagnosis.get("root_cause"),
                diagnosis.get("error_class"), attempt.verdict, attempt.hypothesis,
                " ".join(attempt.flags.command), attempt.flags.typed,
            )
        )  # fmt: skip
        return self.q.casefold() in text.casefold()


# The host refused the launch, or could not be reached: nothing ran.
_NOTHING_RAN = {RunOutcome.refused, RunOutcome.host_rebooted, RunOutcome.infrastructure}


def refused_launch(status: Status, run: RunOut | None) -> bool:
    """Still proposed, and its launch was refused: no hypothesis was tested."""
    return (
        status == Status.proposed
        and run is not None
        and (RunOutcome.read(run.outcome) in _NOTHING_RAN)
    )


def lanes_newest_first(attempts: list[AttemptOut]) -> dict[str, list[AttemptOut]]:
    lanes: dict[str, list[AttemptOut]] = {lane.value: [] for lane in Lane}
    for attempt in reversed(attempts):
        lanes[attempt.lane.value].append(attempt)
    return lanes


@dataclass(frozen=True)
class CardBasis:
    """What every attempt of a campaign is judged against: its baseline history."""

    history: list[BaselineChange]

    @classmethod
    def read(cls, session: Session, campaign_id: int) -> "CardBasis":
        return cls(repo.baseline_history(session, campaign_id=campaign_id))


# A configuration that crashed or was given up is no reference for anything.
_NO_REFERENCE = {Status.crashed, Status.eliminated}


class _Flags:
    """Flag sets and diffs of one view's attempts against their baseline configuration: the
    attempt the baseline in force at its start was set from (adopted as the baseline, or
    named by the owner as the configuration a typed baseline was measured with). With none,
    there is no reference: never the campaign's first attempt, often a hypothesis."""

    def __init__(
        self, session: Session, history: list[BaselineChange], attempts: list[Attempt]
    ) -> None:
        self.history = history
        self.times = [change.set_at for change in history]  # bisected for each attempt
        # Only the baseline attempts these are compared against: one card needs one.
        ids = {c.attempt_id for a in attempts if (c := self._in_force(a)) and c.attempt_id}
        self.baselines = {a.id: a for a in repo.attempts_by_ids(session, attempt_ids=ids)}
        self.configurations = {c.attempt_id for c in history if c.attempt_id is not None}
        # By attempt, and whether read on its own (as a baseline) or over its baseline: an
        # attempt without a command is its baseline's command only as an attempt, whichever
        # of the two is asked first.
        self._sets: dict[tuple[int | None, bool], FlagSet] = {}

    def _in_force(self, attempt: Attempt) -> BaselineChange | None:
        return change_in_force(self.history, attempt.started_at or attempt.created_at, self.times)

    def baseline_of(self, attempt: Attempt) -> Attempt | None:
        in_force = self._in_force(attempt)
        if in_force is None or in_force.attempt_id is None:
            return None
        baseline = self.baselines.get(in_force.attempt_id)
        if baseline is None or Status(baseline.status) in _NO_REFERENCE:
            return None
        return baseline

    def flag_set(self, attempt: Attempt, baseline: Attempt | None) -> FlagSet:
        key = (attempt.id, baseline is None)
        if key not in self._sets:
            base = self.flag_set(baseline, None) if baseline is not None else None
            self._sets[key] = FlagSet.of(
                attempt.command,
                LoggedArgs.from_json(attempt.logged_args),
                typed=attempt.flags,
                baseline=base,
            )
        return self._sets[key]

    def views(self, attempt: Attempt) -> tuple[FlagsOut, FlagDiffOut | None]:
        baseline = self.baseline_of(attempt)
        if baseline is not None and baseline.id == attempt.id:
            baseline = None
        flags = self.flag_set(attempt, baseline)
        out = FlagsOut(
            command=masked(flags.command),
            logged=masked(flags.logged.flags) if flags.logged else None,
            engine=flags.engine,
            typed=mask_secrets(attempt.flags),
            baseline_configuration=attempt.id in self.configurations,
        )
        if baseline is None or baseline.id is None:
            return out, None
        diff = masked_diff(flag_diff(flags, self.flag_set(baseline, None)))
        return out, FlagDiffOut(
            baseline_attempt_id=baseline.id,
            basis=diff.basis,
            added=diff.added,
            removed=diff.removed,
            changed={k: FlagChangeOut(baseline=a, attempt=b) for k, (a, b) in diff.changed.items()},
            summary=diff.summary(),
        )


def flag_views(
    session: Session, campaign: Campaign, attempt: Attempt
) -> tuple[FlagsOut, FlagDiffOut | None]:
    """One attempt's flags and diff, stored or not (the Launch form's preview)."""
    assert campaign.id is not None
    basis = CardBasis.read(session, campaign.id)
    return _Flags(session, basis.history, [attempt]).views(attempt)


def attempt_views(
    session: Session,
    campaign: Campaign,
    attempts: list[Attempt],
    *,
    diagnoses: dict[int, dict[str, Any]] | None = None,
    basis: CardBasis | None = None,
    paused: Mapping[int, int] | None = None,
) -> list[AttemptOut]:
    """`diagnoses`: each attempt's diagnosis as given here (repo.diagnosis_summaries, for
    a page's cards) instead of the attempt's own, which is then never read. `basis`: what
    every attempt is judged against, where the caller has read it in this snapshot.
    `paused`: the bytes waiting of the tails a full disk paused (app/pauses.py)."""
    assert campaign.id is not None
    ids = [a.id for a in attempts if a.id is not None]
    if basis is None:
        basis = CardBasis.read(session, campaign.id)
    history = basis.history
    # The baseline attempts' runs too: an attempt is judged against them (Welch).
    # and their re-measurements' (`joins`), which join their samples.
    baseline_ids = {c.attempt_id for c in history if c.attempt_id is not None}
    references = baseline_ids - set(ids)
    joined = repo.joiners(session, attempt_ids=baseline_ids)
    extra = {i for found in joined.values() for i in found} - set(ids)
    samples = repo.samples_by_attempt(session, attempt_ids=[*ids, *references, *extra])
    tails = repo.tail_states(session, attempt_ids=ids)
    runs = repo.runs_by_attempt(session, attempt_ids=[*ids, *references])
    times = [change.set_at for change in history]
    fingerprints = {a.fingerprint for a in attempts if a.fingerprint}
    earlier_by_print = repo.ids_by_fingerprint(
        session, campaign_id=campaign.id, fingerprints=fingerprints
    )
    flag_sets = _Flags(session, history, attempts)
    older = _older_baselines(session, history, attempts, joined)

    views = []
    for attempt in attempts:
        assert attempt.id is not None
        attempt_samples = samples.get(attempt.id, [])
        reference = change_in_force(history, attempt.started_at or attempt.created_at, times)
        base_id = reference.attempt_id if reference else None
        # A re-measurement is judged against its original's own runs: has it moved?
        pooled = [] if base_id is None or attempt.joins == base_id else joined.get(base_id, [])
        base_runs = [i for i in (base_id, *pooled) if i is not None]
        judged = _judged(
            tuple(attempt_samples),
            (reference.value, reference.attempt_id) if reference else None,
            tuple(value for i in base_runs for value in samples.get(i, [])),
            attempt.id,
            campaign.noise_pct,
            campaign.higher_is_better,
        )
        summary, change = judged.measured, judged.change
        tail = tails.get(attempt.id)
        same_cause = [
            other_id
            for other_id in earlier_by_print.get(attempt.fingerprint or "", [])
            if other_id < attempt.id
        ]
        status = Status(attempt.status)
        run = run_view(session, runs[attempt.id], tail) if attempt.id in runs else None
        flags, diff = flag_sets.views(attempt)
        environment = env.of_attempt(attempt, runs.get(attempt.id))
        reference_attempt = flag_sets.baseline_of(attempt)
        env_diff = None
        if environment and reference_attempt is not None and reference_attempt.id != attempt.id:
            assert reference_attempt.id is not None
            theirs = env.of_attempt(reference_attempt, runs.get(reference_attempt.id))
            if theirs:
                found = env.diff(theirs, environment)
                env_diff = EnvDiffOut(baseline_attempt_id=reference_attempt.id, **found)
        views.append(
            AttemptOut(
                id=attempt.id,
                campaign_id=attempt.campaign_id,
                title=attempt.title,
                hypothesis=attempt.hypothesis,
                command=attempt.command,
                flags=flags,
                flag_diff=diff,
                source=attempt.source,
                status=status,
                lane=Lane.refused if refused_launch(status, run) else lane_of(status),
                verdict=attempt.verdict,
                retest_of=attempt.retest_of,
                blocked_by=attempt.blocked_by,
                stack_blocked=attempt.stack_blocked,
                joins=attempt.joins,
                metric_value=summary.mean if summary else None,
                metric=MetricOut(
                    mean=summary.mean,
                    spread=summary.stdev or 0.0,
                    n=summary.n,
                    samples=attempt_samples,
                )
                if summary
                else None,
                baseline=judged.baseline,
                delta_pct=change.pct if change else None,
                delta_within_noise=judged.call == Call.same if change else None,
                improved=judged.call == Call.better if change else None,
                stats=stats_view(
                    judged,
                    tuple(
                        judgement_warnings(
                            older.get(attempt.id),
                            runs.get(attempt.id),
                            runs.get(base_id) if base_id is not None else None,
                            env_diff,
                        )
                    )
                    if judged.change is not None
                    else (),
                ),
                figures=figures_view(runs.get(attempt.id), campaign.metric),
                environment=EnvironmentOut(**environment) if environment else None,
                env_diff=env_diff,
                diagnosis=attempt.diagnosis if diagnoses is None else diagnoses.get(attempt.id),
                same_root_cause_as=same_cause,
                tail=tail_view(tail, (paused or {}).get(attempt.id)) if tail else None,
                run=run,
                created_at=attempt.created_at,
                started_at=attempt.started_at,
                closed_at=attempt.closed_at,
                updated_at=attempt.updated_at,
            )
        )
    return views


def figure_unit(name: str, metric: str) -> str:
    """The unit of a figure by its name (app/benchparse.py's names)."""
    if name == "value":
        return metric  # the campaign's own pattern's figure
    for suffix, unit in (("_tok_s", "tok/s"), ("_ms", "ms"), ("_pct", "%"), ("_s", "s")):
        if name.endswith(suffix):
            return unit
    return "req/s" if name in ("request_throughput", "request_goodput") else ""


def figures_view(run: Run | None, metric: str) -> dict[str, FigureOut]:
    """Each figure over the run's counted benchmark runs (no warm-up, no failed run)."""
    if run is None or not run.bench_runs:
        return {}
    values: dict[str, list[float]] = {}
    for entry in run.bench_runs:
        if entry.get("metric_recorded") is None:
            continue
        for name, value in (entry.get("figures") or {}).items():
            values.setdefault(name, []).append(value)
    out = {}
    for name, samples in values.items():
        summary = summarize(samples)
        if summary is not None:
            unit = figure_unit(name, metric)
            out[name] = FigureOut(unit=unit, n=summary.n, mean=summary.mean, ci95=summary.ci95)
    return out


# Runs further apart than this may not measure the same machine: a driver, a neighbour's job,
# the room's temperature change between days.
APART = timedelta(hours=24)


def _older_baselines(
    session: Session,
    history: list[BaselineChange],
    attempts: list[Attempt],
    joined: Mapping[int, list[int]],
) -> dict[int, timedelta]:
    """The attempts whose first run came more than APART after the last run of the
    baseline they are judged against (its re-measurements' included), by how much."""
    times = [change.set_at for change in history]
    judged_by: dict[int, list[int]] = {}
    for attempt in attempts:
        reference = change_in_force(history, attempt.started_at or attempt.created_at, times)
        if reference is not None and reference.attempt_id not in (None, attempt.id):
            assert reference.attempt_id is not None and attempt.id is not None
            judged_by.setdefault(reference.attempt_id, []).append(attempt.id)
    older = {}
    for base_id, attempt_ids in judged_by.items():
        pooled = [base_id, *joined.get(base_id, [])]
        last = repo.last_measured(session, attempt_ids=pooled)
        if last is None:
            continue
        mine = [i for i in attempt_ids if i not in pooled]
        found = repo.first_measured_after(session, attempt_ids=mine, after=last + APART)
        older.update({i: first - last for i, first in found.items()})
    return older


def judgement_warnings(
    older_by: timedelta | None,
    run: Run | None,
    baseline_run: Run | None,
    env_diff: EnvDiffOut | None,
) -> list[str]:
    """Why a comparison with the baseline's runs may mislead: they are from another day, on
    another host, or on another stack."""
    said = []
    if older_by is not None:
        days = older_by.days
        said.append(f"the baseline's runs are {days} day{'s' * (days != 1)} older: "
                    "re-measure it to compare like with like")  # fmt: skip
    if run is not None and baseline_run is not None and run.host != baseline_run.host:
        said.append(f"measured on {run.host}, the baseline on {baseline_run.host}")
    if env_diff is not None and env_diff.changed:
        said.append("the baseline ran on another stack (env, below)")
    return said


@functools.lru_cache(maxsize=16384)
def _judged(
    samples: tuple[float, ...],
    reference: tuple[float, int | None] | None,
    reference_samples: tuple[float, ...],
    attempt_id: int,
    noise_pct: float,
    higher_is_better: bool,
) -> Judgement:
    """`judge`, kept: a campaign's page judges every attempt again after a change to one."""
    change = None
    if reference is not None:
        change = BaselineChange(campaign_id=0, value=reference[0], attempt_id=reference[1])
    return judge(
        list(samples), change, list(reference_samples), attempt_id=attempt_id,
        noise_pct=noise_pct, higher_is_better=higher_is_better,
    )  # fmt: skip


@functools.lru_cache(maxsize=16384)
def stats_view(judged: Judgement, warnings: tuple[str, ...] = ()) -> StatsOut:
    """Kept: the same judgement is the same (immutable) answer, not a model built again."""
    measured, change = judged.measured, judged.change
    baseline = None
    if judged.baseline is not None:
        baseline = BaselineRefOut(
            value=judged.baseline, n=judged.baseline_n, attempt_id=judged.baseline_attempt_id
        )
    return StatsOut(
        n=measured.n if measured else 0,
        mean=measured.mean if measured else None,
        stdev=measured.stdev if measured else None,
        cv_pct=measured.cv_pct if measured else None,
        ci95=measured.ci95 if measured else None,
        baseline=baseline,
        delta_pct=change.pct if change else None,
        delta_ci95_pct=change.ci95_pct if change else None,
        call=judged.call,
        noise_pct=judged.noise_pct,
        noise_from="baseline runs" if judged.noise_learned else "typed",
        warnings=list(warnings),
    )


def tail_view(tail: TailState, waiting: int | None) -> TailOut:
    """`waiting`: the bytes a full disk holds back, when it paused the tail. The pause is
    laid over the stored state, since the database may have had no room to store it."""
    state = TailStatus(tail.state) if waiting is None else TailStatus.disk_full
    return TailOut(
        state=state,
        bytes_read=tail.offset,
        size=tail.size,
        stored_bytes=tail.stored_bytes,
        last_error=tail.last_error if waiting is None else pause_message(waiting),
        host_key_offered=bool(tail.host_key),
        offered_host_key=key_fingerprint(tail.host_key) if tail.host_key else None,
        known_host_key=tail.known_host_key if tail.host_key else None,
        infrastructure=state.infrastructure,
    )


def attempt_view(
    session: Session, attempt: Attempt, paused: Mapping[int, int] | None = None
) -> AttemptOut:
    """One attempt with the earlier attempts of any campaign that failed the same way and
    its hints (app/hints.py): a few bounded queries more, with a fingerprint only, which the
    lists (`attempt_views`) leave out."""
    campaign = repo.get_campaign(session, campaign_id=attempt.campaign_id)
    assert campaign is not None and attempt.id is not None
    view = attempt_views(session, campaign, [attempt], paused=paused)[0]
    rows = (
        repo.seen_before(session, fingerprint=attempt.fingerprint, before_id=attempt.id)
        if attempt.fingerprint
        else []
    )
    view.seen_before = [
        SeenBeforeOut(campaign_id=c, attempt_id=a, title=t, status=Status(s), verdict=v)
        for c, a, t, s, v in rows
    ]
    view.hints = hints_for(session, attempt)
    return view


def campaign_view(session: Session, campaign: Campaign, *, attempt_count: int) -> CampaignOut:
    assert campaign.id is not None
    history = repo.baseline_history(session, campaign_id=campaign.id)
    return CampaignOut(
        **campaign.model_dump(),
        attempt_count=attempt_count,
        baseline_history=[
            BaselineOut(value=c.value, attempt_id=c.attempt_id, set_at=c.set_at) for c in history
        ],
    )


def notify_view(session: Session, campaign: Campaign) -> NotifyOut:
    """The campaign's alerts, for its owner: webhooks masked, with how they last went."""
    assert campaign.id is not None
    return NotifyOut(
        events=list(campaign.notify_events or []),
        webhooks=[webhook_view(w) for w in alerts.webhooks(session, campaign.id)],
    )


def webhook_view(webhook: Webhook) -> WebhookOut:
    state: Literal["unused", "ok", "failing"] = (
        "failing" if webhook.failures else "ok" if webhook.last_ok_at else "unused"
    )
    return WebhookOut(
        id=webhook.id or 0,
        url=alerts.mask_url(webhook.url),
        state=state,
        last_ok_at=webhook.last_ok_at,
        last_error=webhook.last_error,
        last_error_at=webhook.last_error_at,
        failures=webhook.failures,
        dead=webhook.dead,
    )


def campaign_detail(session: Session, campaign: Campaign) -> CampaignDetailOut:
    assert campaign.id is not None
    attempts = repo.list_attempts(session, campaign_id=campaign.id)
    base = campaign_view(session, campaign, attempt_count=len(attempts))
    return CampaignDetailOut(
        **base.model_dump(), attempts=attempt_views(session, campaign, attempts)
    )


TAIL_LINES = 500
TAIL_BYTES = 512 << 10


def log_tail(session: Session, attempt: AttemptOut) -> list[tuple[int, str, bool, str | None]]:
    """The last lines of the stored log, as a terminal shows them (colours stripped):
    (number from the end, text, is the root-cause line, the anchor of a diagnosis
    candidate's line: `line-N`, found by the line's offset in the log)."""
    if attempt.tail is None or attempt.tail.stored_bytes == 0:
        return []
    start = max(0, attempt.tail.stored_bytes - TAIL_BYTES)
    data = stored_log(session, attempt.id, start)
    if attempt.tail.state != "stopped" and not data.endswith(b"\n"):
        # A line still being written: the live stream appends it whole once it ends.
        data = data[: data.rfind(b"\n") + 1]
    return _marked_lines(attempt.diagnosis, data, start, cut=start > 0)


LINE_LOOKBACK = 64 << 10


def log_range(
    session: Session,
    attempt_id: int,
    diagnosis: dict[str, Any] | None,
    start: int,
    end: int,
    *,
    whole_lines: bool = False,
) -> list[tuple[int, str, bool, str | None]]:
    """The lines of the stored log in [start, end) (a live log event's range), marked as
    `log_tail` marks them. `whole_lines`: each line goes with the range its newline falls
    in, whole (a chunk may end mid-line), so appending range after range shows each once."""
    if not whole_lines:
        data = stored_log(session, attempt_id, start, max(0, end - start))
        return _marked_lines(diagnosis, data, start, cut=False)
    base = max(0, start - LINE_LOOKBACK)
    data = stored_log(session, attempt_id, base, max(0, end - base))
    head = data.rfind(b"\n", 0, start - base) + 1 if start > base else 0
    tail = data.rfind(b"\n") + 1
    if head >= tail:
        return []
    return _marked_lines(diagnosis, data[head:tail], base + head, cut=False)


def _marked_lines(
    diagnosis: dict[str, Any] | None, data: bytes, start: int, *, cut: bool
) -> list[tuple[int, str, bool, str | None]]:
    diagnosis = diagnosis or {}
    anchors = {
        candidate["offset"]: f"line-{candidate['line_no']}"
        for candidate in diagnosis.get("candidates") or []
        if "offset" in candidate
    }
    offsets, lines, position = [], [], start
    for raw in data.split(b"\n"):
        offsets.append(position)
        lines.append(raw)
        position += len(raw) + 1
    if cut:
        offsets, lines = offsets[1:], lines[1:]  # the first one is cut
    if lines and lines[-1] == b"":
        offsets.pop()
        lines.pop()
    root = diagnosis.get("root_cause")
    offsets, shown = offsets[-TAIL_LINES:], [decode(raw) for raw in lines[-TAIL_LINES:]]
    return [
        (len(shown) - index, text, bool(root) and text == root, anchors.get(offsets[index]))
        for index, text in enumerate(shown)
    ]


def note_view(note: Note) -> NoteOut:
    assert note.id is not None
    return NoteOut(**note.model_dump(), html=render_markdown(note.body))


SNIPPET_CHARS = 160
SNIPPET_LEAD = 60  # of them before the match


def snippet(texts: tuple[str | None, ...], q: str) -> str:
    """Plain text around q's first match in the first text that holds it (whitespace
    folded, secrets masked), at most SNIPPET_CHARS long; the first text's start when q
    only matched a masked secret."""
    folded = [" ".join(mask_secrets(text).split()) for text in texts if text]
    if not folded:
        return ""
    needle = q.lower()
    text, at = folded[0], 0
    for candidate in folded:
        lowered = candidate.lower()
        # lower() can change a text's length (İ): positions then only hold for ASCII.
        found = lowered.find(needle) if len(lowered) == len(candidate) else -1
        if found >= 0:
            text, at = candidate, found
            break
    if len(text) <= SNIPPET_CHARS:
        return text
    start = max(0, min(at - SNIPPET_LEAD, len(text) - SNIPPET_CHARS))
    head = "…" if start > 0 else ""
    end = start + SNIPPET_CHARS - len(head)
    tail = "…" if end < len(text) else ""
    return head + text[start : end - len(tail)] + tail


def search_view(session: Session, q: str) -> list[SearchHitOut]:
    return [
        SearchHitOut(
            kind=match.kind,
            campaign_id=match.campaign_id,
            attempt_id=match.attempt_id,
            title=match.title,
            snippet=snippet(match.texts, q),
        )
        for match in repo.search(session, q=q)
    ]


def key_fingerprint(key_line: str) -> str:
    """A "type base64" key line as OpenSSH shows it: "type SHA256:..." of its blob."""
    kind, _, blob = key_line.strip().partition(" ")
    try:
        raw = base64.b64decode(blob.split(" ")[0], validate=True)
    except ValueError:
        return kind
    digest = base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")
    return f"{kind} SHA256:{digest}"
