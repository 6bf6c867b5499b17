"""Database tables: campaigns, attempts and what hangs off them."""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Dialect,
    Index,
    LargeBinary,
    String,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlmodel import Field, SQLModel

from app.runner.outcomes import RunOutcome
from app.tailing.status import TailStatus

# Named constraints: batch migrations on SQLite can only alter what has a name.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# Ids are never reused (PRODUCT.md): "see #7" in a note, a pasted link, a stale page's form
# and a stream's Last-Event-ID keep naming what they named. SQLite hands the highest rowid
# out again after it is deleted, unless the table is AUTOINCREMENT (PostgreSQL's sequences
# never do). For every table whose ids people see or that a client keeps.
NEVER_REUSED: dict[str, Any] = {"sqlite_autoincrement": True}


def utcnow() -> datetime:
    return datetime.now(UTC)


class EnumText(TypeDecorator[str]):
    """A plain string column (no database enum type to migrate when a member is added) that
    gives back its enum's members; only members are written. A value this version does not
    know (a newer dashboard's, on the same database) is given back as stored: the row loads."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[StrEnum], length: int) -> None:
        super().__init__(length)
        self.enum = enum
        self.length = length

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        try:
            return self.enum(value)
        except ValueError:
            return value


class Status(StrEnum):
    proposed = "proposed"
    running = "running"
    ready = "ready"
    measured = "measured"
    crashed = "crashed"
    blocked = "blocked"
    adopted = "adopted"
    eliminated = "eliminated"


class Lane(StrEnum):
    tested = "tested"
    eliminated = "eliminated"
    adopted = "adopted"
    # A launch the host refused (a busy GPU or port): no hypothesis was tested. Out of the
    # story until the owner keeps it by giving it a status.
    refused = "refused"


class Campaign(SQLModel, table=True):
    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200)
    metric: str = Field(default="tok/s", max_length=40)
    higher_is_better: bool = True
    baseline: float | None = None
    target: float | None = None
    description: str = ""
    # A delta smaller than this share of the baseline is noise, not a result.
    noise_pct: float = 1.0
    # A throughput figure with this label, found in an attempt's log, is a measurement.
    metric_label: str = Field(default="Output token throughput", max_length=100)
    # Readiness line of a server the engine does not know (a regex).
    ready_pattern: str | None = Field(default=None, max_length=500)
    # A launched attempt's benchmark figure, when the benchmark is one the parser does not
    # know (a regex over its printed output, one group around the figure).
    bench_pattern: str | None = Field(default=None, max_length=500)
    # Which of an attempt's moments are told to the campaign's webhooks (app/alerts.py).
    notify_events: list[str] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)


class Webhook(SQLModel, table=True):
    """A URL the campaign's alerts are POSTed to, and how its last deliveries went (shown on
    the campaign page: a dead webhook is no silent one)."""

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    url: str = Field(max_length=2000)
    created_at: datetime = Field(default_factory=utcnow)
    last_ok_at: datetime | None = None
    last_error: str | None = Field(default=None, max_length=500)
    last_error_at: datetime | None = None
    failures: int = 0  # in a row, since the last delivery that went through
    dead: int = 0  # deliveries given up after every retry


class Delivery(SQLModel, table=True):
    """One alert to one webhook: written in the transaction of the change it tells (an
    outbox), sent by whichever dashboard claims it, retried with backoff."""

    __table_args__ = (UniqueConstraint("webhook_id", "attempt_id", "event"),)

    id: int | None = Field(default=None, primary_key=True)
    webhook_id: int = Field(foreign_key="webhook.id", ondelete="CASCADE")
    attempt_id: int = Field(foreign_key="attempt.id", ondelete="CASCADE")
    event: str = Field(max_length=20)
    created_at: datetime = Field(default_factory=utcnow)
    due_at: datetime = Field(default_factory=utcnow, index=True)
    tries: int = 0
    claimed_until: datetime | None = None
    sent_at: datetime | None = None  # or given up, or dropped (`outcome`)
    outcome: str | None = Field(default=None, max_length=20)  # sent, dead, dropped


class Watch(SQLModel, table=True):
    """A folder on a host whose new log files become the campaign's attempts (app/watching.py):
    `ssh://gpubox/data/logs/*.log` or `file:///...`."""

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    source: str = Field(max_length=2000)
    created_at: datetime = Field(default_factory=utcnow)
    # The first listing: what it finds is offered, not imported.
    listed_at: datetime | None = None
    last_error: str | None = Field(default=None, max_length=500)


class WatchedFile(SQLModel, table=True):
    """A file a watch has seen, once: its attempt, or (there before the watch) an offer. The
    unique pair is what makes two dashboards on one database import a file once."""

    __table_args__ = (UniqueConstraint("watch_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    watch_id: int = Field(foreign_key="watch.id", ondelete="CASCADE")
    name: str = Field(max_length=255)
    seen_at: datetime = Field(default_factory=utcnow)
    attempt_id: int | None = Field(default=None, foreign_key="attempt.id", ondelete="SET NULL")
    offered: bool = False


class BaselineChange(SQLModel, table=True):
    """The campaign's baseline history: each attempt is judged against the one in force."""

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    value: float
    attempt_id: int | None = Field(default=None, foreign_key="attempt.id", ondelete="SET NULL")
    set_at: datetime = Field(default_factory=utcnow)


class Attempt(SQLModel, table=True):
    # What the campaign page's card stamps read of each attempt (app/repo/cards.py), in
    # the index: the row itself holds the diagnosis before them, on overflow pages (SQLite).
    __table_args__ = (
        Index("ix_attempt_campaign_card", "campaign_id", "id", "status", "title",
              "fingerprint", "retest_of", "blocked_by", "updated_at"),
        NEVER_REUSED,
    )  # fmt: skip

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", ondelete="CASCADE")
    title: str = Field(max_length=200)
    hypothesis: str = ""
    command: str = ""
    flags: str = ""
    source: str | None = Field(default=None, max_length=2000)
    # A plain string column: no database enum type to migrate when a status is added.
    status: Status = Field(default=Status.proposed, sa_type=String(20))
    verdict: str | None = None
    retest_of: int | None = Field(default=None, foreign_key="attempt.id", ondelete="SET NULL")
    blocked_by: int | None = Field(default=None, foreign_key="attempt.id", ondelete="SET NULL")
    # A re-measurement of that attempt (a baseline, say): its runs join that one's sample
    # when others are judged against it. Ids are never reused: one deleted is no one's.
    joins: int | None = None
    # The owner's mark: the stack (CUDA, a library, the engine), not the idea, stood in the
    # way. Adopting a pivot offers to retest it, as for an unsupported_arch crash.
    stack_blocked: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    diagnosis: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    fingerprint: str | None = Field(default=None, index=True, max_length=64)
    # The arguments the engine echoed in the log (sglang's server_args=, vLLM's non-default
    # args:), parsed once by the ingest as the line arrives: pages never read the log for them.
    logged_args: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # What ran underneath, as the log says (app/environment.py).
    environment: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    closed_at: datetime | None = None
    # Moves with every update of the row, whoever writes it: the campaign page's cache of
    # each card is keyed by it (app/pages/campaign_renders.py), across dashboards.
    updated_at: datetime = Field(default_factory=utcnow, sa_column_kwargs={"onupdate": utcnow})


class Measurement(SQLModel, table=True):
    # An attempt's figures' count, newest id and highest value (its card's stamp) from the
    # index alone; by `id` second, as PostgreSQL otherwise found the newest id by walking
    # the primary key backwards past every later attempt's figures (77 ms for 1,000 cards).
    __table_args__ = (Index("ix_measurement_attempt_stamp", "attempt_id", "id", "value"),)

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="attempt.id", ondelete="CASCADE")
    value: float
    # Where in the stored log the figure was read; None when entered by hand.
    log_offset: int | None = Field(default=None, sa_type=BigInteger)
    created_at: datetime = Field(default_factory=utcnow)


class Note(SQLModel, table=True):
    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    # Null for a note on the campaign as a whole.
    attempt_id: int | None = Field(
        default=None, foreign_key="attempt.id", index=True, ondelete="CASCADE"
    )
    body: str
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class ShareLink(SQLModel, table=True):
    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    # sha256 of the token: a leaked database does not leak working links.
    token_hash: str = Field(max_length=64, unique=True)
    redact: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_opened_at: datetime | None = None


class TailState(SQLModel, table=True):
    """Where the tail of an attempt's log source stands; committed with the bytes it covers."""

    __table_args__ = (UniqueConstraint("attempt_id"),)

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="attempt.id", ondelete="CASCADE")
    source: str = Field(max_length=2000)
    # 64-bit: logs grow past the 2 GiB that a PostgreSQL integer holds.
    offset: int = Field(default=0, sa_type=BigInteger)
    # "dev:ino:length:crc32" of the file being read: another inode means rotation, another
    # checksum of its first bytes means copytruncate (regrown before anyone looked).
    file_identity: str | None = Field(default=None, max_length=100)
    size: int | None = Field(default=None, sa_type=BigInteger)
    # Bytes stored for the attempt: the log as one stream across rotations.
    stored_bytes: int = Field(default=0, sa_type=BigInteger)
    state: str = Field(default=TailStatus.connecting, max_length=40)  # a TailStatus
    last_error: str | None = None
    # An SSH host key offered but not trusted yet ("type base64"), for the owner to trust.
    host_key: str | None = Field(default=None, max_length=4000)
    # When the offered key differs from one on record: that one ("type SHA256:...").
    known_host_key: str | None = Field(default=None, max_length=200)
    updated_at: datetime = Field(default_factory=utcnow, sa_column_kwargs={"onupdate": utcnow})


class LogChunk(SQLModel, table=True):
    """A compressed stretch of an attempt's log, readable after the GPU machine is gone."""

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="attempt.id", index=True, ondelete="CASCADE")
    stream_offset: int = Field(sa_type=BigInteger)
    length: int
    data: bytes = Field(sa_type=LargeBinary)


class TailEvent(SQLModel, table=True):
    """Things that happened to a log: rotated, truncated, middle dropped past the cap."""

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="attempt.id", index=True, ondelete="CASCADE")
    kind: str = Field(max_length=20)
    detail: str = ""
    stream_offset: int = Field(default=0, sa_type=BigInteger)
    created_at: datetime = Field(default_factory=utcnow)


class LiveEvent(SQLModel, table=True):
    """Something a live page should hear about; its id is the SSE event id (Last-Event-ID)."""

    __tablename__ = "event"
    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True, ondelete="CASCADE")
    kind: str = Field(max_length=20)  # attempt, log, note, campaign
    attempt_id: int | None = None
    note_id: int | None = None
    # For log events: the stored-log bytes [start, end) that arrived.
    start_offset: int | None = Field(default=None, sa_type=BigInteger)
    end_offset: int | None = Field(default=None, sa_type=BigInteger)
    created_at: datetime = Field(default_factory=utcnow)


class SiteSecret(SQLModel, table=True):
    """Per-installation secrets: the owner token's hash and the CSRF signing key."""

    name: str = Field(primary_key=True, max_length=40)
    value: str = Field(max_length=200)


class OwnerSession(SQLModel, table=True):
    """A browser session the owner opened by logging in; only the cookie's hash is kept."""

    __tablename__ = "owner_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow)


class RunState(StrEnum):
    launching = "launching"  # queued behind another run of the host, or being launched
    starting = "starting"  # the process runs; waiting for ready or crash
    ready = "ready"
    benchmarking = "benchmarking"
    stopping = "stopping"
    done = "done"
    failed = "failed"


class Run(SQLModel, table=True):
    """One launch of an attempt's command on a host, driven by the runner to its end."""

    __table_args__ = NEVER_REUSED

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(foreign_key="attempt.id", index=True, ondelete="CASCADE")
    host: str = Field(max_length=300)
    command: str
    bench: str | None = None
    repeat: int = 3
    warmup: int = 1
    ready_timeout_s: float = 1200.0
    grace_s: float = 30.0
    keep: bool = False
    health_url: str | None = Field(default=None, max_length=500)
    port: int | None = None
    state: RunState = Field(default=RunState.launching, sa_type=EnumText(RunState, 20))
    # How it ended (app/runner/outcomes.py).
    outcome: RunOutcome | None = Field(default=None, sa_type=EnumText(RunOutcome, 40))
    reason: str | None = None  # the sentence a person reads: why it waits, failed, ended
    # The run's directory on the host, and the key its files carry there.
    run_key: str = Field(max_length=64)
    run_dir: str | None = Field(default=None, max_length=1000)
    log_path: str | None = Field(default=None, max_length=1000)
    pid: int | None = None
    pgid: int | None = None
    boot_id: str | None = Field(default=None, max_length=64)
    exit_code: int | None = None
    # Benchmark runs finished (warm-up ones included) and what each of them gave.
    bench_done: int = 0
    bench_runs: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON))
    # `--repeat auto` (`repeat` is then the budget): {"max_runs", "confidence"}, and once it
    # ended, "ended_by" ("clear" or "budget"), the "call" at that level and its "n".
    auto_repeat: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    preflight: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    stop_report: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    stop_requested: bool = False
    # The dashboard driving it (app/runner/lease.py): its instance id, and until when.
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    launched_at: datetime | None = None
    ready_at: datetime | None = None
    ended_at: datetime | None = None
    updated_at: datetime = Field(default_factory=utcnow, sa_column_kwargs={"onupdate": utcnow})
