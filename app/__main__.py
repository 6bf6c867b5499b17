"""`python -m app` runs the campaign-dash command."""

from app.cli import main

main(prog_name="campaign-dash")
