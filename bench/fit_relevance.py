"""Fit the calibrated relevance judge on the development eval and write ``retrieval/calibration.json``.

Input: the evidence ``eval_retrieval.py --dump`` writes (every judged document of every query, with
its label: does it answer the query). Steps:

1. A logistic model of "this document answers the query" on every judged document (the top eight
   per query), with five-fold cross-validation by query, so every query gets predictions from a
   model that never saw it (out-of-fold). The judge orders documents by this probability, so the
   top document is the one with the highest probability.
2. The map from probability to confidence is placed on those out-of-fold predictions of the top
   document: confidence 0.75 (FS-2's HIGHLY_RELEVANT) where the documents above it are right at
   least ``--high-precision`` of the time; confidence 0.5 (REFERENCE; below it found=false) where
   dropping right answers and admitting unanswerable questions cost least (see ``place_knots``).
3. The final model is fitted on all of it; the reliability table is printed both out-of-fold (the
   honest estimate) and in-sample.

    .venv/bin/python bench/eval_retrieval.py --dump /tmp/evidence.jsonl
    .venv/bin/python bench/fit_relevance.py /tmp/evidence.jsonl [--out retrieval/calibration.json]
"""

from __future__ import annotations

import argparse
import json
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import _common as c

TRAIN_RANKS = 8
FOLDS = 5


def load(path: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    queries: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        queries[(row["lang"], row["id"])].append(row)
    for rows in queries.values():
        rows.sort(key=lambda r: r["rank"])
    return queries


def fold_of(key: tuple[str, str]) -> int:
    return zlib.crc32(f"{key[0]}:{key[1]}".encode()) % FOLDS


def fit(queries: dict, keys: list, l2: float):  # noqa: ANN201
    from retrieval.calibration import fit_logistic

    rows = [r for k in keys for r in queries[k][:TRAIN_RANKS]]
    return fit_logistic([r["features"] for r in rows], [r["label"] for r in rows], l2=l2)


def out_of_fold(queries: dict, l2: float) -> list[dict[str, Any]]:
    """Every query's top document, ranked (as the judge ranks them) and scored by a model that
    did not see the query; ``fused_label`` says whether the fused ranking's first was right."""
    keys = sorted(queries)
    out = []
    for f in range(FOLDS):
        model = fit(queries, [k for k in keys if fold_of(k) != f], l2)
        for k in keys:
            if fold_of(k) == f and queries[k]:
                scored = [{**r, "p": model.probability(r["features"])} for r in queries[k]]
                top = max(scored, key=lambda r: r["p"])
                out.append({**top, "fused_label": queries[k][0]["label"]})
    return out


def precision(rows: list[dict[str, Any]]) -> float:
    return sum(r["label"] for r in rows) / len(rows) if rows else 1.0


def place_knots(tops: list[dict[str, Any]], high: float, min_high: int) -> tuple[float, float]:
    """(p at confidence 0.5, p at confidence 0.75) from out-of-fold top-document predictions.

    0.75 sits at the lowest probability above which the top document is right at least ``high``
    of the time. 0.5 (below it: found=false) sits where dropping a right answer (cost 5) and
    admitting an unanswerable question (cost 2) cost least; a wrong top document for an
    answerable question costs little (cost 0.25): its supplements usually hold the answer.
    """
    ps = sorted({round(r["p"], 6) for r in tops})
    p_high = 1.0
    for p in ps:  # the lowest cut whose confident set keeps its promise
        above = [r for r in tops if r["p"] >= p]
        if len(above) >= min_high and precision(above) >= high:
            p_high = p
            break
    best, p_found = None, 0.0
    for p in [0.0, *ps]:
        if p >= p_high:
            break
        dropped = sum(1 for r in tops if r["p"] < p and r["label"])
        admitted = sum(1 for r in tops if r["p"] >= p and not r["answerable"])
        wrong = sum(1 for r in tops if r["p"] >= p and r["answerable"] and not r["label"])
        cost = 10 * dropped + 2 * admitted + 0.25 * wrong
        if best is None or cost < best:
            best, p_found = cost, p
    return min(p_found, p_high - 1e-6), p_high


def table(tops: list[dict[str, Any]], cal: Any, key: str) -> dict[str, Any]:
    from retrieval.relevance import level_for

    levels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in tops:
        p = r[key] if key in r else cal.probability(r["features"])
        levels[level_for(cal.to_confidence(p)).value].append(r)
    return {
        lv: {
            "count": len(rs),
            "top1_precision": round(precision(rs), 3),
            "negatives": sum(1 for r in rs if not r["answerable"]),
            "right": sum(r["label"] for r in rs),
        }
        for lv, rs in sorted(levels.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evidence", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=c.ROOT / "retrieval" / "calibration.json")
    parser.add_argument("--l2", type=float, default=1.0, help="ridge penalty")
    parser.add_argument("--high-precision", type=float, default=0.97)
    parser.add_argument("--min-high", type=int, default=20)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    queries: dict = {}
    for path in args.evidence:
        queries.update(load(path))
    queries = {k: v for k, v in queries.items() if v}
    tops = out_of_fold(queries, args.l2)
    p_found, p_high = place_knots(tops, args.high_precision, args.min_high)
    cal = fit(queries, sorted(queries), args.l2)
    cal.knots = [(round(p_found, 6), 0.5), (round(p_high, 6), 0.75)]
    langs = sorted({k[0] for k in queries})
    cal.fitted_on = {
        "queries": len(queries),
        "by_language": {lang: sum(1 for k in queries if k[0] == lang) for lang in langs},
        "rows": sum(min(len(v), TRAIN_RANKS) for v in queries.values()),
        "l2": args.l2,
        "targets": {"high": args.high_precision},
        "source": "bench/eval (bench/fit_relevance.py)",
    }
    report = {
        "knots": cal.knots,
        "weights": dict(zip(cal.features, cal.weights, strict=True)),
        "bias": cal.bias,
        "reliability_out_of_fold": table(tops, cal, "p"),
        "reliability_in_sample": table(tops, cal, "_none"),
        "per_language_out_of_fold": {
            lang: table([r for r in tops if r["lang"] == lang], cal, "p") for lang in langs
        },
    }
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if not args.dry_run:
        cal.save(args.out)


if __name__ == "__main__":
    main()
