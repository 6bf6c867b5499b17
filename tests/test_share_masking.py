"""What a share link must never show: credentials, hosts, users.

Each secret shape is planted everywhere an owner or a log can put text: the campaign's name,
description and notes, the attempt's title, hypothesis, command, flags and verdict, and the
log the tailer reads (its root cause and excerpt). None of it may reach the share page, its
`.md`, its `.json` or its live stream, while the story around it stays readable.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.redact import Redactor, secrets_only
from tests.helpers import attempt_of, make_attempt, make_campaign, wait_for
from tests.sse import SSEReader


@dataclass(frozen=True)
class Shape:
    name: str
    text: str  # as it appears in a command, a note or a log line
    hidden: tuple[str, ...]  # none of these may be shown
    names: bool = False  # hidden as names (masked links only), not as credentials


HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GHP = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s1234"  # 36 after the prefix
PAT = "github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
SHAPES = [
    Shape("hf-token", f"HF_TOKEN={HF}", (HF, "AbCdEfGhIjKlMnOp")),
    Shape("hf-token-bare", f"logged in with {HF} ok", (HF,)),
    Shape("openai-key", "client key sk-proj-Zr8vK2mN5qT1wX4yB7cE0fH3jL6pS9uA", ("Zr8vK2mN5qT1",)),
    Shape("anthropic-key", "ANTHROPIC_API_KEY=sk-ant-api03-Q1w2E3r4T5y6U7i8O9p0", ("Q1w2E3r4T5",)),
    Shape(
        "bearer",
        'curl -H "Authorization: Bearer Tz9Kq2Lm8Vn4Xb7Rc1Wd5Ye3" /v1/models',
        ("Tz9Kq2Lm8Vn4Xb7Rc1Wd5Ye3",),
    ),
    Shape("aws-access-key", "key id AKIAJ3Q5EXAMPLE7Z2WQ", ("AKIAJ3Q5EXAMPLE7Z2WQ",)),
    Shape(
        "aws-secret-key",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        ("wJalrXUtnFEMI", "EXAMPLEKEY"),
    ),
    Shape("github-token", f"pushed with {GHP} to https://{GHP}@github.com/o/r", (GHP,)),
    Shape("github-pat", f"GH_TOKEN={PAT}", ("github_pat_11AAAA", "abcdefghijklmnop")),
    Shape(
        "credential-url",
        "pip install -i https://mirror-bot:Pa55w0rdXyz@pypi.corp.example.org/simple",
        ("mirror-bot", "Pa55w0rdXyz", "pypi.corp.example.org"),
    ),
    Shape(
        "ipv6",
        "bound fe80::1%eth0, ::1 and 2001:db8::5",
        ("fe80::1", "::1", "2001:db8::5"),
        names=True,
    ),
    Shape(
        "short-host",
        "ssh alice@gpu-01.lab.example.com; later gpu-01 and GPU-01 hung",
        ("gpu-01", "GPU-01", "lab.example.com", "alice"),
        names=True,
    ),
    Shape("home-user", "ran /home/jdoe/bench/run.sh as jdoe", ("jdoe",), names=True),
    Shape(
        "mac-user",
        "copied from /Users/mkowalski/Downloads/w.bin; mkowalski knows",
        ("mkowalski",),
        names=True,
    ),
    Shape(
        "cli-flags",
        "--api-key Zq8r0pen1yK3y --api-key=Mx3s3cretValue --token T0k3nPlainValue "
        "--password 'hunter two' --hf-token PlainHfValue99 --ssl-keyfile-password Kf9pass",
        (
            "Zq8r0pen1yK3y",
            "Mx3s3cretValue",
            "T0k3nPlainValue",
            "hunter two",
            "PlainHfValue99",
            "Kf9pass",
        ),
    ),
]
MODEL = "meta-llama/Llama-3-8B"


def _log(tmp_path: Path, shape: Shape) -> Path:
    log = tmp_path / "server.log"
    log.write_text(
        f"[2026-03-02 10:00:00] server_args=ServerArgs(model_path='{MODEL}', tp_size=8)\n"
        "[2026-03-02 10:00:01] Load weight begin. avail mem=93.41 GB\n"
        "Output token throughput (tok/s):          91.50\n"
        f"[2026-03-02 10:00:02] environment: {shape.text}\n"
        f"[2026-03-02 10:00:04] RuntimeError: weights store refused us: {shape.text}\n"
    )
    return log


def _assert_masked(shown: str, shape: Shape, where: str) -> None:
    for hidden in shape.hidden:
        assert hidden not in shown, f"{shape.name}: {hidden!r} shown in {where}"
    assert MODEL in shown and "tok/s" in shown and "91.5" in shown, where


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_share_link_masks_every_secret_everywhere(
    shape: Shape, api: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, name=f"Campaign {shape.text}"[:200], description=shape.text)
    attempt = make_attempt(
        api, campaign["id"], title=f"{MODEL} {shape.text}"[:200], hypothesis=shape.text,
        command=f"python -m sglang.launch_server --model {MODEL} {shape.text}",
        flags=f"--model {MODEL} {shape.text}", source=f"file://{_log(tmp_path, shape)}",
    )  # fmt: skip
    read = wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["metric_value"] and a["status"] == "measured"
        and (a["diagnosis"] or {}).get("crashed") and a,
        what="the log read: its figure and its crash",
    )  # fmt: skip
    assert read["metric_value"] == 91.5 and shape.text in read["diagnosis"]["root_cause"]
    verdict = api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": shape.text})
    assert verdict.status_code == 200, verdict.text
    for path in (f"/api/attempts/{attempt['id']}/notes", f"/api/campaigns/{campaign['id']}/notes"):
        assert api.post(path, json={"body": f"Dead end: {shape.text}"}).status_code == 201

    created = api.post(f"/api/campaigns/{campaign['id']}/shares")  # no body: the defaults
    assert created.status_code == 201 and created.json()["redact"] is True
    token = created.json()["token"]
    stream = SSEReader(anonymous, f"/s/{token}/events")
    assert stream.status == 200

    page = anonymous.get(f"/s/{token}")
    markdown = anonymous.get(f"/s/{token}.md")
    exported = anonymous.get(f"/s/{token}.json")
    assert page.status_code == markdown.status_code == exported.status_code == 200
    body = exported.json()
    # The texts are there, masked, not dropped: the log's excerpt and the launch command too.
    shared = body["attempts"][0]
    assert MODEL in shared["command"] and "RuntimeError" in shared["diagnosis"]["root_cause"]
    assert "environment:" in shared["diagnosis"]["excerpt"]
    _assert_masked(page.text, shape, "the page")
    _assert_masked(markdown.text, shape, ".md")
    _assert_masked(json.dumps(body), shape, ".json")
    _assert_masked(exported.text, shape, ".json as sent")

    # Live: a new note reaches open share pages through the stream, masked the same way.
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": f"live note {shape.text}"})
    live = stream.until(lambda m: m.event == "share-summary" and "live note" in m.data).data
    _assert_masked(live, shape, "the live stream")


def test_an_unmasked_link_shows_names_but_never_credentials(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    shapes = [s for s in SHAPES if s.name in ("hf-token", "cli-flags", "credential-url")]
    campaign = make_campaign(api, description="on gpu-01.lab.example.com, /home/jdoe")
    make_attempt(api, campaign["id"], title="clear", command=" ".join(s.text for s in shapes))
    link = api.post(f"/api/campaigns/{campaign['id']}/shares", json={"redact": False}).json()
    exported = anonymous.get(f"/s/{link['token']}.json").text
    assert "gpu-01.lab.example.com" in exported and "/home/jdoe" in exported
    assert "mirror-bot" in exported and "pypi.corp.example.org" in exported
    for hidden in (HF, "Pa55w0rdXyz", "Zq8r0pen1yK3y", "hunter two", "Kf9pass"):
        assert hidden not in exported


CREDENTIALS = [s for s in SHAPES if not s.names]


@pytest.mark.parametrize("shape", CREDENTIALS, ids=[s.name for s in CREDENTIALS])
def test_credentials_go_by_their_shape_alone(shape: Shape) -> None:
    """Without a name learned from elsewhere, and in unmasked links too."""
    secrets = [h for h in shape.hidden if h not in ("mirror-bot", "pypi.corp.example.org")]
    for shown in (secrets_only(shape.text), Redactor()(shape.text)):
        assert "[secret]" in shown
        assert not [secret for secret in secrets if secret in shown], shown


@pytest.mark.parametrize(
    "text",
    [
        "Decode batch. #running-req: 12, #new-token: 8192, #token: 100, token usage: 0.31, "
        "gen throughput (token/s): 88.20",
        "server_args=ServerArgs(tokenizer_path='meta-llama/Llama-3-8B', skip_tokenizer_init=False, "
        "api_key=None, max_total_tokens=None, bos_token='<s>')",
        "--max-new-tokens 128 --tokenizer meta-llama/Llama-3-8B --num-speculative-tokens 3",
        "KeyError: 12 at 12:34:56, c10::Error, the token was refused",
        "--hf-token $HF_TOKEN",
    ],
)
def test_ordinary_log_text_is_left_alone(text: str) -> None:
    assert Redactor()(text) == text and secrets_only(text) == text


def test_names_found_in_one_text_are_masked_in_all() -> None:
    mask = Redactor.learning(
        ["ssh://tester@node7.hpc.internal:2222/var/log/x.log", "see /home/okafor/run"]
    )
    assert (
        mask("node7 and NODE7.hpc.internal; okafor, tester") == "[host] and [host]; [user], [user]"
    )
    # Accounts on every machine are masked where they log in, not as words.
    assert Redactor.learning(["root@10.0.0.1"])("root cause: root@10.0.0.1") == (
        "root cause: [user]@[host]"
    )
