"""The live views, declared in one place: which partials each page has, the event kinds
(and the changes to its attempts) that refresh each, the SSE event each travels as; and
how a batch of events becomes the messages of a view, rendered once for all its readers."""

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.templating import Jinja2Templates
from sqlmodel import Session
from sse_starlette import ServerSentEvent

from app import repo, views
from app.live import Message, Render
from app.models import LiveEvent
from app.rendering import render_fragment

# Stands in for the owner's CSRF token in a rendering shared by every session; random per
# process, so no log line or note can forge it. Each stream puts its own token in.
CSRF_MARK = secrets.token_hex(16)
CSRF_BYTES = CSRF_MARK.encode()

# What can change about a campaign's attempts between two batches, beyond their cards.
ADDED, REMOVED, STATUS, TITLE = "added", "removed", "status", "title"
EVERY_CHANGE = frozenset({ADDED, REMOVED, STATUS, TITLE})


@dataclass(frozen=True)
class LivePartial:
    template: str
    event: str  # the SSE event name; "{id}" is the attempt's id
    kinds: frozenset[str] = frozenset()  # event kinds that re-render it whole
    on: frozenset[str] = frozenset()  # changes to the attempts that re-render it whole
    each: bool = False  # one per changed attempt (its card), instead of the whole
    within: str | None = None  # the whole partial it is part of: re-rendered, it is too
    append: bool = False  # a log event's new lines, appended where they go


@dataclass(frozen=True)
class LivePage:
    name: str
    partials: tuple[LivePartial, ...]


def _kinds(*names: str) -> frozenset[str]:
    return frozenset(names)


CAMPAIGN_PAGE = LivePage(
    "campaign",
    (
        LivePartial("partials/_campaign_head.html", "campaign-head",
                    kinds=_kinds("attempt", "note", "campaign")),
        # A new or deleted attempt, or one that moves lane, changes the timeline's shape.
        LivePartial("partials/_timeline.html", "timeline", kinds=_kinds("campaign"),
                    on=frozenset({ADDED, REMOVED, STATUS})),
        LivePartial("partials/_attempt_card.html", "card-{id}", kinds=_kinds("attempt", "note"),
                    each=True, within="timeline"),
        LivePartial("partials/_attempt_choices.html", "attempt-choices",
                    on=frozenset({ADDED, REMOVED, TITLE})),
        LivePartial("partials/_campaign_notes_list.html", "campaign-notes", kinds=_kinds("note")),
    ),
)  # fmt: skip

ATTEMPT_PAGE = LivePage(
    "attempt",
    (
        LivePartial("partials/_attempt_summary.html", "attempt-{id}",
                    kinds=_kinds("attempt", "campaign")),
        LivePartial("partials/_tail_state.html", "tail-{id}", kinds=_kinds("attempt")),
        LivePartial("partials/_log_lines.html", "log-{id}", kinds=_kinds("log"), append=True),
        LivePartial("partials/_status_choice.html", "status-{id}", kinds=_kinds("attempt")),
        LivePartial("partials/_attempt_notes_list.html", "notes-{id}", kinds=_kinds("note")),
    ),
)  # fmt: skip

SHARE_PAGE = LivePage(
    "share",
    (
        LivePartial("partials/_share_summary.html", "share-summary",
                    kinds=_kinds("attempt", "note", "campaign", "share")),
    ),
)  # fmt: skip

PAGES = {page.name: page for page in (CAMPAIGN_PAGE, ATTEMPT_PAGE, SHARE_PAGE)}


def message(upto: int, event: str, data: str, *, with_id: bool = True) -> Message:
    raw = ServerSentEvent(data=data, event=event, id=str(upto) if with_id else None).encode()
    return Message(upto, tuple(raw.split(CSRF_BYTES)))


# --- JSON ---------------------------------------------------------------------------

LOG_LINES_PER_EVENT = 500


def _log_lines(session: Session, event: LiveEvent) -> list[str]:
    assert event.attempt_id is not None
    start = event.start_offset or 0
    lines = views.log_range(session, event.attempt_id, None, start, event.end_offset or start)
    return [text for _, text, _, _ in lines[-LOG_LINES_PER_EVENT:]]


def json_render(session: Session, events: list[LiveEvent], _memory: Any) -> list[Message]:
    """The contract of PRODUCT.md: attempt, log, note (and campaign) events as JSON."""
    messages = []
    for event in events:
        data: Any
        if event.kind == "attempt" and event.attempt_id is not None:
            attempt = repo.get_attempt(session, attempt_id=event.attempt_id)
            data = (
                views.attempt_view(session, attempt).model_dump(mode="json")
                if attempt
                else {"id": event.attempt_id, "deleted": True}
            )
        elif event.kind == "log":
            data = {"attempt_id": event.attempt_id, "lines": _log_lines(session, event),
                    "offset": event.start_offset, "end": event.end_offset}  # fmt: skip
        elif event.kind == "note" and event.note_id is not None:
            note = repo.get_note(session, note_id=event.note_id)
            data = (
                views.note_view(note).model_dump(mode="json")
                if note
                else {"id": event.note_id, "attempt_id": event.attempt_id, "deleted": True}
            )
        elif event.kind == "campaign":
            campaign = repo.get_campaign(session, campaign_id=event.campaign_id)
            if campaign is None:
                continue
            data = views.campaign_detail(session, campaign).model_dump(
                mode="json", exclude={"attempts"}
            )
        else:
            continue
        assert event.id is not None
        messages.append(message(event.id, event.kind, json.dumps(data)))
    return messages


# --- pages --------------------------------------------------------------------------


class PageRenderer:
    """Renders a page's partials for one batch: whole partials first (no id), then the
    log's appended lines (each with its event's id), the batch's last id on the last
    message, so a stream cut mid-batch resumes without a line lost or doubled."""

    def __init__(
        self,
        templates: Jinja2Templates,
        page: LivePage,
        context: Callable[[Session, dict[str, Any] | None], dict[str, Any] | None],
        *,
        attempt_id: int | None = None,
        is_owner: bool = True,
    ) -> None:
        self.templates, self.page, self.context = templates, page, context
        self.attempt_id = attempt_id
        self.is_owner = is_owner

    def _fragment(self, partial: LivePartial, context: dict[str, Any]) -> str:
        csrf = CSRF_MARK if self.is_owner else ""
        return render_fragment(
            self.templates, partial.template, context, is_owner=self.is_owner, csrf_token=csrf
        )

    def __call__(
        self, session: Session, events: list[LiveEvent], memory: dict[str, Any] | None
    ) -> list[Message]:
        last = events[-1].id
        assert last is not None
        if self.attempt_id is not None:
            events = [e for e in events if e.attempt_id in (None, self.attempt_id)]
        kinds = {e.kind for e in events}
        shown = [p for p in self.page.partials if not p.append and (p.kinds & kinds or p.on)]
        context = self.context(session, memory) if shown and kinds else {}
        if context.get("gone"):
            return [message(last, "reload", "")]  # the attempt was deleted: the page says so
        changes: frozenset[str] = context.get("changes", frozenset())
        # (event name, template, context) of each whole partial, then of each card.
        parts: list[tuple[str, LivePartial, dict[str, Any]]] = []
        for p in shown:
            if not p.each and (p.kinds & kinds or p.on & changes):
                parts.append((p.event.format(id=self.attempt_id), p, context))
        redone = {p.event for _, p, _ in parts}
        by_id = context.get("attempts_by_id", {})
        for p in shown:
            if p.each and p.within not in redone:
                changed = {e.attempt_id for e in events if e.kind in p.kinds and e.attempt_id}
                parts += [
                    (p.event.format(id=i), p, {**context, "attempt": by_id[i]})
                    for i in sorted(changed)
                    if i in by_id
                ]
        appends = [
            m for p in self.page.partials if p.append for m in self._appended(session, p, events)
        ]
        out = [
            message(last, name, self._fragment(p, ctx), with_id=not appends and n == len(parts) - 1)
            for n, (name, p, ctx) in enumerate(parts)
        ]
        out += appends
        if not out or (appends and appends[-1].upto < last):
            out.append(message(last, "cursor", ""))  # nothing more to show; the cursor moves on
        return out

    def _appended(
        self, session: Session, partial: LivePartial, events: list[LiveEvent]
    ) -> list[Message]:
        logs = [e for e in events if e.kind in partial.kinds and e.attempt_id == self.attempt_id]
        if not logs or self.attempt_id is None:
            return []
        found = repo.get_attempt(session, attempt_id=self.attempt_id)
        if found is None:
            return []
        attempt = views.attempt_view(session, found)
        out = []
        for event in logs:
            assert event.id is not None
            start = event.start_offset or 0
            end = event.end_offset or start
            lines = views.log_range(
                session, attempt.id, attempt.diagnosis, start, end, whole_lines=True
            )[-LOG_LINES_PER_EVENT:]
            html = self._fragment(partial, {"attempt": attempt, "log_lines": lines})
            out.append(message(event.id, partial.event.format(id=self.attempt_id), html))
        return out


def attempt_changes(attempts: list[Any], memory: dict[str, Any] | None) -> frozenset[str]:
    """What changed about the campaign's attempts since the broadcaster's last batch (its
    memory); a reader catching up alone has no memory: anything may have."""
    known = {a.id: (a.status, a.title) for a in attempts}
    if memory is None or "known" not in memory:
        if memory is not None:
            memory["known"] = known
        return EVERY_CHANGE
    before: dict[int, tuple[Any, str]] = memory["known"]
    memory["known"] = known
    changes = set()
    if known.keys() - before.keys():
        changes.add(ADDED)
    if before.keys() - known.keys():
        changes.add(REMOVED)
    for attempt_id, (status, title) in known.items():
        if attempt_id in before:
            if before[attempt_id][0] != status:
                changes.add(STATUS)
            if before[attempt_id][1] != title:
                changes.add(TITLE)
    return frozenset(changes)


def campaign_view(templates: Jinja2Templates, campaign_id: int) -> Render:
    from app.routes.pages import campaign_context  # the page's own context

    def context(session: Session, memory: dict[str, Any] | None) -> dict[str, Any]:
        found = campaign_context(session, campaign_id)
        return {**found, "changes": attempt_changes(found["attempts"], memory)}

    return PageRenderer(templates, CAMPAIGN_PAGE, context)


def attempt_page_view(templates: Jinja2Templates, attempt_id: int) -> Render:
    from app.routes.pages import attempt_context

    def context(session: Session, _memory: dict[str, Any] | None) -> dict[str, Any]:
        if repo.get_attempt(session, attempt_id=attempt_id) is None:
            return {"gone": True}
        return attempt_context(session, attempt_id, with_log=False)

    return PageRenderer(templates, ATTEMPT_PAGE, context, attempt_id=attempt_id)


def share_view(templates: Jinja2Templates, context: Callable[[Session], dict[str, Any]]) -> Render:
    return PageRenderer(templates, SHARE_PAGE, lambda s, _m: context(s), is_owner=False)
