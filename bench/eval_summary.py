"""Metrics of the development eval from its rows (one per lookup asked). Pure.

A row: ``id, lang, split, kind, mode`` (``text``: the query as typed or pasted; ``alert``: the
alert as structured input; ``loo``: asked with its runbook left out), ``answerable, found, level,
shown, fused, bm25, dense, expected, aspects, missing_runbook, wrong_tech``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

CONFIDENT = {"PRECISE", "HIGHLY_RELEVANT"}
LEVELS = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "NONE")


def _r(x: float) -> float:
    return round(x, 3)


def rr(paths: list[str], expected: Iterable[str]) -> float:
    exp = set(expected)
    for i, path in enumerate(paths, start=1):
        if path in exp:
            return 1.0 / i
    return 0.0


def right_at_1(r: dict[str, Any], key: str = "shown") -> bool:
    return bool(r[key][:1]) and r[key][0] in r["expected"]


def ranking(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    n = max(len(rows), 1)
    return {
        "R@1": _r(sum(1 for r in rows if right_at_1(r, key)) / n),
        "R@3": _r(sum(1 for r in rows if set(r[key][:3]) & set(r["expected"])) / n),
        "MRR": _r(sum(rr(r[key], r["expected"]) for r in rows) / n),
    }


def summarize(rows: list[dict[str, Any]], *, misses: bool = False) -> dict[str, Any]:
    """Ranking, found-rate, levels and their precision over answerable queries and negatives."""
    ans = [r for r in rows if r["answerable"]]
    neg = [r for r in rows if not r["answerable"]]
    n = max(len(ans), 1)
    out: dict[str, Any] = {"queries": len(rows), "answerable": len(ans), "negatives": len(neg)}
    for key in ("shown", "fused", "bm25", "dense"):
        out[key] = ranking(ans, key)
    out["found_rate"] = _r(sum(r["found"] for r in ans) / n)
    out["negatives_found"] = sum(r["found"] for r in neg)
    levels: dict[str, Any] = {}
    for lv in LEVELS:
        at = [r for r in rows if r["level"] == lv]
        right = sum(1 for r in at if right_at_1(r))
        levels[lv] = {
            "count": len(at),
            "negatives": sum(1 for r in at if not r["answerable"]),
            "top1_precision": _r(right / len(at)) if at and lv != "NONE" else None,
        }
    out["levels"] = levels
    confident = [r for r in rows if r["level"] in CONFIDENT]
    out["confident_share"] = _r(sum(1 for r in ans if r["level"] in CONFIDENT) / n)
    out["confident_precision"] = (
        _r(sum(1 for r in confident if right_at_1(r)) / len(confident)) if confident else None
    )
    out["right_but_dropped"] = [
        r["id"] for r in ans if not r["found"] and r["fused"][:1] and r["fused"][0] in r["expected"]
    ]
    out["confident_but_wrong"] = [r["id"] for r in confident if not right_at_1(r)]
    out["layers"] = dict(Counter(r["layer"] for r in rows))
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in ans:
        by_kind[r["kind"]].append(r)
    out["shown_R@1_by_kind"] = {
        k: _r(sum(1 for r in v if right_at_1(r)) / len(v)) for k, v in sorted(by_kind.items())
    }
    if misses:
        out["misses"] = [
            {"id": r["id"], "level": r["level"], "shown": r["shown"][:2], "expected": r["expected"]}
            for r in ans
            if not right_at_1(r)
        ][:60]
    return out


def probe(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Queries that must not be answered confidently (left-out runbook, other technology,
    missing topic): how many were found, and how many confidently."""
    n = max(len(rows), 1)
    confident = [r for r in rows if r["level"] in CONFIDENT]
    return {
        "queries": len(rows),
        "found_share": _r(sum(r["found"] for r in rows) / n),
        "confident_share": _r(len(confident) / n),
        "confident": [{"id": r["id"], "shown": r["shown"][:1]} for r in confident][:20],
    }


def alerts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rendered alert texts (or structured alerts): ranking and answerable "not found"."""
    ans = [r for r in rows if r["answerable"]]
    n = max(len(ans), 1)
    out = {"queries": len(ans), **ranking(ans, "shown")}
    out["not_found_share"] = _r(sum(1 for r in ans if not r["found"]) / n)
    out["confident_share"] = _r(sum(1 for r in ans if r["level"] in CONFIDENT) / n)
    out["misses"] = [r["id"] for r in ans if not right_at_1(r)][:20]
    return out


def multi(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Multi-symptom queries: per-aspect recall (an aspect counts when a shown document is one of
    its right documents) and the share with every aspect covered."""
    with_aspects = [r for r in rows if r["aspects"]]
    aspects = [(r, set(a)) for r in with_aspects for a in r["aspects"]]
    covered = [bool(set(r["shown"]) & a) for r, a in aspects]
    return {
        "queries": len(with_aspects),
        "aspects": len(aspects),
        "aspect_recall": _r(sum(covered) / max(len(aspects), 1)),
        "all_aspects_share": _r(
            sum(1 for r in with_aspects if all(set(r["shown"]) & set(a) for a in r["aspects"]))
            / max(len(with_aspects), 1)
        ),
        "missed": [
            {"id": r["id"], "aspect": sorted(a), "shown": r["shown"]}
            for (r, a), ok in zip(aspects, covered, strict=True)
            if not ok
        ][:10],
    }


def language_report(rows: list[dict[str, Any]], *, misses: bool = False) -> dict[str, Any]:
    """Everything reported for one language, for each split (``all``, ``fit``, ``held``)."""
    out: dict[str, Any] = {}
    for split in ("all", "fit", "held"):
        part = [r for r in rows if split == "all" or r["split"] == split]
        text = [
            r
            for r in part
            if r["mode"] == "text" and not r["missing_runbook"] and not r["wrong_tech"]
        ]
        described = [r for r in text if r["has_alert"] or r["kind"] == "alert_text"]
        out[split] = {
            "main": summarize(text, misses=misses and split != "all"),
            "descriptions": alerts(described),
            "alert_input": alerts([r for r in part if r["mode"] == "alert"]),
            "leave_one_out": probe([r for r in part if r["mode"] == "loo"]),
            "wrong_technology": probe([r for r in part if r["mode"] == "text" and r["wrong_tech"]]),
            "missing_runbook": probe(
                [r for r in part if r["mode"] == "text" and r["missing_runbook"]]
            ),
            "multi": multi([r for r in part if r["mode"] == "text"]),
        }
    return out


def table(result: dict[str, Any]) -> str:
    """A short text table of the headline numbers (per language and split; ``all`` is the
    figure of an external check, whose splits are all unseen)."""
    head = (
        "lang split  R@1   R@3   found conf  conf@P  desc R@1 desc NF  LOO conf  wrong-tech found"
        "  missing conf  aspect rec"
    )
    lines = [head]
    for lang in ("en", "zh"):
        for split in ("all", "fit", "held"):
            rep = result.get(lang, {}).get(split)
            if not rep:
                continue
            m, d, loo = rep["main"], rep["descriptions"], rep["leave_one_out"]
            wt, mr, mu = rep["wrong_technology"], rep["missing_runbook"], rep["multi"]
            lines.append(
                f"{lang:4} {split:5} {m['shown']['R@1']:.3f} {m['shown']['R@3']:.3f} "
                f"{m['found_rate']:.3f} {m['confident_share']:.3f} "
                f"{(m['confident_precision'] or 0):.3f}   {d['R@1']:.3f}    {d['not_found_share']:.3f}"
                f"    {loo['confident_share']:.3f}     {wt['found_share']:.3f}"
                f"             {mr['confident_share']:.3f}         {mu['aspect_recall']:.3f}"
            )
    return "\n".join(lines)
