"""Time what `flags` and `flag_diff` add to a large campaign's JSON, and the parse behind them.

    python bench/flags.py [--attempts 300] [--runs 5]

Seeds a SQLite file with two campaigns of N attempts each: one whose attempts have launch
commands and the arguments of the seeds' sglang `server_args=ServerArgs(...)` line (4.5 KB,
parsed and stored by the ingest as the log arrived), and the reference, the same attempts
with neither. Serves `GET /api/campaigns/{id}` in-process, in the same run, both ways: the
first request after a start (commands parsed, values masked) and then warm (both cached).
Also times one line's parse against `ast.literal_eval` of the same arguments written as a
dict (what a naive parser does).
"""

import argparse
import ast
import re
import statistics
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from app import flags, migrate
from app.config import Settings
from app.db import make_engine, session_scope
from app.models import Attempt, Campaign
from app.web import create_app

OWNER = "bench-owner-token-" + "x" * 24
SEED_LOG = Path(__file__).resolve().parent.parent / "tests" / "data" / "seed_torch_symm_mem.log"
LAUNCH = (
    "cd /data/eagle3 && NCCL_ALGO=Tree nohup python -m sglang.launch_server --model-path "
    "/shared/kimi-k2.5-int4 --tp 8 --mem-fraction-static 0.85 {extra} "
    "> logs/run_{index}.log 2>&1 &"
)


def _args_line(index: int) -> str:
    line = next(x for x in SEED_LOG.read_text().splitlines() if "server_args=" in x)
    # Each attempt's line its own (a cache keyed by text must not make them one).
    return line.replace("chunked_prefill_size=8192", f"chunked_prefill_size={8192 + index}")


def parsed(line: str) -> dict[str, object]:
    logged = flags.parse_logged_args(line)
    assert logged is not None
    return logged.to_json()


def seed(engine: object, attempts: int) -> tuple[int, int]:
    with session_scope(engine) as session:  # type: ignore[arg-type]
        with_flags, without = Campaign(name="flags"), Campaign(name="reference")
        session.add_all([with_flags, without])
        session.flush()
        assert with_flags.id is not None and without.id is not None
        for index in range(attempts):
            extra = "--enable-torch-symm-mem" if index % 2 else f"--cuda-graph-max-bs {index}"
            session.add(
                Attempt(
                    campaign_id=with_flags.id,
                    title=f"attempt {index}",
                    command=LAUNCH.format(extra=extra, index=index),
                    logged_args=parsed(_args_line(index)),
                )
            )
            session.add(Attempt(campaign_id=without.id, title=f"attempt {index}"))
        return with_flags.id, without.id


def _timed(client: TestClient, path: str) -> float:
    started = time.perf_counter()
    response = client.get(path, headers={"Authorization": f"Bearer {OWNER}"})
    assert response.status_code == 200, response.text
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()

    line = _args_line(0)
    body = line[line.index("ServerArgs(") + len("ServerArgs(") : line.rindex(")")]
    as_dict = "{" + re.sub(r"(?:(?<=^)|(?<=, ))(\w+)=", r"'\1': ", body) + "}"
    reference = statistics.median(
        _time_each(lambda: ast.literal_eval(as_dict), 200) for _ in range(options.runs)
    )
    ours = statistics.median(
        _time_each(lambda: flags.parse_logged_args(line), 200) for _ in range(options.runs)
    )
    print(f"one {len(line):,}-character ServerArgs line: parsed in {ours * 1e3:.2f} ms; "
          f"ast.literal_eval of it as a dict {reference * 1e3:.2f} ms "
          f"({ours / reference:.2f}x)")  # fmt: skip

    cold_with, cold_without, warm_with, warm_without = [], [], [], []
    for _ in range(options.runs):
        with tempfile.TemporaryDirectory() as folder:
            settings = Settings(  # type: ignore[call-arg]
                _env_file=None, database_url=f"sqlite:///{folder}/bench.db", token=OWNER
            )
            migrate.upgrade(settings.database_url)
            ids = seed(make_engine(settings.database_url), options.attempts)
            with TestClient(create_app(settings)) as client:  # nothing to tail: no sources
                flags._command_flags.cache_clear()
                flags._masked_text.cache_clear()
                cold_with.append(_timed(client, f"/api/campaigns/{ids[0]}"))
                cold_without.append(_timed(client, f"/api/campaigns/{ids[1]}"))
                warm_with.append(min(_timed(client, f"/api/campaigns/{ids[0]}") for _ in range(5)))
                warm_without.append(
                    min(_timed(client, f"/api/campaigns/{ids[1]}") for _ in range(5))
                )
    for name, ours_runs, reference_runs in (
        ("first request", cold_with, cold_without),
        ("warm", warm_with, warm_without),
    ):
        a, b = statistics.median(ours_runs), statistics.median(reference_runs)
        print(f"GET /api/campaigns/{{id}}, {options.attempts} attempts, {name}: with flags "
              f"{a * 1e3:.0f} ms, reference without {b * 1e3:.0f} ms ({a / b:.2f}x)")  # fmt: skip


def _time_each(call: object, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        call()  # type: ignore[operator]
    return (time.perf_counter() - started) / repeat


if __name__ == "__main__":
    main()
