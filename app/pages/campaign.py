"""The campaign page: its context (attempts by lane, the head's story and chart, the filter,
the forms; what grows with the attempts kept rendered in app/pages/campaign_renders.py), its
live partials and its live renderer."""

from typing import Any

from fastapi import Request
from sqlmodel import Session

from app import actions, pivots, repo, sharing, views, watching
from app.models import Status
from app.pages.campaign_renders import CampaignRenders, campaign_renders
from app.pages.live import (
    ADDED,
    MEASURED,
    REMOVED,
    SHAPE,
    STATUS,
    TITLE,
    LivePage,
    LivePartial,
    PageEntry,
    PageRenderer,
    Subject,
    event_kinds,
)

PAGE = LivePage(
    "campaign",
    (
        # The chart's points and the best result name their attempts: a title is shown.
        LivePartial("partials/_campaign_head.html", "campaign-head", kinds=event_kinds("campaign"),
                    on=frozenset({ADDED, REMOVED, STATUS, MEASURED, TITLE}), ready="head_rendered"),
        # A new or deleted attempt, or one that moves lane, changes the timeline's shape.
        LivePartial("partials/_timeline.html", "timeline", kinds=event_kinds("campaign"), on=SHAPE,
                    ready="timeline_rendered"),
        LivePartial("partials/_attempt_card.html", "card-{id}",
                    kinds=event_kinds("attempt", "note"), each=True, within="timeline"),
        # Adopting a pivot, or retesting what it unblocked, changes the offer.
        LivePartial("partials/_pivot_offer.html", "pivot-offer", on=SHAPE),
        LivePartial("partials/_attempt_choices.html", "attempt-choices",
                    on=frozenset({ADDED, REMOVED, TITLE})),
        LivePartial("partials/_campaign_notes_list.html", "campaign-notes",
                    kinds=event_kinds("note")),
        # A webhook that starts failing, or comes back, records a campaign event.
        LivePartial("partials/_alerts.html", "alerts", kinds=event_kinds("campaign")),
        LivePartial("partials/_watches.html", "watches", kinds=event_kinds("campaign")),
    ),
)  # fmt: skip


FOLD_OPEN_UP_TO = 12
ALERT_EVENTS = (
    ("ready", "ready"), ("crashed", "crashed"), ("measured", "measured"),
    ("better", "better than the baseline"), ("run_failed", "a launched run failed"),
    ("stalled", "a silent log while starting"),
)  # fmt: skip


def campaign_context(
    session: Session,
    campaign_id: int,
    renders: CampaignRenders,
    *,
    retest: int | None = None,
    filter: views.AttemptFilter | None = None,
) -> dict[str, Any]:
    """The page's context, its cards, head and timeline from `renders` (rendered anew only
    where what they show changed); the rest read for each request: the forms, the notes,
    the share links."""
    campaign = actions.require_campaign(session, campaign_id)
    cards = renders.cards(session, campaign)
    attempts = [card.view for card in cards.values()]
    detail = views.campaign_view(session, campaign, attempt_count=len(attempts))
    filter = filter or views.AttemptFilter()
    hidden = {a.id for a in attempts if not filter.matches(a)}
    lanes = views.lanes_newest_first(attempts)
    context = {
        "campaign": detail,
        "attempts": attempts,
        "lanes": lanes,
        "filter": filter,
        "statuses": [s.value for s in Status],
        "hidden_ids": hidden,
        # Dead ends are part of the story: their fold is open unless they are many; a filter
        # that finds some opens it (without script too).
        "fold_open": any(a.id not in hidden for a in lanes["eliminated"])
        if filter.active
        else len(lanes["eliminated"]) <= FOLD_OPEN_UP_TO,
        "card_html": {
            i: renders.card_html(detail, card.view, card.notes, hidden=True)
            if i in hidden
            else card.html
            for i, card in cards.items()
        },
        "campaign_notes": [
            views.note_view(n) for n in repo.campaign_notes(session, campaign_id=campaign_id)
        ],
        "shares": [sharing.share_out(link) for link in sharing.list_links(session, campaign_id)],
        # Read in the render's own snapshot: the page's live stream starts right after it,
        # so a change committed between the render and the stream's start is not missed.
        "live_cursor": repo.newest_event_id(session, campaign_id),
        "new_attempt": _new_attempt_defaults(attempts, retest),
        "pivot_offer": pivots.standing_offer(attempts),
        "notify": views.notify_view(session, campaign),
        "alert_events": ALERT_EVENTS,
        "watches": watching.watches_of(session, campaign_id),
    }
    context["attempt_options"] = renders.options(campaign_id, attempts)
    context["head_rendered"] = renders.head(detail, cards.values())
    context["timeline_rendered"] = renders.timeline(
        campaign_id, cards.values(), context, keep=not filter.active
    )
    return context


def _new_attempt_defaults(attempts: list[Any], retest: int | None) -> dict[str, Any]:
    """The new-attempt form, pre-filled from the attempt being retested."""
    original = next((a for a in attempts if a.id == retest), None)
    if original is None:
        return {}
    return {
        "title": f"Retest: {original.title}"[:200],
        "hypothesis": original.hypothesis,
        "command": original.command,
        "flags": original.flags.typed,  # typed beside the command; its own flags come with it
        # A launched attempt's log is its run's: the retest's run writes a new one.
        "source": "" if original.run is not None else original.source or "",
        "retest_of": str(original.id),
    }


def campaign_view(renders: CampaignRenders, campaign_id: int) -> PageRenderer:
    """The page's live renderer: its context and cards from the same kept renderings as
    the page's own request."""

    def cards(
        session: Session, context: dict[str, Any] | None, ids: list[int]
    ) -> dict[int, dict[str, Any] | str]:
        if context is not None:
            rendered: dict[int, str] = context["card_html"]
        else:
            # The cards as the page keeps them: only the changed ones are rendered.
            campaign = repo.get_campaign(session, campaign_id=campaign_id)
            if campaign is None:
                return {}
            rendered = {i: card.html for i, card in renders.cards(session, campaign).items()}
        return {i: rendered[i] for i in ids if i in rendered}

    return PageRenderer(
        renders.templates,
        PAGE,
        lambda session: campaign_context(session, campaign_id, renders),
        shapes=lambda session: repo.attempt_shapes(session, campaign_id=campaign_id),
        cards=cards,
    )


def _stream_view(request: Request, subject: Subject) -> PageRenderer:
    return campaign_view(campaign_renders(request), subject.campaign_id)


ENTRY = PageEntry(PAGE, _stream_view)
