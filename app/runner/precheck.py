"""The Launch preview's look at the host: the launch's own preflight, asked now and starting
nothing, so that the preview says what the launch would meet there (its port or GPUs in
use, another run alive, GPUs that cannot be checked) before the owner presses Launch."""

from typing import Any

from app.runner.commands import listen_port, visible_gpus
from app.runner.hosts import HostAnswerError, HostLink, HostPrograms
from app.runner.wording import gpu_note, where
from app.tailing.factory import LogSources
from app.tailing.sources import HostUnavailable


def host_check(
    sources: LogSources, programs: HostPrograms, *, host: str, command: str, runs_root: str
) -> dict[str, Any]:
    """`{asked, problems, gpus_checked, gpu_note}`: `asked` False when the host could not be
    asked (the problem says why; the launch itself would retry it)."""
    link = HostLink(sources, host, programs)
    try:
        check = link.preflight(
            port=listen_port(command), runs_root=runs_root, skip_run="",
            gpus=visible_gpus(command),
        )  # fmt: skip
    except HostUnavailable as error:
        said = f"{where(host)} could not be asked: {error.state}: {error}"
        return {"asked": False, "problems": [said], "gpus_checked": False, "gpu_note": None}
    except HostAnswerError as error:
        return {"asked": False, "problems": [str(error)], "gpus_checked": False, "gpu_note": None}
    finally:
        link.close()
    return {
        "asked": True,
        "problems": list(check["problems"]),
        "gpus_checked": check["gpu"].get("present") is not False,
        "gpu_note": gpu_note(host, dict(check["gpu"])),
    }
