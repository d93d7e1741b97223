"""A suite run's results: per scenario, pass rates by language, flow and intent, cost. Pure.

``as_json`` is what ``python -m evals run`` prints on stdout (and stores); ``table`` is what a person
reads on stderr.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.checks import CheckResult, Observation
from evals.schema import Scenario


@dataclass
class ScenarioResult:
    scenario: Scenario
    repeat: int
    observation: Observation
    checks: list[CheckResult]
    judge: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def as_json(self) -> dict[str, Any]:
        s, o = self.scenario, self.observation
        return {
            "scenario": s.id,
            "title": s.title,
            "language": s.language,
            "flow": s.flow,
            "intent": s.intent,
            "category": s.expected.cause.category if s.expected.cause else None,
            "repeat": self.repeat,
            "passed": self.passed,
            "failed": [{"check": c.name, "reason": c.reason} for c in self.failed],
            "checks": [c.as_dict() for c in self.checks],
            "model_calls": o.model_calls,
            "tokens": o.tokens,
            "duration_ms": o.duration_ms,
            "sessions": o.session_ids,
            "judge": self.judge,
        }


def rate(passed: int, total: int) -> float | None:
    return round(passed / total, 3) if total else None


def breakdown(results: Iterable[ScenarioResult], key: str) -> dict[str, dict[str, Any]]:
    """Pass counts and rate per value of ``key`` (language, flow, intent)."""
    totals: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    for r in results:
        value = getattr(r.scenario, key)
        totals[value] += 1
        passed[value] += r.passed
    return {
        k: {"passed": passed[k], "total": totals[k], "rate": rate(passed[k], totals[k])}
        for k in sorted(totals)
    }


@dataclass
class SuiteReport:
    meta: dict[str, Any]
    results: list[ScenarioResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def pass_rate(self) -> float | None:
        return rate(self.passed, len(self.results))

    def summary(self) -> dict[str, Any]:
        failing: Counter[str] = Counter(c.name for r in self.results for c in r.failed)
        judged = [r.judge["score"] for r in self.results if r.judge and "score" in r.judge]
        return {
            "by_language": breakdown(self.results, "language"),
            "by_flow": breakdown(self.results, "flow"),
            "by_intent": breakdown(self.results, "intent"),
            "failed_checks": dict(failing.most_common()),
            "judge_mean": round(sum(judged) / len(judged), 3) if judged else None,
        }

    def cost(self) -> dict[str, int]:
        return {
            "model_calls": sum(r.observation.model_calls for r in self.results),
            "tokens": sum(r.observation.tokens for r in self.results),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            **self.meta,
            "scenarios": len({r.scenario.id for r in self.results}),
            "results": len(self.results),
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            **self.summary(),
            "cost": self.cost(),
            "items": [r.as_json() for r in self.results],
        }


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(_width(x) for x in col) for col in zip(header, *rows, strict=True)]
    return [
        "  ".join(_pad(c, w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def _pct(part: dict[str, Any]) -> str:
    r = part["rate"]
    return f"{part['passed']}/{part['total']} ({r:.0%})" if r is not None else "-"


def table(report: SuiteReport) -> str:
    """The human view: one line per scenario run, each failed check's reason under it, totals."""
    header = ["", "scenario", "lang", "flow", "intent", "calls", "tokens", "time"]
    rows = [
        [
            "PASS" if r.passed else "FAIL",
            r.scenario.id + (f" #{r.repeat + 1}" if report.meta.get("repeat", 1) > 1 else ""),
            r.scenario.language,
            r.scenario.flow,
            r.scenario.intent,
            str(r.observation.model_calls),
            str(r.observation.tokens),
            f"{r.observation.duration_ms / 1000:.1f}s",
        ]
        for r in report.results
    ]
    lines = []
    for line, r in zip(_rows(header, rows)[1:], report.results, strict=True):
        lines.append(line)
        lines += [f"        ✗ {c.name}: {c.reason}" for c in r.failed]
        if r.judge and "score" in r.judge:
            lines.append(f"        judge {r.judge['score']:.2f}: {r.judge.get('reason', '')}")
    s = report.summary()
    total = {"passed": report.passed, "total": len(report.results), "rate": report.pass_rate}
    cost = report.cost()
    out = [_rows(header, rows)[0], *lines, "", f"pass rate {_pct(total)}"]
    for key in ("by_language", "by_flow", "by_intent"):
        out.append(f"  {key[3:]:<9}" + "  ".join(f"{k} {_pct(v)}" for k, v in s[key].items()))
    if s["failed_checks"]:
        out.append("  failing  " + "  ".join(f"{k} ×{n}" for k, n in s["failed_checks"].items()))
    out.append(f"cost {cost['model_calls']} model calls, {cost['tokens']} tokens")
    meta = report.meta
    out.append(
        f"model {meta.get('model')} · commit {meta.get('git_commit') or '?'} · prompts "
        f"{meta.get('prompt_hash')} · knowledge {meta.get('knowledge_hash') or '?'} · "
        f"{meta.get('duration_s', 0):.0f} s"
    )
    return "\n".join(out)
