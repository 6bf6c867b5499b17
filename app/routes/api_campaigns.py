"""JSON API for campaigns, their attempts and their notes."""

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlmodel import Session

from app import actions, exports, repo, sharing, views
from app.deps import SessionDep, SettingsDep, require_api_owner
from app.models import Campaign
from app.runner import launching
from app.schemas import (
    AttemptCreate,
    AttemptOut,
    CampaignCreate,
    CampaignDetailOut,
    CampaignOut,
    CampaignUpdate,
    NoteCreate,
    NoteOut,
)
from app.tailing.factory import check_log_source

router = APIRouter(
    prefix="/api/campaigns", tags=["campaigns"], dependencies=[Depends(require_api_owner)]
)


@router.post("", status_code=201)
def create_campaign(data: CampaignCreate, session: SessionDep) -> CampaignDetailOut:
    """Start a campaign: a goal on one metric, with an optional baseline and target."""
    campaign = actions.create_campaign(session, data)
    return views.campaign_detail(session, campaign)


@router.get("")
def list_campaigns(session: SessionDep) -> list[CampaignOut]:
    """Every campaign, newest first."""
    counts = repo.count_attempts_by_campaign(session)
    return [
        views.campaign_view(session, c, attempt_count=counts.get(c.id or 0, 0))
        for c in repo.list_campaigns(session)
    ]


@router.get("/{campaign_id}")
def get_campaign(campaign_id: int, session: SessionDep) -> CampaignDetailOut:
    """A campaign with its attempts in the order they were tried."""
    return _owners(session, actions.require_campaign(session, campaign_id))


def _owners(session: Session, campaign: Campaign) -> CampaignDetailOut:
    """The campaign as its owner's API gives it: with its alerts."""
    detail = views.campaign_detail(session, campaign)
    detail.notify = views.notify_view(session, campaign)
    return detail


@router.get("/{campaign_id}/runs.csv", response_class=Response)
def runs_csv(campaign_id: int, session: SessionDep) -> Response:
    """Every benchmark run of the campaign, one row each, every figure a column."""
    detail = views.campaign_detail(session, actions.require_campaign(session, campaign_id))
    text = exports.to_csv(detail, exports.run_rows(session, detail.attempts), str)
    return csv_response(text, f"campaign-{campaign_id}-runs.csv")


def csv_response(text: str, filename: str) -> Response:
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/{campaign_id}/summary.md", response_class=PlainTextResponse)
def summary_markdown(campaign_id: int, session: SessionDep) -> Response:
    """The campaign's story as its share link's `.md` tells it, unredacted (secrets masked)."""
    story = sharing.story_of(session, campaign_id, redact=False)
    return PlainTextResponse(sharing.to_markdown(story), media_type="text/markdown; charset=utf-8")


@router.get("/{campaign_id}/summary.json", response_class=JSONResponse)
def summary_json(campaign_id: int, session: SessionDep) -> Response:
    """The campaign's story as its share link's `.json` tells it, unredacted (secrets masked)."""
    return JSONResponse(sharing.to_json(sharing.story_of(session, campaign_id, redact=False)))


@router.patch("/{campaign_id}")
def update_campaign(
    campaign_id: int, data: CampaignUpdate, session: SessionDep
) -> CampaignDetailOut:
    """Rename, re-describe, set the target or move the baseline (kept in its history)."""
    campaign = actions.update_campaign(session, campaign_id, data)
    session.flush()
    return _owners(session, campaign)


@router.delete("/{campaign_id}", status_code=204)
def delete_campaign(campaign_id: int, session: SessionDep) -> Response:
    """Delete a campaign with its attempts, logs, notes and share links; 409 while a server
    one of them launched may still run (stop it first)."""
    actions.delete_campaign(session, campaign_id)
    return Response(status_code=204)


@router.post("/{campaign_id}/attempts", status_code=201)
def create_attempt(
    campaign_id: int, data: AttemptCreate, session: SessionDep, settings: SettingsDep
) -> AttemptOut:
    """Add a hypothesis; with a log source it starts running; with `launch` the dashboard
    launches it on the host, follows it to ready or crash, benchmarks and stops it."""
    check_log_source(settings, data.source)
    if data.launch is not None:
        attempt = launching.create_launched_attempt(session, campaign_id, data)
    else:
        attempt = actions.create_attempt(session, campaign_id, data)
    return views.attempt_view(session, attempt)


@router.post("/{campaign_id}/notes", status_code=201)
def add_note(campaign_id: int, data: NoteCreate, session: SessionDep) -> NoteOut:
    """A markdown note on the campaign as a whole."""
    return views.note_view(actions.add_campaign_note(session, campaign_id, data))


@router.get("/{campaign_id}/notes")
def list_notes(campaign_id: int, session: SessionDep) -> list[NoteOut]:
    """Every note of the campaign, on it or on its attempts."""
    actions.require_campaign(session, campaign_id)
    return [views.note_view(n) for n in repo.list_notes(session, campaign_id=campaign_id)]
