"""Development eval of ``lookup_knowledge``: ranking quality and whether the levels keep their word.

Corpora (kept in the repository, see ``bench/eval/README.md``):

* ``en`` — public, permissively licensed English runbooks (``bench/eval/corpus/en``, attribution
  there);
* ``zh`` — the shipped ``knowledge_base/`` plus Chinese runbooks written for the eval
  (``bench/eval/corpus/zh``).

Cases come from every ``bench/eval/queries*.yaml`` of the language (``eval_cases.py``: alert
payloads, missing-runbook topics, wrong-technology negatives, multi-symptom questions). Each corpus
is imported into a knowledge base built exactly as the server builds it (SQLite, Milvus Lite, the
configured embedding model: ``RETRIEVAL__EMBEDDING__*`` as for the server — by default
multilingual-e5-small, ``--model all-MiniLM-L6-v2`` for the packaged MiniLM — a local model in fp32),
and every case runs through ``KnowledgeBase.lookup`` with a fresh session memory — what ``POST
/api/knowledge/lookup`` does:

* as typed (``text``); a case with an ``alert`` also as structured input (``alert``);
* with its runbook left out (``loo``: disabled — out of L0, the catalog and L1's candidates, as a
  deleted document is; ``--reindex-check N`` deletes N runbooks for real on a copy and compares).

Printed per language and per split by document (``all``, ``fit``, ``held``; ``eval_summary.py``):
``main`` (documents shown R@1/R@3/MRR, fused, BM25, dense, found-rate, levels with top-1
precision, confident share and precision), ``descriptions`` (rendered alert texts: R@1, answerable
"not found"), ``alert_input``, ``leave_one_out``, ``wrong_technology`` and ``missing_runbook``
(found and confident shares: should be low) and ``multi`` (per-aspect recall). JSON on stdout, a
short table on stderr.

``--dump FILE`` writes every judged document's evidence with its label, split and fold, for
``fit_relevance.py``; ``--rows FILE`` appends every lookup's outcome (shown documents, level,
split, mode), one JSON line each, for reading the misses. Runs against another checkout with
``BENCH_CODE_ROOT=/path/to/checkout`` (the "before" numbers; an older lookup without alert input
skips the ``alert`` mode).

    .venv/bin/python bench/eval_retrieval.py [--lang en zh] [--dump evidence.jsonl] [--work DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import shutil
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import _common as c
from eval_cases import Case, fold_of, load_cases, split_of
from eval_summary import language_report, table

EVAL = c.ROOT / "bench" / "eval"


def corpus_dirs(lang: str, root: Path) -> list[Path]:
    if lang == "en":
        return [root / "corpus" / "en"]
    shipped = root / "knowledge_base"  # an eval root may bring its own copy
    return [shipped if shipped.is_dir() else c.ROOT / "knowledge_base", root / "corpus" / "zh"]


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
    # A kept store (--work) finishes an import an earlier run left half done; unchanged files cost
    # a parse each.
    report = await kb.start() or await kb.ingestion.init()
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


class Runner:
    """Asks every case of one language and keeps a row per lookup (and the dump)."""

    def __init__(self, kb: Any, lang: str, dump: Any) -> None:
        self.kb, self.lang, self.dump = kb, lang, dump
        params = inspect.signature(kb.lookup).parameters
        self.takes_alert = "alert" in params  # an older checkout (a "before" run) does not
        self.rows: list[dict[str, Any]] = []

    def ask(self, case: Case, mode: str) -> dict[str, Any]:
        from retrieval.lookup.memory import SessionMemory

        if mode == "alert":
            from retrieval.lookup.alert_input import AlertInput

            out = self.kb.lookup("", SessionMemory(), alert=AlertInput.parse(case.alert))
        else:
            out = self.kb.lookup(case.query, SessionMemory())
        loo = mode == "loo"
        expected = set() if loo else set(case.expected)
        shown, fused, bm25, dense = ranking(out)
        row = {
            "id": case.id,
            "lang": self.lang,
            "split": split_of(case.doc_key),
            "fold": fold_of(case.doc_key),
            "kind": case.kind,
            "mode": mode,
            "answerable": bool(expected) and case.present,
            "has_alert": case.alert is not None,
            "missing_runbook": case.missing_runbook,
            "wrong_tech": case.wrong_tech,
            "found": out.payload["found"],
            "level": out.payload["relevanceLevel"],
            "shown": shown,
            "fused": fused,
            "bm25": bm25,
            "dense": dense,
            "expected": sorted(expected),
            "aspects": [] if loo else [sorted(a) for a in case.aspects],
            "layer": out.artifact.get("layer"),
            "confidence": out.artifact.get("confidence"),
        }
        self.rows.append(row)
        if self.dump is not None:
            for rank, d in enumerate(out.artifact.get("documents") or [], start=1):
                rec = {k: row[k] for k in ("lang", "id", "split", "fold", "kind", "mode")}
                rec |= {
                    "missing_runbook": case.missing_runbook,
                    "doc": case.doc_key,
                    "source": d["source"],  # the judged document (for reading a fit's errors)
                    "rank": rank,
                    "answerable": row["answerable"],
                    "label": int(d["source"] in expected),
                    "features": d["features"],
                }
                self.dump.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return row

    def run(self, cases: list[Case], *, loo: bool) -> None:
        for case in cases:
            self.ask(case, "text")
            if case.alert and self.takes_alert:
                self.ask(case, "alert")
        if loo:
            self.leave_one_out([c for c in cases if c.answerable and c.present])

    def leave_one_out(self, cases: list[Case]) -> None:
        """Each runbook left out in turn (disabled: out of L0, the catalog and L1's candidates,
        as a deleted document is) while its own queries are asked."""
        groups: dict[frozenset[str], list[Case]] = defaultdict(list)
        for case in cases:
            groups[case.expected].append(case)
        for paths, group in groups.items():
            with left_out(self.kb, paths):
                for case in group:
                    self.ask(case, "loo")


@contextlib.contextmanager
def left_out(kb: Any, paths: Iterable[str]):  # noqa: ANN201
    docs = [d for p in paths if (d := kb.catalog.by_path(p)) is not None]
    for d in docs:
        kb.catalog.disable(d.doc_id)
    try:
        yield docs
    finally:
        for d in docs:
            kb.catalog.put(d)


async def reindex_check(kb: Any, cases: list[Case], sample: int) -> dict[str, Any]:
    """Left out by disabling vs really deleted: the same answers? ``sample`` runbooks are deleted
    for real one after another (on this throw-away copy of the stores), each compared on its own
    queries with the disabled run just before it."""
    from retrieval.lookup.memory import SessionMemory

    groups: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        if len(case.expected) == 1 and case.present:
            groups[next(iter(case.expected))].append(case)
    picked = sorted(groups, key=lambda p: zlib.crc32(p.encode()))[:sample]
    same = total = 0
    diffs = []
    for path in picked:
        doc = kb.catalog.by_path(path)
        if doc is None:
            continue
        with left_out(kb, [path]):
            before = [_answer(kb.lookup(q.query, SessionMemory())) for q in groups[path]]
        await kb.ingestion.delete(doc.doc_id)
        after = [_answer(kb.lookup(q.query, SessionMemory())) for q in groups[path]]
        for case, b, a in zip(groups[path], before, after, strict=True):
            total += 1
            same += b == a
            if b != a:
                diffs.append({"id": case.id, "disabled": b, "deleted": a})
    return {"runbooks": len(picked), "queries": total, "same_answer": same, "differences": diffs}


def _answer(out: Any) -> tuple[str, list[str]]:
    return out.payload["relevanceLevel"], ranking(out)[0]


def eval_embeddings(model: str = "") -> Any:
    """The configured embedding model (``RETRIEVAL__EMBEDDING__*`` as for the server); a local
    model runs in fp32 so that runs on any CPU give the same evidence. ``None`` lets each
    knowledge base build the configured remote one."""
    from settings import load_settings

    cfg = load_settings().retrieval.embedding
    if model:
        cfg = cfg.model_copy(update={"model": model})
    if cfg.provider != "local":
        return None
    from retrieval.l1.embeddings import make_embeddings

    return make_embeddings(cfg.model_copy(update={"precision": "fp32"}))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", nargs="+", default=["en", "zh"], choices=["en", "zh"])
    parser.add_argument("--judge", choices=["calibrated", "dense"], default=None)
    parser.add_argument("--calibration", type=Path, default=None, help="a calibration JSON")
    parser.add_argument("--dump", type=Path, default=None, help="write judged evidence (JSONL)")
    parser.add_argument("--keep-misses", action="store_true", help="list misses in the output")
    parser.add_argument(
        "--rows", type=Path, default=None, help="write every lookup's outcome (JSONL, one per case)"
    )
    parser.add_argument("--no-loo", action="store_true", help="skip the leave-one-out pass")
    parser.add_argument(
        "--split",
        choices=["fit", "held"],
        default=None,
        help="ask only the cases of one split (a quicker report on the held-out runbooks)",
    )
    parser.add_argument(
        "--reindex-check",
        type=int,
        default=0,
        metavar="N",
        help="delete N runbooks for real (on a copy) and compare with leaving them out",
    )
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
        help="folder with corpus/<lang>/ and the queries*.yaml files",
    )
    args = parser.parse_args()
    c.warm_jieba()
    embeddings = eval_embeddings(args.model)
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    result: dict[str, Any] = {
        "machine": c.machine(),
        "code": str(c.CODE_ROOT),
        "model": embeddings.model_id
        if embeddings is not None
        else "remote (RETRIEVAL__EMBEDDING__*)",
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
                cases = load_cases(lang, args.eval_root)
                if args.split:
                    cases = [q for q in cases if split_of(q.doc_key) == args.split]
                t = time.perf_counter()
                runner = Runner(kb, lang, dump)
                runner.run(cases, loo=not args.no_loo)
                result[lang] = language_report(runner.rows, misses=args.keep_misses)
                if args.rows:
                    with args.rows.open("a", encoding="utf-8") as f:
                        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in runner.rows)
                result[lang]["seconds"] = round(time.perf_counter() - t, 1)
                await kb.close()
                await kb.db.dispose()
                if args.reindex_check:
                    result[lang]["reindex_check"] = await _checked_copy(
                        lang, work, args, embeddings, cases
                    )
            finally:
                if not keep:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if dump:
            dump.close()
    print(json.dumps(result, ensure_ascii=False, indent=1))
    print(table(result), file=sys.stderr)


async def _checked_copy(
    lang: str, work: Path, args: argparse.Namespace, embeddings: Any, cases: list[Case]
) -> dict[str, Any]:
    copy = Path(tempfile.mkdtemp(prefix=f"eval-{lang}-reindex-"))
    try:
        for name in ("kb.db", "kb.db-wal", "kb.db-shm", "milvus.db"):
            src = work / name
            if src.is_dir():
                shutil.copytree(src, copy / name)
            elif src.is_file():
                shutil.copy2(src, copy / name)
        kb = await build(lang, copy, args, embeddings)
        try:
            return await reindex_check(kb, cases, args.reindex_check)
        finally:
            await kb.close()
            await kb.db.dispose()
    finally:
        shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
