"""Request and response bodies of the JSON API (the contract of PRODUCT.md)."""

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from app.models import Lane, Status
from app.tailing.sources import parse_source
from app.tailing.status import TailStatus


def _not_a_bool(value: Any) -> Any:
    # JSON's true is no figure, though pydantic would read it as 1.0.
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    return value


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL, and no name or note needs one.
    if "\x00" in value:
        raise ValueError("may not contain NUL bytes")
    return value


Finite = Annotated[float, BeforeValidator(_not_a_bool), Field(allow_inf_nan=False)]
# A metric's figure: throughput, latency, memory... none of them is ever negative.
Figure = Annotated[float, BeforeValidator(_not_a_bool), Field(ge=0, allow_inf_nan=False)]
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


MetricLabel = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
ReadyPattern = Annotated[str, StringConstraints(max_length=500)]


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

    _ready = field_validator("ready_pattern")(check_ready_pattern)

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


class CampaignUpdate(Strict):
    name: Name | None = None
    baseline: Figure | None = None
    target: Figure | None = None
    description: Text | None = None
    noise_pct: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None
    metric_label: MetricLabel | None = None
    ready_pattern: ReadyPattern | None = None

    _ready = field_validator("ready_pattern")(check_ready_pattern)


class AttemptCreate(Strict):
    title: Name
    hypothesis: Text = ""
    command: Text = ""
    flags: Text = ""
    source: str | None = None
    retest_of: int | None = None
    blocked_by: int | None = None

    _source = field_validator("source")(check_source)


class AttemptUpdate(Strict):
    title: Name | None = None
    hypothesis: Text | None = None
    command: Text | None = None
    flags: Text | None = None
    status: Status | None = None
    verdict: Text | None = None
    metric_value: Figure | None = None
    source: str | None = None
    blocked_by: int | None = None
    # Adopting a pivot (a CUDA upgrade, say) makes its metric the campaign's baseline.
    set_baseline: bool = False

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


class AttemptOut(BaseModel):
    id: int
    campaign_id: int
    title: str
    hypothesis: str
    command: str
    flags: str
    source: str | None
    status: Status
    lane: Lane
    verdict: str | None
    retest_of: int | None
    blocked_by: int | None
    metric_value: float | None
    metric: MetricOut | None
    baseline: float | None
    delta_pct: float | None
    delta_within_noise: bool | None
    improved: bool | None
    diagnosis: dict[str, Any] | None
    same_root_cause_as: list[int]
    tail: TailOut | None
    created_at: datetime
    started_at: datetime | None
    closed_at: datetime | None
    updated_at: datetime


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
    created_at: datetime
    attempt_count: int
    baseline_history: list[BaselineOut]


class CampaignDetailOut(CampaignOut):
    attempts: list[AttemptOut]


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
