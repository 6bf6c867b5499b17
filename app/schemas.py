"""Request and response bodies of the JSON API (the contract of PRODUCT.md)."""

import math
import re
from datetime import datetime
from typing import Annotated, Any, Literal

import httpx
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.credentials import mask_secrets
from app.models import Lane, Status
from app.stats import AUTO_MAX_RUNS, AUTO_MIN_RUNS, Call
from app.tailing.sources import parse_source
from app.tailing.status import TailStatus


def _a_figure(value: Any) -> Any:
    # JSON's true is no figure, though pydantic would read it as 1.0.
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    # NaN and -inf fail a figure's bound too: said as what they are, not as "greater than or
    # equal to 0".
    try:
        number = float(value) if isinstance(value, (str, int)) else value
    except ValueError:
        return value  # (pydantic says it is no number)
    except OverflowError:  # an integer of 400 digits
        number = math.inf
    if isinstance(number, float) and not math.isfinite(number):
        raise PydanticCustomError("finite_number", "Input should be a finite number")
    return value


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL, and no name or note needs one.
    if "\x00" in value:
        raise ValueError("may not contain NUL bytes")
    return value


Finite = Annotated[float, BeforeValidator(_a_figure), Field(allow_inf_nan=False)]
# A metric's figure: throughput, latency, memory... none of them is ever negative.
Figure = Annotated[float, BeforeValidator(_a_figure), Field(ge=0, allow_inf_nan=False)]
Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_no_nul),
]
Text = Annotated[str, StringConstraints(max_length=20_000), AfterValidator(_no_nul)]


def check_source(value: str | None) -> str | None:
    if value is None or value.strip() == "":
        return None
    value = value.strip()
    if "\x00" in value or "\n" in value or len(value) > 2000:
        raise ValueError(
            "a log source may not hold NUL bytes or newlines, nor exceed 2000 characters"
        )
    parse_source(value)  # raises BadSource (a ValueError) with the reason
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_ready_pattern(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    from app.diagnosis import Diagnoser

    Diagnoser(value)  # raises ValueError when the engine cannot use it
    return value


def check_bench_pattern(value: str | None) -> str | None:
    """A regex with a group around the figure (`value` by name, else the first group)."""
    if value is None or not value.strip():
        return None
    if "\x00" in value:
        raise ValueError("a benchmark pattern may not contain NUL bytes")
    try:
        compiled = re.compile(value)
    except re.error as error:
        raise ValueError(f"benchmark pattern {value!r} is not a regex: {error}") from None
    if not compiled.groups:
        raise ValueError(
            f"benchmark pattern {value!r} has no group: put ( ) around the figure, "
            r"as in 'Output token throughput \(tok/s\):\s+([\d.]+)'"
        )
    return value


MetricLabel = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
ReadyPattern = Annotated[str, StringConstraints(max_length=500)]
BenchPattern = Annotated[str, StringConstraints(max_length=500)]


class CampaignCreate(Strict):
    name: Name
    metric: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)
    ] = "tok/s"
    higher_is_better: bool = True
    baseline: Figure | None = None
    target: Figure | None = None
    description: Text = ""
    noise_pct: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = 1.0
    # The throughput figure (by label) that counts as a measurement when found in a log.
    metric_label: MetricLabel = "Output token throughput"
    # A regex for the readiness line of a server the engine does not know.
    ready_pattern: ReadyPattern | None = None
    # A regex for a launched benchmark's figure, one group around it.
    bench_pattern: BenchPattern | None = None

    _ready = field_validator("ready_pattern")(check_ready_pattern)
    _bench = field_validator("bench_pattern")(check_bench_pattern)

    @field_validator("target")
    @classmethod
    def _target_beyond_baseline(cls, target: float | None, info: ValidationInfo) -> float | None:
        check_target(target, info.data.get("baseline"), info.data.get("higher_is_better", True))
        return target


def check_target(target: float | None, baseline: float | None, higher_is_better: bool) -> None:
    """A target is a goal: past the baseline in the better direction."""
    if target is None or baseline is None:
        return
    if higher_is_better and target <= baseline:
        raise ValueError(f"the target must be above the baseline ({baseline:g}): higher is better")
    if not higher_is_better and target >= baseline:
        raise ValueError(f"the target must be below the baseline ({baseline:g}): lower is better")


AlertEvent = Literal["ready", "crashed", "measured", "better", "run_failed", "stalled"]
MAX_WEBHOOKS = 10


def check_webhook(value: str) -> str:
    value = value.strip()
    if len(value) > 2000 or any(c in value for c in "\x00\r\n "):
        raise ValueError("a webhook URL is one line of at most 2000 characters, no spaces")
    if not value.lower().startswith(("http://", "https://")):
        raise ValueError("a webhook URL starts with http:// or https://")
    try:
        host = httpx.URL(value).host
    except httpx.InvalidURL as error:
        raise ValueError(f"not a URL: {error}") from None
    if not host:
        raise ValueError("a webhook URL names a host")
    return value


class NotifyIn(Strict):
    """Where a campaign's alerts go, and which moments of its attempts they tell."""

    urls: Annotated[list[Annotated[str, AfterValidator(check_webhook)]],
                    Field(max_length=MAX_WEBHOOKS)] = []  # fmt: skip
    events: list[AlertEvent] = []

    @field_validator("urls", "events")
    @classmethod
    def _once_each(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(values))


class WatchIn(Strict):
    source: str  # ssh://host/abs/dir/*.log or file:///abs/dir/*.log


class WatchImportIn(Strict):
    name: str  # a file the watch offers


class WatchOut(BaseModel):
    id: int
    campaign_id: int
    source: str
    created_at: datetime
    listed_at: datetime | None  # its first listing: what it found is offered, not imported
    last_error: str | None
    offered: list[str]  # files there before the watch started, not imported


class CampaignUpdate(Strict):
    name: Name | None = None
    baseline: Figure | None = None
    target: Figure | None = None
    description: Text | None = None
    noise_pct: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None
    metric_label: MetricLabel | None = None
    ready_pattern: ReadyPattern | None = None
    bench_pattern: BenchPattern | None = None  # "" or null: none (the known result blocks)
    notify: NotifyIn | None = None  # replaces the campaign's alerts

    _ready = field_validator("ready_pattern")(check_ready_pattern)
    _bench = field_validator("bench_pattern")(check_bench_pattern)


def _host(value: str) -> str:
    from app.runner.hosts import check_host

    return check_host(value)


Command = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000),
    AfterValidator(_no_nul),
]  # fmt: skip


class LaunchIn(Strict):
    """What the runner launches: COMMAND on HOST, then the benchmark N times."""

    host: Annotated[str, StringConstraints(min_length=1, max_length=300), AfterValidator(_host)]
    command: Command
    bench: Command | None = None
    # "auto": at least 3 runs, then one more until the call is clear or max_runs are done.
    repeat: Annotated[int, Field(ge=1, le=100)] | Literal["auto"] = 3
    max_runs: Annotated[int, Field(ge=AUTO_MIN_RUNS, le=100)] = AUTO_MAX_RUNS
    warmup: Annotated[int, Field(ge=0, le=20)] = 1
    ready_timeout_s: Annotated[float, Field(gt=0, le=7 * 86400, allow_inf_nan=False)] = 1200.0
    keep: bool = False
    # Derived from --port when not given; "" turns the health check off.
    health_url: Annotated[str, StringConstraints(max_length=500)] | None = None
    grace_s: Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)] = 30.0

    @field_validator("health_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("a health URL starts with http:// or https://")
        return value


class AttemptCreate(Strict):
    title: Name
    hypothesis: Text = ""
    command: Text = ""
    flags: Text = ""
    source: str | None = None
    retest_of: int | None = None
    blocked_by: int | None = None
    # The dashboard launches it on the host and follows it to its end (the runner).
    launch: LaunchIn | None = None

    _source = field_validator("source")(check_source)


class RetestUnblockedIn(Strict):
    ids: list[int] | None = None  # none: every attempt it may unblock


class RetestIn(Strict):
    title: Name | None = None
    hypothesis: Text | None = None


class AttemptUpdate(Strict):
    title: Name | None = None
    hypothesis: Text | None = None
    command: Text | None = None
    flags: Text | None = None
    status: Status | None = None
    verdict: Text | None = None
    metric_value: Figure | None = None
    source: str | None = None
    # Given as null, a link is cleared (`model_fields_set` tells null from absent).
    blocked_by: int | None = None
    retest_of: int | None = None
    stack_blocked: bool | None = None  # the owner's "blocked by the stack"
    # Adopting a pivot (a CUDA upgrade, say) makes its metric the campaign's baseline.
    set_baseline: bool = False
    # "This attempt is the baseline configuration": the baseline in force at its start
    # was measured with its flags (a typed baseline has no configuration of its own).
    baseline_configuration: bool = False

    _source = field_validator("source")(check_source)


class MeasurementCreate(Strict):
    value: Figure


class NoteCreate(Strict):
    body: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000),
        AfterValidator(_no_nul),
    ]


class MetricOut(BaseModel):
    mean: float
    spread: float
    n: int
    samples: list[float]


class BaselineRefOut(BaseModel):
    """What an attempt is judged against: the baseline attempt's runs (`n` of them), or a
    typed value (`n` null)."""

    value: float
    n: int | None
    attempt_id: int | None


class StatsOut(BaseModel):
    """The primary metric's judgement (app/stats.py): null where undefined (one run has no
    interval; no baseline, no difference). The call informs the verdict, never sets it."""

    n: int
    mean: float | None
    stdev: float | None
    cv_pct: float | None
    ci95: tuple[float, float] | None
    baseline: BaselineRefOut | None
    delta_pct: float | None
    delta_ci95_pct: tuple[float, float] | None
    call: Call
    noise_pct: float  # the band `same` means: typed, or learned from the baseline's runs
    noise_from: Literal["baseline runs", "typed"]
    # Why the comparison may mislead: the baseline's runs from another day, host or stack.
    warnings: list[str] = Field(default_factory=list)


class FigureOut(BaseModel):
    """One figure over an attempt's counted benchmark runs: its mean and t interval."""

    unit: str
    n: int
    mean: float
    ci95: tuple[float, float] | None


class EnvironmentOut(BaseModel):
    """What ran underneath (app/environment.py): from the log's start-up lines, and for a
    launched attempt the host's answers before the launch; null where unknown."""

    gpu: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    python: str | None = None
    libs: dict[str, str] = Field(default_factory=dict)

    def facts(self) -> list[str]:
        """Each thing known, as a page lists them: "8 \u00d7 NVIDIA H200", "CUDA 12.8"..."""
        times = "\u00d7"
        gpu = f"{self.gpu_count} {times} {self.gpu}" if self.gpu and self.gpu_count else self.gpu
        engine = " ".join(filter(None, (self.engine, self.engine and self.engine_version)))
        said = [
            gpu,
            self.driver and f"driver {self.driver}",
            self.cuda and f"CUDA {self.cuda}",
            self.torch and f"torch {self.torch}",
            engine,
            self.python and f"Python {self.python}",
        ]
        return [fact for fact in said if fact] + [f"{n} {v}" for n, v in self.libs.items()]


class EnvChangeOut(BaseModel):
    baseline: str
    attempt: str


class EnvDiffOut(BaseModel):
    """What differs from the baseline configuration's environment, by what both say."""

    baseline_attempt_id: int
    added: dict[str, str]
    removed: dict[str, str]
    changed: dict[str, EnvChangeOut]
    summary: str  # "CUDA 12.8 → 13.0, torch 2.10.0 → 2.9.1"


class TailOut(BaseModel):
    state: TailStatus
    bytes_read: int  # of the file being read now (the source's offset)
    size: int | None  # of that file: bytes_read / size is the catch-up progress
    stored_bytes: int  # of the whole log kept for the attempt, across rotations
    last_error: str | None
    host_key_offered: bool  # an SSH host key waits for the owner to trust it
    offered_host_key: str | None = None  # its "type SHA256:..." fingerprint
    known_host_key: str | None = None  # the different key on record: the key changed
    infrastructure: bool  # the host or network failed, not the server under test


# A launch command as JSON gives it (the API, exports, the CLI's --json, MCP): its secrets
# masked, whoever reads it; the model itself holds it as typed.
MaskedCommand = Annotated[str, PlainSerializer(mask_secrets, when_used="json")]


class RunOut(BaseModel):
    """A launched attempt's run, as the runner drives it."""

    id: int
    state: str  # launching, starting, ready, benchmarking, stopping, done, failed
    outcome: str | None  # a RunOutcome value: measured, ready, crashed, ready_timeout, ...
    reason: str | None
    host: str
    command: MaskedCommand
    bench: str | None
    repeat: int
    warmup: int
    keep: bool
    ready_timeout_s: float
    health_url: str | None
    port: int | None
    pid: int | None
    pgid: int | None
    exit_code: int | None
    boot_id: str | None
    run_dir: str | None
    log_path: str | None
    bench_done: int
    bench_total: int
    bench_runs: list[dict[str, Any]]  # each with its `label`: "warm-up 1", "run 1"...
    # `--repeat auto`: {max_runs, confidence, ended_by, call, n}, and what ended it, said.
    auto_repeat: dict[str, Any] | None = None
    auto_said: str | None = None
    # While benchmarking, the run under way: "warm-up 1 of 1, not recorded", "run 2 of 3".
    bench_progress: str | None = None
    kept_running: bool = False  # done with `keep`, not stopped since: its server is up
    # "GPUs not checked: no nvidia-smi on gpu-box" (no busy-GPU refusal, no GPU memory proof)
    gpu_note: str | None
    stop_report: dict[str, Any] | None
    stop_requested: bool
    stoppable: bool  # a Stop button makes sense: its server may still run
    driven_by: str | None  # `host:pid` of the dashboard driving it, of those on its database
    elapsed_s: float | None  # since the launch, up to its end
    last_line: str | None  # of the log, while it starts
    created_at: datetime
    launched_at: datetime | None
    ready_at: datetime | None
    ended_at: datetime | None


FlagValue = bool | str  # True: a switch given bare; otherwise the value's text


class FlagsOut(BaseModel):
    """An attempt's flags, secrets masked: `command` from its launch command (with the typed
    flags laid over), `logged` as the engine echoed them in the log, when it has."""

    command: dict[str, FlagValue] = Field(default_factory=dict)
    logged: dict[str, FlagValue] | None = None
    engine: str | None = None  # "sglang", "vllm", or None when neither says
    typed: str = ""  # the `flags` typed beside the command (older attempts, the API)
    # A baseline was set from this attempt, or the owner named it the configuration a typed
    # baseline was measured with: later attempts' flags are compared against it.
    baseline_configuration: bool = False


class FlagChangeOut(BaseModel):
    baseline: FlagValue
    attempt: FlagValue


class FlagDiffOut(BaseModel):
    """What differs from the campaign's baseline attempt; `basis` "log" when both engines'
    echoes were compared (what ran, defaults resolved), "command" when the commands were."""

    baseline_attempt_id: int
    basis: str
    added: dict[str, FlagValue]
    removed: dict[str, FlagValue]
    changed: dict[str, FlagChangeOut]
    summary: str  # "only change: +enable_torch_symm_mem"


class SeenBeforeOut(BaseModel):
    campaign_id: int
    attempt_id: int
    title: str
    status: Status
    verdict: str | None


class HintOut(BaseModel):
    """What to try next under a root cause: what an attempt of any campaign learned from the
    same failure (`history`, about `attempt_id`), or the knowledge base's advice."""

    text: str
    source: Literal["history", "knowledge"]
    attempt_id: int | None = None


class AttemptOut(BaseModel):
    id: int
    campaign_id: int
    title: str
    hypothesis: str
    command: MaskedCommand  # (its page's edit box shows it as typed, to the owner alone)
    flags: FlagsOut = Field(default_factory=FlagsOut)
    flag_diff: FlagDiffOut | None = None
    source: str | None
    status: Status
    lane: Lane
    verdict: str | None
    retest_of: int | None
    blocked_by: int | None
    stack_blocked: bool = False  # the owner's mark: the stack stood in the way
    joins: int | None = None  # a re-measurement of that attempt: its runs join its sample
    metric_value: float | None
    metric: MetricOut | None
    baseline: float | None
    delta_pct: float | None
    delta_within_noise: bool | None  # the call is `same`
    improved: bool | None  # the call is `better`
    stats: StatsOut
    # Every figure its benchmark runs gave (the runner's), by name: output_tok_s, ttft_ms...
    figures: dict[str, FigureOut] = Field(default_factory=dict)
    environment: EnvironmentOut | None = None
    env_diff: EnvDiffOut | None = None
    diagnosis: dict[str, Any] | None
    same_root_cause_as: list[int]
    # Earlier attempts of any campaign that failed the same way, newest first: an
    # attempt's own answer has them, a list of attempts (a campaign's) has null.
    seen_before: list[SeenBeforeOut] | None = None
    # What to try next under its root cause, history first: like seen_before, an attempt's
    # own answer has them (knowledge only on a share page), a list has null.
    hints: list[HintOut] | None = None
    tail: TailOut | None
    run: RunOut | None = None
    created_at: datetime
    started_at: datetime | None
    closed_at: datetime | None
    updated_at: datetime


class CompareOut(BaseModel):
    attempts: list[AttemptOut]


class BaselineOut(BaseModel):
    value: float
    attempt_id: int | None
    set_at: datetime


class CampaignOut(BaseModel):
    id: int
    name: str
    metric: str
    higher_is_better: bool
    baseline: float | None
    target: float | None
    description: str
    noise_pct: float
    metric_label: str
    ready_pattern: str | None
    bench_pattern: str | None
    created_at: datetime
    attempt_count: int
    baseline_history: list[BaselineOut]


class WebhookOut(BaseModel):
    id: int
    url: str  # masked: scheme, host and the last four characters
    state: Literal["unused", "ok", "failing"]
    last_ok_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    failures: int  # in a row
    dead: int  # alerts given up after every retry


class NotifyOut(BaseModel):
    events: list[str]
    webhooks: list[WebhookOut]


class CampaignDetailOut(CampaignOut):
    attempts: list[AttemptOut]
    notify: NotifyOut | None = None  # the owner's API only


# A log excerpt sent to be read: what a 1 MiB body holds, JSON-escaped, with room to spare.
LogText = Annotated[str, StringConstraints(max_length=500_000)]


class DiagnoseIn(Strict):
    text: LogText


class SeenIn(Strict):
    text: LogText = ""
    # From a diagnosis made elsewhere (`seen --log FILE` reads the whole file on its side).
    fingerprint: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")] | None = None
    # ...and the file of its failing frame: the same words raised elsewhere are another failure
    frame_file: Annotated[str, StringConstraints(max_length=4096)] | None = None

    @model_validator(mode="after")
    def _asks_something(self) -> "SeenIn":
        if not self.text.strip() and self.fingerprint is None:
            # (nothing asked is no "never seen before")
            raise PydanticCustomError("blank", "give an error line or a log excerpt")
        return self


class DiagnosedOut(BaseModel):
    """`campaign-dash diagnose --json`'s object, with the hints an attempt with it gets."""

    model_config = ConfigDict(extra="allow")
    hints: list[HintOut]


class FixOut(BaseModel):
    attempt_id: int
    title: str
    status: Status


class SeenMatchOut(BaseModel):
    campaign_id: int
    campaign: str
    attempt_id: int
    title: str
    status: Status
    verdict: str | None
    root_cause: str | None
    error_class: str | None
    fixed_by: list[FixOut]  # its retests that got past the failure


class SeenOut(BaseModel):
    root_cause: str | None  # of the text sent, as the diagnosis reads it
    error_class: str | None
    fingerprint: str | None
    matches: list[SeenMatchOut]


class SearchHitOut(BaseModel):
    kind: Literal["campaign", "attempt", "note"]
    campaign_id: int
    attempt_id: int | None
    title: str
    snippet: str  # plain text around the match


class NoteOut(BaseModel):
    id: int
    campaign_id: int
    attempt_id: int | None
    body: str
    html: str
    created_at: datetime
    updated_at: datetime


class MeasurementOut(BaseModel):
    attempt: AttemptOut
    value: float


class FrameSourceOut(BaseModel):
    """The code around the diagnosis's frame, read from the log's host: `lines` start at
    `first_line`; `line` is the failing one; `truncated` when a line or the answer was cut."""

    file: str
    line: int
    function: str | None
    host: str
    first_line: int
    lines: list[str]
    truncated: bool
