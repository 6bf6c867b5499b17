"""ssh:// sources against a real OpenSSH sshd on loopback: nothing here fakes the connection."""

import contextlib
import gc
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.tailing import follower
from app.tailing.ssh_source import DEAD_AFTER_S
from tests.conftest import OWNER_TOKEN, running
from tests.helpers import (
    attempt_of,
    copytruncate_and_regrow,
    csrf_of,
    make_attempt,
    make_campaign,
    quiet_lines,
    stored_log,
    tail_state,
    wait_for,
)
from tests.sshd import Sshd


def attach(api: httpx.Client, source: str) -> dict:
    """A campaign with one attempt following `source`."""
    campaign = make_campaign(api)
    return make_attempt(api, campaign["id"], source=source)


def followers_of(path: Path) -> list[str]:
    """Remote follower processes still reading `path` (the sshd host is this machine)."""
    out = subprocess.run(
        ["ps", "-eww", "-o", "pid,args"], capture_output=True, text=True, check=True
    )
    return [line for line in out.stdout.splitlines() if "python3 -" in line and str(path) in line]


def test_follows_a_log_through_an_ssh_config_alias(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "data" / "eagle3" / "logs" / "server.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="first bytes")
    with log.open("ab") as out:
        out.write(b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n")
    body = wait_for(
        lambda: (a := attempt_of(ssh_api, attempt["id"]))["status"] == "ready" and a, what="ready"
    )
    assert body["tail"]["state"] == "connected" and body["tail"]["infrastructure"] is False
    assert stored_log(ssh_api, attempt["id"]) == log.read_bytes()


def test_a_hostile_path_is_read_literally_and_runs_nothing(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    marker = f"pwned-{os.getpid()}-{time.time_ns()}"
    pwned = [Path.home() / marker, tmp_path / marker, Path("/tmp") / marker]
    weird = tmp_path / f"x; touch {marker}; echo $(touch {marker}) 'q' \"dq\" `touch {marker}`.log"
    weird.write_bytes(b"a line of a log with a hostile name\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{weird}")
    wait_for(
        lambda: stored_log(ssh_api, attempt["id"]) == weird.read_bytes(), what="the literal file"
    )
    assert not any(path.exists() for path in pwned)


def test_an_unknown_host_key_is_refused_until_the_owner_trusts_it(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    sshd.known_hosts.write_text("")
    log = tmp_path / "server.log"
    log.write_bytes(b"hello from the gpu box\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    tail = wait_for(
        lambda: (
            (t := attempt_of(ssh_api, attempt["id"])["tail"])
            and t["state"] == "host key not trusted"
            and t
        ),
        what="refusal",
    )
    assert sshd.host_fingerprint in tail["last_error"]
    assert tail["host_key_offered"] is True and tail["infrastructure"] is True
    assert stored_log(ssh_api, attempt["id"]) == b""
    assert not sshd.trusted_hosts.exists()

    owner = httpx.Client(base_url=str(ssh_api.base_url), headers={"Accept": "text/html"})
    assert owner.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
    page = owner.get(f"/attempts/{attempt['id']}").text
    assert "Trust this host key" in page and sshd.host_fingerprint in page
    csrf = csrf_of(page)
    trusted = owner.post(f"/attempts/{attempt['id']}/trust-host-key", data={"csrf_token": csrf})
    assert trusted.status_code == 303
    assert sshd.host_public_key in sshd.trusted_hosts.read_text()
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="followed")
    again = ssh_api.post(f"/api/attempts/{attempt['id']}/trust-host-key")
    assert again.status_code == 409


def test_a_changed_host_key_is_refused_with_its_fingerprint(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    sshd.known_hosts.write_text(
        f"[127.0.0.1]:{sshd.port} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n"
    )
    log = tmp_path / "server.log"
    log.write_bytes(b"secret\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    tail = wait_for(
        lambda: (
            (t := attempt_of(ssh_api, attempt["id"])["tail"])
            and t["state"] == "host key changed"
            and t
        ),
        what="refusal",
    )
    assert sshd.host_fingerprint in tail["last_error"]
    assert stored_log(ssh_api, attempt["id"]) == b""


def test_a_missing_remote_file_is_waited_for(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "not-yet.log"
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(
        lambda: (
            (attempt_of(ssh_api, attempt["id"])["tail"] or {}).get("state") == "file not found yet"
        ),
        what="waiting state",
    )
    log.write_bytes(b"the server started after the attempt was created\n")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="content")


def test_closing_the_attempt_leaves_no_process_on_the_host(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "orphan-check.log"
    log.write_bytes(b"x\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == b"x\n", what="followed")
    assert followers_of(log), "the remote follower should be running"
    ssh_api.patch(f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "x"})
    wait_for(lambda: not followers_of(log), timeout=10, what="no follower left")


def test_more_tails_than_max_sessions_open_a_second_connection(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    campaign = make_campaign(ssh_api)
    logs = []
    for index in range(12):
        log = tmp_path / f"rank{index}.log"
        log.write_bytes(b"rank %d\n" % index)
        logs.append(log)
        make_attempt(ssh_api, campaign["id"], title=f"r{index}", source=f"ssh://{sshd.alias}{log}")
    attempts = ssh_api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
    for attempt, log in zip(attempts, logs, strict=True):
        wait_for(
            lambda a=attempt, p=log: stored_log(ssh_api, a["id"]) == p.read_bytes(), what="all"
        )
    # One connection per MaxSessions (10) channels: 12 tails, 2 connections.
    assert len(sshd.session_pids()) == 2


@pytest.mark.serial
def test_killed_connections_lose_and_repeat_nothing(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    """The fault test: a steady writer, the sshd side killed 30 times at random, each time
    while bytes are flowing through a session (not while it is still being set up, when
    the backoff rightly grows)."""
    import hashlib
    import random
    import threading

    from app.diagnosis import diagnose_bytes

    log = tmp_path / "faulty.log"
    log.write_bytes(b"")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: tail_state(ssh_api, attempt["id"]) == "connected", what="up")
    killing = threading.Event()
    killing.set()

    def writer() -> None:
        rng = random.Random(3)
        with log.open("ab") as out:
            while killing.is_set():
                line = b"[2026-02-27 13:%02d:%02d TP0] Decode batch. #running-req: %d, " % (
                    rng.randrange(60),
                    rng.randrange(60),
                    rng.randrange(128),
                ) + b"gen throughput (token/s): %.2f\n" % rng.uniform(60, 95)
                out.write(line * 200)
                out.flush()
                time.sleep(0.05)  # about 0.5 MB/s: the kills land while it writes

    def stored_bytes() -> int:
        return int(attempt_of(ssh_api, attempt["id"])["tail"]["stored_bytes"])

    thread = threading.Thread(target=writer)
    thread.start()
    rng = random.Random(11)
    kills = 0
    try:
        while kills < 30:
            before = stored_bytes()
            wait_for(
                lambda before=before: stored_bytes() > before,
                timeout=60,
                what="bytes flowing again",
            )
            time.sleep(rng.uniform(0.05, 0.4))
            for pid in sshd.session_pids():
                try:
                    os.kill(pid, 9)
                    kills += 1
                except ProcessLookupError:
                    pass
    finally:
        killing.clear()
        thread.join()
    assert kills >= 30
    assert log.stat().st_size > 5 << 20
    expected = log.read_bytes()
    wait_for(
        lambda: attempt_of(ssh_api, attempt["id"])["tail"]["stored_bytes"] >= len(expected),
        timeout=180,
        what="catch up after the faults",
    )
    stored = stored_log(ssh_api, attempt["id"])
    assert hashlib.sha256(stored).hexdigest() == hashlib.sha256(expected).hexdigest()
    diagnosis = attempt_of(ssh_api, attempt["id"])["diagnosis"]
    whole = diagnose_bytes(expected).to_dict()
    for field in ("ready", "crashed", "root_cause", "error_class", "fingerprint"):
        assert diagnosis[field] == whole[field]
    assert diagnosis["throughput_total"] == len(whole["throughput"])


def test_the_host_going_away_is_not_the_server_crashing(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="followed")
    sshd.stop()  # the GPU box goes away
    tail = wait_for(
        lambda: (
            (t := attempt_of(ssh_api, attempt["id"])["tail"])
            and t["state"] in ("reconnecting", "host unreachable", "connection lost")
            and t
        ),
        what="infrastructure state",
    )
    assert tail["infrastructure"] is True
    body = attempt_of(ssh_api, attempt["id"])
    assert body["status"] == "running" and body["diagnosis"]["crashed"] is False
    wait_for(
        lambda: (
            "reconnecting in" in (attempt_of(ssh_api, attempt["id"])["tail"]["last_error"] or "")
        ),
        what="a visible retry delay",
    )


def test_a_closed_port_says_so_without_paramikos_errno(
    ssh_api: httpx.Client, tmp_path: Path
) -> None:
    # It read "[Errno None] Unable to connect to port 18599 on 127.0.0.1; reconnecting in 5 s".
    from tests.sshd import free_port

    attempt = attach(ssh_api, f"ssh://walker@127.0.0.1:{free_port()}{tmp_path / 'x.log'}")
    tail = wait_for(
        lambda: (
            (t := attempt_of(ssh_api, attempt["id"])["tail"])
            and "reconnecting in" in (t["last_error"] or "")
            and t
        ),
        what="a visible retry delay",
    )
    assert tail["state"] == "host unreachable"
    assert tail["last_error"].startswith("Unable to connect to port "), tail["last_error"]


def test_proxyjump_reaches_a_host_through_another(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    config = sshd.ssh_config.read_text()
    jumped = config.replace(f"Host {sshd.alias}", "Host behind-the-bastion", 1)
    sshd.ssh_config.write_text(
        config + jumped.replace("  HostName", "  ProxyJump gpu-box\n  HostName", 1)
    )
    log = tmp_path / "behind.log"
    log.write_bytes(b"reached through the jump host\n")
    attempt = attach(ssh_api, f"ssh://behind-the-bastion{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="via ProxyJump")


@pytest.mark.serial
@pytest.mark.timeout(660)  # its own bound (600 s) speaks first, with the tail's state
def test_a_1_gib_catch_up_completes_with_progress_and_a_responsive_dashboard(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    """Past paramiko's own rekey point (2^29 bytes) twice; progress shows while it reads."""
    log = tmp_path / "one-gib.log"
    line = (
        b"[2026-02-27 13:21:27 TP0] Decode batch. #running-req: 32, #token: 9000, "
        b"gen throughput (token/s): 81.50, #queue-req: 0\n"
    )
    block = line * ((1 << 20) // len(line) + 1)
    with log.open("wb") as out:
        while out.tell() < 1 << 30:
            out.write(block)
        out.write((Path(__file__).parent / "data" / "seed_torch_symm_mem.log").read_bytes())
    size = log.stat().st_size
    campaign = make_campaign(ssh_api)
    # The dashboard shares this process with what the earlier tests left in its heap
    # (SQLAlchemy's bounded caches of ~100 engines): a full collection of that is the
    # harness's pause, up to a second, not the dashboard's. Frozen, the collector looks
    # only at what is made from here on.
    gc.collect()
    gc.freeze()
    started = time.monotonic()
    attempt = make_attempt(ssh_api, campaign["id"], source=f"ssh://{sshd.alias}{log}")
    seen_progress = False
    slowest = 0.0
    try:
        while True:
            asked = time.monotonic()
            tail = attempt_of(ssh_api, attempt["id"])["tail"]
            slowest = max(slowest, time.monotonic() - asked)
            if tail and tail["state"] == "catching up" and 0 < tail["bytes_read"] < tail["size"]:
                seen_progress = True
            if tail and tail["stored_bytes"] >= size:
                break
            assert time.monotonic() - started < 600, f"catch-up too slow: {tail}"
            time.sleep(0.5)
    finally:
        gc.unfreeze()
    assert seen_progress
    assert slowest < 2.0, f"the API answered in {slowest:.1f} s while catching up"
    body = attempt_of(ssh_api, attempt["id"])
    assert body["status"] == "crashed" and body["diagnosis"]["root_cause"] == "KeyError: 12"


def test_keys_from_ssh_agent(sshd: Sshd, tmp_path: Path, monkeypatch: "pytest.MonkeyPatch") -> None:
    from app.config import Settings
    from tests.conftest import running

    agent = subprocess.run(["ssh-agent", "-s"], capture_output=True, text=True, check=True).stdout
    env = dict(part.split("=", 1) for part in agent.replace(";", "\n").split() if "=" in part)
    monkeypatch.setenv("SSH_AUTH_SOCK", env["SSH_AUTH_SOCK"])
    try:
        subprocess.run(
            ["ssh-add", str(sshd.directory / "client_key")],
            env={**os.environ, "SSH_AUTH_SOCK": env["SSH_AUTH_SOCK"]},
            capture_output=True,
            check=True,
        )  # fmt: skip
        # No IdentityFile: the only way in is the agent's key.
        sshd.ssh_config.write_text(
            sshd.ssh_config.read_text().replace(
                f"  IdentityFile {sshd.directory / 'client_key'}\n", ""
            )
        )
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=f"sqlite:///{tmp_path / 'agent.db'}", token=OWNER_TOKEN,
            ssh_config=sshd.ssh_config, ssh_known_hosts=sshd.known_hosts,
            trusted_hosts_file=sshd.trusted_hosts, ssh_agent=True,
        )  # fmt: skip
        with running(settings) as (_, api):
            log = tmp_path / "agent.log"
            log.write_bytes(b"via the agent\n")
            campaign = make_campaign(api)
            attempt = make_attempt(api, campaign["id"], source=f"ssh://{sshd.alias}{log}")
            wait_for(lambda: stored_log(api, attempt["id"]) == log.read_bytes(), what="agent auth")
    finally:
        subprocess.run(
            ["ssh-agent", "-k"], env={**os.environ, **env}, capture_output=True, check=False
        )


def test_a_refused_key_says_authentication_failed(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")],
        check=True,
    )
    sshd.ssh_config.write_text(
        sshd.ssh_config.read_text()
        + f"Host stranger\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        + f"  IdentityFile {tmp_path / 'stranger'}\n"
    )
    log = tmp_path / "denied.log"
    log.write_bytes(b"x\n")
    attempt = attach(ssh_api, f"ssh://stranger{log}")
    tail = wait_for(
        lambda: (
            (t := attempt_of(ssh_api, attempt["id"])["tail"])
            and t["state"] == "authentication failed"
            and t
        ),
        what=f"auth refusal ({attempt_of(ssh_api, attempt['id'])['tail']})",
    )
    assert tail["infrastructure"] is True
    assert stored_log(ssh_api, attempt["id"]) == b""


@pytest.mark.serial
def test_a_silent_peer_is_noticed_within_30_seconds(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    import signal

    log = tmp_path / "silent.log"
    log.write_bytes(b"x\n")
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == b"x\n", what="followed")
    frozen = sshd.session_pids()
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)  # the peer stops answering, the TCP connection stays up
    try:
        started = time.monotonic()
        # Noticed: the tail says the connection is lost, or has already opened another.
        wait_for(
            lambda: (
                tail_state(ssh_api, attempt["id"]) != "connected"
                or set(sshd.session_pids()) - set(frozen)
            ),
            timeout=30,
            what="the silent peer noticed",
        )
        noticed = time.monotonic() - started
        # By the silence itself (no byte for DEAD_AFTER_S; a heartbeat came at most a second
        # before the freeze), not by anything sooner.
        assert noticed > DEAD_AFTER_S - 2, f"noticed after {noticed:.1f} s"
        with log.open("ab") as out:
            out.write(b"y\n")
        wait_for(lambda: stored_log(ssh_api, attempt["id"]) == b"x\ny\n", timeout=30, what="back")
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("regrowth", ["equal-size", "larger"])
def test_copytruncate_after_an_idle_period_regrown_at_once_loses_nothing_over_ssh(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path, regrowth: str
) -> None:
    """The remote follower fingerprints the file as the local one does."""
    log = tmp_path / "quiet.log"
    before = quiet_lines("before", 100)
    log.write_bytes(before)
    attempt = attach(ssh_api, f"ssh://{sshd.alias}{log}")
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == before, what="the first content")
    time.sleep(follower.ACTIVE_FOR_S + 0.5)  # quiet: the remote follower looks at its slow pace
    after = quiet_lines("after", 100 if regrowth == "equal-size" else 150)
    copytruncate_and_regrow(log, after)
    assert (log.stat().st_size == len(before)) == (regrowth == "equal-size")
    wait_for(
        lambda: stored_log(ssh_api, attempt["id"]) == before + after,
        what="the regrown content, all",
    )


def test_a_remote_directory_or_fifo_is_refused_with_a_clear_state(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    """The remote follower checks what it opens, as the local one does: a FIFO would block
    it, a directory would fail it at every read."""
    (tmp_path / "logs").mkdir()
    os.mkfifo(tmp_path / "pipe.log")
    for path, says in [(tmp_path / "logs", "is a directory"), (tmp_path / "pipe.log", "FIFO")]:
        attempt = attach(ssh_api, f"ssh://{sshd.alias}{path}")
        tail = wait_for(
            lambda a=attempt: (
                (t := attempt_of(ssh_api, a["id"])["tail"]) and t["state"] == "not a log file" and t
            ),
            what=f"refused: {path}",
        )
        assert says in tail["last_error"] and str(path) in tail["last_error"]
        assert tail["infrastructure"] is False


def test_two_apps_in_one_process_share_no_connection(
    ssh_settings: Settings, sshd: Sshd, tmp_path: Path
) -> None:
    """Each app owns its SSH pool: one app stopping closes its connections, not the other's."""
    log = tmp_path / "server.log"
    log.write_bytes(b"first\n")
    source = f"ssh://{sshd.alias}{log}"
    other = ssh_settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'b.db'}"})
    with running(other) as (_, second):
        following = attach(second, source)
        with running(ssh_settings) as (_, first):
            attach(first, source)
            wait_for(lambda: len(sshd.session_pids()) == 2, what="a connection each")
        wait_for(lambda: len(sshd.session_pids()) == 1, what="the first app's connection closed")
        with log.open("ab") as out:
            out.write(b"second\n")
        wait_for(lambda: stored_log(second, following["id"]) == b"first\nsecond\n", what="more")
        assert tail_state(second, following["id"]) == "connected"
