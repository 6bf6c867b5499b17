"""Option types the CLI's commands share (`try`, `demo`, the campaign's verbs)."""

import math
from typing import Any

import click


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, refusing NaN (no comparison refuses it) and infinity."""

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        # (finite first: "inf" is no number at all, not one out of range)
        if not math.isfinite(float(click.FLOAT.convert(value, param, ctx))):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return float(super().convert(value, param, ctx))
