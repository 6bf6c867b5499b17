"""A changed SSH host key, against the real sshd: a warning of its own with the old and the
new fingerprint, and a replacement of that host's key only, after a confirmation."""

import subprocess
from pathlib import Path

import httpx

from tests.conftest import OWNER_TOKEN
from tests.helpers import attempt_of, csrf_of, make_attempt, make_campaign, wait_for
from tests.sshd import Sshd


def other_key(tmp_path: Path, name: str) -> tuple[str, str]:
    """A key line ("type base64") that is not the sshd's, and its fingerprint."""
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{path}.pub"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    return " ".join(Path(f"{path}.pub").read_text().split()[:2]), listed[1]


def stored_log(api: httpx.Client, attempt_id: int) -> bytes:
    return api.get(f"/api/attempts/{attempt_id}/log").content


def changed_tail(api: httpx.Client, attempt_id: int) -> dict:
    return wait_for(
        lambda: (
            (t := attempt_of(api, attempt_id)["tail"]) and t["state"] == "host key changed" and t
        ),
        what="the changed-key refusal",
    )


def owner_browser(api: httpx.Client) -> httpx.Client:
    browser = httpx.Client(base_url=str(api.base_url), headers={"Accept": "text/html"})
    assert browser.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
    return browser


def test_a_changed_key_in_known_hosts_is_replaced_after_a_confirmation(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    old_line, old_fingerprint = other_key(tmp_path, "old")
    host = f"[127.0.0.1]:{sshd.port}"
    users_known_hosts = f"{host} {old_line}\n"
    sshd.known_hosts.write_text(users_known_hosts)
    elsewhere_line, _ = other_key(tmp_path, "elsewhere")
    sshd.trusted_hosts.write_text(f"other-host.example {elsewhere_line}\n")
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27] Load weight begin.\n")
    campaign = make_campaign(ssh_api)
    attempt = make_attempt(ssh_api, campaign["id"], source=f"ssh://{sshd.alias}{log}")

    tail = changed_tail(ssh_api, attempt["id"])
    assert tail["known_host_key"] == f"ssh-ed25519 {old_fingerprint}"
    assert tail["offered_host_key"].endswith(sshd.host_fingerprint)
    assert stored_log(ssh_api, attempt["id"]) == b""

    browser = owner_browser(ssh_api)
    page = browser.get(f"/attempts/{attempt['id']}").text
    assert "this host's key has changed" in page
    assert old_fingerprint in page and sshd.host_fingerprint in page
    assert "The host or the network failed" not in page
    csrf = csrf_of(page)

    # Without the confirmation nothing is written and the log stays unread.
    refused = browser.post(f"/attempts/{attempt['id']}/trust-host-key", data={"csrf_token": csrf})
    assert refused.status_code == 409
    assert 'data-form="trust-key" data-field="replace"' in refused.text
    assert ssh_api.post(f"/api/attempts/{attempt['id']}/trust-host-key").status_code == 409
    assert sshd.host_public_key not in sshd.trusted_hosts.read_text()

    confirmed = browser.post(
        f"/attempts/{attempt['id']}/trust-host-key", data={"csrf_token": csrf, "replace": "yes"}
    )
    assert confirmed.status_code == 303
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == log.read_bytes(), what="followed")
    trusted = sshd.trusted_hosts.read_text().splitlines()
    assert f"{host} ssh-ed25519 {sshd.host_public_key}" in trusted
    assert f"other-host.example {elsewhere_line}" in trusted, "other hosts keep their keys"
    assert sshd.known_hosts.read_text() == users_known_hosts, "the user's file is never written"
    browser.close()


def test_a_changed_key_the_dashboard_trusted_before_is_replaced_not_kept_beside(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    old_line, _ = other_key(tmp_path, "old")
    host = f"[127.0.0.1]:{sshd.port}"
    sshd.known_hosts.write_text("")
    sshd.trusted_hosts.write_text(f"{host} {old_line}\n")
    log = tmp_path / "server.log"
    log.write_bytes(b"hello\n")
    campaign = make_campaign(ssh_api)
    attempt = make_attempt(ssh_api, campaign["id"], source=f"ssh://{sshd.alias}{log}")
    changed_tail(ssh_api, attempt["id"])
    answer = ssh_api.post(f"/api/attempts/{attempt['id']}/trust-host-key?replace=true")
    assert answer.status_code == 200
    wait_for(lambda: stored_log(ssh_api, attempt["id"]) == b"hello\n", what="followed")
    assert sshd.trusted_hosts.read_text() == f"{host} ssh-ed25519 {sshd.host_public_key}\n"
