"""`campaign-dash demo`: the campaign of the seed write-ups, replayed live.

The replay plays the engineer: it creates each attempt with a `file://` log source, writes
the server's log into that file line by line, waits for the tailer and the diagnosis
engine to find what happened (ready, throughput, crash and root cause), then gives the
verdict and the note an engineer would. It never writes a finding itself.
"""

import logging
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app import actions, demo_logs, pivots, repo
from app.db import session_scope
from app.models import Attempt, Status
from app.schemas import AttemptCreate, AttemptUpdate, CampaignCreate, NoteCreate

log = logging.getLogger(__name__)

STEP_SECONDS = 16.0  # at speed 1: eleven steps, about three minutes
LAUNCH = (
    "python3 -m sglang.launch_server --model /shared/kimi-k2.5-int4 --port 30000 --tp 8 "
    "--trust-remote-code --host 0.0.0.0"
)
ENVIRONMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")
PIVOT = "CUDA 13 upgrade"  # from this step on, every run is on the CUDA 13 stack


@dataclass(frozen=True)
class Step:
    title: str
    hypothesis: str
    flags: str
    server_flags: dict[str, object]
    runs: tuple[float, ...] = ()
    crash: Callable[[], list[str]] | None = None
    verdict: Status | None = None
    verdict_text: str = ""
    note: str = ""
    retest_of: str | None = None
    set_baseline: bool = False
    baseline_configuration: bool = False  # the typed baseline was measured with its flags
    # Earlier attempts that were waiting on this one (marked "blocked by" it once it lands).
    unblocks: tuple[str, ...] = ()

    def command(self, kept: str) -> str:
        """The launch command as typed at a shell: an environment assignment before the
        program, flags after what the adopted attempts kept, a description of a change that
        no flag makes ("(custom all-reduce on)", a CUDA upgrade) in neither."""
        words = self.flags.split()
        if words and all(ENVIRONMENT.fullmatch(word) for word in words):
            return " ".join([*words, LAUNCH, kept]).strip()
        own = self.flags if self.flags.startswith("-") else ""
        return " ".join(part for part in (LAUNCH, kept, own) if part)

    @property
    def expected_status(self) -> Status:
        if self.verdict is not None:
            return self.verdict
        return Status.crashed if self.crash else Status.measured


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
    Step("Baseline: sglang TP8, NCCL Ring", "The reference every hypothesis is judged against",
         "", {}, runs=(81.7, 82.3, 82.0), verdict=Status.adopted, verdict_text="Reference run.",
         baseline_configuration=True),
    Step("EAGLE-3 speculative decoding", "A draft model lifts decode throughput",
         "--speculative-algorithm EAGLE3", {"speculative_algorithm": "EAGLE3"},
         runs=(54.2, 53.8), verdict=Status.eliminated,
         verdict_text="Regression: 122 allreduces per verify pass at ~200 µs each, ~24 ms a pass.",
         note="Speculation only pays once the verify pass's **122 allreduces** get cheap."),
    Step("FlashInfer allreduce fusion", "Fuse allreduce with RMSNorm to cut kernel launches",
         "--enable-flashinfer-allreduce-fusion", {"enable_flashinfer_allreduce_fusion": True},
         crash=demo_logs.crash_flashinfer_fusion, verdict=Status.eliminated,
         verdict_text="FlashInfer's JIT does not support SM120.",
         note="Blocked by the CUDA 12.8 stack: retest after a CUDA upgrade."),
    Step("Custom allreduce on PCIe", "sglang's custom allreduce beats NCCL on small tensors",
         "(custom all-reduce on)", {"disable_custom_all_reduce": False},
         runs=(38.1, 37.9), verdict=Status.eliminated,
         verdict_text="2x slower than NCCL: the all-to-all saturates the PCIe switch."),
    Step("NCCL Tree algorithm", "Tree has lower latency than Ring for small messages",
         "NCCL_ALGO=Tree", {}, crash=demo_logs.crash_nccl_tree, verdict=Status.eliminated,
         verdict_text="NCCL Tree is incompatible with CUDA graph capture."),
    Step("NCCL reduced channels", "Fewer channels, less overhead per small allreduce",
         "NCCL_MAX_NCHANNELS=2", {}, crash=demo_logs.crash_nccl_channels,
         verdict=Status.eliminated, verdict_text="Out of memory at start-up."),
    Step("Torch symmetric memory", "PyTorch's symmetric memory bypasses NCCL",
         "--enable-torch-symm-mem --disable-custom-all-reduce",
         {"enable_torch_symm_mem": True, "disable_custom_all_reduce": True},
         crash=demo_logs.crash_torch_symm_mem, verdict=Status.eliminated,
         verdict_text="KeyError: 12: its arch table has no SM120.",
         note="Likely needs NVLink for the fast path anyway. Dead end on CUDA 12.8."),
    Step("CUDA graph max batch 128", "Capture graphs up to batch 128", "--cuda-graph-max-bs 128",
         {"cuda_graph_max_bs": 128}, runs=(89.3, 89.7, 89.5), verdict=Status.adopted,
         verdict_text="A solid gain: the new baseline.", set_baseline=True),
    Step(PIVOT, "CUDA 13 supports SM120 natively and unblocks Blackwell kernels",
         "torch 2.9.1+cu130, sgl-kernel 0.3.21+cu130, flashinfer 0.6.4", {},
         runs=(92.4, 92.8, 92.6), verdict=Status.adopted, set_baseline=True,
         verdict_text="The pivot: FlashInfer attention works on SM120, +3.5 %.",
         unblocks=("FlashInfer allreduce fusion", "Torch symmetric memory")),
    Step("FlashInfer allreduce fusion (CUDA 13)", "Now that SM120 is supported",
         "--enable-flashinfer-allreduce-fusion", {"enable_flashinfer_allreduce_fusion": True},
         runs=(92.5, 92.9, 92.7, 92.7), retest_of="FlashInfer allreduce fusion",
         note="Starts now, but 92.7 against 92.6 is inside the noise: "
              "[side by side with the CUDA 13 baseline]({compare})."),
    Step("Torch symmetric memory (CUDA 13)", "Retest after the pivot",
         "--enable-torch-symm-mem --disable-custom-all-reduce",
         {"enable_torch_symm_mem": True, "disable_custom_all_reduce": True},
         crash=demo_logs.crash_torch_symm_mem, retest_of="Torch symmetric memory",
         note="Same `KeyError: 12` as before the upgrade: the arch table still lacks SM120."),
)  # fmt: skip


def log_name(number: int, title: str) -> str:
    """The file an attempt's server log is written to: its place in the story and its title,
    in the characters a shell takes without quoting ("01-baseline-sglang-tp8-nccl-ring.log")."""
    return f"{number:02d}-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}.log"


def finished_note(statuses: Counter[str]) -> str:
    tally = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    return (
        f"**The demo's replay has finished**: {sum(statuses.values())} attempts ({tally}), "
        "each diagnosed from its log by the tailer. The dashboard stays up until "
        "`campaign-dash demo` is stopped, which removes its database and logs."
    )


class Replay:
    """Plays the story against a running app (its state: engine, tailer, bus)."""

    def __init__(self, state: Any, workdir: Path, *, speed: float, stop: threading.Event) -> None:
        self.state = state
        self.engine = state.engine
        self.workdir = workdir
        self.step_s = STEP_SECONDS / speed
        self.stop = stop
        self.rng = random.Random(82)
        self.campaign_id = 0
        self.ids: dict[str, int] = {}
        self.log_files: dict[int, Path] = {}
        # What the attempts adopted as new baselines changed, kept by every later launch.
        self.kept_flags = ""
        self.kept_server_flags: dict[str, object] = {}
        self.stack = "cuda12.8"  # what each run's script prints first; the pivot changes it
        # The retests the pivot's offer made, by their original's id: later steps play them.
        self.retests: dict[int, int] = {}
        self.done = threading.Event()
        self.statuses: Counter[str] = Counter()  # of the attempts, once the story is over

    def _write(self, session_changes: Callable[[Any], Any]) -> Any:
        with session_scope(self.engine) as session:
            return session_changes(session)

    def _type(self, path: Path, lines: list[str], seconds: float) -> None:
        """Append lines over `seconds`, as a server would print them."""
        pause = seconds / max(len(lines), 1)
        with path.open("a", encoding="utf-8") as out:
            for line in lines:
                if self.stop.is_set():
                    return
                out.write(line + "\n")
                out.flush()
                self.stop.wait(pause)

    def _wait_for(self, attempt_id: int, check: Callable[[Attempt], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stop.is_set():
            with session_scope(self.engine) as session:
                attempt = repo.get_attempt(session, attempt_id=attempt_id)
                if attempt is not None and check(attempt):
                    return True
            self.stop.wait(0.05)
        return False

    def create_campaign(self) -> int:
        """The story's campaign, made before the replay starts: its page is the demo's link."""
        self.campaign_id = self._write(lambda s: actions.create_campaign(s, CAMPAIGN).id)
        return self.campaign_id

    def run(self) -> bool:
        """Plays the whole story; False when stopped or failed before its end."""
        try:
            if not self.campaign_id:
                self.create_campaign()
            for number, step in enumerate(STORY, start=1):
                if self.stop.is_set():
                    return False
                self._play(number, step)
            if self.stop.is_set():
                return False
            self._write(self._finish)
            return True
        except Exception:
            log.exception("the demo replay failed")
            return False
        finally:
            self.done.set()

    def _finish(self, session: Any) -> None:
        """Says on the campaign's page that the story is over (its notes update live)."""
        attempts = repo.list_attempts(session, campaign_id=self.campaign_id)
        self.statuses = Counter(str(attempt.status) for attempt in attempts)
        body = NoteCreate(body=finished_note(self.statuses))
        actions.add_campaign_note(session, self.campaign_id, body)

    def _play(self, number: int, step: Step) -> None:
        path = self.workdir / log_name(number, step.title)
        retest = self.ids.get(step.retest_of) if step.retest_of else None
        if retest in self.retests:
            # Made by the pivot's "Retest these N": its server launched into this log.
            attempt_id = self.retests[retest]
            offered = AttemptUpdate(
                title=step.title, hypothesis=step.hypothesis,
                command=step.command(self.kept_flags), flags=step.flags, source=f"file://{path}",
            )  # fmt: skip
            self._write(lambda s: actions.update_attempt(s, attempt_id, offered))
        else:
            data = AttemptCreate(
                title=step.title, hypothesis=step.hypothesis,
                command=step.command(self.kept_flags), flags=step.flags, source=f"file://{path}",
                retest_of=retest,
            )  # fmt: skip
            attempt_id = self._write(lambda s: actions.create_attempt(s, self.campaign_id, data).id)
        self.ids[step.title] = attempt_id
        self.log_files[attempt_id] = path
        self.stop.wait(self.step_s * 0.1)  # the server is launched a moment later
        server_flags = {**self.kept_server_flags, **step.server_flags}
        if step.title == PIVOT:
            self.stack = "cuda13"
        startup = demo_logs.startup(server_flags, ready=step.crash is None, stack=self.stack)
        self._type(path, startup, self.step_s * 0.35)
        if step.crash is not None:
            self._type(path, step.crash(), self.step_s * 0.2)
            found = self._wait_for(attempt_id, lambda a: a.status == Status.crashed, 60)
        else:
            for run, value in enumerate(step.runs):
                self._type(path, demo_logs.benchmark(run, value, self.rng),
                           self.step_s * 0.35 / len(step.runs))  # fmt: skip
            found = self._wait_for(
                attempt_id,
                lambda a: a.status == Status.measured and len(a.diagnosis["throughput"] or []) > 0
                if a.diagnosis else False,
                60,
            )  # fmt: skip
            found = found and self._wait_for(
                attempt_id, lambda a: self._measured(a.id) >= len(step.runs), 60
            )
        # A verdict ends the following: the whole log is read first, or the diagnosis would
        # stay what its first lines said (the sigquit line before the KeyError below it).
        found = found and self._wait_for(
            attempt_id, lambda a: self._read_to(a.id, path.stat().st_size), 60
        )
        if self.stop.is_set():
            return  # stopped mid-step (Ctrl-C): no verdict, and no tailer to blame
        if not found:
            log.warning("demo: the tailer did not report attempt %s in time", attempt_id)
        self.stop.wait(self.step_s * 0.1)  # the engineer reads the diagnosis
        self._verdict(attempt_id, step)

    def _read_to(self, attempt_id: int | None, size: int) -> bool:
        with session_scope(self.engine) as session:
            tail = repo.tail_state(session, attempt_id=attempt_id or 0)
            return tail is not None and tail.offset >= size

    def _measured(self, attempt_id: int | None) -> int:
        with session_scope(self.engine) as session:
            return len(
                repo.samples_by_attempt(session, attempt_ids=[attempt_id or 0]).get(
                    attempt_id or 0, []
                )
            )

    def _verdict(self, attempt_id: int, step: Step) -> None:
        if step.verdict is not None:
            update = AttemptUpdate(
                status=step.verdict,
                verdict=step.verdict_text,
                set_baseline=step.set_baseline,
                baseline_configuration=step.baseline_configuration,
            )
            self._write(lambda s: actions.update_attempt(s, attempt_id, update))
            if step.set_baseline and step.verdict == Status.adopted:
                own = step.flags if step.flags.startswith("-") else ""
                self.kept_flags = " ".join(part for part in (self.kept_flags, own) if part)
                self.kept_server_flags |= step.server_flags
        if step.note:
            # "{compare}": this attempt beside the baseline in force, side by side.
            baseline = self.ids.get(PIVOT)
            body = step.note.replace("{compare}", f"/compare?ids={baseline},{attempt_id}")
            self._write(lambda s: actions.add_attempt_note(s, attempt_id, NoteCreate(body=body)))
        waiting = AttemptUpdate(blocked_by=attempt_id)
        for title in step.unblocks:
            earlier = self.ids[title]
            self._write(partial(actions.update_attempt, attempt_id=earlier, data=waiting))
        if step.unblocks:
            # The campaign page's banner offers what the pivot may have unblocked; the
            # engineer reads it, then takes it.
            self.stop.wait(self.step_s * 0.3)
            made = self._write(lambda s: [
                (a.retest_of, a.id) for a in pivots.retest_unblocked(s, attempt_id, None)
            ])  # fmt: skip
            self.retests = dict(made)
