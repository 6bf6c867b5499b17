"""HTML pages and their forms: plain posts that redirect, or partials when htmx asks."""

import asyncio
import math
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import HTMLResponse, RedirectResponse, Response

from app import actions, alerts, repo, sharing, views, watching
from app.auth import SESSION_COOKIE, SESSION_MAX_AGE_S
from app.db import session_scope
from app.deps import SessionDep, owner_auth, require_csrf, require_page_owner, session_cookie
from app.errors import Invalid
from app.forms import Form as PageForm
from app.forms import FormRefused
from app.models import Status
from app.pages.attempt import attempt_context, deleted_url
from app.pages.campaign import campaign_context
from app.pages.campaign_renders import campaign_renders
from app.pages.campaigns import campaigns_context
from app.pages.compare import compare_context, parse_ids
from app.pages.rendering import is_htmx, render
from app.pages.search import parse_query, search_context
from app.schemas import (
    AttemptCreate,
    AttemptUpdate,
    CampaignCreate,
    CampaignUpdate,
    MeasurementCreate,
    NoteCreate,
    NotifyIn,
    WatchIn,
)
from app.tailing.factory import log_source_refusal, trust_offered_key
from app.throttle import TokenThrottle, client_address, refusal_detail

router = APIRouter(include_in_schema=False)
NOTES = "partials/_campaign_notes.html"  # a campaign's notes, as a form's answer


async def submitted_form(request: Request) -> FormData:
    """The posted form, read on the loop (it is I/O); the handlers that take it are plain
    functions, run in worker threads, so their database work never blocks the loop."""
    return await request.form()


FormDep = Annotated[FormData, Depends(submitted_form)]
OwnerPage = [Depends(require_page_owner)]
OwnerForm = [Depends(require_csrf)]


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


# --- login -----------------------------------------------------------------


@router.get("/login")
async def login(request: Request, token: str | None = None, next: str = "/") -> Response:
    """The login page; with a token, the login (throttled per address: app/throttle.py)."""
    if token is None:
        return await run_in_threadpool(
            render, request, "pages/login.html", {"error": None, "next": next}
        )
    throttle: TokenThrottle = request.app.state.token_throttle
    address = client_address(request.scope)
    wait = throttle.wait_left(address)
    if wait > 0:
        refused = await run_in_threadpool(
            render, request, "pages/login.html",
            {"error": refusal_detail(wait), "next": next},
            status_code=429,
        )  # fmt: skip
        refused.headers["retry-after"] = str(math.ceil(wait))
        return refused
    if not owner_auth(request).token_ok(token):
        await asyncio.sleep(throttle.failed(address))  # the guess's cost, off the loop's back
        return await run_in_threadpool(
            render, request, "pages/login.html",
            {"error": "That token is not valid.", "next": next}, status_code=401,
        )  # fmt: skip
    throttle.succeeded(address)
    return await run_in_threadpool(logged_in, request, next)


def logged_in(request: Request, next: str) -> Response:
    # Only local paths: a login link must not become an open redirect.
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = see_other(target)
    response.set_cookie(
        SESSION_COOKIE,
        owner_auth(request).open_session(),  # a database write: in a worker thread
        httponly=True,
        samesite="lax",
        secure=request.app.state.settings.secure_cookies,
        max_age=SESSION_MAX_AGE_S,
    )
    return response


@router.post("/login")
async def login_form(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/"
) -> Response:
    return await login(request, token=token, next=next)


@router.post("/logout", dependencies=OwnerForm)
def logout(request: Request) -> Response:
    """Ends this browser's session (CSRF-checked: a forged logout is a nuisance attack)."""
    owner_auth(request).end_session(session_cookie(request))
    response = see_other("/login")
    response.delete_cookie(SESSION_COOKIE)
    return response


# --- campaigns -------------------------------------------------------------


@router.get("/", response_class=HTMLResponse, dependencies=OwnerPage)
def campaign_list(request: Request, session: SessionDep) -> Response:
    return render(
        request, "pages/campaigns.html", campaigns_context(session),
        partial="partials/_campaign_list.html",
    )  # fmt: skip


CAMPAIGN_FIELDS = [
    "name", "metric", "baseline", "target", "description", "noise_pct", "higher_is_better"
]  # fmt: skip


@router.post("/campaigns", dependencies=OwnerForm)
def create_campaign(request: Request, session: SessionDep, submitted: FormDep) -> Response:
    form = PageForm(submitted, "new-campaign", "campaigns")
    with form:
        campaign = actions.create_campaign(session, form.parse(CampaignCreate, CAMPAIGN_FIELDS))
    return see_other(f"/campaigns/{campaign.id}")


@router.get("/campaigns/{campaign_id}", response_class=HTMLResponse, dependencies=OwnerPage)
def campaign_page(
    campaign_id: int,
    request: Request,
    session: SessionDep,
    retest: int | None = None,
    status: Annotated[str, Query(max_length=20)] = "",
    q: Annotated[str, Query(max_length=200)] = "",
    deleted: Annotated[int | None, Query(ge=1, le=repo.MAX_ID)] = None,
) -> Response:
    """The live timeline; `?status=&q=` shows only the attempts that match (the filter form);
    `?deleted=` says that attempt was deleted (where its delete lands)."""
    if status and status not in Status.__members__:
        raise Invalid(f"no such status {status!r}: one of {', '.join(Status)}")
    chosen = views.AttemptFilter(status=Status(status) if status else None, q=q.strip())
    renders = campaign_renders(request)
    context = campaign_context(session, campaign_id, renders, retest=retest, filter=chosen)
    if deleted is not None and repo.get_attempt(session, attempt_id=deleted) is None:
        # Said only while it is true; once: app.js takes `deleted` off the address.
        context["flash"] = {"text": f"#{deleted} deleted", "param": "deleted"}
    return render(request, "pages/campaign.html", context, partial="partials/_timeline.html")


@router.post("/campaigns/{campaign_id}/edit", dependencies=OwnerForm)
def edit_campaign(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "edit-campaign", "campaign", campaign_id)
    with form:
        fields = ["name", "baseline", "target", "description", "noise_pct", "bench_pattern"]
        # An emptied target field removes the target.
        typed_target = form.data.get("target")
        emptied = isinstance(typed_target, str) and typed_target.strip() == ""
        no_target = {"target": None} if emptied else {}
        cleared = form.cleared(["description", "bench_pattern"])
        data = form.parse(CampaignUpdate, fields, **cleared, **no_target)
        actions.update_campaign(session, campaign_id, data)
    return see_other(f"/campaigns/{campaign_id}")


@router.post("/campaigns/{campaign_id}/alerts", dependencies=OwnerForm)
def set_alerts(campaign_id: int, session: SessionDep, submitted: FormDep) -> Response:
    """The alerts form: the moments ticked, the webhooks kept, the URLs added."""
    form = PageForm(submitted, "alerts", "campaign", campaign_id)
    with form:
        campaign = actions.require_campaign(session, campaign_id)
        removed = {v for v in submitted.getlist("remove") if isinstance(v, str)}
        kept = [w.url for w in alerts.webhooks(session, campaign_id) if str(w.id) not in removed]
        typed = form.data.get("add")
        added = typed.split() if isinstance(typed, str) else []
        events = [v for v in submitted.getlist("events") if isinstance(v, str)]
        data = form.parse(NotifyIn, [], urls=kept + added, events=events)
        alerts.set_notify(session, campaign, data.urls, list(data.events))
    return see_other(f"/campaigns/{campaign_id}#alerts")


@router.post("/campaigns/{campaign_id}/watches", dependencies=OwnerForm)
def add_watch(campaign_id: int, session: SessionDep, submitted: FormDep) -> Response:
    form = PageForm(submitted, "watch", "campaign", campaign_id)
    with form:
        data = form.parse(WatchIn, ["source"])
        watching.create_watch(session, campaign_id, data.source)
    return see_other(f"/campaigns/{campaign_id}#watches")


@router.post("/watches/{watch_id}/import", dependencies=OwnerForm)
def import_watched(watch_id: int, session: SessionDep, submitted: FormDep) -> Response:
    campaign_id = watching.require_watch(session, watch_id).campaign_id
    form = PageForm(submitted, "watch", "campaign", campaign_id)
    with form:
        name = form.data.get("name")
        offered = name if isinstance(name, str) else ""
        attempt_id = watching.import_offered(session, watch_id, offered)
    return see_other(f"/campaigns/{campaign_id}#attempt-{attempt_id}")


@router.post("/watches/{watch_id}/delete", dependencies=OwnerForm)
def delete_watch(watch_id: int, session: SessionDep, submitted: FormDep) -> Response:
    campaign_id = watching.require_watch(session, watch_id).campaign_id
    form = PageForm(submitted, "watch", "campaign", campaign_id)
    with form:
        watching.delete_watch(session, watch_id)
    return see_other(f"/campaigns/{campaign_id}#watches")


@router.post("/campaigns/{campaign_id}/delete", dependencies=OwnerForm)
def delete_campaign(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "delete-campaign", "campaign", campaign_id)
    with form:
        form.require_confirmation()
        actions.delete_campaign(session, campaign_id)
    return see_other("/")


ATTEMPT_FIELDS = ["title", "hypothesis", "command", "flags", "source", "retest_of", "blocked_by"]


@router.post("/campaigns/{campaign_id}/attempts", dependencies=OwnerForm)
def create_attempt(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "new-attempt", "campaign", campaign_id)
    data = form.parse(AttemptCreate, ATTEMPT_FIELDS)
    # A stat, in this worker thread: a hung network file system holds this request only.
    refusal = log_source_refusal(request.app.state.settings, data.source)
    if refusal:
        raise form.refuse({"source": refusal})
    with form:
        actions.create_attempt(session, campaign_id, data)
    return _campaign_answer(request, session, campaign_id, "partials/_timeline.html")


@router.post("/campaigns/{campaign_id}/notes", dependencies=OwnerForm)
def add_campaign_note(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "campaign-note", "campaign", campaign_id)
    with form:
        actions.add_campaign_note(session, campaign_id, form.parse(NoteCreate, ["body"]))
    return _campaign_answer(request, session, campaign_id, NOTES, anchor="notes")


@router.post("/campaigns/{campaign_id}/shares", dependencies=OwnerForm)
def create_share(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "share", "campaign", campaign_id)
    hours = form.data.get("expires_in_hours")
    try:
        expires = float(hours) if isinstance(hours, str) and hours.strip() else None
    except ValueError:
        raise form.refuse({"expires_in_hours": "a number of hours, or empty for never"}) from None
    if expires is not None and not 0 < expires <= 24 * 366:
        raise form.refuse({"expires_in_hours": "between a few minutes and a year"})
    with form:
        _, token = sharing.create(
            session, campaign_id, expires_in_hours=expires, redact=form.data.get("redact") == "on"
        )
    session.flush()
    # Shown once, on this answer only: the token is stored hashed.
    context = {
        **campaign_context(session, campaign_id, campaign_renders(request)),
        "new_share_url": sharing.share_url(request, token),
    }
    return render(request, "pages/campaign.html", context, partial="partials/_shares.html")


@router.post("/shares/{link_id}/revoke", dependencies=OwnerForm)
def revoke_share(link_id: int, request: Request, session: SessionDep) -> Response:
    link = sharing.get_link(session, link_id)
    sharing.revoke(session, link)
    return see_other(f"/campaigns/{link.campaign_id}#shares")


# --- attempts --------------------------------------------------------------


@router.get("/compare", response_class=HTMLResponse, dependencies=OwnerPage)
def compare_page(
    request: Request,
    session: SessionDep,
    # (none ticked: the same word as one ticked, not "Field required")
    ids: Annotated[list[str], Query(max_length=200)] = [],  # noqa: B006 (FastAPI copies it)
    by: Literal["id"] | None = None,
) -> Response:
    """2 to 8 attempts side by side (`?ids=3,7,9`), in that order; ticked on a campaign's
    page, `by=id`: the earliest first, the one the others are marked against."""
    chosen = parse_ids(ids)
    if by == "id":
        chosen.sort()
    return render(request, "pages/compare.html", compare_context(session, chosen))


@router.get("/search", response_class=HTMLResponse, dependencies=OwnerPage)
def search_page(
    request: Request, session: SessionDep, q: Annotated[str, Query(max_length=2000)] = ""
) -> Response:
    """Every campaign's matches for q, best first, as `GET /api/search` orders them."""
    query = parse_query(q)
    context = {**search_context(session, query), "search_q": query}
    return render(request, "pages/search.html", context, partial="partials/_search_results.html")


@router.get("/attempts/{attempt_id}", response_class=HTMLResponse, dependencies=OwnerPage)
def attempt_page(attempt_id: int, request: Request, session: SessionDep) -> Response:
    return render(
        request,
        "pages/attempt.html",
        attempt_context(session, attempt_id, paused=request.app.state.pauses.waiting()),
        partial="partials/_attempt_detail.html",
    )


@router.post("/attempts/{attempt_id}/status", dependencies=OwnerForm)
def change_status(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "status", "attempt", attempt_id)
    data = form.parse(AttemptUpdate, ["status", "verdict"])
    # The box says "when adopting": ticked or not, it means nothing for another verdict.
    data.set_baseline = data.status == Status.adopted and form.data.get("set_baseline") == "on"
    # Only this form shows the mark: a card's Eliminate, without it, leaves it as it is.
    if form.data.get("stack_mark") == "shown":
        data.stack_blocked = form.data.get("stack_blocked") == "on"
    if data.status == Status.eliminated and not (data.verdict or "").strip():
        raise form.refuse({"verdict": "say why it is a dead end: eliminating needs a verdict"})
    with form:
        if data.status == actions.require_attempt(session, attempt_id).status:
            # The form shows the status the attempt has: saved unchanged, it edits the verdict
            # (a verdict given again with other words is refused: it is final).
            data.status, data.set_baseline = None, False
        attempt = actions.update_attempt(session, attempt_id, data)
    if form.data.get("return_to") == "campaign" and not is_htmx(request):
        # From a card's Eliminate: back to the campaign, at the card.
        return see_other(f"/campaigns/{attempt.campaign_id}#attempt-{attempt_id}")
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/edit", dependencies=OwnerForm)
def edit_attempt(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "edit-attempt", "attempt", attempt_id)
    fields = ["title", "hypothesis", "command", "source"]  # the flags are read from the command
    # "#7" or "7" links; emptied, the link is cleared.
    links = {
        name: value.strip().lstrip("#").strip() or None
        for name in ("retest_of", "blocked_by")
        if isinstance(value := form.data.get(name), str)
    }
    with form:
        cleared = form.cleared(["hypothesis", "command"])
        data = form.parse(AttemptUpdate, fields, **cleared, **links)
        if data.source == actions.require_attempt(session, attempt_id).source:
            data = data.model_copy(update={"source": None})  # shown as it is: not attached anew
        refusal = log_source_refusal(request.app.state.settings, data.source)
        if refusal:
            raise form.refuse({"source": refusal})
        actions.update_attempt(session, attempt_id, data)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/baseline-configuration", dependencies=OwnerForm)
def name_baseline_configuration(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "baseline-configuration", "attempt", attempt_id)
    with form:
        actions.update_attempt(session, attempt_id, AttemptUpdate(baseline_configuration=True))
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/delete", dependencies=OwnerForm)
def delete_attempt(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "delete-attempt", "attempt", attempt_id)
    with form:
        form.require_confirmation()
        campaign_id = actions.delete_attempt(session, attempt_id)
    return see_other(deleted_url(campaign_id, attempt_id))


@router.post("/attempts/{attempt_id}/measurements", dependencies=OwnerForm)
def add_measurement(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "measure", "attempt", attempt_id)
    with form:
        actions.add_measurement(session, attempt_id, form.parse(MeasurementCreate, ["value"]).value)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/trust-host-key", dependencies=OwnerForm)
def trust_host_key(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "trust-key", "attempt", attempt_id)
    with form:
        source, key_line, known = actions.offered_host_key(session, attempt_id)
    if known and form.data.get("replace") != "yes":
        raise form.refuse({"replace": "tick the box to replace the old key"}, 409)
    trust_offered_key(request.app.state.settings, source, key_line)
    request.app.state.tailer.restart(attempt_id)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/notes", dependencies=OwnerForm)
def add_attempt_note(
    attempt_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "attempt-note", "attempt", attempt_id)
    with form:
        actions.add_attempt_note(session, attempt_id, form.parse(NoteCreate, ["body"]))
    return _attempt_answer(request, session, attempt_id, anchor="notes")


@router.post("/notes/{note_id}/edit", dependencies=OwnerForm)
def edit_note(note_id: int, request: Request, session: SessionDep, submitted: FormDep) -> Response:
    note = actions.require_note(session, note_id)
    page, page_id = (
        ("attempt", note.attempt_id) if note.attempt_id else ("campaign", note.campaign_id)
    )
    form = PageForm(submitted, f"note-{note_id}", page, page_id)
    with form:
        note = actions.edit_note(session, note_id, form.parse(NoteCreate, ["body"]))
    return _note_owner_answer(request, session, note.campaign_id, note.attempt_id)


@router.post("/notes/{note_id}/delete", dependencies=OwnerForm)
def delete_note(note_id: int, request: Request, session: SessionDep) -> Response:
    note = actions.delete_note(session, note_id)
    return _note_owner_answer(request, session, note.campaign_id, note.attempt_id)


def _note_owner_answer(
    request: Request, session: SessionDep, campaign_id: int, attempt_id: int | None
) -> Response:
    if attempt_id is not None:
        return _attempt_answer(request, session, attempt_id, anchor="notes")
    return _campaign_answer(request, session, campaign_id, NOTES, anchor="notes")


def _campaign_answer(
    request: Request, session: SessionDep, campaign_id: int, partial: str, anchor: str = ""
) -> Response:
    """After a campaign page's form: the part it changed, for htmx; else back to the page."""
    if is_htmx(request):
        session.flush()
        context = campaign_context(session, campaign_id, campaign_renders(request))
        return render(request, partial, context)
    return see_other(f"/campaigns/{campaign_id}" + (f"#{anchor}" if anchor else ""))


def _attempt_answer(
    request: Request, session: SessionDep, attempt_id: int, anchor: str = ""
) -> Response:
    if is_htmx(request):
        session.flush()
        return render(
            request, "partials/_attempt_detail.html", attempt_context(session, attempt_id)
        )
    return see_other(f"/attempts/{attempt_id}" + (f"#{anchor}" if anchor else ""))


# --- refused forms ---------------------------------------------------------

# The fragment an htmx form replaces, by form; a plain form gets its whole page again.
_FRAGMENT_OF_FORM = {
    "status": "partials/_attempt_detail.html",
    "measure": "partials/_attempt_detail.html",
    "edit-attempt": "partials/_attempt_detail.html",
    "baseline-configuration": "partials/_attempt_detail.html",
    "attempt-note": "partials/_attempt_detail.html",
    "campaign-note": "partials/_campaign_notes.html",
    "share": "partials/_shares.html",
}


def refused_answer(request: Request, refused: FormRefused) -> Response:
    """The page (or the form's fragment) again, the refusal beside its field; 422.
    The request's own transaction was rolled back: nothing of the refused form is kept."""
    engine = request.app.state.engine
    with session_scope(engine, snapshot=True) as session:
        if refused.page == "campaigns":
            page, context = "pages/campaigns.html", campaigns_context(session)
        elif refused.page == "campaign":
            assert refused.page_id is not None
            page, context = (
                "pages/campaign.html",
                campaign_context(session, refused.page_id, campaign_renders(request)),
            )
        else:
            assert refused.page_id is not None
            page, context = "pages/attempt.html", attempt_context(session, refused.page_id)
        fragment = _FRAGMENT_OF_FORM.get(refused.state.form)
        if refused.state.form.startswith("note-"):
            fragment = (
                "partials/_attempt_detail.html"
                if refused.page == "attempt"
                else "partials/_campaign_notes.html"
            )
        context["forms"] = refused.state
        return render(request, page, context, partial=fragment, status_code=refused.status_code)
