"""How a figure is written, on the pages and by the CLI alike."""

import functools

# Past this a figure is written in scientific notation: a 309-digit "tok/s" helps nobody
# and widens the page past any screen.
PLAIN_UP_TO = 1e15


def fmt_number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    if abs(value) >= PLAIN_UP_TO:
        return f"{value:.{max(digits, 3)}e}"
    return f"{value:,.{digits}f}"


def fmt_mean(mean: float, spread: float, n: int) -> str:
    """A figure's mean and spread, as the page writes it: "1,234.5 ± 12.0 (n=3)"; one run
    has no spread to show: "150.0 (n=1)"."""
    if n < 2:
        return f"{fmt_number(mean)} (n={n})"
    return f"{fmt_number(mean)} ± {fmt_number(spread)} (n={n})"


def fmt_signed(pct: float) -> str:
    """A percentage's figure with its sign: "+1.2", "-2.3"."""
    if abs(pct) >= PLAIN_UP_TO:
        return f"{pct:+.3e}"
    return f"{pct:+.1f}"


@functools.lru_cache(maxsize=8192)  # a chart writes each of its points' again after a change
def fmt_judgement(
    delta_pct: float | None, ci95_pct: tuple[float, float] | None, call: str, n: int
) -> str:
    """An attempt's change against the baseline with its 95 % interval and the call, as a
    card, the chart, the share page and the CLI write it: "+3.5 % [+1.2, +5.8] better
    (n=6)"; one run has no interval: "+0.6 % inconclusive (n=1)"."""
    if delta_pct is None:
        return ""
    interval = f" [{fmt_signed(ci95_pct[0])}, {fmt_signed(ci95_pct[1])}]" if ci95_pct else ""
    return f"{fmt_signed(delta_pct)} %{interval} {call} (n={n})"


def fmt_delta(pct: float | None) -> str:
    return "" if pct is None else f"{fmt_signed(pct)} %"
