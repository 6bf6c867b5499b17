"""HTML pages and their forms: plain posts that redirect, or partials when htmx asks."""

from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Form, Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData
from starlette.responses import HTMLResponse, RedirectResponse, Response

from app import actions, repo, sharing, views
from app.auth import SESSION_COOKIE, SESSION_MAX_AGE_S
from app.chart import build_chart
from app.deps import SessionDep, owner_auth, require_csrf, require_page_owner, session_cookie
from app.errors import Invalid
from app.models import Status
from app.rendering import is_htmx, render
from app.schemas import (
    AttemptCreate,
    AttemptUpdate,
    CampaignCreate,
    MeasurementCreate,
    NoteCreate,
)
from app.tailer import trust_offered_key

router = APIRouter(include_in_schema=False)
OwnerPage = [Depends(require_page_owner)]
OwnerForm = [Depends(require_csrf)]

M = TypeVar("M", bound=BaseModel)


def parse_form(model: type[M], form: FormData, fields: list[str]) -> M:
    """A form's fields as the API's body model; an empty field means 'not given'."""
    data: dict[str, Any] = {}
    for field in fields:
        value = form.get(field)
        if isinstance(value, str) and value.strip() != "":
            data[field] = value
    if "set_baseline" in fields:
        data["set_baseline"] = form.get("set_baseline") == "on"
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'form'}: {e['msg']}" for e in error.errors()
        )
        raise Invalid(problems) from error


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


# --- login -----------------------------------------------------------------


@router.get("/login")
def login(request: Request, token: str | None = None, next: str = "/") -> Response:
    auth = owner_auth(request)
    if token is None:
        return render(request, "pages/login.html", {"error": None, "next": next})
    if not auth.token_ok(token):
        return render(
            request,
            "pages/login.html",
            {"error": "That token is not valid.", "next": next},
            status_code=401,
        )
    # Only local paths: a login link must not become an open redirect.
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = see_other(target)
    response.set_cookie(
        SESSION_COOKIE,
        auth.open_session(),
        httponly=True,
        samesite="lax",
        secure=request.app.state.settings.secure_cookies,
        max_age=SESSION_MAX_AGE_S,
    )
    return response


@router.post("/login")
def login_form(
    request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "/"
) -> Response:
    return login(request, token=token, next=next)


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
    counts = repo.count_attempts_by_campaign(session)
    campaigns = [
        views.campaign_view(session, c, attempt_count=counts.get(c.id or 0, 0))
        for c in repo.list_campaigns(session)
    ]
    return render(
        request,
        "pages/campaigns.html",
        {"campaigns": campaigns},
        partial="partials/_campaign_list.html",
    )


@router.post("/campaigns", dependencies=OwnerForm)
async def create_campaign(request: Request, session: SessionDep) -> Response:
    fields = ["name", "metric", "baseline", "target", "description", "noise_pct"]
    data = parse_form(CampaignCreate, await request.form(), fields)
    campaign = actions.create_campaign(session, data)
    return see_other(f"/campaigns/{campaign.id}")


def campaign_context(session: SessionDep, campaign_id: int) -> dict[str, Any]:
    campaign = actions.require_campaign(session, campaign_id)
    detail = views.campaign_detail(session, campaign)
    notes = repo.list_notes(session, campaign_id=campaign_id)
    return {
        "campaign": detail,
        "chart_data": build_chart(detail, detail.attempts),
        "attempts": detail.attempts,
        "attempts_by_id": {a.id: a for a in detail.attempts},
        "campaign_notes": [views.note_view(n) for n in notes if n.attempt_id is None],
        "shares": [sharing.share_out(link) for link in sharing.list_links(session, campaign_id)],
        "note_counts": _count_by_attempt(notes),
    }


def _count_by_attempt(notes: list[Any]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for note in notes:
        if note.attempt_id is not None:
            counts[note.attempt_id] = counts.get(note.attempt_id, 0) + 1
    return counts


@router.get("/campaigns/{campaign_id}", response_class=HTMLResponse, dependencies=OwnerPage)
def campaign_page(campaign_id: int, request: Request, session: SessionDep) -> Response:
    return render(
        request,
        "pages/campaign.html",
        campaign_context(session, campaign_id),
        partial="partials/_timeline.html",
    )


@router.post("/campaigns/{campaign_id}/attempts", dependencies=OwnerForm)
async def create_attempt(campaign_id: int, request: Request, session: SessionDep) -> Response:
    fields = ["title", "hypothesis", "command", "flags", "source", "retest_of", "blocked_by"]
    data = parse_form(AttemptCreate, await request.form(), fields)
    actions.create_attempt(session, campaign_id, data)
    if is_htmx(request):
        session.flush()
        return render(request, "partials/_timeline.html", campaign_context(session, campaign_id))
    return see_other(f"/campaigns/{campaign_id}")


@router.post("/campaigns/{campaign_id}/notes", dependencies=OwnerForm)
async def add_campaign_note(campaign_id: int, request: Request, session: SessionDep) -> Response:
    data = parse_form(NoteCreate, await request.form(), ["body"])
    actions.add_campaign_note(session, campaign_id, data)
    if is_htmx(request):
        session.flush()
        return render(
            request, "partials/_campaign_notes.html", campaign_context(session, campaign_id)
        )
    return see_other(f"/campaigns/{campaign_id}#notes")


@router.post("/campaigns/{campaign_id}/shares", dependencies=OwnerForm)
async def create_share(campaign_id: int, request: Request, session: SessionDep) -> Response:
    form = await request.form()
    hours = form.get("expires_in_hours")
    try:
        expires = float(hours) if isinstance(hours, str) and hours.strip() else None
    except ValueError:
        raise Invalid("expiry: a number of hours, or empty for never") from None
    if expires is not None and not 0 < expires <= 24 * 366:
        raise Invalid("expiry: between a few minutes and a year")
    _, token = sharing.create(
        session, campaign_id, expires_in_hours=expires, redact=form.get("redact") == "on"
    )
    session.flush()
    # Shown once, on this answer only: the token is stored hashed.
    context = {
        **campaign_context(session, campaign_id),
        "new_share_url": sharing.share_url(request, token),
    }
    return render(request, "pages/campaign.html", context, partial="partials/_shares.html")


@router.post("/shares/{link_id}/revoke", dependencies=OwnerForm)
def revoke_share(link_id: int, request: Request, session: SessionDep) -> Response:
    link = sharing.get_link(session, link_id)
    sharing.revoke(session, link)
    return see_other(f"/campaigns/{link.campaign_id}#shares")


# --- attempts --------------------------------------------------------------


def attempt_context(session: SessionDep, attempt_id: int) -> dict[str, Any]:
    attempt = actions.require_attempt(session, attempt_id)
    campaign = actions.require_campaign(session, attempt.campaign_id)
    siblings = repo.list_attempts(session, campaign_id=attempt.campaign_id)
    notes = repo.list_notes(session, campaign_id=attempt.campaign_id, attempt_id=attempt_id)
    view = views.attempt_view(session, attempt)
    return {
        "campaign": campaign,
        "attempt": view,
        "log_lines": views.log_tail(session, view),
        "titles": {a.id: a.title for a in siblings},
        "notes": [views.note_view(n) for n in notes],
        "statuses": [s.value for s in Status],
    }


@router.get("/attempts/{attempt_id}", response_class=HTMLResponse, dependencies=OwnerPage)
def attempt_page(attempt_id: int, request: Request, session: SessionDep) -> Response:
    return render(
        request,
        "pages/attempt.html",
        attempt_context(session, attempt_id),
        partial="partials/_attempt_detail.html",
    )


@router.post("/attempts/{attempt_id}/status", dependencies=OwnerForm)
async def change_status(attempt_id: int, request: Request, session: SessionDep) -> Response:
    form = await request.form()
    data = parse_form(AttemptUpdate, form, ["status", "verdict", "set_baseline"])
    if data.status == Status.eliminated and not (data.verdict or "").strip():
        raise Invalid("say why it is a dead end: eliminating an attempt needs a verdict")
    actions.update_attempt(session, attempt_id, data)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/measurements", dependencies=OwnerForm)
async def add_measurement(attempt_id: int, request: Request, session: SessionDep) -> Response:
    data = parse_form(MeasurementCreate, await request.form(), ["value"])
    actions.add_measurement(session, attempt_id, data.value)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/trust-host-key", dependencies=OwnerForm)
def trust_host_key(attempt_id: int, request: Request, session: SessionDep) -> Response:
    source, key_line = actions.offered_host_key(session, attempt_id)
    trust_offered_key(request.app.state.settings, source, key_line)
    request.app.state.tailer.restart(attempt_id)
    return _attempt_answer(request, session, attempt_id)


@router.post("/attempts/{attempt_id}/notes", dependencies=OwnerForm)
async def add_attempt_note(attempt_id: int, request: Request, session: SessionDep) -> Response:
    data = parse_form(NoteCreate, await request.form(), ["body"])
    actions.add_attempt_note(session, attempt_id, data)
    return _attempt_answer(request, session, attempt_id, anchor="notes")


@router.post("/notes/{note_id}/edit", dependencies=OwnerForm)
async def edit_note(note_id: int, request: Request, session: SessionDep) -> Response:
    data = parse_form(NoteCreate, await request.form(), ["body"])
    note = actions.edit_note(session, note_id, data)
    return _note_owner_answer(request, session, note.campaign_id, note.attempt_id)


@router.post("/notes/{note_id}/delete", dependencies=OwnerForm)
async def delete_note(note_id: int, request: Request, session: SessionDep) -> Response:
    note = actions.delete_note(session, note_id)
    return _note_owner_answer(request, session, note.campaign_id, note.attempt_id)


def _note_owner_answer(
    request: Request, session: SessionDep, campaign_id: int, attempt_id: int | None
) -> Response:
    if attempt_id is not None:
        return _attempt_answer(request, session, attempt_id, anchor="notes")
    if is_htmx(request):
        session.flush()
        return render(
            request, "partials/_campaign_notes.html", campaign_context(session, campaign_id)
        )
    return see_other(f"/campaigns/{campaign_id}#notes")


def _attempt_answer(
    request: Request, session: SessionDep, attempt_id: int, anchor: str = ""
) -> Response:
    if is_htmx(request):
        session.flush()
        return render(
            request, "partials/_attempt_detail.html", attempt_context(session, attempt_id)
        )
    return see_other(f"/attempts/{attempt_id}" + (f"#{anchor}" if anchor else ""))
