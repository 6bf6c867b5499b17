"""The owner's campaign page kept rendered between requests, and shared with its live view:
each attempt's card with the attempt's view, the head, the timeline. Each is keyed by the
stored data it shows (never by this process's own notice of a change), so after one attempt
changes, on any dashboard of the database, only its card and the head are rendered anew."""

import functools
import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import Request
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from sqlmodel import Session

from app import repo, views
from app.headline import headline
from app.models import Campaign
from app.pages.chart import build_chart
from app.pages.rendering import CSRF_MARK, render_fragment
from app.pauses import Pauses
from app.schemas import AttemptOut, CampaignOut

CARD = "partials/_attempt_card.html"
# Where a card goes in the timeline's skeleton (`timeline`): ids between two of these.
CARD_SLOT = secrets.token_hex(16)
T = TypeVar("T")


@dataclass(frozen=True)
class Shared:
    """A rendering for every owner's session alike: made with CSRF_MARK where a token goes,
    each viewer's own token put in as it is served."""

    parts: tuple[str, ...]

    @classmethod
    def of(cls, html: str) -> "Shared":
        return cls(tuple(html.split(CSRF_MARK)))

    def html(self, csrf_token: str) -> Markup:
        return Markup(csrf_token.join(self.parts))

    def encoded(self, csrf_token: str) -> bytes:
        return csrf_token.encode().join(self._encoded)

    @functools.cached_property
    def _encoded(self) -> tuple[bytes, ...]:
        return tuple(part.encode() for part in self.parts)


@dataclass(frozen=True)
class Card:
    key: Hashable  # what it was rendered from (`CampaignRenders._card_keys`)
    view: AttemptOut  # the page's view (its diagnosis as a card has it): shared, never changed
    notes: int
    html: Markup  # for the owner, not hidden by a filter, CSRF_MARK for a token
    clock: bool  # it shows a time that moves on its own: rendered for every reader
    in_head: tuple[Any, ...]  # what the head shows of it (`shown_in_head`)


@dataclass
class _Held:
    context: Hashable  # what every card of the campaign depends on
    cards: dict[int, Card] = field(default_factory=dict)
    parts: dict[str, tuple[Hashable, Any]] = field(default_factory=dict)  # head, timeline...


def shown_in_head(attempt: AttemptOut) -> tuple[Any, ...]:
    """What the head (app/headline.py, app/pages/chart.py) shows of an attempt: its figures,
    and for one without a figure what became of it (crashed, eliminated, why), which moves
    no lane (a running attempt found crashed stays tested)."""
    diagnosis = attempt.diagnosis or {}
    return (attempt.id, attempt.title, attempt.lane, attempt.metric_value, attempt.baseline,
            attempt.delta_pct, attempt.delta_within_noise, attempt.improved, attempt.stats.call,
            attempt.stats.ci95, attempt.stats.delta_ci95_pct, attempt.status, attempt.verdict,
            diagnosis.get("crashed"), diagnosis.get("root_cause"),
            diagnosis.get("pending"))  # fmt: skip


class CampaignRenders:
    """The latest renderings of the campaigns viewed last, up to `cards` cards in all (a
    1,000-attempt campaign holds about 11 MiB: its views, cards, timeline and head), the
    one viewed now always; safe across threads (the renderings themselves are made outside
    the lock: two threads may both make one)."""

    def __init__(
        self, templates: Jinja2Templates, pauses: Pauses | None = None, *, cards: int = 5000
    ) -> None:
        self.templates = templates
        self.pauses = pauses or Pauses()  # held in memory only: part of each card's key
        self._cards = cards
        self._held: OrderedDict[int, _Held] = OrderedDict()
        self._lock = threading.Lock()

    def cards(self, session: Session, campaign: Campaign) -> dict[int, Card]:
        """Every card of the campaign, in id order, as of the session's snapshot: the
        stamps are read first, so a card is at least as new as the key it is kept under."""
        assert campaign.id is not None
        stamps = repo.card_stamps(session, campaign_id=campaign.id)
        basis = views.CardBasis.read(session, campaign.id)
        context = self._context(campaign, stamps, basis)
        held = self._get(campaign.id)
        kept: dict[int, Card] = {}
        if held is not None and held.context == context:
            # The kept object: each card's key then compares it by identity, at no cost.
            context, kept = held.context, held.cards
        paused = self.pauses.waiting()
        keys = self._card_keys(context, stamps, paused)
        stale = [i for i, key in keys.items() if i not in kept or kept[i].key != key]
        made = self._render(session, campaign, stale, keys, stamps, basis, paused) if stale else {}
        cards = {i: made[i] if i in made else kept[i] for i in keys}
        with self._lock:
            now = self._held.get(campaign.id)
            if now is None or now.context != context:
                now = self._held[campaign.id] = _Held(context)
            now.cards = {i: card for i, card in cards.items() if not card.clock}
            self._held.move_to_end(campaign.id)
            while (
                len(self._held) > 1 and sum(len(h.cards) for h in self._held.values()) > self._cards
            ):
                self._held.popitem(last=False)
        return cards

    @staticmethod
    def _context(
        campaign: Campaign, stamps: dict[int, repo.CardStamp], basis: views.CardBasis
    ) -> Hashable:
        """What every card depends on: the campaign's figures' unit and noise band, the
        baseline history, the attempts flags and runs are compared against (their stamps:
        a re-measured baseline changes every call)."""
        compared = {c.attempt_id for c in basis.history if c.attempt_id is not None}
        return (
            campaign.metric, campaign.noise_pct, campaign.higher_is_better,
            tuple((c.id, c.value, c.attempt_id, c.set_at) for c in basis.history),
            tuple((i, stamps.get(i)) for i in sorted(compared)),
        )  # fmt: skip

    @staticmethod
    def _card_keys(
        context: Hashable, stamps: dict[int, repo.CardStamp], paused: Mapping[int, int]
    ) -> dict[int, Hashable]:
        """Each card's key: the context, its stamp, the earlier attempts that failed the
        same way (so what is made of the cards, the timeline, is keyed by the context too),
        and what a full disk holds back of its log."""
        earlier: dict[str, list[int]] = {}
        keys: dict[int, Hashable] = {}
        for attempt_id, stamp in stamps.items():  # in id order: the earlier ones first
            same: list[int] = []
            if stamp.fingerprint:
                same = earlier.setdefault(stamp.fingerprint, [])
            keys[attempt_id] = (context, stamp, tuple(same), paused.get(attempt_id))
            if stamp.fingerprint:
                same.append(attempt_id)
        return keys

    def _render(
        self,
        session: Session,
        campaign: Campaign,
        ids: list[int],
        keys: dict[int, Hashable],
        stamps: dict[int, repo.CardStamp],
        basis: views.CardBasis,
        paused: Mapping[int, int],
    ) -> dict[int, Card]:
        assert campaign.id is not None
        attempts = repo.attempts_by_ids(session, attempt_ids=ids, with_diagnosis=False)
        diagnoses = repo.diagnosis_summaries(session, campaign_id=campaign.id, attempt_ids=ids)
        made = views.attempt_views(
            session, campaign, attempts, diagnoses=diagnoses, basis=basis, paused=paused
        )
        cards = {}
        for view in made:
            notes, clock = stamps[view.id].notes, stamps[view.id].clock
            html = self.card_html(campaign, view, notes)
            cards[view.id] = Card(keys[view.id], view, notes, html, clock, shown_in_head(view))
        return cards

    def card_html(
        self,
        campaign: Campaign | CampaignOut,
        view: AttemptOut,
        notes: int,
        *,
        hidden: bool = False,
    ) -> Markup:
        """`hidden`: filtered out by the page's own filter (such a card is not kept)."""
        context = {"campaign": campaign, "attempt": view, "note_counts": {view.id: notes},
                   "hidden_ids": {view.id} if hidden else ()}  # fmt: skip
        html = render_fragment(self.templates, CARD, context, is_owner=True, csrf_token=CSRF_MARK)
        return Markup(html)

    def head(self, campaign: CampaignOut, cards: Iterable[Card]) -> Shared:
        """The head: the campaign's story and chart, rendered when what it shows changed."""
        listed = list(cards)

        def make() -> Shared:
            attempts = [card.view for card in listed]
            context = {"campaign": campaign, "headline": headline(campaign, attempts),
                       "chart_data": build_chart(campaign, attempts)}  # fmt: skip
            return self._shared("partials/_campaign_head.html", context)

        # Each card's own tuple: a kept card's compares by identity, at no cost.
        key = (campaign.model_dump_json(), tuple(card.in_head for card in listed))
        return self._kept(campaign.id, "head", key, make)

    def timeline(
        self, campaign_id: int, cards: Iterable[Card], context: dict[str, Any], *, keep: bool
    ) -> Shared:
        """The timeline, from the cards' renderings; `keep`: as every reader sees it (no
        filter), kept for them."""
        listed = list(cards)

        def make() -> Shared:
            return self._shared("partials/_timeline.html", context)

        def skeleton() -> tuple[tuple[str, ...], tuple[int, ...]]:
            """The timeline with a slot for each card: the text between slots, and the ids."""
            slots = {c.view.id: Markup(f"{CARD_SLOT}{c.view.id}{CARD_SLOT}") for c in listed}
            pieces = render_fragment(self.templates, "partials/_timeline.html",
                                     {**context, "card_html": slots}, is_owner=True,
                                     csrf_token=CSRF_MARK).split(CARD_SLOT)  # fmt: skip
            return tuple(pieces[0::2]), tuple(int(i) for i in pieces[1::2])

        def spliced() -> Shared:
            # The cards put in the skeleton's slots at once: a thousand cards through the
            # template were copied three times over, the most of a timeline's rendering. The
            # skeleton is kept while the lanes hold the same attempts in the same order.
            shape = (tuple((lane, tuple(a.id for a in attempts))
                           for lane, attempts in context["lanes"].items()),
                     context.get("fold_open"))  # fmt: skip
            between, ids = self._kept(campaign_id, "skeleton", shape, skeleton)
            html = {c.view.id: c.html for c in listed}
            cards = [html[i] for i in ids] + [""]
            pieces = itertools.chain.from_iterable(zip(between, cards, strict=True))
            return Shared.of("".join(pieces))

        if not keep or any(c.clock for c in listed):
            return make()
        key = tuple((c.view.id, c.key) for c in listed)
        return self._kept(campaign_id, "timeline", key, spliced)

    def options(self, campaign_id: int, attempts: list[AttemptOut]) -> Markup:
        """The attempts as options of the new-attempt form's lists (macros.html)."""

        def make() -> Markup:
            macros = self.templates.env.get_template("macros.html").module
            options: Markup = macros.attempt_options(attempts)  # type: ignore[attr-defined]
            return options

        return self._kept(campaign_id, "options", tuple((a.id, a.title) for a in attempts), make)

    def _shared(self, template: str, context: dict[str, Any]) -> Shared:
        return Shared.of(
            render_fragment(self.templates, template, context, is_owner=True, csrf_token=CSRF_MARK)
        )

    def _get(self, campaign_id: int) -> _Held | None:
        with self._lock:
            return self._held.get(campaign_id)

    def _kept(self, campaign_id: int, part: str, key: Hashable, make: Callable[[], T]) -> T:
        """The part kept under `key`, or made now and kept."""
        held = self._get(campaign_id)
        found = held.parts.get(part) if held is not None else None
        if found is not None and found[0] == key:
            kept: T = found[1]
            return kept
        made = make()
        with self._lock:
            held = self._held.get(campaign_id)
            if held is not None:
                held.parts[part] = (key, made)
        return made


def campaign_renders(request: Request) -> CampaignRenders:
    renders: CampaignRenders = request.app.state.campaign_renders
    return renders
