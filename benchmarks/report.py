"""What one benchmark found: metrics, self-checks, targets and notes, as a table and as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class CheckFailed(Exception):
    """A benchmark's own work was not what it claims to measure; its figures are void."""


@dataclass
class Metric:
    label: str
    value: float
    unit: str

    def shown(self) -> str:
        if self.unit == "x":
            return f"{self.value:.2f}"
        if abs(self.value) >= 100:
            return f"{self.value:,.0f}"
        return f"{self.value:.1f}"


@dataclass
class Target:
    claim: str
    measured: float
    threshold: float
    unit: str

    @property
    def met(self) -> bool:
        return self.measured >= self.threshold


@dataclass
class Report:
    name: str
    summary: str
    metrics: dict[str, Metric] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    verdict: str | None = None  # a benchmark's one-line result, printed last: set first, restated when done

    def metric(self, key: str, label: str, value: float, unit: str) -> None:
        self.metrics[key] = Metric(label, value, unit)

    def check(self, condition: bool, claim: str) -> None:
        """Record ``claim`` as verified, or stop the benchmark if it is false."""
        if not condition:
            raise CheckFailed(claim)
        self.checks.append(claim)

    def target(self, claim: str, measured: float, threshold: float, unit: str) -> None:
        self.targets.append(Target(claim, measured, threshold, unit))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def table(self) -> str:
        lines = [f"== {self.name}: {self.summary} ({self.seconds:.1f} s)"]
        if self.error:
            lines.append(f"   FAILED: {self.error}")
        width = max((len(m.label) for m in self.metrics.values()), default=0)
        for metric in self.metrics.values():
            lines.append(f"   {metric.label:<{width}}  {metric.shown():>12}  {metric.unit}")
        for target in self.targets:
            verdict = "met" if target.met else "NOT met"
            lines.append(f"   target {target.claim}: {verdict} ({Metric('', target.measured, target.unit).shown()}"
                         f" {target.unit}, needs {Metric('', target.threshold, target.unit).shown()})")
        lines.extend(f"   checked: {claim}" for claim in self.checks)
        lines.extend(self.notes)
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "metrics": {key: {"value": m.value, "unit": m.unit, "label": m.label} for key, m in self.metrics.items()},
            "targets": [{"claim": t.claim, "measured": t.measured, "threshold": t.threshold, "unit": t.unit,
                         "met": t.met} for t in self.targets],
            "checks": self.checks,
            **self.facts,
        }
