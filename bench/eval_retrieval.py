"""Development eval of ``lookup_knowledge``: ranking quality and whether the levels keep their word.

Corpora (kept in the repository, see ``bench/eval/README.md``):

* ``en`` — public, permissively licensed English runbooks (``bench/eval/corpus/en``, attribution
  there) with ``bench/eval/queries_en.yaml``;
* ``zh`` — the shipped ``knowledge_base/`` plus Chinese runbooks written for the eval
  (``bench/eval/corpus/zh``) with ``bench/eval/queries_zh.yaml``.

Each corpus is imported into a fresh temp knowledge base (SQLite, Milvus Lite, the configured
embedding model: by default multilingual-e5-small; ``--model all-MiniLM-L6-v2`` for the packaged
MiniLM), built exactly as the server builds it, and every query runs through ``KnowledgeBase.lookup`` with a
fresh session memory — what ``POST /api/knowledge/lookup`` does. Printed per language (JSON):

* ``shown`` — documents the tool shows the agent (primary + supplements; nothing when found=false):
  R@1, R@3, MRR;
* ``fused`` — the fused document ranking over all candidates, ``bm25`` — the BM25 route alone;
* found-rate on answerable queries, found-rate on negatives (should be 0);
* per level: count and top-1 precision (the reliability table);
* right-but-dropped (fused top-1 right, found=false) and confident-but-wrong (PRECISE /
  HIGHLY_RELEVANT with a wrong top-1, negatives included).

``--dump FILE`` writes every judged document's evidence with its label, for ``fit_relevance.py``.
Runs against another checkout with ``BENCH_CODE_ROOT=/path/to/checkout`` (the "before" numbers).

    .venv/bin/python bench/eval_retrieval.py [--lang en zh] [--judge dense] [--dump evidence.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import _common as c
import yaml

EVAL = c.ROOT / "bench" / "eval"
CONFIDENT = {"PRECISE", "HIGHLY_RELEVANT"}
LEVELS = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "NONE")


def corpus_dirs(lang: str, root: Path) -> list[Path]:
    if lang == "en":
        return [root / "corpus" / "en"]
    shipped = root / "knowledge_base"  # an eval root may bring its own copy
    return [shipped if shipped.is_dir() else c.ROOT / "knowledge_base", root / "corpus" / "zh"]


def load_queries(lang: str, root: Path) -> list[dict[str, Any]]:
    return yaml.safe_load((root / f"queries_{lang}.yaml").read_text(encoding="utf-8"))


def merged_kb(lang: str, dest: Path, root: Path) -> Path:
    """One knowledge-base folder holding the language's corpora (runbooks one folder deep)."""
    kb = dest / "kb"
    for src in corpus_dirs(lang, root):
        for f in src.glob("*/*"):
            if f.is_file() and f.suffix.lower() in {".md", ".markdown", ".txt"}:
                target = kb / f.relative_to(src)
                if target.exists():
                    raise SystemExit(f"{target.relative_to(kb)} exists in two corpora of {lang}")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)
    return kb


async def build(lang: str, work: Path, args: argparse.Namespace, embeddings: Any) -> Any:
    from persistence.db import Database
    from persistence.migrate import upgrade
    from retrieval.knowledge import KnowledgeBase
    from settings import load_settings

    kb_dir = merged_kb(lang, work, args.eval_root)
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{work / 'kb.db'}",
        "milvus_uri": str(work / "milvus.db"),
        "knowledge_base_dir": kb_dir,
        "data_dir": work,
    }
    relevance: dict[str, Any] = {}
    if args.judge:
        relevance["judge"] = args.judge
    if args.calibration:
        relevance["calibration_file"] = args.calibration
    if relevance:
        values["retrieval"] = {"relevance": relevance}
    settings = load_settings(**values)
    upgrade(settings.database_url)
    kb = KnowledgeBase.build(settings, Database(settings.database_url), embeddings=embeddings)
    t = time.perf_counter()
    report = await kb.start()
    failed = [f for f in report.as_dict()["files"] if f["status"] == "FAILED"] if report else []
    print(
        f"[{lang}] imported {len(kb.catalog)} documents in {time.perf_counter() - t:.1f}s"
        + (f", {len(failed)} FAILED: {failed[:3]}" if failed else ""),
        file=sys.stderr,
    )
    return kb


def by_route(docs: list[dict[str, Any]], route: str) -> list[str]:
    ranked = [d for d in docs if d["ranks"].get(route)]
    return [d["source"] for d in sorted(ranked, key=lambda d: d["ranks"][route])]


def ranking(outcome: Any) -> tuple[list[str], list[str], list[str], list[str]]:
    """(shown, fused, bm25, dense) document paths, best first."""
    p, a = outcome.payload, outcome.artifact
    shown: list[str] = []
    if p["found"]:
        for item in [p["primary"], *p["supplement"]]:
            for s in str((item or {}).get("source", "")).split(","):
                if s.strip() and s.strip() not in shown:
                    shown.append(s.strip())
    docs = a.get("documents")
    if docs is None:  # an older checkout: chunk-level scores only
        fused = list(dict.fromkeys(s["source"] for s in a.get("l1_scores") or []))
        bm25 = list(
            dict.fromkeys(
                s["source"]
                for s in sorted(
                    (s for s in a.get("l1_scores") or [] if s.get("bm25_rank")),
                    key=lambda s: s["bm25_rank"],
                )
            )
        )
    else:
        fused = [d["source"] for d in docs]
        bm25 = by_route(docs, "bm25")
    dense = by_route(docs or [], "dense")
    if a.get("layer") == "L0" and p["primary"]:
        fused = bm25 = dense = [p["primary"]["source"]]
    return shown, fused or shown, bm25, dense


def rr(paths: list[str], expected: set[str]) -> float:
    for i, path in enumerate(paths, start=1):
        if path in expected:
            return 1.0 / i
    return 0.0


def evaluate(kb: Any, queries: list[dict[str, Any]], dump: Any, lang: str) -> dict[str, Any]:
    from retrieval.memory import SessionMemory

    rows = []
    for q in queries:
        out = kb.lookup(q["query"], SessionMemory())
        expected = set(q.get("expected") or [])
        shown, fused, bm25, dense = ranking(out)
        level = out.payload["relevanceLevel"]
        rows.append(
            {
                "id": q["id"],
                "kind": q.get("kind", ""),
                "answerable": bool(expected),
                "found": out.payload["found"],
                "level": level,
                "shown": shown,
                "fused": fused,
                "bm25": bm25,
                "dense": dense,
                "expected": expected,
                "layer": out.artifact.get("layer"),
                "confidence": out.artifact.get("confidence"),
            }
        )
        if dump is not None:
            for rank, d in enumerate(out.artifact.get("documents") or [], start=1):
                dump.write(
                    json.dumps(
                        {
                            "lang": lang,
                            "id": q["id"],
                            "kind": q.get("kind", ""),
                            "rank": rank,
                            "answerable": bool(expected),
                            "label": int(d["source"] in expected),
                            "features": d["features"],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    return summarize(rows)


def _r(x: float) -> float:
    return round(x, 3)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    neg = [r for r in rows if not r["answerable"]]
    n = max(len(ans), 1)
    out: dict[str, Any] = {"queries": len(rows), "answerable": len(ans), "negatives": len(neg)}
    for key in ("shown", "fused", "bm25", "dense"):
        out[key] = {
            "R@1": _r(sum(1 for r in ans if r[key][:1] and r[key][0] in r["expected"]) / n),
            "R@3": _r(sum(1 for r in ans if set(r[key][:3]) & r["expected"]) / n),
            "MRR": _r(sum(rr(r[key], r["expected"]) for r in ans) / n),
        }
    out["found_rate"] = _r(sum(r["found"] for r in ans) / n)
    out["negatives_found"] = sum(r["found"] for r in neg)
    levels: dict[str, Any] = {}
    for lv in LEVELS:
        at = [r for r in rows if r["level"] == lv]
        right = sum(1 for r in at if r["shown"][:1] and r["shown"][0] in r["expected"])
        levels[lv] = {
            "count": len(at),
            "negatives": sum(1 for r in at if not r["answerable"]),
            "top1_precision": _r(right / len(at)) if at and lv != "NONE" else None,
        }
    out["levels"] = levels
    confident = [r for r in ans if r["level"] in CONFIDENT]
    out["confident_share"] = _r(len(confident) / n)
    out["right_but_dropped"] = [
        r["id"] for r in ans if not r["found"] and r["fused"][:1] and r["fused"][0] in r["expected"]
    ]
    out["confident_but_wrong"] = [
        r["id"]
        for r in rows
        if r["level"] in CONFIDENT and not (r["shown"][:1] and r["shown"][0] in r["expected"])
    ]
    out["layers"] = dict(Counter(r["layer"] for r in rows))
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in ans:
        by_kind[r["kind"]].append(r)
    out["shown_R@1_by_kind"] = {
        k: _r(sum(1 for r in v if r["shown"][:1] and r["shown"][0] in r["expected"]) / len(v))
        for k, v in sorted(by_kind.items())
    }
    out["misses"] = [
        {
            "id": r["id"],
            "level": r["level"],
            "shown": r["shown"][:2],
            "expected": sorted(r["expected"]),
        }
        for r in ans
        if not (r["shown"][:1] and r["shown"][0] in r["expected"])
    ][:40]
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", nargs="+", default=["en", "zh"], choices=["en", "zh"])
    parser.add_argument("--judge", choices=["calibrated", "dense"], default=None)
    parser.add_argument("--calibration", type=Path, default=None, help="a calibration JSON")
    parser.add_argument("--dump", type=Path, default=None, help="write judged evidence (JSONL)")
    parser.add_argument("--keep-misses", action="store_true", help="list misses in the output")
    parser.add_argument(
        "--work", type=Path, default=None, help="keep the imported stores here and reuse them"
    )
    parser.add_argument(
        "--model", default="", help="local embedding model (default: the configured one)"
    )
    parser.add_argument(
        "--eval-root",
        type=Path,
        default=EVAL,
        help="folder with corpus/<lang>/ and queries_<lang>.yaml",
    )
    args = parser.parse_args()
    from retrieval.embeddings import make_embeddings
    from settings import load_settings

    c.warm_jieba()
    cfg = load_settings().retrieval.embedding
    if args.model:
        cfg = cfg.model_copy(update={"model": args.model})
    embeddings = make_embeddings(cfg)
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    result: dict[str, Any] = {
        "machine": c.machine(),
        "code": str(c.CODE_ROOT),
        "model": embeddings.model_id,
    }
    try:
        for lang in args.lang:
            keep = args.work is not None
            work = (args.work / lang) if keep else Path(tempfile.mkdtemp(prefix=f"eval-{lang}-"))
            if keep and (work / "kb").exists():
                shutil.rmtree(work / "kb")  # re-copied below; the stores are reused
            work.mkdir(parents=True, exist_ok=True)
            try:
                kb = await build(lang, work, args, embeddings)
                t = time.perf_counter()
                res = evaluate(kb, load_queries(lang, args.eval_root), dump, lang)
                res["seconds"] = round(time.perf_counter() - t, 1)
                if not args.keep_misses:
                    res.pop("misses")
                result[lang] = res
                await kb.close()
                await kb.db.dispose()
            finally:
                if not keep:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if dump:
            dump.close()
    print(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
