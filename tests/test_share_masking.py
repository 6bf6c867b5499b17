"""What a share link must never show: credentials, hosts, users.

One table of shapes, each planted everywhere an owner or a log can put text: the campaign's
description and notes, an attempt's title, hypothesis, command, typed flags and verdict, and
the log the tailer reads (its root cause, its excerpt, a figure's label). Every output is read
once for the whole table: the share page, its `.md`, its `.json` and its live stream, on a
masked link and on an unmasked one (which still hides credentials), and the owner's search
snippets and `flags` (credentials only: names are the owner's own). Rows of ordinary text
say what must stay readable.
"""

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app.redact import Redactor, secrets_only
from tests.helpers import (
    attempt_of,
    make_attempt,
    make_campaign,
    name_baseline_configuration,
    wait_for,
)
from tests.sse import SSEReader


@dataclass(frozen=True)
class Shape:
    name: str
    text: str  # as it appears in a command, a note or a log line
    hidden: tuple[str, ...] = ()  # none of these may be shown
    names: bool = False  # hidden as names (masked links only), not as credentials
    shown: tuple[str, ...] = ()  # each of these must be shown, masked link or not


HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GHP = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s1234"  # 36 after the prefix
PAT = "github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
NVAPI = "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"
WANDB = "6c1e2f3a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d0"
KEY_ID = "8f2e4a6c1b3d5f7e9a0c2e4f6a8b0d1c3e5f7a9b"
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
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
        ("Pa55w0rdXyz",),
    ),
    Shape(
        "credential-url-names",
        "pip install -i https://mirror-bot:Pa55w0rdXyz@pypi.corp.example.org/simple",
        ("mirror-bot", "pypi.corp.example.org"),
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
    Shape("api-key-padded", "--api-key QmFzZTY0S2V5VmFsdWU== --tp 8", ("QmFzZTY0S2V5VmFsdWU",)),
    Shape("api-key-colon", "--api-key svc-bot:Zx81Lq0pWm --tp 8", ("Zx81Lq0pWm",)),
    Shape("numeric-password", "PGPASSWORD=20240101 psql -h db -c 'select 1'", ("20240101",)),
    Shape("curl-user", "curl -u deploy:Tr0ub4dor3x -X POST /v1/reload", ("Tr0ub4dor3x",)),
    Shape("mysql-glued", "mysql -uroot -pMyS3cretPw -e 'select 1'", ("MyS3cretPw",)),
    Shape(
        "key-variables",
        "AZURE_OPENAI_KEY=3f9a1c7e2b8d4f60a5e1 OPENAI_KEY=plainOpenAiValue",
        ("3f9a1c7e2b8d4f60a5e1", "plainOpenAiValue"),
    ),
    Shape("wandb-login", f"wandb login {WANDB}", (WANDB,)),
    Shape(
        "gcp-key-id",
        f'{{"type": "service_account", "private_key_id": "{KEY_ID}"}}',
        (KEY_ID,),
    ),
    Shape("nvapi-key", f"catalog key {NVAPI} set", (NVAPI, "Xq3Lm9Zp2Wk7")),
    Shape(
        "redis-password",
        "REDIS_URL=redis://:R3disPassw0rd@cache-7.internal:6379/0",
        ("R3disPassw0rd",),
    ),
    Shape(
        "private-key-block",
        f"--ssl-key-data '-----BEGIN PRIVATE KEY----- {KEY_BODY} -----END PRIVATE KEY-----'",
        (KEY_BODY[:24],),
    ),
    # Names: shown to the owner and on unmasked links.
    Shape(
        "ipv6",
        "bound fe80::1%eth0, ::1 and 2001:db8::5",
        ("fe80::1", "::1", "2001:db8::5"),
        names=True,
    ),
    Shape(
        "short-host",
        "ssh alice@gpu-01.lab.example.com; later gpu-01 and GPU-01 hung",
        ("gpu-01", "lab.example.com", "alice"),
        names=True,
    ),
    Shape("home-user", "ran /home/jdoe/bench/run.sh as jdoe", ("jdoe",), names=True),
    Shape(
        "mac-user",
        "copied from /Users/mkowalski/Downloads/w.bin; mkowalski knows",
        ("mkowalski",),
        names=True,
    ),
    Shape("fqdn-host", "NCCL ring on gpu-box-22.corp.example.com up", ("gpu-box-22",), names=True),
    Shape("ec2-host", "worker ip-10-1-2-3.ec2.internal joined", ("ip-10-1-2-3",), names=True),
    Shape("hostname-flag", "--hostname node-a7 --nnodes 2", ("node-a7",), names=True),
    Shape("url-host", "GET http://inference-7:30000/v1 refused", ("inference-7",), names=True),
    Shape("tilde-path", "loaded ~/ckpts/eagle3-draft/w.bin", ("ckpts/eagle3",), names=True),
    Shape(
        "windows-path",
        "copied 'C:\\Users\\tkowal\\Downloads\\w.bin' over",
        ("tkowal", "Downloads"),
        names=True,
    ),
    Shape(
        "user-in-word",
        "okoro@gpu-box-9 started container sglang-okoro-7f9c",
        ("okoro",),
        names=True,
    ),
    # Ordinary text, masked link or not.
    Shape(
        "ordinary-flags",
        "--tp 8 --model-path meta-llama/Llama-3.1-8B-Instruct --port 30000 "
        "--mem-fraction-static 0.85",
        shown=("--tp 8", "meta-llama/Llama-3.1-8B-Instruct", "--port 30000", "static 0.85"),
    ),
    Shape(
        "log-numbers",
        "Decode batch. #running-req: 12, #token: 100, token usage: 0.31, "
        "gen throughput (token/s): 88.20",
        shown=("#token: 100", "token usage: 0.31", "88.20"),
    ),
    Shape(
        "public-hosts",
        "weights from https://huggingface.co/meta-llama and pip from https://pypi.org/simple",
        shown=("https://huggingface.co/meta-llama", "https://pypi.org/simple"),
    ),
    Shape(
        "versions",
        "torch 2.6.0.dev20250315, sglang.srt.managers.scheduler, NCCL version 2.21.5+cuda12.4",
        shown=("2.6.0.dev20250315", "sglang.srt.managers.scheduler", "2.21.5+cuda12.4"),
    ),
]
MODEL = "meta-llama/Llama-3-8B"
BASELINE = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 8"


def _log(tmp_path: Path, index: int, shape: Shape) -> Path:
    log = tmp_path / f"server-{index}.log"
    # A summary's label carries what its bracket holds: the figure's label is log text too.
    label = f"Request throughput [{shape.text}] (req/s):  6.05\n" if "]" not in shape.text else ""
    log.write_text(
        f"[2026-03-02 10:00:00] server_args=ServerArgs(model_path='{MODEL}', tp_size=8)\n"
        "[2026-03-02 10:00:01] Load weight begin. avail mem=93.41 GB\n"
        f"{label}"
        "Output token throughput (tok/s):          91.50\n"
        f"[2026-03-02 10:00:02] environment: {shape.text}\n"
        f"[2026-03-02 10:00:04] RuntimeError: weights store refused us: {shape.text}\n"
    )
    return log


def _probe(index: int) -> str:
    return f"probe-{index:03d}-x"


def _readable(text: str) -> str:
    """What a reader sees: HTML entities and Markdown's backslash escapes undone."""
    return html.unescape(re.sub(r"\\([\\`*_\[\]<>|~&$!#.+=-])", r"\1", text))


def _failures(shape: Shape, where: str, shown: str, *, names_hidden: bool) -> list[str]:
    lowered = shown.lower()
    failed = [f"{shape.name}: {kept!r} missing from {where}" for kept in shape.shown
              if kept not in shown]  # fmt: skip
    if shape.names and not names_hidden:
        return failed
    return failed + [
        f"{shape.name}: {hidden!r} shown in {where}"
        for hidden in shape.hidden
        if hidden.lower() in lowered
    ]


def test_every_shape_is_masked_in_every_output(
    api: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, description="\n\n".join(s.text for s in SHAPES))
    cid = campaign["id"]
    # Every attempt's flags are diffed against this one's: the diff is an output too.
    name_baseline_configuration(api, make_attempt(api, cid, title="Baseline", command=BASELINE))
    ids = [
        make_attempt(
            api, cid, title=f"{MODEL} {shape.text}"[:200], hypothesis=f"{_probe(i)} {shape.text}",
            command=f"{BASELINE} {shape.text}", flags=shape.text,
            source=f"file://{_log(tmp_path, i, shape)}",
        )["id"]
        for i, shape in enumerate(SHAPES)
    ]  # fmt: skip
    wait_for(
        lambda: all(
            (a := attempt_of(api, i))["metric_value"] == 91.5
            and (a["diagnosis"] or {}).get("crashed")
            for i in ids
        ),
        what="every log read: its figure and its crash",
    )
    for attempt_id, shape in zip(ids, SHAPES, strict=True):
        verdict = api.patch(f"/api/attempts/{attempt_id}", json={"verdict": shape.text})
        assert verdict.status_code == 200, verdict.text
        note = {"body": f"Dead end: {shape.text}"}
        assert api.post(f"/api/attempts/{attempt_id}/notes", json=note).status_code == 201

    tokens = {
        redact: api.post(f"/api/campaigns/{cid}/shares", json={"redact": redact}).json()["token"]
        for redact in (True, False)
    }
    streams = {redact: SSEReader(anonymous, f"/s/{t}/events") for redact, t in tokens.items()}
    outputs: list[tuple[str, str, bool]] = []  # where, what it shows, whether names are masked
    for redact, token in tokens.items():
        link = "masked" if redact else "unmasked"
        page, markdown = anonymous.get(f"/s/{token}"), anonymous.get(f"/s/{token}.md")
        exported = anonymous.get(f"/s/{token}.json")
        assert page.status_code == markdown.status_code == exported.status_code == 200
        shared = exported.json()["attempts"][1]
        assert "RuntimeError" in shared["diagnosis"]["root_cause"]  # masked, not dropped
        assert any("[" in f["label"] for f in shared["diagnosis"]["throughput"])
        outputs += [
            (f"the {link} page", _readable(page.text), redact),
            (f"the {link} .md", _readable(markdown.text), redact),
            (f"the {link} .json", json.dumps(exported.json(), ensure_ascii=False), redact),
        ]
    # Live: a new note reaches open share pages with the whole summary, masked the same way.
    live_note = "live note\n\n" + "\n\n".join(s.text for s in SHAPES)
    assert api.post(f"/api/campaigns/{cid}/notes", json={"body": live_note}).status_code == 201
    for redact, stream in streams.items():
        live = stream.until(lambda m: m.event == "share-summary" and "live note" in m.data)
        outputs.append((f"the {'masked' if redact else 'unmasked'} live stream",
                        _readable(live.data), redact))  # fmt: skip
        stream.close()

    failures = []
    for index, (attempt_id, shape) in enumerate(zip(ids, SHAPES, strict=True)):
        for where, shown, names_hidden in outputs:
            failures += _failures(shape, where, shown, names_hidden=names_hidden)
        # The owner's own views hide credentials and show names.
        hits = api.get("/api/search", params={"q": _probe(index)}).json()
        snippets = " ".join(hit["snippet"] for hit in hits)
        assert _probe(index) in snippets
        failures += _failures(shape, "the search snippet", snippets, names_hidden=False)
        read = attempt_of(api, attempt_id)
        assert read["flag_diff"] is not None, shape.name
        flags = json.dumps([read["flags"], read["flag_diff"]], ensure_ascii=False)
        credentials = Shape(shape.name, shape.text, shape.hidden, shape.names)  # no `shown`
        failures += _failures(credentials, "the owner's flags", flags, names_hidden=False)
    assert not failures, "\n".join(failures)
    ordinary = attempt_of(api, ids[[s.name for s in SHAPES].index("ordinary-flags")])["flags"]
    assert {k: ordinary["command"][k] for k in ("tp_size", "model_path", "port")} == {
        "tp_size": "8", "model_path": "meta-llama/Llama-3.1-8B-Instruct", "port": "30000"
    }  # fmt: skip
    assert ordinary["command"]["mem_fraction_static"] == "0.85"


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


CREDENTIALS = [s for s in SHAPES if s.hidden and not s.names]


@pytest.mark.parametrize("shape", CREDENTIALS, ids=[s.name for s in CREDENTIALS])
def test_credentials_go_by_their_shape_alone(shape: Shape) -> None:
    """Without a name learned from elsewhere, and in unmasked links too."""
    for shown in (secrets_only(shape.text), Redactor()(shape.text)):
        assert "[secret]" in shown
        assert not [secret for secret in shape.hidden if secret in shown], shown


@pytest.mark.parametrize("shape", CREDENTIALS, ids=[s.name for s in CREDENTIALS])
def test_masking_a_masked_text_again_leaves_it_as_it_is(shape: Shape) -> None:
    """A page masks what a view already masked (a flag summary, "+HF_TOKEN=[secret]")."""
    for mask in (secrets_only, Redactor()):
        once = mask(shape.text)
        assert mask(once) == once


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
        *(shape.text for shape in SHAPES if shape.shown),
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


def test_a_learned_host_masks_its_bare_name_not_a_public_site_that_starts_alike() -> None:
    mask = Redactor.learning(["pip -i https://bot:pw@pypi.corp.example.org/simple"])
    assert mask("pypi hung; from https://pypi.org/simple") == (
        "[host] hung; from https://pypi.org/simple"
    )


def test_the_owner_s_pages_show_a_command_with_its_credentials_masked(
    api: httpx.Client, browser: httpx.Client
) -> None:
    """A screen shared while the owner's page is open shows no token; the form that edits
    the command still holds it whole (saving it unchanged loses nothing)."""
    token = "hf_" + "abcdefghijklmnopqrstuvwx"
    command = f"HF_TOKEN={token} python -m sglang.launch_server --tp 8"
    campaign = make_campaign(api, name="Masked for the owner too")
    attempt = make_attempt(api, campaign["id"], title="with a token", command=command)
    page = browser.get(f"/attempts/{attempt['id']}").text
    summary = page[page.index("<dt>Command</dt>") :][:400]
    assert "HF_TOKEN=[secret] python -m sglang.launch_server" in html.unescape(summary)
    assert token not in summary
    edited = re.search(r'<textarea name="command"[^>]*>([^<]*)</textarea>', page)
    assert edited is not None and html.unescape(edited[1]) == command
