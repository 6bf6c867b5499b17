"""Time a large campaign's share page with the masking, without it, and with detect-secrets.

    python bench/redact.py [--attempts 300] [--runs 5]

Seeds a SQLite file with one campaign of N attempts (launch commands with credentials, flags,
verdicts, two notes each, sglang crash diagnoses with their excerpts and 100 throughput
figures), then serves `GET /s/<token>` in-process, in the same run: with no masking at all
(the reference), with the masking the dashboard uses (app/redact.py), and with that masking
plus detect-secrets' scan of every line (its regex and keyword plugins, the way its
`scan_line` is meant to be used). Prints medians, ratios, and which of the token shapes a
share link must hide each one finds. detect-secrets: `pip install 'detect-secrets>=1.5,<2'`.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from starlette.testclient import TestClient

from app import redact, sharing
from app.cli import prepare_database
from app.config import Settings
from app.db import session_scope
from app.diagnosis import diagnose_bytes
from app.models import Attempt, Campaign, Measurement, Note, Status
from app.web import create_app

OWNER = "bench-owner-token-" + "x" * 24


def crash_log(index: int) -> bytes:
    """An sglang log of one attempt: server_args, 400 decode batches, a traceback."""
    return (
        "[2026-02-27 13:21:27] server_args=ServerArgs(model_path='meta-llama/Llama-3-8B', "
        "tokenizer_path='meta-llama/Llama-3-8B', api_key='sk-proj-Zr8vK2mN5qT1wX4yB7cE0fH3jL6p', "
        f"tp_size=8, max_total_tokens=None, chunked_prefill_size={index})\n"
        + "".join(
            f"[2026-02-27 13:22:{i % 60:02d} TP0] Decode batch. #running-req: {i % 64}, "
            f"#token: {1000 + i}, token usage: 0.{i % 90 + 10}, gen throughput (token/s): "
            f"{80 + (i + index) % 15}.{i % 100:02d}, #queue-req: 0\n"
            for i in range(400)
        )
        + "[2026-02-27 13:23:41] env HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 on fe80::1\n"
        "[2026-02-27 13:23:41 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        + "".join(
            f'  File "/home/alice/sglang/python/sglang/srt/layer_{i}.py", line {100 + index}, '
            f"in f{i}\n    out = self.layer_{i}(x, positions, forward_batch)\n"
            for i in range(12)
        )
        + f"KeyError: {index % 40} on gpu-{index % 8:02d}.lab.example.com "
        f"(10.1.230.{index % 250})\n"
    ).encode()


COMMAND = (
    "ssh alice@gpu-01.lab.example.com 'HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 "
    "python -m sglang.launch_server --model meta-llama/Llama-3-8B --tp 8 --api-key Zq8r0pen1yK3y "
    "--mem-fraction-static 0.85 --chunked-prefill-size 8192 --enable-torch-symm-mem "
    "--log-file /data/eagle3/logs/run.log'"
)
# Shapes the share tests plant (tests/test_share_masking.py): a line, and the secret in it.
SHAPES = {
    "HF_TOKEN=hf_...": ("export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIj"),
    "hf_... bare": ("logged in with hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIj"),
    "sk-proj-...": ("client key sk-proj-Zr8vK2mN5qT1wX4yB7cE0fH3jL6pS9uA", "Zr8vK2mN5q"),
    "Authorization: Bearer": ('curl -H "Authorization: Bearer Tz9Kq2Lm8Vn4Xb7Rc1Wd5Ye3" /v1',
                              "Tz9Kq2Lm8V"),
    "AWS access key id": ("key id AKIAJ3Q5EXAMPLE7Z2WQ", "AKIAJ3Q5EXAMPLE7Z2WQ"),
    "AWS secret key": ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
                       "wJalrXUtnFEMI"),
    "ghp_...": ("pushed with ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s1234", "R4nd0mT0k3n"),
    "github_pat_...": ("GH_TOKEN=github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
                       "AAAAAAA0123456789"),
    "user:pass@ URL": ("pip install -i https://bot:Pa55w0rdXyz@pypi.corp.example.org/simple",
                       "Pa55w0rdXyz"),
    "--api-key VALUE": ("vllm serve m --api-key Zq8r0pen1yK3y", "Zq8r0pen1yK3y"),
    "--api-key=VALUE": ("vllm serve m --api-key=Mx3s3cretValue", "Mx3s3cretValue"),
    "--password 'a b'": ("run --password 'hunter two'", "hunter two"),
}  # fmt: skip


NOTES = (
    "Dead end: `grep` on root@10.1.230.174:/data/eagle3 hit server_args",
    "Retest with `--api-key=Mx3s3cretValue` on fe80::1 once CUDA 13 is in",
)


def seed(settings: Settings, attempts: int) -> tuple[str, str]:
    """The campaign, and a masked and an unmasked share link to it."""
    prepare_database(settings)  # create_app leaves migrations to `serve`'s start-up
    app = create_app(settings)
    with session_scope(app.state.engine) as session:
        campaign = Campaign(
            name="EAGLE-3 on 8x RTX PRO 6000",
            baseline=82.0,
            description="Runs on root@10.1.230.174, logs in /data/eagle3/",
        )
        session.add(campaign)
        session.flush()
        assert campaign.id is not None
        for index in range(attempts):
            diagnosis = diagnose_bytes(crash_log(index)).to_dict()
            assert diagnosis["crashed"] and len(diagnosis["throughput"]) >= 100
            attempt = Attempt(
                campaign_id=campaign.id, title=f"Try {index}: torch symmetric memory, tp 8",
                hypothesis="Symmetric memory all-reduce beats NCCL's on 8 GPUs at batch 64",
                command=COMMAND, flags=f"--tp 8 --api-key Zq8r0pen1yK3y --chunk {index}",
                source=f"ssh://alice@gpu-01.lab.example.com/home/alice/logs/run-{index}.log",
                status=Status.crashed if index % 3 else Status.eliminated,
                verdict=f"Dead end: KeyError: 12 on gpu-{index % 8:02d}, see /data/eagle3/{index}",
                diagnosis=diagnosis, fingerprint=diagnosis["fingerprint"],  # 40 distinct causes
            )  # fmt: skip
            session.add(attempt)
            session.flush()
            assert attempt.id is not None
            session.add(Measurement(attempt_id=attempt.id, value=80.0 + index % 10))
            for body in NOTES:
                session.add(Note(campaign_id=campaign.id, attempt_id=attempt.id, body=body))
        masked_link = sharing.create(session, campaign.id, expires_in_hours=None, redact=True)
        clear_link = sharing.create(session, campaign.id, expires_in_hours=None, redact=False)
    app.state.engine.dispose()
    return masked_link[1], clear_link[1]


def detect_secrets_scan() -> tuple[Callable[[str], str], AbstractContextManager[object]]:
    """detect-secrets' own line scan, its findings replaced, and the settings it runs under:
    its regex and keyword plugins (the entropy ones flag every word of a log line)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    plugins = [
        {"name": cls.__name__}
        for cls in get_mapping_from_secret_type_to_class().values()
        if "HighEntropy" not in cls.__name__
    ]

    def scan(text: str) -> str:
        lines = []
        for line in text.split("\n"):
            for found in scan_line(line):
                if found.secret_value:
                    line = line.replace(found.secret_value, redact.SECRET)
            lines.append(line)
        return "\n".join(lines)

    return scan, transient_settings({"plugins_used": plugins})


class _NoMask(redact.Redactor):
    @classmethod
    def learning(cls, texts: Iterable[str], hosts: Iterable[str] = (),
                 users: Iterable[str] = ()) -> "_NoMask":  # fmt: skip
        return cls()

    def _mask(self, text: str) -> str:
        return text


@contextmanager
def masking(kind: str) -> Iterator[None]:
    """`none`: no masking at all; `ours`: the dashboard's; `ours+ds`: then detect-secrets."""
    chosen: type[redact.Redactor] = redact.Redactor
    with ExitStack() as stack:
        if kind == "none":
            chosen = _NoMask
        elif kind == "ours+ds":
            scan, settings = detect_secrets_scan()
            stack.enter_context(settings)

            class WithDetectSecrets(redact.Redactor):
                def _mask(self, text: str) -> str:
                    return scan(super()._mask(text))

            chosen = WithDetectSecrets
        sharing.Redactor = chosen  # type: ignore[misc]
        try:
            yield
        finally:
            sharing.Redactor = redact.Redactor  # type: ignore[misc]


KINDS = {
    "none": "no masking (reference)",
    "ours": "masked (app/redact.py)",
    "ours+ds": "masked + detect-secrets",
}


def time_pages(client: TestClient, token: str, runs: int) -> dict[str, tuple[float, float, str]]:
    """Median wall and CPU seconds per page and the last page, by kind. The kinds take turns
    run after run, so a neighbour's load on the shared cores falls on all of them alike."""
    kinds = list(KINDS)
    try:
        detect_secrets_scan()
    except ImportError:
        print("detect-secrets not installed: pip install 'detect-secrets>=1.5,<2'")
        kinds.remove("ours+ds")
    walls: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpus: dict[str, list[float]] = {kind: [] for kind in kinds}
    pages = {}
    for run in range(runs + 1):  # the first round warms caches and templates
        for kind in kinds:
            with masking(kind):
                wall, cpu = time.perf_counter(), time.process_time()
                response = client.get(f"/s/{token}")
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert response.status_code == 200, response.text[:200]
            pages[kind] = response.text
            if run:
                walls[kind].append(wall)
                cpus[kind].append(cpu)
    return {
        kind: (statistics.median(walls[kind]), statistics.median(cpus[kind]), pages[kind])
        for kind in kinds
    }


def coverage() -> None:
    ours = redact.Redactor()
    try:
        scan, settings = detect_secrets_scan()
    except ImportError:
        print("detect-secrets not installed: pip install 'detect-secrets>=1.5,<2'")
        return
    print(f"\n{'shape':<24} {'ours':<6} detect-secrets")
    found = {"ours": 0, "ds": 0}
    with settings:
        for name, (line, secret) in SHAPES.items():
            mine, theirs = secret not in ours(line), secret not in scan(line)
            found["ours"] += mine
            found["ds"] += theirs
            print(f"{name:<24} {'yes' if mine else 'NO':<6} {'yes' if theirs else 'no'}")
    print(f"hidden: ours {found['ours']} of {len(SHAPES)}, detect-secrets {found['ds']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=f"sqlite:///{Path(tmp) / 'bench.db'}", token=OWNER
        )
        masked_token, _ = seed(settings, args.attempts)
        client = TestClient(create_app(settings))  # no lifespan: nothing is tailed
        results = time_pages(client, masked_token, args.runs)
    wall_ref, cpu_ref, page = results["none"]
    print(f"share page of {args.attempts} attempts ({len(page.encode()) / 1024:.0f} KiB), "
          f"medians of {args.runs} runs, wall / CPU:")  # fmt: skip
    for kind, (wall, cpu, shown) in results.items():
        leaked = [s for s in ("Zq8r0pen1yK3y", "hf_AbCd", "gpu-01", "fe80::1") if s in shown]
        print(
            f"  {KINDS[kind]:<26} {wall * 1000:7.1f} ms / {cpu * 1000:7.1f} ms"
            f"   {wall / wall_ref:5.2f}x / {cpu / cpu_ref:5.2f}x reference"
            + (f"   LEAKED {leaked}" if kind != "none" and leaked else "")
        )
    if "ours+ds" in results:
        wall = results["ours+ds"][0] / results["ours"][0]
        cpu = results["ours+ds"][1] / results["ours"][1]
        print(f"  detect-secrets on top of the masking: {wall:.2f}x / {cpu:.2f}x the masked page")
    coverage()


if __name__ == "__main__":
    main()
