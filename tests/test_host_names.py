"""Host names reach a shell: paramiko runs `Match exec "... %h"` lines of ~/.ssh/config through
one. A name OpenSSH would not take (whitespace, control characters, shell metacharacters) is
refused where it is given (a 422) and again in the ssh layer, before anything expands it."""

import threading
from pathlib import Path

import httpx
import pytest

from app.tailing.sources import BadSource, SourceURL
from app.tailing.ssh_pool import ConnectionPool, SSHOptions, resolve
from app.tailing.ssh_source import SSHSource
from app.tailing.status import TailStatus
from tests.cli import clean_env, free_port, serving
from tests.conftest import OWNER_TOKEN
from tests.helpers import csrf_of, make_attempt, make_campaign, wait_for
from tests.sshd import Sshd

BAD_HOSTS = [
    "gpu-box\tINJECTED_BY_TAB",
    "gpu-box id",
    "gpu-box\nid",
    "gpu-box\rid",
    "gpu-box\x0bid",
    "gpu-box\x01",
    "gpu-box\u00a0id",
    "a$(id)",
    "a`id`",
    "a;id",
    "a|id",
    "a&id",
    "a>id",
    "a(b)",
    "a{b,c}",
    "a*",
    "a?",
    "~root",
    "a%hb",
    "a'b",
    'a"b',
    "a\\b",
    "a!b",
    "a#b",
    "-oProxyCommand=id",
]
GOOD = ["gpu-box", "node_7.cluster", "10.0.0.7", "me@gpu-box", "me@gpu-box:2222"]


def with_match_exec(sshd: Sshd, directory: Path) -> Path:
    """The fixture's ssh config behind a `Match exec` line that touches a file named by %h
    in the working directory: a name that splits there shows up as extra files."""
    config = directory / "ssh_config"
    config.write_text('Match exec "touch INJECTED_%h"\n' + sshd.ssh_config.read_text())
    return config


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_source_or_run_host_no_shell_may_see_is_a_422(api: httpx.Client, host: str) -> None:
    campaign = make_campaign(api)
    attempts = f"/api/campaigns/{campaign['id']}/attempts"
    for body in (
        {"title": "t", "source": f"ssh://{host}/var/log/x.log"},
        {"title": "t", "launch": {"host": host, "command": "sleep 1"}},
    ):
        refused = api.post(attempts, json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert "not a host" in refused.text or "newlines" in refused.text
    attempt = make_attempt(api, campaign["id"])
    refused = api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"ssh://{host}/x"})
    assert refused.status_code == 422, refused.text
    user = api.post(attempts, json={"title": "t", "source": f"ssh://{host}@gpu-box/x"})
    assert user.status_code == 422, user.text


@pytest.mark.parametrize("host", GOOD)
def test_plain_host_names_and_aliases_are_taken(api: httpx.Client, host: str) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"ssh://{host}/var/log/x.log")
    assert attempt["source"] == f"ssh://{host}/var/log/x.log"


def test_the_attempt_form_refuses_such_a_host_too(browser: httpx.Client) -> None:
    page = browser.get("/")
    created = browser.post(
        "/campaigns", data={"name": "c", "csrf_token": csrf_of(page.text)}, follow_redirects=True
    )
    campaign_path = str(created.url.path)
    form = browser.get(campaign_path)
    refused = browser.post(
        f"{campaign_path}/attempts",
        data={
            "title": "t",
            "source": "ssh://gpu-box\tid/var/log/x.log",
            "csrf_token": csrf_of(form.text),
        },
    )
    assert refused.status_code == 422
    assert "not a host name" in refused.text


def test_a_served_dashboard_runs_no_shell_words_from_a_host(sshd: Sshd, tmp_path: Path) -> None:
    """The finding as it was met: a real `campaign-dash serve`, a real sshd, an ssh config
    with `Match exec`; a tab in the host added the words `INJECTED_BY_TAB` and `id`."""
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "server.log"
    log.write_text("starting\n")
    env = clean_env() | {
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{tmp_path / 'd.db'}",
        "CAMPAIGN_DASH_SSH_CONFIG": str(with_match_exec(sshd, tmp_path)),
        "CAMPAIGN_DASH_SSH_KNOWN_HOSTS": str(sshd.known_hosts),
        "CAMPAIGN_DASH_TRUSTED_HOSTS_FILE": str(tmp_path / "trusted"),
        "CAMPAIGN_DASH_SSH_AGENT": "false",
    }
    port = free_port()
    with (
        serving(env, work, port),
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
            timeout=20,
        ) as api,
    ):
        campaign = make_campaign(api)
        attempts = f"/api/campaigns/{campaign['id']}/attempts"
        for host in ("gpu-box\tINJECTED_BY_TAB", "gpu-box\tid", "gpu-box\nid"):
            for body in (
                {"title": "t", "source": f"ssh://{host}{log}"},
                {"title": "t", "launch": {"host": host, "command": "sleep 1"}},
            ):
                assert api.post(attempts, json=body).status_code == 422
        # The same config with a plain alias: the Match exec line runs (so it would have
        # run for the names above) and the log is followed.
        good = make_attempt(api, campaign["id"], source=f"ssh://gpu-box{log}")
        wait_for(
            lambda: (api.get(f"/api/attempts/{good['id']}").json()["tail"] or {}).get("bytes_read"),
            what="the plain alias's log to be read",
        )
    made = sorted(path.name for path in work.iterdir() if not path.name.startswith("serve-"))
    # %h is the alias, then its HostName on paramiko's final pass: nothing else was made.
    assert made == ["INJECTED_127.0.0.1", "INJECTED_gpu-box"]


def test_the_ssh_layer_refuses_such_a_host_before_reading_the_config(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source stored before the API refused such names reaches the ssh layer: it refuses
    it too, and its tail says why instead of retrying."""
    monkeypatch.chdir(tmp_path)
    options = SSHOptions(
        config_path=with_match_exec(sshd, tmp_path),
        known_hosts=(sshd.known_hosts,),
        trusted_hosts_file=tmp_path / "trusted",
        use_agent=False,
    )
    for host, user in (("gpu-box\tINJECTED_BY_TAB", None), ("gpu-box", "me\tid")):
        url = SourceURL("ssh", "/var/log/x.log", host=host, user=user)
        with pytest.raises(BadSource):
            resolve(url, options)
        events = list(SSHSource(url, ConnectionPool(options)).follow(0, None, threading.Event()))
        assert events[-1].state == TailStatus.error and "not a" in events[-1].message
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("INJECTED")) == []
    assert not (tmp_path / "id").exists()
