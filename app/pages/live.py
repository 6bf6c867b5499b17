"""What every live page shares: how a page declares its partials (the event kinds and the
changes to its attempts that refresh each, the SSE event each travels as), how the registry
holds a page, and how a batch of events becomes a view's messages, rendered once for all."""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from sqlmodel import Session
from sse_starlette import ServerSentEvent

from app import repo, views
from app.live import Message, Render
from app.models import LiveEvent
from app.pages.rendering import CSRF_BYTES, CSRF_MARK, render_fragment
from app.pauses import Pauses

# What can change about a campaign's attempts between two batches, beyond their cards.
ADDED, REMOVED, STATUS, TITLE, CAUSE, MEASURED = (
    "added", "removed", "status", "title", "cause", "measured"
)  # fmt: skip
EVERY_CHANGE = frozenset({ADDED, REMOVED, STATUS, TITLE, CAUSE, MEASURED})
SHAPE = frozenset({ADDED, REMOVED, STATUS, CAUSE})  # which cards there are, in which lane


@dataclass(frozen=True)
class LivePartial:
    template: str
    event: str  # the SSE event name; "{id}" is the attempt's id
    kinds: frozenset[str] = frozenset()  # event kinds that re-render it whole
    on: frozenset[str] = frozenset()  # changes to the attempts that re-render it whole
    each: bool = False  # one per changed attempt (its card), instead of the whole
    within: str | None = None  # the whole partial it is part of: re-rendered, it is too
    append: bool = False  # a log event's new lines, appended where they go
    # The page context's rendering of it, kept for every owner (app/pages/campaign_renders.py).
    ready: str | None = None


@dataclass(frozen=True)
class LivePage:
    name: str
    partials: tuple[LivePartial, ...]


def event_kinds(*names: str) -> frozenset[str]:
    return frozenset(names)


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


def json_renderer(pauses: Pauses) -> Render:
    """The contract of PRODUCT.md: attempt, log, note (and campaign) events as JSON; an
    attempt with its tail as the API shows it (paused by a full disk: app/pauses.py)."""

    def render(session: Session, events: list[LiveEvent], _memory: Any) -> list[Message]:
        return json_messages(session, events, pauses.waiting())

    return render


def json_messages(
    session: Session, events: list[LiveEvent], paused: Mapping[int, int]
) -> list[Message]:
    messages = []
    for event in events:
        data: Any
        if event.kind == "attempt" and event.attempt_id is not None:
            attempt = repo.get_attempt(session, attempt_id=event.attempt_id)
            data = (
                views.attempt_view(session, attempt, paused).model_dump(mode="json")
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
        with_id = event.id is not None  # none: touched in memory only (app/live.py)
        messages.append(message(event.id or 0, event.kind, json.dumps(data), with_id=with_id))
    return messages


# --- pages --------------------------------------------------------------------------


# Each changed attempt's partial: its context, or its rendering for the owner, made ready.
Cards = Callable[[Session, dict[str, Any] | None, list[int]], dict[int, dict[str, Any] | str]]


class PageRenderer:
    """Renders a page's partials for one batch: whole partials first (no id), then the
    log's appended lines (each with its event's id), the batch's last id on the last
    message, so a stream cut mid-batch resumes without a line lost or doubled.

    `context` builds the whole page's context; `shapes` (a campaign's pages) tells what
    changed about its attempts since the last batch, so that a change to one attempt
    renders its card from `cards` alone, without the whole page's context."""

    def __init__(
        self,
        templates: Jinja2Templates,
        page: LivePage,
        context: Callable[[Session], dict[str, Any]],
        *,
        attempt_id: int | None = None,
        is_owner: bool = True,
        shapes: Callable[[Session], dict[int, tuple[Any, ...]]] | None = None,
        cards: Cards | None = None,
    ) -> None:
        self.templates, self.page, self.context = templates, page, context
        self.attempt_id = attempt_id
        self.is_owner = is_owner
        self.shapes, self.cards = shapes, cards

    def prime(self, session: Session, memory: dict[str, Any]) -> None:
        if self.shapes is not None:
            memory["known"] = self.shapes(session)

    def _fragment(self, partial: LivePartial, context: dict[str, Any] | str) -> str:
        if isinstance(context, str):
            return context
        ready = context.get(partial.ready) if partial.ready else None
        if ready is not None:
            return str(ready.html(CSRF_MARK))
        csrf = CSRF_MARK if self.is_owner else ""
        return render_fragment(
            self.templates, partial.template, context, is_owner=self.is_owner, csrf_token=csrf
        )

    def __call__(
        self, session: Session, events: list[LiveEvent], memory: dict[str, Any] | None
    ) -> list[Message]:
        # Without an id: attempts touched in memory only (app/live.py, Bus.touch), sent
        # without an event id and no cursor to move.
        unstored = events[-1].id is None
        last = events[-1].id or 0
        if self.attempt_id is not None:
            events = [e for e in events if e.attempt_id in (None, self.attempt_id)]
        kinds = {e.kind for e in events}
        changes: frozenset[str] = frozenset()
        if self.shapes is not None and kinds - {"log"}:
            changes = attempt_changes(self.shapes(session), memory)
        whole = [
            p
            for p in self.page.partials
            if not p.each and not p.append and (p.kinds & kinds or p.on & changes)
        ]
        redone = {p.event for p in whole if p.within is None}
        whole = [p for p in whole if p.within not in redone]
        context = self.context(session) if whole else None
        if context is not None and context.get("gone"):
            # The attempt was deleted: the page goes where the context says (its campaign).
            return [message(last, "reload", str(context["gone"]))]
        parts: list[tuple[str, LivePartial, dict[str, Any] | str]] = [
            (p.event.format(id=self.attempt_id), p, context or {}) for p in whole
        ]
        for p in self.page.partials:
            if p.each and p.within not in redone and self.cards is not None:
                changed = sorted(
                    {e.attempt_id for e in events if e.kind in p.kinds and e.attempt_id}
                )
                if changed:
                    found = self.cards(session, context, changed)
                    parts += [(p.event.format(id=i), p, found[i]) for i in changed if i in found]
        appends = [
            m for p in self.page.partials if p.append for m in self._appended(session, p, events)
        ]
        out = [
            message(last, name, self._fragment(p, ctx),
                    with_id=not unstored and not appends and n == len(parts) - 1)
            for n, (name, p, ctx) in enumerate(parts)
        ]  # fmt: skip
        out += appends
        if unstored:
            return out
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


def attempt_changes(
    shapes: dict[int, tuple[Any, ...]], memory: dict[str, Any] | None
) -> frozenset[str]:
    """What changed about the campaign's attempts since the broadcaster's last batch (its
    memory); a reader catching up alone has no memory: anything may have."""
    if memory is None or "known" not in memory:
        if memory is not None:
            memory["known"] = shapes
        return EVERY_CHANGE
    before: dict[int, tuple[Any, ...]] = memory["known"]
    memory["known"] = shapes
    changes = set()
    if shapes.keys() - before.keys():
        changes.add(ADDED)
    if before.keys() - shapes.keys():
        changes.add(REMOVED)
    for attempt_id, (status, title, cause, *measured) in shapes.items():
        was = before.get(attempt_id)
        if was is not None:
            pairs = ((STATUS, status, was[0]), (TITLE, title, was[1]), (CAUSE, cause, was[2]),
                     (MEASURED, measured, list(was[3:])))  # fmt: skip
            changes.update(name for name, now, then in pairs if now != then)
    return frozenset(changes)


# --- the registry's entries ---------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """What one live stream of a page is of: a campaign and, on a page of one attempt or of
    one share link, that attempt or link."""

    campaign_id: int
    attempt_id: int | None = None
    token: str | None = None


# A page's live renderer for one stream; the request brings the app's templates and the
# renderings it keeps.
RendererFactory = Callable[[Request, Subject], PageRenderer]


@dataclass(frozen=True)
class PageEntry:
    """A page as the registry (app/pages/__init__.py) holds it: its live declaration and
    its live renderer's factory."""

    page: LivePage
    renderer: RendererFactory
    of_attempt: bool = False  # one attempt's page: its stream needs the attempt

    @property
    def name(self) -> str:
        return self.page.name
