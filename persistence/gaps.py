"""Knowledge gaps and runbook coverage, as pure functions over plain rows (no I/O; the reads are in
``persistence/gap_reads.py``).

(a) alerts that fired and found no runbook, or only REFERENCE, grouped by alert name;
(b) questions answered "not found", clustered by similarity (character bigrams, so Chinese and
    English cluster alike without a model);
(c) runbooks no lookup returned in the window;
(d) runbooks whose version date or last update is old while their alerts keep firing.
Each gap can be drafted as a runbook skeleton (``draft``) that the upload form opens.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

WEAK_LEVELS = ("NONE", "REFERENCE")  # a lookup that found no runbook it could stand on
CLUSTER_SIMILARITY = 0.34  # bigram Jaccard: same incident worded differently, not same topic
EVIDENCE_LIMIT = 5  # sessions shown (and drafted) per gap


@dataclass(frozen=True)
class LookupRow:
    """One traffic lookup: its session, when, what was asked, the alert if any, the outcome."""

    session_id: str
    at: datetime
    question: str  # the session's question
    query: str  # what the lookup searched
    alertname: str | None
    level: str | None
    sources: tuple[str, ...]  # the runbooks it returned (shown)


@dataclass(frozen=True)
class DocRow:
    path: str
    title: str
    category: str
    version: str
    updated_at: datetime
    keywords: tuple[str, ...] = ()


@dataclass
class Gap:
    kind: str  # alert | question | unused | stale
    key: str  # the alert name, the cluster's question, the runbook path
    title: str
    count: int
    last_seen: datetime | None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def _evidence(rows: list[LookupRow]) -> list[dict[str, Any]]:
    """The newest sessions behind a gap, one line per session (a run may look up several times)."""
    per_session: dict[str, LookupRow] = {}
    for r in sorted(rows, key=lambda r: r.at, reverse=True):
        per_session.setdefault(r.session_id, r)
    newest = list(per_session.values())[:EVIDENCE_LIMIT]
    return [
        {
            "session_id": r.session_id,
            "at": r.at,
            "question": r.question,
            "level": r.level or "NONE",
            "sources": list(r.sources),
        }
        for r in newest
    ]


def alert_gaps(rows: list[LookupRow]) -> list[Gap]:
    """(a) Alert names whose lookups found nothing firm: every lookup for it NONE or REFERENCE."""
    by_name: dict[str, list[LookupRow]] = {}
    for r in rows:
        if r.alertname:
            by_name.setdefault(r.alertname, []).append(r)
    gaps = []
    for name, hits in by_name.items():
        if any((r.level or "NONE") not in WEAK_LEVELS for r in hits):
            continue  # some lookup for this alert found a runbook to stand on
        levels = Counter(r.level or "NONE" for r in hits)
        gaps.append(
            Gap(
                "alert",
                name,
                name,
                len(hits),
                max(r.at for r in hits),
                _evidence(hits),
                {"levels": dict(levels), "closest": _closest(hits)},
            )
        )
    return sorted(gaps, key=lambda g: (-g.count, g.key))


def _closest(rows: list[LookupRow]) -> list[str]:
    return [s for s, _ in Counter(s for r in rows for s in r.sources).most_common(3)]


def bigrams(text: str) -> set[str]:
    """Lower-cased character bigrams of letters, digits and CJK, words joined by one space."""
    t = re.sub(r"[^\w\u4e00-\u9fff]+", " ", text.lower()).strip()
    return {t[i : i + 2] for i in range(len(t) - 1) if " " not in t[i : i + 2]} or {t}


def similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def cluster(texts: list[str], threshold: float = CLUSTER_SIMILARITY) -> list[list[int]]:
    """Single-link clusters of ``texts`` (indices), biggest first; ties in first-seen order."""
    grams = [bigrams(t) for t in texts]
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(texts)):
        for j in range(i):
            if similarity(grams[i], grams[j]) >= threshold:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(texts)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def question_gaps(rows: list[LookupRow]) -> list[Gap]:
    """(b) Questions whose lookups found nothing (NONE), clustered; the most asked wording names
    the cluster."""
    by_session: dict[str, list[LookupRow]] = {}
    for r in rows:
        if not r.alertname:
            by_session.setdefault(r.session_id, []).append(r)
    # A session answered "not found" when none of its lookups found anything; one row per session.
    missed = [
        looks[0]
        for looks in by_session.values()
        if all((r.level or "NONE") == "NONE" for r in looks)
    ]
    gaps = []
    for members in cluster([r.question for r in missed]):
        hits = [missed[i] for i in members]
        wording = Counter(r.question for r in hits).most_common(1)[0][0]
        variants = sorted({r.question for r in hits})
        gaps.append(
            Gap(
                "question",
                wording,
                wording,
                len(hits),
                max(r.at for r in hits),
                _evidence(hits),
                {"variants": variants[:10]},
            )
        )
    return gaps


def unused_runbooks(docs: list[DocRow], rows: list[LookupRow]) -> list[Gap]:
    """(c) Runbooks no lookup in the window returned."""
    returned = {s for r in rows for s in r.sources}
    return [
        Gap("unused", d.path, d.title or d.path, 0, None, [], {"category": d.category})
        for d in sorted(docs, key=lambda d: d.path)
        if d.path not in returned
    ]


def version_date(version: str) -> datetime | None:
    """A version that is a date (``2024-03-01``, ``2024.03``, ``v2024-03``) as a UTC datetime."""
    m = re.search(r"(20\d\d|19\d\d)[-./](\d{1,2})(?:[-./](\d{1,2}))?", version or "")
    if not m:
        return None
    try:
        return datetime(int(m[1]), int(m[2]), int(m[3] or 1), tzinfo=UTC)
    except ValueError:
        return None


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def stale_runbooks(
    docs: list[DocRow], rows: list[LookupRow], now: datetime, stale_days: int, min_firing: int = 2
) -> list[Gap]:
    """(d) Runbooks dated (version date, else last update) more than ``stale_days`` ago that
    alert lookups kept returning (at least ``min_firing`` times in the window)."""
    fired: dict[str, list[LookupRow]] = {}
    for r in rows:
        if r.alertname:
            for s in r.sources:
                fired.setdefault(s, []).append(r)
    gaps = []
    for d in docs:
        hits = fired.get(d.path, [])
        dated = version_date(d.version) or _utc(d.updated_at)
        age = (_utc(now) - dated).days
        if len(hits) >= min_firing and age > stale_days:
            alerts = sorted({r.alertname for r in hits if r.alertname})
            gaps.append(
                Gap(
                    "stale",
                    d.path,
                    d.title or d.path,
                    len(hits),
                    max(r.at for r in hits),
                    _evidence(hits),
                    {
                        "version": d.version,
                        "dated": dated,
                        "age_days": age,
                        "alerts": alerts,
                        "category": d.category,
                    },
                )
            )
    return sorted(gaps, key=lambda g: (-g.count, g.key))


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def draft(gap: Gap) -> dict[str, str]:
    """A runbook skeleton for a gap: frontmatter (the alert name or the question as keyword),
    Meaning / Impact / Diagnosis / Mitigation, and the evidence of the sessions that hit it."""
    if gap.kind == "alert":
        title, keywords, slug = gap.key, [gap.key], gap.key
    elif gap.kind == "stale":
        alerts = gap.detail.get("alerts") or []
        title, keywords, slug = f"{gap.title} (update)", alerts, gap.key.rsplit("/", 1)[-1][:-3]
    else:
        title = gap.key[:80]
        keywords = [gap.key[:60]] + [
            v[:60] for v in gap.detail.get("variants", []) if v != gap.key
        ][:4]
        slug = "-".join(re.findall(r"[a-z0-9]+", gap.key.lower())[:6]) or "new-runbook"
    lines = ["---", f"title: {_yaml_str(title)}", "keywords:"]
    lines += [f"  - {_yaml_str(k)}" for k in keywords] or ["  - TODO"]
    lines += [
        f"summary: {_yaml_str('TODO: one sentence on when this runbook applies')}",
        "version: v1.0",
        "---",
        f"# {title}",
        "",
        "## Meaning",
        "",
        f"TODO: what {gap.key if gap.kind == 'alert' else 'this symptom'} means and what fires it.",
        "",
        "## Impact",
        "",
        "TODO: who notices, what breaks, how urgent.",
        "",
        "## Diagnosis",
        "",
        "1. TODO: the first thing to check (command, dashboard, log query).",
        "2. TODO: how to tell the likely causes apart.",
        "",
        "## Mitigation",
        "",
        "1. TODO: the safe first step.",
        "2. TODO: the fix, and how to verify it.",
        "",
        "## Evidence",
        "",
        f"Sessions that hit this gap ({gap.count} in the window; newest first):",
        "",
    ]
    for e in gap.evidence:
        at = e["at"].strftime("%Y-%m-%d %H:%M") if isinstance(e["at"], datetime) else e["at"]
        found = ", ".join(e["sources"]) or "no runbook"
        lines.append(f"- {at} `{e['session_id'][:12]}` {e['level']}: {e['question']} ({found})")
    return {"file_name": f"{slug}.md", "markdown": "\n".join(lines) + "\n"}
