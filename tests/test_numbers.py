"""How a figure is written, the same by the pages and the CLI."""

from app.numbers import fmt_mean


def test_one_run_has_no_spread_to_show() -> None:
    assert fmt_mean(150.0, 0.0, 1) == "150.0 (n=1)"  # not "± 0.0": one run has no spread
    assert fmt_mean(1234.5, 12.0, 3) == "1,234.5 ± 12.0 (n=3)"
