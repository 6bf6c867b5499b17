"""`campaign-dash demo`: the campaign of the seed write-ups, replayed step by step.

The story is data (one `Step` per hypothesis); the runner plays it through the same
actions the API and forms use, on a database of its own.
"""

import threading
from dataclasses import dataclass, field

from sqlalchemy import Engine

from app import actions
from app.db import session_scope
from app.models import Status
from app.schemas import AttemptCreate, AttemptUpdate, CampaignCreate, NoteCreate

LAUNCH = (
    "python3 -m sglang.launch_server --model /shared/kimi-k2.5-int4 --port 30000 --tp 8 "
    "--trust-remote-code --host 0.0.0.0 --cuda-graph-max-bs 128"
)


@dataclass(frozen=True)
class Step:
    title: str
    hypothesis: str
    flags: str
    runs: tuple[float, ...] = ()
    status: Status = Status.measured
    verdict: str = ""
    note: str = ""
    retest_of: str | None = None
    set_baseline: bool = False
    extra: dict[str, str] = field(default_factory=dict)


CAMPAIGN = CampaignCreate(
    name="EAGLE-3 speculative decoding on 8x RTX PRO 6000 (PCIe)",
    metric="tok/s",
    baseline=82.0,
    target=120.0,
    description=(
        "Kimi K2.5 int4, TP8 over PCIe Gen5, no NVLink. EAGLE-3's verify pass does 122 "
        "allreduces of ~200 µs each: make communication cheap enough for speculation to pay."
    ),
)

STORY: tuple[Step, ...] = (
    Step(
        "Baseline: sglang TP8, NCCL Ring",
        "Reference run without speculation",
        "",
        runs=(81.7, 82.3, 82.0),
        status=Status.adopted,
        verdict="Reference.",
    ),
    Step(
        "EAGLE-3 speculative decoding",
        "Draft model lifts decode throughput",
        "--speculative-algorithm EAGLE3",
        runs=(54.2, 53.8),
        status=Status.eliminated,
        verdict="Regression: 122 allreduces per verify pass, ~200 µs each, ~24 ms per pass.",
        note="Speculation only pays once the verify pass's allreduces get cheap.",
    ),
    Step(
        "FlashInfer allreduce fusion",
        "Fuse allreduce with RMSNorm to cut launches",
        "--enable-flashinfer-allreduce-fusion",
        status=Status.eliminated,
        verdict="FlashInfer's JIT does not support SM120.",
        note="Blocked by the CUDA 12.8 stack: retest after a CUDA upgrade.",
    ),
    Step(
        "Custom allreduce on PCIe",
        "sglang's custom allreduce beats NCCL for small tensors",
        "(custom all-reduce enabled)",
        runs=(38.1, 37.9),
        status=Status.eliminated,
        verdict="2x slower than NCCL: all-to-all saturates the PCIe switch.",
    ),
    Step(
        "NCCL Tree algorithm",
        "Tree has lower latency than Ring for small messages",
        "NCCL_ALGO=Tree",
        status=Status.eliminated,
        verdict="Incompatible with CUDA graph capture.",
    ),
    Step(
        "NCCL reduced channels",
        "Fewer channels, less overhead per small allreduce",
        "NCCL_MAX_NCHANNELS=2",
        status=Status.eliminated,
        verdict="Out of memory at start-up.",
    ),
    Step(
        "Torch symmetric memory",
        "PyTorch-native symmetric memory bypasses NCCL",
        "--enable-torch-symm-mem --disable-custom-all-reduce",
        status=Status.eliminated,
        verdict="KeyError: 12: the arch table has no SM120.",
        note="Likely needs NVLink for the fast path anyway. Dead end on CUDA 12.8.",
    ),
    Step(
        "CUDA graph max batch 128",
        "Capture graphs up to batch 128",
        "--cuda-graph-max-bs 128",
        runs=(89.3, 89.7, 89.5),
        status=Status.adopted,
        verdict="Solid gain, adopted as the new baseline.",
        set_baseline=True,
    ),
    Step(
        "CUDA 13 upgrade",
        "CUDA 13 has native SM120 support and unblocks Blackwell kernels",
        "torch 2.9.1+cu130, sgl-kernel 0.3.21+cu130, flashinfer 0.6.4",
        runs=(92.4, 92.8, 92.6),
        status=Status.adopted,
        set_baseline=True,
        verdict="The pivot: FlashInfer attention works on SM120, +3.5 %.",
    ),
    Step(
        "FlashInfer allreduce fusion (CUDA 13)",
        "Now that SM120 is supported",
        "--enable-flashinfer-allreduce-fusion",
        runs=(92.7,),
        status=Status.measured,
        retest_of="FlashInfer allreduce fusion",
        note="Starts now, but 92.7 vs 92.6 is inside the noise.",
    ),
    Step(
        "Torch symmetric memory (CUDA 13)",
        "Retest after the pivot",
        "--enable-torch-symm-mem --disable-custom-all-reduce",
        status=Status.crashed,
        retest_of="Torch symmetric memory",
        note="Same KeyError: 12 as before the upgrade.",
    ),
)


def play(engine: Engine, *, pause_s: float, stop: threading.Event) -> int:
    """Create the campaign and play the story; returns the campaign id when done."""
    with session_scope(engine) as session:
        campaign = actions.create_campaign(session, CAMPAIGN)
        assert campaign.id is not None
        campaign_id = campaign.id
    ids: dict[str, int] = {}
    for step in STORY:
        if stop.wait(pause_s):
            break
        with session_scope(engine) as session:
            attempt = actions.create_attempt(
                session,
                campaign_id,
                AttemptCreate(
                    title=step.title,
                    hypothesis=step.hypothesis,
                    command=f"{LAUNCH} {step.flags}".strip(),
                    flags=step.flags,
                    retest_of=ids.get(step.retest_of) if step.retest_of else None,
                ),
            )
            assert attempt.id is not None
            ids[step.title] = attempt.id
            actions.update_attempt(session, attempt.id, AttemptUpdate(status=Status.running))
        for value in step.runs:
            if stop.wait(pause_s / 3):
                return campaign_id
            with session_scope(engine) as session:
                actions.add_measurement(session, attempt.id, value)
        with session_scope(engine) as session:
            if step.status == Status.crashed or (
                step.status == Status.eliminated and not step.runs
            ):
                actions.update_attempt(session, attempt.id, AttemptUpdate(status=Status.crashed))
            if step.status in (Status.adopted, Status.eliminated):
                actions.update_attempt(
                    session,
                    attempt.id,
                    AttemptUpdate(
                        status=step.status, verdict=step.verdict, set_baseline=step.set_baseline
                    ),
                )
            if step.note:
                actions.add_attempt_note(session, attempt.id, NoteCreate(body=step.note))
    return campaign_id
