"""``python -m retrieval ingest [--force]`` · ``reindex`` · ``lookup "ERR_TIMEOUT"`` · ``stats``.

``reindex`` drops the vector collection and imports every document again: the way to switch the
embedding model (the collection records which model made its vectors and refuses another).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from persistence.db import Database
from persistence.migrate import upgrade
from retrieval.collection_model import EmbeddingMismatch
from retrieval.knowledge import KnowledgeBase
from settings import SettingsError, load_settings


def _progress(event: dict[str, Any]) -> None:
    if event["event"] == "start":
        print(f"importing {event['total']} file(s), {event['skipped']} unchanged", file=sys.stderr)
    elif event["event"] == "file" and event["status"] != "PROCESSING":
        err = f" — {event['error']}" if event.get("error") else ""
        print(
            f"[{event['index']}/{event['total']}] {event['status']:<8} {event['file']}{err}",
            file=sys.stderr,
        )


def _print_lookup(outcome: Any, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {"result": outcome.payload, "scores": outcome.artifact},
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    p, a = outcome.payload, outcome.artifact
    print(
        f"found={p['found']} level={p['relevanceLevel']} layer={a['layer']} dedup={a['dedup_reason']}"
    )
    print(f"hint: {p['completenessHint']}")
    if p["message"]:
        print(f"message: {p['message']}")
    if a["l0_titles"]:
        print("L0 matches: " + "; ".join(a["l0_titles"]))
    if a.get("route_weights"):
        print(
            f"readability {a.get('readability')}  route weights {a['route_weights']}  judge {a.get('judge')}"
        )
    if a.get("documents"):
        print(f"{'source':<45} {'level':<15} {'conf':>5} {'dense':>6} {'bm25':>7}  ranks")
        for d in a["documents"]:
            conf = "-" if d["confidence"] is None else f"{d['confidence']:.2f}"
            sim = "-" if d["dense_similarity"] is None else f"{d['dense_similarity']:.3f}"
            bm = "-" if d["bm25_score"] is None else f"{d['bm25_score']:.2f}"
            mark = " *" if d["shown"] else ""
            print(
                f"{d['source']:<45} {d['level']:<15} {conf:>5} {sim:>6} {bm:>7}  {d['ranks']}{mark}"
            )
    if p["primary"]:
        print(f"\n--- primary ({p['primary']['matchType']}, {p['primary']['source']}) ---")
        print(p["primary"]["content"])
    for s in p["supplement"]:
        print(f"\n--- supplement ({s['source']}) {s.get('breadcrumb', '')} ---")
        print(s["content"])
    print(f"\ntimings (ms): {a['timings_ms']}")


async def _run(args: argparse.Namespace) -> int:
    settings = load_settings()
    upgrade(settings.database_url)
    db = Database(settings.database_url)
    kb = KnowledgeBase.build(settings, db)
    try:
        if args.cmd == "ingest":
            await kb.start(ingest_if_empty=False)
            report = await kb.ingestion.init(force=args.force, progress=_progress)
            summary = report.as_dict()
            print(
                json.dumps({k: v for k, v in summary.items() if k != "files"}, ensure_ascii=False)
            )
            return 1 if summary["failed"] else 0
        if args.cmd == "reindex":
            await kb.loader.load()
            await asyncio.to_thread(kb.store.drop)
            print(
                f"dropped collection {kb.store.collection}; re-embedding with {kb.store.model_id}",
                file=sys.stderr,
            )
            report = await kb.ingestion.init(force=True, progress=_progress)
            summary = report.as_dict()
            print(
                json.dumps({k: v for k, v in summary.items() if k != "files"}, ensure_ascii=False)
            )
            return 1 if summary["failed"] else 0
        if args.cmd == "stats":
            print(json.dumps(await kb.stats(), ensure_ascii=False, indent=2))
            return 0
        await kb.start(ingest_if_empty=True, progress=_progress)
        _print_lookup(kb.lookup(args.query), args.json)
        return 0
    finally:
        await kb.close()
        await db.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrieval", description="Knowledge-base tools")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ingest = sub.add_parser("ingest", help="import the knowledge-base folder")
    ingest.add_argument("--force", action="store_true", help="re-import unchanged files too")
    sub.add_parser(
        "reindex",
        help="drop the vectors and import everything again (after changing the embedding model)",
    )
    look = sub.add_parser("lookup", help="run one lookup and show per-route scores")
    look.add_argument("query")
    look.add_argument(
        "--json", action="store_true", help="print the payload and raw scores as JSON"
    )
    sub.add_parser("stats", help="documents, vectors, per category and status")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except (SettingsError, EmbeddingMismatch) as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
