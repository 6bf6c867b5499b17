"""What the runner writes: each step of a run in a short transaction of its own, with the
attempt's status changes (all in `set_attempt_status`) and a live event for its pages; and
the run's lease (app/runner/lease.py): each step is written only while this dashboard
holds it."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, or_, update
from sqlmodel import Session, col, select

from app import alerts, lifecycle, repo
from app.changes import record
from app.db import session_scope
from app.domain import Judgement, change_in_force, judge
from app.lifecycle import Actor
from app.models import Attempt, Campaign, Measurement, Run, RunState, Status, TailState, utcnow
from app.runner import lease
from app.runner.answers import Job
from app.runner.outcomes import RunOutcome
from app.stats import AUTO_MIN_RUNS, Call

FINISHED = (RunState.done, RunState.failed)


@dataclass(frozen=True)
class Snapshot:
    """A run as its driver reads it, with what the tail of its log found so far."""

    run: Run
    attempt_status: Status
    campaign_id: int
    diagnosis: dict[str, Any]
    tail_offset: int
    metric_label: str
    bench_pattern: str | None  # the campaign's regex for a benchmark run's figure


def set_attempt_status(session: Session, attempt: Attempt, new: Status) -> None:
    """Every attempt status change the runner makes, through the lifecycle as the runner:
    one the lifecycle refuses (the ingest read the crash first, say) is not made."""
    lifecycle.apply(session, attempt, new, by=Actor.runner)


def _judgement(session: Session, attempt: Attempt, confidence: float) -> Judgement:
    assert attempt.id is not None
    campaign = session.get(Campaign, attempt.campaign_id)
    assert campaign is not None
    history = repo.baseline_history(session, campaign_id=attempt.campaign_id)
    reference = change_in_force(history, attempt.started_at or attempt.created_at)
    theirs = reference.attempt_id if reference and reference.attempt_id else None
    base = [theirs] if theirs is not None else []
    if theirs is not None and attempt.joins != theirs:  # re-measurements join it
        base += repo.joiners(session, attempt_ids=[theirs]).get(theirs, [])
    samples = repo.samples_by_attempt(session, attempt_ids=[attempt.id, *base])
    return judge(
        samples.get(attempt.id, []),
        reference,
        [value for i in base for value in samples.get(i, [])],
        attempt_id=attempt.id,
        noise_pct=campaign.noise_pct,
        higher_is_better=campaign.higher_is_better,
        confidence=confidence,
    )


def auto_ended(auto: dict[str, Any], judged: Judgement, *, last: bool) -> dict[str, Any] | None:
    """`--repeat auto`, after a counted run: its record with what ended its runs (the call
    clear at the looks' level, no baseline to judge against, or the budget spent), or None
    to go on."""
    n = judged.measured.n if judged.measured else 0
    if n < AUTO_MIN_RUNS and not last:
        return None
    if judged.baseline is None:
        ended_by = "no baseline"
    elif judged.call != Call.inconclusive:
        ended_by = "clear"
    elif last:
        ended_by = "budget"
    else:
        return None
    return {**auto, "ended_by": ended_by, "call": judged.call.value, "n": n}


class LeaseLost(Exception):
    """Another dashboard drives this run now: this one's lease expired and was taken."""


class Records:
    def __init__(self, engine: Engine, owner: str) -> None:
        self.engine = engine
        self.owner = owner  # this dashboard's instance id: the lease holder it writes as

    def _renew(self, session: Session, run_ids: list[int]) -> set[int]:
        """The runs among `run_ids` whose lease this dashboard still holds, renewed. As the
        first write of a transaction it also fences the rest of it: the row is locked until
        commit (PostgreSQL) or the database is (SQLite), so no claim comes in between."""
        held = set()
        for run_id in run_ids:
            renewed = update(Run).where(col(Run.id) == run_id, col(Run.lease_owner) == self.owner)
            if session.exec(renewed.values(lease_expires_at=lease.expiry(utcnow()))).rowcount:
                held.add(run_id)
        return held

    def _write(self, run_id: int, change: Callable[[Session, Run, Attempt], None]) -> Run:
        with session_scope(self.engine) as session:
            if not self._renew(session, [run_id]):
                raise LeaseLost(run_id)
            run = session.get(Run, run_id)
            assert run is not None
            attempt = session.get(Attempt, run.attempt_id)
            assert attempt is not None
            change(session, run, attempt)
            run.updated_at = utcnow()
            session.add(run)
            record(session, attempt.campaign_id, "attempt", attempt_id=attempt.id)
        return run

    def load(self, run_id: int) -> Snapshot | None:
        with session_scope(self.engine, snapshot=True) as session:
            run = session.get(Run, run_id)
            if run is None:
                return None
            attempt = session.get(Attempt, run.attempt_id)
            assert attempt is not None
            campaign = session.get(Campaign, attempt.campaign_id)
            tail = session.exec(select(TailState).where(TailState.attempt_id == attempt.id)).first()
            return Snapshot(
                run=run,
                attempt_status=Status(attempt.status),
                campaign_id=attempt.campaign_id,
                diagnosis=attempt.diagnosis or {},
                tail_offset=tail.offset if tail and tail.source == attempt.source else 0,
                metric_label=campaign.metric_label if campaign else "Output token throughput",
                bench_pattern=campaign.bench_pattern if campaign else None,
            )

    def unfinished(self) -> list[int]:
        with session_scope(self.engine, snapshot=True) as session:
            query = select(Run.id).where(col(Run.state).not_in(FINISHED)).order_by(col(Run.id))
            return [i for i in session.exec(query) if i is not None]

    def claim(self, run_id: int) -> bool:
        """Take the lease of an unfinished run when nobody holds it, its holder let it
        expire, or its holder was a process of this machine that has ended."""
        now = utcnow()
        free = or_(
            col(Run.lease_owner).is_(None),
            col(Run.lease_owner) == self.owner,
            col(Run.lease_expires_at) < now,
        )
        with session_scope(self.engine) as session:
            if self._take(session, run_id, free, now):
                return True
            holder = session.exec(select(Run.lease_owner).where(col(Run.id) == run_id)).first()
            # Taken only from the holder just read: a claim by a third dashboard wins.
            gone = holder is not None and lease.holder_gone(holder)
            return gone and self._take(session, run_id, col(Run.lease_owner) == holder, now)

    def _take(self, session: Session, run_id: int, free: Any, now: Any) -> bool:
        taken = (
            update(Run)
            .where(col(Run.id) == run_id, col(Run.state).not_in(FINISHED), free)
            .values(lease_owner=self.owner, lease_expires_at=lease.expiry(now))
        )
        return bool(session.exec(taken).rowcount)

    def renew(self, run_ids: list[int]) -> set[int]:
        """Renew the leases of the runs this dashboard drives; the ones it still holds."""
        with session_scope(self.engine) as session:
            return self._renew(session, run_ids)

    def release(self, run_ids: list[int] | None = None) -> None:
        """Give up the leases of these runs (all this dashboard holds, without): another
        dashboard takes them at its next look, not after the expiry."""
        owned = col(Run.lease_owner) == self.owner
        where = owned if run_ids is None else owned & col(Run.id).in_(run_ids)
        with session_scope(self.engine) as session:
            session.exec(update(Run).where(where).values(lease_owner=None, lease_expires_at=None))

    def blocking_run(self, run_id: int) -> Run | None:
        """The earlier unfinished run on the same host this one waits for: one run per host
        at a time, in the order they were asked for."""
        with session_scope(self.engine, snapshot=True) as session:
            run = session.get(Run, run_id)
            assert run is not None
            query = (
                select(Run)
                .where(
                    Run.host == run.host,
                    col(Run.id) < run_id,
                    col(Run.state).not_in(FINISHED),
                )
                .order_by(col(Run.id))
            )
            return session.exec(query).first()

    def update(self, run_id: int, **fields: Any) -> Run:
        def change(_session: Session, run: Run, _attempt: Attempt) -> None:
            for name, value in fields.items():
                setattr(run, name, value)

        return self._write(run_id, change)

    def launched(self, run_id: int, job: Job, source: str) -> Run:
        """The server runs: its log becomes the attempt's source, followed by the tailer."""

        def change(session: Session, run: Run, attempt: Attempt) -> None:
            run.state = RunState.starting
            run.reason = None
            run.pid, run.pgid = job.get("pid"), job.get("pgid")
            run.boot_id, run.log_path = job.get("boot_id"), job.get("log_path")
            run.launched_at = run.launched_at or utcnow()
            # The tailer follows it after commit; a waiting attempt runs.
            lifecycle.attach_log(session, attempt, source, by=Actor.runner)

        return self._write(run_id, change)

    def ready(self, run_id: int) -> Run:
        def change(session: Session, run: Run, attempt: Attempt) -> None:
            run.state, run.ready_at, run.reason = RunState.ready, utcnow(), None
            set_attempt_status(session, attempt, Status.ready)

        return self._write(run_id, change)

    def bench_run(
        self, run_id: int, entry: dict[str, Any], metric: float | None, *, last: bool = False
    ) -> Run:
        """One benchmark run, finished: its figures kept with the run and, when it counts,
        its metric recorded as a measurement (the ordinary path: mean ± spread). With
        `--repeat auto`, the look at the call it makes is in the same write: no one reads a
        run that counted and not yet whether another follows (`last`: the budget's last)."""

        def change(session: Session, run: Run, attempt: Attempt) -> None:
            run.bench_runs = [*(run.bench_runs or []), entry]
            run.bench_done = int(entry["index"])
            if metric is not None and lifecycle.measurement_refusal(attempt) is None:
                assert attempt.id is not None
                session.add(Measurement(attempt_id=attempt.id, value=metric))
                session.flush()
                lifecycle.after_measurement(session, attempt, by=Actor.runner)
                if run.auto_repeat:
                    auto = run.auto_repeat
                    judged = _judgement(session, attempt, float(auto["confidence"]))
                    run.auto_repeat = auto_ended(auto, judged, last=last) or auto

        return self._write(run_id, change)

    def finish(
        self,
        run_id: int,
        *,
        state: RunState,
        outcome: RunOutcome | None = None,
        reason: str | None = None,
        attempt_status: Status | None = None,
        **fields: Any,
    ) -> Run:
        def change(session: Session, run: Run, attempt: Attempt) -> None:
            run.state = state
            if outcome is not None:
                run.outcome = outcome
            run.reason = reason
            for name, value in fields.items():
                setattr(run, name, value)
            if state in FINISHED:
                run.ended_at = run.ended_at or utcnow()
                # Ended: whichever dashboard is asked to stop a kept server drives that.
                run.lease_owner = run.lease_expires_at = None
            if attempt_status is not None:
                set_attempt_status(session, attempt, attempt_status)
            if state == RunState.failed:
                alerts.queue(session, attempt, "run_failed")

        return self._write(run_id, change)
