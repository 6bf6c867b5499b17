"""A benchmark run's output as figures: the result block of sglang's bench_serving and
vLLM's bench serve ("Label (unit):   value" lines between the ===== rules)."""

import re
from dataclasses import dataclass, field

_BLOCK_START = re.compile(r"=+ *Serving Benchmark Result *=+")
_LINE = re.compile(r"^\s*([A-Za-z][^:]{1,80}):\s+(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*$")


@dataclass
class BenchResult:
    figures: dict[str, float] = field(default_factory=dict)  # label (unit) -> value
    failed_requests: int | None = None
    completed_requests: int | None = None

    def figure(self, label: str) -> float | None:
        """The first figure whose label starts with `label` ("Output token throughput")."""
        for name, value in self.figures.items():
            if name.lower().startswith(label.lower()):
                return value
        return None


def parse_bench_output(text: str) -> BenchResult:
    """The figures of the last result block in `text`; empty when there is none."""
    starts = list(_BLOCK_START.finditer(text))
    result = BenchResult()
    if not starts:
        return result
    for line in text[starts[-1].end() :].splitlines():
        if line.startswith("=" * 10):
            break
        match = _LINE.match(line)
        if not match:
            continue
        label, value = match.group(1).strip(), float(match.group(2))
        result.figures[label] = value
        if label.lower().startswith("failed requests"):
            result.failed_requests = int(value)
        elif label.lower().startswith(("successful requests", "completed")):
            result.completed_requests = int(value)
    return result
