"""What the owner can do to a campaign; shared by the JSON API and the HTML forms."""

from sqlmodel import Session

from app import alerts, lifecycle, repo
from app.changes import follow_up, record
from app.domain import change_in_force
from app.errors import Conflict, Invalid, NotFound
from app.lifecycle import Actor
from app.models import Attempt, BaselineChange, Campaign, Measurement, Note, Status, utcnow
from app.schemas import (
    AttemptCreate,
    AttemptUpdate,
    CampaignCreate,
    CampaignUpdate,
    NoteCreate,
    check_target,
)
from app.stats import summarize


def require_campaign(session: Session, campaign_id: int) -> Campaign:
    campaign = repo.get_campaign(session, campaign_id=campaign_id)
    if campaign is None:
        raise NotFound(f"campaign {campaign_id} not found")
    return campaign


def require_attempt(session: Session, attempt_id: int) -> Attempt:
    attempt = repo.get_attempt(session, attempt_id=attempt_id)
    if attempt is None:
        raise NotFound(f"attempt {attempt_id} not found")
    return attempt


def require_note(session: Session, note_id: int) -> Note:
    note = repo.get_note(session, note_id=note_id)
    if note is None:
        raise NotFound(f"note {note_id} not found")
    return note


def _set_baseline(
    session: Session, campaign: Campaign, value: float, attempt_id: int | None
) -> None:
    assert campaign.id is not None
    campaign.baseline = value
    session.add(campaign)
    session.add(BaselineChange(campaign_id=campaign.id, value=value, attempt_id=attempt_id))


def create_campaign(session: Session, data: CampaignCreate) -> Campaign:
    campaign = Campaign(**data.model_dump())
    session.add(campaign)
    session.flush()
    if data.baseline is not None:
        _set_baseline(session, campaign, data.baseline, attempt_id=None)
    assert campaign.id is not None
    record(session, campaign.id, "campaign")  # the campaign list hears of it
    return campaign


# Given as null (the bench pattern also as ""), these are unset: the target removed, the
# bench pattern back to the parser's own reading.
CLEARABLE_CAMPAIGN_FIELDS = frozenset({"bench_pattern", "target"})


def update_campaign(session: Session, campaign_id: int, data: CampaignUpdate) -> Campaign:
    campaign = require_campaign(session, campaign_id)
    changes = data.model_dump(exclude_unset=True)
    new_baseline = changes.pop("baseline", None)
    changes.pop("notify", None)
    if data.notify is not None:
        alerts.set_notify(session, campaign, data.notify.urls, list(data.notify.events))
    try:
        check_target(
            changes.get("target", campaign.target),
            campaign.baseline if new_baseline is None else new_baseline,
            campaign.higher_is_better,
        )
    except ValueError as error:
        raise Invalid(str(error)) from None
    for field, value in changes.items():
        if value is not None or field in CLEARABLE_CAMPAIGN_FIELDS:
            setattr(campaign, field, value)
    session.add(campaign)
    if new_baseline is not None and new_baseline != campaign.baseline:
        _set_baseline(session, campaign, new_baseline, attempt_id=None)
    record(session, campaign_id, "campaign")
    return campaign


def _check_link(session: Session, campaign_id: int, attempt_id: int | None, role: str) -> None:
    if attempt_id is None:
        return
    other = repo.get_attempt(session, attempt_id=attempt_id)
    if other is None or other.campaign_id != campaign_id:
        raise Invalid(f"{role}: attempt {attempt_id} is not an attempt of this campaign")


def _refuse_a_circle(session: Session, attempt_id: int, blocker: int) -> None:
    """Blocked by an attempt that waits, link after link, on this one: none could go on."""
    seen: set[int] = {attempt_id}
    current: int | None = blocker
    while current is not None and current not in seen:
        seen.add(current)
        linked = repo.get_attempt(session, attempt_id=current)
        current = linked.blocked_by if linked is not None else None
    if current == attempt_id:
        raise Invalid(f"blocked_by: attempt {blocker} waits on this one: both would wait forever")


def create_attempt(session: Session, campaign_id: int, data: AttemptCreate) -> Attempt:
    require_campaign(session, campaign_id)
    _check_link(session, campaign_id, data.retest_of, "retest_of")
    _check_link(session, campaign_id, data.blocked_by, "blocked_by")
    attempt = Attempt(campaign_id=campaign_id, **data.model_dump(exclude={"launch"}))
    session.add(attempt)
    session.flush()
    if data.source:
        # Attaching a log means the server is being launched: the attempt runs.
        lifecycle.require(session, attempt, Status.running, by=Actor.owner)
    record(session, campaign_id, "attempt", attempt_id=attempt.id)
    return attempt


def _adopt_as_baseline(session: Session, attempt: Attempt) -> None:
    assert attempt.id is not None
    campaign = require_campaign(session, attempt.campaign_id)
    samples = repo.samples_by_attempt(session, attempt_ids=[attempt.id])[attempt.id]
    summary = summarize(samples)
    assert summary is not None
    # (a mean of figures typed to a decimal or two: its last bits of float noise, the
    # "92.60000000000001" of 92.5, 92.7 and 92.6, are no part of the baseline)
    _set_baseline(session, campaign, float(f"{summary.mean:.12g}"), attempt_id=attempt.id)
    record(session, attempt.campaign_id, "campaign")


def _name_baseline_configuration(session: Session, attempt: Attempt) -> None:
    """The baseline in force at the attempt's start was measured with its flags."""
    status = Status(attempt.status)
    if status in (Status.crashed, Status.eliminated):
        raise Invalid(f"a {status.value} attempt is no baseline configuration")
    history = repo.baseline_history(session, campaign_id=attempt.campaign_id)
    change = change_in_force(history, attempt.started_at or attempt.created_at)
    if change is None:
        raise Invalid("the campaign has no baseline yet: set its value first")
    if change.attempt_id == attempt.id:
        return
    if change.attempt_id is not None:
        raise Conflict(f"the baseline in force already has its configuration: #{change.attempt_id}")
    change.attempt_id = attempt.id
    session.add(change)
    record(session, attempt.campaign_id, "campaign")


def update_attempt(session: Session, attempt_id: int, data: AttemptUpdate) -> Attempt:
    attempt = require_attempt(session, attempt_id)
    if data.set_baseline and data.status != Status.adopted:
        raise Invalid("set_baseline only goes with status 'adopted'")
    if (
        data.status is not None
        and data.status == attempt.status
        and lifecycle.is_closed(attempt)
        and data.verdict is not None
        and data.verdict.strip() != (attempt.verdict or "")
    ):
        # (`eliminate` again with other words would rewrite the verdict unseen: the same words
        # again are a retry, and the reason alone stays editable)
        raise Conflict(lifecycle.final(Status(attempt.status)))
    verdict = attempt.verdict if data.verdict is None else data.verdict
    eliminated = data.status == Status.eliminated or (
        data.status is None and attempt.status == Status.eliminated and data.verdict is not None
    )
    if eliminated and not (verdict or "").strip():
        # (every way in alike: the page's form, the API, the CLI, MCP)
        raise Invalid("verdict: say why it is a dead end: eliminating needs a verdict")
    if data.metric_value is not None:
        _refuse_if(lifecycle.metric_refusal(attempt))
        runs = repo.count_measurements(session, attempt_id=attempt_id)
        if runs > 1:
            # (one typed figure would throw away the runs' spread and the call they make)
            raise Conflict(
                f"attempt {attempt_id} has {runs} measured runs: a typed figure would replace "
                f"them all; add it as one more run (POST /api/attempts/{attempt_id}/measurements)"
            )
        repo.replace_measurements(session, attempt_id=attempt_id, value=data.metric_value)
        session.flush()
        _refuse_if(lifecycle.after_measurement(session, attempt, by=Actor.owner))
    if data.source is not None:
        _refuse_if(lifecycle.attach_log(session, attempt, data.source, by=Actor.owner))
    for field in ("title", "hypothesis", "command", "flags"):
        value = getattr(data, field)
        if value is not None:
            setattr(attempt, field, value)
    for role in ("blocked_by", "retest_of"):
        if role in data.model_fields_set:
            linked = getattr(data, role)
            _check_link(session, attempt.campaign_id, linked, role)
            if linked == attempt_id:
                raise Invalid(f"{role}: an attempt cannot link to itself")
            if role == "blocked_by" and linked is not None:
                _refuse_a_circle(session, attempt_id, linked)
            setattr(attempt, role, linked)
    if data.stack_blocked is not None:
        attempt.stack_blocked = data.stack_blocked
    if data.baseline_configuration:
        _name_baseline_configuration(session, attempt)
    if data.status is not None:
        change = lifecycle.require(session, attempt, data.status, by=Actor.owner)
        if change.changed and change.after == Status.adopted and data.set_baseline:
            _adopt_as_baseline(session, attempt)
    if data.verdict is not None:
        attempt.verdict = data.verdict.strip() or None
    attempt.updated_at = utcnow()
    session.add(attempt)
    record(session, attempt.campaign_id, "attempt", attempt_id=attempt_id)
    return attempt


def _refuse_if(refusal: str | lifecycle.Change | lifecycle.Refusal | None) -> None:
    """A refusal of the lifecycle is the owner's 409."""
    if isinstance(refusal, str | lifecycle.Refusal):
        raise Conflict(str(refusal))


def offered_host_key(session: Session, attempt_id: int) -> tuple[str, str, str | None]:
    """The source, the host key it offered for the owner to trust, and the different key on
    record when the key changed; 409 when no key waits."""
    attempt = require_attempt(session, attempt_id)
    tail = repo.tail_states(session, attempt_ids=[attempt_id]).get(attempt_id)
    if attempt.source is None or tail is None or not tail.host_key:
        raise Conflict(f"attempt {attempt_id} has no host key waiting to be trusted")
    return attempt.source, tail.host_key, tail.known_host_key


def add_measurement(session: Session, attempt_id: int, value: float) -> Attempt:
    attempt = require_attempt(session, attempt_id)
    _refuse_if(lifecycle.measurement_refusal(attempt))
    session.add(Measurement(attempt_id=attempt_id, value=value))
    _refuse_if(lifecycle.after_measurement(session, attempt, by=Actor.owner))
    attempt.updated_at = utcnow()
    session.add(attempt)
    record(session, attempt.campaign_id, "attempt", attempt_id=attempt_id)
    return attempt


def add_note(
    session: Session, campaign_id: int, data: NoteCreate, attempt_id: int | None = None
) -> Note:
    note = Note(campaign_id=campaign_id, attempt_id=attempt_id, body=data.body)
    session.add(note)
    session.flush()
    record(session, campaign_id, "note", note_id=note.id, attempt_id=attempt_id)
    return note


def add_attempt_note(session: Session, attempt_id: int, data: NoteCreate) -> Note:
    attempt = require_attempt(session, attempt_id)
    return add_note(session, attempt.campaign_id, data, attempt_id=attempt_id)


def add_campaign_note(session: Session, campaign_id: int, data: NoteCreate) -> Note:
    require_campaign(session, campaign_id)
    return add_note(session, campaign_id, data)


def edit_note(session: Session, note_id: int, data: NoteCreate) -> Note:
    note = require_note(session, note_id)
    note.body = data.body
    note.updated_at = utcnow()
    session.add(note)
    record(session, note.campaign_id, "note", note_id=note.id, attempt_id=note.attempt_id)
    return note


def delete_note(session: Session, note_id: int) -> Note:
    note = require_note(session, note_id)
    session.delete(note)
    record(session, note.campaign_id, "note", note_id=note.id, attempt_id=note.attempt_id)
    return note


def refuse_while_running(session: Session, attempt_ids: list[int], what: str) -> None:
    """A launched server still up is not deleted with its attempt: its run row is the only
    handle the dashboard has on it (its Stop, and the proof that it stopped), so deleting
    it would leave the server on the host, holding its port and GPUs, out of reach."""
    for run in repo.running_servers(session, attempt_ids=attempt_ids):
        state = "kept running" if repo.kept_running(run) else str(run.state)
        raise Conflict(
            f"the server of attempt {run.attempt_id} is still running on {run.host} ({state}): "
            f"stop it first (its Stop button, or POST /api/attempts/{run.attempt_id}/stop), "
            f"then delete {what}"
        )


def delete_campaign(session: Session, campaign_id: int) -> None:
    """The campaign and everything of it: attempts, logs, notes, share links."""
    campaign = require_campaign(session, campaign_id)
    attempt_ids = [a.id for a in repo.list_attempts(session, campaign_id=campaign_id) if a.id]
    refuse_while_running(session, attempt_ids, "the campaign")
    session.delete(campaign)
    session.flush()
    for attempt_id in attempt_ids:
        follow_up(session, attempt_id)  # after commit: their tails stop


def delete_attempt(session: Session, attempt_id: int) -> int:
    """The attempt with its log, measurements and notes; returns its campaign's id."""
    attempt = require_attempt(session, attempt_id)
    campaign_id = attempt.campaign_id
    refuse_while_running(session, [attempt_id], "it")
    session.delete(attempt)
    session.flush()
    follow_up(session, attempt_id)
    record(session, campaign_id, "attempt", attempt_id=attempt_id)
    return campaign_id
