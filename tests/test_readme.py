"""The README's commands are the ones CI runs, and every setting is documented."""

from pathlib import Path

from app.config import Settings

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    blocks = text.split("```sh\n")[1:]
    return [block.split("```", 1)[0].strip() for block in blocks]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    install_and_run, test_command = readme_commands()[:2]
    assert install_and_run.endswith("campaign-dash demo")
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_every_setting_is_documented() -> None:
    text = (REPO / "README.md").read_text()
    for name in Settings.model_fields:
        assert f"CAMPAIGN_DASH_{name.upper()}" in text, name
