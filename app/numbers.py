"""How a figure is written, on the pages and by the CLI alike."""

# Past this a figure is written in scientific notation: a 309-digit "tok/s" helps nobody
# and widens the page past any screen.
PLAIN_UP_TO = 1e15


def fmt_number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    if abs(value) >= PLAIN_UP_TO:
        return f"{value:.{max(digits, 3)}e}"
    return f"{value:,.{digits}f}"


def fmt_delta(pct: float | None) -> str:
    if pct is None:
        return ""
    if abs(pct) >= PLAIN_UP_TO:
        return f"{pct:+.3e} %"
    return f"{pct:+.1f} %"
