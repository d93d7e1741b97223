"""Facts from an alert and its log lines: the signals they show, the identifiers and values they
carry, and where errors concentrate. Pure.

Every fact keeps the ledger entry it came from, so whatever the report concludes from it is cited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.diagnosis.lexicon import SIGNALS, SINGLE_SCOPE_TERMS
from graph.ledger import Entry

IDENT = re.compile(
    r"(?<![\w./-])([A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]+)"
)
KV = re.compile(r"([A-Za-z][\w.]*)\s*[=:]\s*(-?\d+(?:\.\d+)?)\b")
PAIR = re.compile(r"\b([a-z_]+)=([\w.-]+)")
ERROR_LEVELS = {"ERROR", "WARN", "WARNING", "FATAL", "CRITICAL"}
OK_WORDS = re.compile(r"SUCCEEDED|success|status=(ok|200)", re.I)


@dataclass
class Fact:
    """One thing the evidence shows."""

    name: str  # English wording
    zh: str  # Chinese wording
    terms: tuple[str, ...]  # how a runbook names it
    refs: list[Entry] = field(default_factory=list)
    alert: str = ""

    def says(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.name


@dataclass
class Facts:
    alert: str
    signals: list[Fact] = field(default_factory=list)
    identifiers: dict[str, Entry] = field(default_factory=dict)
    values: dict[str, tuple[float, Entry]] = field(default_factory=dict)
    errors: int = 0  # WARN/ERROR log lines


def _add(facts: Facts, fact: Fact) -> None:
    for f in facts.signals:
        if f.name == fact.name:
            f.refs += [r for r in fact.refs if r not in f.refs]
            return
    facts.signals.append(fact)


def _concentration(lines: Sequence[tuple[dict[str, Any], Entry]]) -> Fact | None:
    """Errors that all share a ``key=value`` another value of which succeeds (one channel)."""
    bad = [(PAIR.findall(str(x.get("message", ""))), e) for x, e in lines if _is_error(x)]
    good = [
        (PAIR.findall(str(x.get("message", ""))), e)
        for x, e in lines
        if not _is_error(x) and OK_WORDS.search(str(x.get("message", "")))
    ]
    if not bad:
        return None
    if not good:  # no success to compare with: errors all on one value of a key, 2 at least
        if len(bad) < 2:
            return None
        shared = [
            (k, v)
            for k, v in bad[0][0]
            if k not in ("request_id", "payment_id", "status") and all((k, v) in p for p, _ in bad)
        ]
        if not shared:
            return None
        key, value = shared[0]
        return Fact(
            f"every error is on {key}={value}",
            f"错误全部集中在 {key}={value}（单一{key}）",
            (*SINGLE_SCOPE_TERMS, value),
            [e for _, e in bad],
        )
    for key, value in bad[0][0]:
        if key in ("request_id", "payment_id", "status") or not all(
            (key, value) in pairs for pairs, _ in bad
        ):
            continue
        others = [(v, e) for pairs, e in good for k, v in pairs if k == key and v != value]
        if others:
            other, ok_ref = others[0]
            return Fact(
                f"errors only on {key}={value}; {key}={other} succeeds",
                f"错误只出现在 {key}={value}，{key}={other} 正常",
                (*SINGLE_SCOPE_TERMS, value),
                [e for _, e in bad] + [ok_ref],
            )
    return None


def _is_error(line: dict[str, Any]) -> bool:
    return str(line.get("level", "")).upper() in ERROR_LEVELS


def gather(
    alert_name: str,
    alert_text: str,
    alert_ref: Entry,
    lines: Sequence[tuple[dict[str, Any], Entry]],
    labels: dict[str, Any] | None = None,
) -> Facts:
    """The facts of one alert: its own description and labels, and the log lines gathered for it."""
    facts = Facts(alert_name)
    texts = [(alert_text, alert_ref)] + [(str(x.get("message", "")), e) for x, e in lines]
    for text, ref in texts:
        for s in SIGNALS:
            if s.pattern.search(text):
                _add(facts, Fact(s.name, s.zh, s.terms, [ref], alert_name))
        for ident in IDENT.findall(text):
            if ident != alert_name and ident.lower() not in ("e.g", "i.e"):
                facts.identifiers.setdefault(ident, ref)
        for key, value in KV.findall(text):
            facts.values.setdefault(key, (float(value), ref))
    facts.errors = sum(1 for x, _ in lines if _is_error(x))
    fact = _concentration(lines) or _scoped(labels or {}, lines, alert_ref)
    if fact:
        fact.alert = alert_name
        _add(facts, fact)
    return facts


SCOPE_KEYS = ("channel", "region", "zone", "shard", "partition", "tenant", "merchant", "route")


def _scoped(
    labels: dict[str, Any], lines: Sequence[tuple[dict[str, Any], Entry]], alert_ref: Entry
) -> Fact | None:
    """An alert labelled with one value of a scope key (``channel=unionpay``) whose error lines
    carry that value: the problem is on that one value, not everywhere."""
    for key in SCOPE_KEYS:
        value = str(labels.get(key) or "")
        hits = [
            e for x, e in lines if _is_error(x) and f"{key}={value}" in str(x.get("message", ""))
        ]
        if value and hits:
            return Fact(
                f"the alert and its errors are on {key}={value} only",
                f"告警与错误只在 {key}={value}（单一{key}）",
                (*SINGLE_SCOPE_TERMS, value),
                [alert_ref, *hits],
            )
    return None
