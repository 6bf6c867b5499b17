"""A run's lease in its row (app/runner/lease.py), on SQLite and PostgreSQL: claimed by one
dashboard at a time, its steps written only by the holder, taken over when it expires or
when its holder was a process of this machine that has ended."""

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import StatementError
from sqlmodel import Session

from app import migrate
from app.db import make_engine
from app.models import Run, RunState, utcnow
from app.runner.lease import LEASE_S, instance_id
from app.runner.outcomes import RunOutcome
from app.runner.records import LeaseLost, Records
from tests.helpers import stored_attempt

pytestmark = pytest.mark.both_databases

# Another machine's dashboard: nothing about its process can be judged from here.
ELSEWHERE = "gpu-dash-2:4123/b89dbc42-d292-4d09-8b98-bdaa71c21382/pid:[4026531836]/8812/a1b2c3d4"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def add_run(engine: Engine, **fields: object) -> int:
    with Session(engine, expire_on_commit=False) as session:
        _, attempt_id = stored_attempt(session, campaign="EAGLE-3", title="Torch symmetric memory")
        run = Run(attempt_id=attempt_id, host="gpu-box", command="x", run_key="k", **fields)
        session.add(run)
        session.commit()
        assert run.id is not None
        return run.id


def lease_of(engine: Engine, run_id: int) -> tuple[str | None, object]:
    with Session(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.lease_owner, run.lease_expires_at


def age_lease(engine: Engine, run_id: int, seconds: float) -> None:
    """As if the holder's last renewal was `seconds` ago."""
    with Session(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.lease_expires_at = utcnow() + timedelta(seconds=LEASE_S - seconds)
        session.add(run)
        session.commit()


def test_one_dashboard_holds_a_run_and_only_it_writes_its_steps(engine: Engine) -> None:
    run_id = add_run(engine)
    there, here = Records(engine, ELSEWHERE), Records(engine, instance_id())
    assert there.claim(run_id) is True
    assert here.claim(run_id) is False  # held, and renewed in time
    assert lease_of(engine, run_id)[0] == ELSEWHERE
    with pytest.raises(LeaseLost):
        here.update(run_id, reason="launching")
    assert there.update(run_id, reason="launching").reason == "launching"
    assert there.renew([run_id]) == {run_id} and here.renew([run_id]) == set()
    age_lease(engine, run_id, LEASE_S - 1)
    assert here.claim(run_id) is False  # one second left
    age_lease(engine, run_id, LEASE_S + 1)
    assert here.claim(run_id) is True  # expired: the holder stopped renewing
    assert lease_of(engine, run_id)[0] == here.owner
    # The old holder, back after a pause longer than the lease, writes nothing more.
    with pytest.raises(LeaseLost):
        there.update(run_id, reason="stale")
    assert there.renew([run_id]) == set()
    finished = here.finish(run_id, state=RunState.done, outcome=RunOutcome.measured)
    assert (finished.lease_owner, finished.lease_expires_at) == (None, None)
    assert here.claim(run_id) is False and there.claim(run_id) is False  # ended: nothing to drive


def test_a_run_s_state_and_outcome_load_as_their_enums_and_are_stored_as_their_values(
    engine: Engine,
) -> None:
    run_id = add_run(engine)
    records = Records(engine, instance_id())
    assert records.claim(run_id)
    records.finish(run_id, state=RunState.failed, outcome=RunOutcome.crashed)
    with Session(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        assert run.state is RunState.failed and run.outcome is RunOutcome.crashed
        stored = session.execute(
            text("SELECT state, outcome FROM run WHERE id = :id"), {"id": run_id}
        )
        assert stored.one() == ("failed", "crashed")
        with pytest.raises(StatementError, match="is not a valid RunOutcome"):
            run.outcome = "finished"  # type: ignore[assignment]
            session.add(run)
            session.flush()
        session.rollback()
        # A value this version does not know (a newer dashboard's): the row still loads.
        session.execute(text("UPDATE run SET outcome = 'evicted' WHERE id = :id"), {"id": run_id})
        session.commit()
        reloaded = session.get(Run, run_id)
        assert reloaded is not None and reloaded.outcome == "evicted"


def test_a_released_lease_is_free_at_once(engine: Engine) -> None:
    first, second = add_run(engine), add_run(engine)
    there, here = Records(engine, ELSEWHERE), Records(engine, instance_id())
    assert there.claim(first) and there.claim(second)
    there.release([first])
    assert lease_of(engine, first) == (None, None)
    assert here.claim(first) is True and here.claim(second) is False
    there.release()  # all it holds, at a clean stop
    assert here.claim(second) is True


def _instance_id_of_a_process(*, alive: bool) -> tuple[str, subprocess.Popen[str]]:
    code = "from app.runner.lease import instance_id; print(instance_id(), flush=True)"
    if alive:
        code += "; import time; time.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process.stdout.readline().strip(), process


def test_a_lease_of_an_ended_process_of_this_machine_is_taken_at_once(engine: Engine) -> None:
    run_id = add_run(engine)
    here = Records(engine, instance_id())
    killed, process = _instance_id_of_a_process(alive=False)
    process.wait()
    assert Records(engine, killed).claim(run_id) is True
    assert here.claim(run_id) is True  # not renewed, not expired: its process has ended
    assert lease_of(engine, run_id)[0] == here.owner

    other_run = add_run(engine)
    living, process = _instance_id_of_a_process(alive=True)
    try:
        assert Records(engine, living).claim(other_run) is True
        assert here.claim(other_run) is False  # its process lives: it may be driving
    finally:
        process.kill()
        process.wait()
    assert here.claim(other_run) is True


def _claim_at_once(claimants: list[Records], run_id: int) -> list[str]:
    """Each claimant claims the run in a thread of its own, all released at one moment;
    the owners whose claim succeeded."""
    start = threading.Barrier(len(claimants))
    won: list[str] = []

    def claim(records: Records) -> None:
        start.wait()
        if records.claim(run_id):
            won.append(records.owner)

    threads = [threading.Thread(target=claim, args=(r,)) for r in claimants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return won


def test_dashboards_claiming_at_once_get_one_lease(engine: Engine) -> None:
    claimants = [Records(engine, f"{ELSEWHERE[:-8]}{n:08x}") for n in range(6)]
    for _ in range(5):
        run_id = add_run(engine)
        won = _claim_at_once(claimants, run_id)
        assert len(won) == 1, won
        assert lease_of(engine, run_id)[0] == won[0]
