"""Read-only share links: an unguessable token (stored hashed) for one campaign's summary."""

import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from sqlalchemy import Engine
from sqlmodel import Session

from app import actions, hints, repo, views
from app.auth import sha256_hex
from app.changes import record
from app.db import session_scope
from app.errors import NotFound
from app.headline import Headline, headline
from app.markdown import inert_links, own_page_links_as_text, render_markdown
from app.models import Lane, Note, ShareLink, utcnow
from app.numbers import fmt_judgement
from app.redact import Redactor, secrets_only
from app.runner.outcomes import run_failure
from app.schemas import AttemptOut, CampaignDetailOut, NoteOut

TOKEN_BYTES = 24  # 192 bits from the OS's CSPRNG
Mask = Callable[[str | None], str]


def create(
    session: Session, campaign_id: int, *, expires_in_hours: float | None, redact: bool
) -> tuple[ShareLink, str]:
    actions.require_campaign(session, campaign_id)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    link = ShareLink(
        campaign_id=campaign_id,
        token_hash=sha256_hex(token),
        redact=redact,
        expires_at=utcnow() + timedelta(hours=expires_in_hours) if expires_in_hours else None,
    )
    session.add(link)
    session.flush()
    return link, token


def find(session: Session, token: str) -> ShareLink:
    """The live link for a token; revoked, expired and unknown ones are all simply not found."""
    link = repo.find_share_link(session, token_hash=sha256_hex(token))
    if link is None or not is_live(link):
        raise NotFound("no such share link (it may have been revoked or have expired)")
    return link


OPENED_RESOLUTION = timedelta(minutes=1)


def open_link(engine: Engine, token: str) -> None:
    """Note when the link was opened, in a transaction of its own and before the page is
    read (a snapshot cannot write): a view holds one connection at a time, never two.
    To the minute: a crowd of readers is not a crowd of writers for SQLite's one writer."""
    with session_scope(engine) as session:
        link = find(session, token)
        now = utcnow()
        if link.last_opened_at is None or link.last_opened_at < now - OPENED_RESOLUTION:
            repo.note_share_opened(session, link_id=link.id or 0, at=now)


def is_live(link: ShareLink) -> bool:
    if link.revoked_at is not None:
        return False
    return link.expires_at is None or link.expires_at > utcnow()


def revoke(session: Session, link: ShareLink) -> None:
    link.revoked_at = utcnow()
    session.add(link)
    # Open share streams of this campaign wake up and close themselves.
    record(session, link.campaign_id, "share")


def list_links(session: Session, campaign_id: int) -> list[ShareLink]:
    return repo.list_share_links(session, campaign_id=campaign_id)


def get_link(session: Session, link_id: int) -> ShareLink:
    link = repo.get_share_link(session, link_id=link_id)
    if link is None:
        raise NotFound(f"share link {link_id} not found")
    return link


class ShareOut(BaseModel):
    id: int
    token: str | None = None  # only in the answer that creates it: it is stored hashed
    url: str | None = None
    redact: bool
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_opened_at: datetime | None
    live: bool


def share_out(link: ShareLink, token: str | None = None, url: str | None = None) -> ShareOut:
    assert link.id is not None
    return ShareOut(
        id=link.id, token=token, url=url, redact=link.redact, created_at=link.created_at,
        expires_at=link.expires_at, revoked_at=link.revoked_at,
        last_opened_at=link.last_opened_at, live=is_live(link),
    )  # fmt: skip


def share_url(request: Request, token: str) -> str:
    base = request.app.state.settings.public_url or str(request.base_url)
    return f"{base.rstrip('/')}/s/{token}"


@dataclass
class SharedAttempt:
    attempt: AttemptOut
    notes: list[NoteOut]
    turning_point: str | None  # "retest of #3"

    @property
    def run_failed(self) -> str | None:
        """A launched run's failure its status does not say ("its benchmark failed")."""
        run = self.attempt.run
        return run_failure(self.attempt.status.value, run.outcome if run else None)


@dataclass
class Summary:
    campaign: CampaignDetailOut
    attempts: list[SharedAttempt]
    campaign_notes: list[NoteOut]
    best: AttemptOut | None
    headline: Headline
    mask: Mask  # what any other text of the campaign shown with it goes through


# The diagnosis's figures: numbers under labels, of which only the labels are masked (a few
# distinct ones, memoized) and nothing is learned from: hundreds per attempt made the whole
# walk most of a large campaign's masking time.
FIGURES = "throughput"


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != FIGURES:
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _masked(value: Any, mask: Mask) -> Any:
    """Every text in a dumped model, masked, keys too (a flag's name is read from a command):
    a field added later is covered too."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {
            mask(key): _figures(item, mask) if key == FIGURES else _masked(item, mask)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_masked(item, mask) for item in value]
    return value


def _figures(figures: Any, mask: Mask) -> Any:
    """Of the figures, only the labels are text; a summary's label can carry a bracket of
    the log's own words (`Output token throughput [gpu-box-22] (tok/s)`)."""
    if not isinstance(figures, list):
        return figures
    labels = {f.get("label") for f in figures if isinstance(f, dict)}
    masked = {label: mask(label) for label in labels if isinstance(label, str)}
    if all(shown == label for label, shown in masked.items()):
        return figures  # a few labels for hundreds of figures, most of them the engine's own
    return [
        {**f, "label": masked[f["label"]]} if isinstance(f, dict) and f.get("label") in masked
        else f
        for f in figures
    ]  # fmt: skip


def summary(session: Session, link: ShareLink) -> Summary:
    """The campaign's story for readers outside: verdicts, figures, causes and notes.
    One mask serves the page, both exports and the live stream, which all read this."""
    return story_of(session, link.campaign_id, redact=link.redact)


def story_of(session: Session, campaign_id: int, *, redact: bool) -> Summary:
    """A share link's summary, or (redact False) the owner's own export of it: secrets are
    masked in both."""
    campaign = actions.require_campaign(session, campaign_id)
    detail = views.campaign_detail(session, campaign)
    notes = repo.list_notes(session, campaign_id=campaign_id)
    campaign_data = detail.model_dump(exclude={"attempts"})
    # Connection details (the tail) are the owner's business; of the flags, what differs
    # from the baseline says the story, not the hundreds the engine echoed.
    attempts_data = [
        a.model_dump(exclude={"tail": True, "flags": {"logged"}})
        for a in detail.attempts
        if a.lane != Lane.refused  # a refused launch tested nothing: not part of the story
    ]
    mask: Mask = secrets_only
    if redact:
        texts = _strings([campaign_data, attempts_data, [n.body for n in notes]])
        mask = Redactor.learning(texts)
    masked = [
        AttemptOut.model_validate({**_masked(data, mask), "tail": None}) for data in attempts_data
    ]
    by_attempt: dict[int | None, list[NoteOut]] = {}
    for note in notes:
        by_attempt.setdefault(note.attempt_id, []).append(_note_out(note, mask))
    shared = []
    for attempt in masked:
        # Knowledge only: history hints name other campaigns, which are not this link's.
        attempt.hints = hints.knowledge(attempt.diagnosis, name_frame=False)
        # A retest after a pivot is the story's turning point; being blocked is no turn.
        turning = f"retest of #{attempt.retest_of}" if attempt.retest_of else None
        shared.append(SharedAttempt(attempt, by_attempt.get(attempt.id, []), turning))
    masked_campaign = CampaignDetailOut.model_validate(
        {**_masked(campaign_data, mask), "attempts": []}
    )
    story = headline(masked_campaign, masked)
    return Summary(masked_campaign, shared, by_attempt.get(None, []), story.best, story, mask)


def _note_out(note: Note, mask: Mask) -> NoteOut:
    """Rendered once, from the masked text."""
    assert note.id is not None
    body = own_page_links_as_text(mask(note.body))
    return NoteOut(**{**note.model_dump(), "body": body}, html=render_markdown(body))


# Characters that mean something inline to CommonMark or GitHub's Markdown: escaped, they
# show as typed (`[x](javascript:...)` is no link, `<script>` no tag, `|` no cell).
_MD_INLINE = re.compile(r"([\\`*_\[\]<>|~&$!#])")
_MD_LINE_START = re.compile(r"^(\d*)([-+=.)])")  # a list item or an underline, first thing


def _md_text(text: str | None) -> str:
    """Literal text on one line: a newline in a title would end its heading or list item."""
    flat = _MD_INLINE.sub(r"\\\1", " ".join((text or "").split()))
    return _MD_LINE_START.sub(r"\1\\\2", flat, count=1)


def _md_code(text: str) -> str:
    """An inline code span no backtick run inside the text can close."""
    flat = " ".join(text.split())
    longest = max((len(run) for run in re.findall("`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def _md_block(text: str) -> str:
    """Markdown of a note, kept inside its list item: continuation lines indented; its links
    held to the page's schemes (the `.md` is read in viewers that would follow the rest)."""
    # (an image is never loaded, as on the page: a link to it, named by its alt text)
    linked = _IMAGE.sub(lambda m: f"[image: {m.group(1) or 'image'}](", inert_links(_md(text)))
    return "\n  ".join(linked.strip().splitlines())


_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\(")


def _md(text: str | None) -> str:
    """Text for a Markdown document: any HTML in it is shown, never rendered."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(text: str) -> str:
    """A code block no backtick run inside the text can close."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def to_markdown(result: Summary) -> str:
    campaign = result.campaign
    metric = _md_text(campaign.metric)
    lines = [f"# {_md_text(campaign.name)}", ""]
    if campaign.description:
        lines += [_md_text(campaign.description), ""]
    baselines = " → ".join(f"{b.value:g}" for b in campaign.baseline_history)
    lines.append(
        f"- **Baseline:** {baselines} {metric}" if baselines else "- **Baseline:** not set"
    )
    if campaign.target is not None:
        lines.append(f"- **Target:** {campaign.target:g} {metric}")
    if result.best is not None and result.best.metric_value is not None:
        lines.append(
            f"- **Best adopted:** #{result.best.id} {_md_text(result.best.title)}: "
            f"{result.best.metric_value:.1f} {metric}"
        )
    lanes = [shared.attempt.lane.value for shared in result.attempts]
    lines += [
        f"- **Hypotheses:** {len(lanes)} ({lanes.count('eliminated')} eliminated, "
        f"{lanes.count('adopted')} adopted, {lanes.count('tested')} still in play)",
        "",
    ]
    lines += ["## Hypotheses, in the order tried", ""]
    for shared in result.attempts:
        attempt = shared.attempt
        figure = ""
        if attempt.metric_value is not None:
            figure = f" — {attempt.metric_value:.1f} {metric}"
            stats = attempt.stats
            said = fmt_judgement(stats.delta_pct, stats.delta_ci95_pct, stats.call.value, stats.n)
            if said:
                figure += f" ({said})"
        title = _md_text(attempt.title)
        failed = f", {shared.run_failed}" if shared.run_failed else ""
        lines.append(f"### #{attempt.id} {title} — {attempt.status.value}{failed}{figure}")
        if shared.turning_point:
            lines.append(f"*Turning point: {shared.turning_point}.*")
        if attempt.blocked_by:
            lines.append(f"*Blocked by #{attempt.blocked_by}.*")
        if attempt.hypothesis:
            lines.append(f"- Hypothesis: {_md_text(attempt.hypothesis)}")
        if attempt.flags.typed:
            lines.append(f"- Flags: {_md_code(attempt.flags.typed)}")
        if attempt.flag_diff is not None:
            lines.append(f"- Against #{attempt.flag_diff.baseline_attempt_id}: "
                         f"{_md_code(attempt.flag_diff.summary)}")  # fmt: skip
        if attempt.verdict:
            lines.append(f"- Verdict: {_md_text(attempt.verdict)}")
        diagnosis = attempt.diagnosis or {}
        if diagnosis.get("root_cause"):
            lines.append(f"- Root cause ({_md_text(diagnosis.get('error_class'))}):")
            lines += ["", _fence(diagnosis["root_cause"]), ""]
        if attempt.same_root_cause_as:
            same = ", ".join(f"#{i}" for i in attempt.same_root_cause_as)
            lines.append(f"- Same root cause as {same}")
        for note in shared.notes:
            lines.append(f"- Note: {_md_block(note.body)}")
        lines.append("")
    if result.campaign_notes:
        lines += ["## Notes", ""]
        lines += [f"- {_md_block(note.body)}" for note in result.campaign_notes]
        lines.append("")
    return "\n".join(lines)


def to_json(result: Summary) -> dict[str, object]:
    return {
        "campaign": result.campaign.model_dump(mode="json", exclude={"attempts", "notify"}),
        "best_adopted": result.best.model_dump(mode="json") if result.best else None,
        "attempts": [
            {
                **shared.attempt.model_dump(mode="json", exclude={"tail"}),
                "notes": [n.model_dump(mode="json") for n in shared.notes],
                "turning_point": shared.turning_point,
            }
            for shared in result.attempts
        ],
        "notes": [n.model_dump(mode="json") for n in result.campaign_notes],
    }
