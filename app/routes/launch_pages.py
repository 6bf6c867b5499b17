"""Pages for launched attempts: the campaign's Launch form (a preview of exactly what will
run, then the launch), Stop and Retest on the attempt page. Plain forms, CSRF-checked."""

import shlex
from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session
from starlette.responses import Response

from app import actions, pivots, views
from app.deps import SessionDep
from app.forms import WHOLE_FORM, FormState
from app.forms import Form as PageForm
from app.models import Attempt
from app.pages.campaign import campaign_context
from app.pages.campaign_renders import campaign_renders
from app.pages.rendering import render
from app.routes.pages import FormDep, OwnerForm, see_other
from app.runner import launching
from app.runner.precheck import host_check
from app.runner.wording import looks_said
from app.schemas import AttemptCreate, LaunchIn, RetestIn

router = APIRouter(include_in_schema=False)

LAUNCH_FIELDS = ["host", "command", "bench", "repeat", "max_runs", "keep"]


def launch_preview(session: Session, campaign_id: int, data: AttemptCreate) -> dict[str, Any]:
    """What the launch will do, shown before it does it: the command as the host's shell
    gets it, the benchmark and its runs, and the flags that differ from the baseline."""
    launch = data.launch
    assert launch is not None
    campaign = actions.require_campaign(session, campaign_id)
    probe = Attempt(campaign_id=campaign_id, title=data.title, command=launch.command)
    flag_diff = views.flag_views(session, campaign, probe)[1]
    return {
        "host": launch.host,
        "command": launch.command,
        "words": shlex.split(launch.command, posix=True) if _splits(launch.command) else None,
        "bench": launch.bench,
        "repeat": launch.repeat,
        "max_runs": launch.max_runs,
        "looks_said": looks_said(launch.max_runs),
        "warmup": launch.warmup,
        "keep": launch.keep,
        "flag_diff": flag_diff,
    }


def _splits(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


@router.post("/campaigns/{campaign_id}/launch", dependencies=OwnerForm)
def launch_attempt(
    campaign_id: int, request: Request, session: SessionDep, submitted: FormDep
) -> Response:
    form = PageForm(submitted, "launch", "campaign", campaign_id)
    launch = form.parse(LaunchIn, LAUNCH_FIELDS)
    data = form.parse(AttemptCreate, ["title", "hypothesis"], launch=launch)
    if submitted.get("action") != "launch":
        # Before the first query: a slow host holds no database connection meanwhile.
        state = request.app.state
        checked = host_check(
            state.sources, state.runner.programs, host=launch.host, command=launch.command,
            runs_root=state.settings.runs_root,
        )  # fmt: skip
        with form:
            context = campaign_context(session, campaign_id, campaign_renders(request))
            context["launch_preview"] = launch_preview(session, campaign_id, data)
            context["launch_preview"]["host_check"] = checked
        context["forms"] = FormState("launch", {}, form.values)
        return render(request, "pages/campaign.html", context)
    with form:
        attempt = launching.create_launched_attempt(session, campaign_id, data)
        session.flush()
    return see_other(f"/attempts/{attempt.id}")


@router.post("/attempts/{attempt_id}/stop", dependencies=OwnerForm)
def stop_attempt(attempt_id: int, session: SessionDep, submitted: FormDep) -> Response:
    form = PageForm(submitted, "stop", "attempt", attempt_id)
    with form:
        launching.request_stop(session, attempt_id)
    return see_other(f"/attempts/{attempt_id}")


@router.post("/attempts/{attempt_id}/retest-unblocked", dependencies=OwnerForm)
def retest_unblocked(attempt_id: int, session: SessionDep, submitted: FormDep) -> Response:
    """Retest what adopting this attempt may have unblocked: the ticked ones."""
    form = PageForm(submitted, "retest-unblocked", "attempt", attempt_id)
    ticked = [int(v) for v in submitted.getlist("ids") if isinstance(v, str) and v.isdigit()]
    if not ticked:
        raise form.refuse({WHOLE_FORM: "tick at least one attempt to retest"})
    with form:
        made = pivots.retest_unblocked(session, attempt_id, ticked)
        session.flush()
    campaign_id = made[0].campaign_id if made else None
    return see_other(f"/campaigns/{campaign_id}" if campaign_id else f"/attempts/{attempt_id}")


@router.post("/attempts/{attempt_id}/remeasure", dependencies=OwnerForm)
def remeasure_attempt(attempt_id: int, session: SessionDep, submitted: FormDep) -> Response:
    """Re-measure a launched attempt (a baseline): its runs join its sample."""
    form = PageForm(submitted, "remeasure", "attempt", attempt_id)
    with form:
        attempt = launching.remeasure(session, attempt_id)
        session.flush()
    return see_other(f"/attempts/{attempt.id}")


@router.post("/attempts/{attempt_id}/relaunch", dependencies=OwnerForm)
def relaunch_attempt(attempt_id: int, session: SessionDep, submitted: FormDep) -> Response:
    """Retest a launched attempt: the same command launched again, linked `retest of`."""
    form = PageForm(submitted, "relaunch", "attempt", attempt_id)
    with form:
        attempt = launching.retest(session, attempt_id, RetestIn())
        session.flush()
    return see_other(f"/attempts/{attempt.id}")
