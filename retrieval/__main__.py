"""``python -m retrieval ingest [--force]`` · ``reindex`` · ``lookup "ERR_TIMEOUT"`` · ``stats``.

``reindex`` drops the vector collection and imports every document again: the way to switch the
embedding model (the collection records which model made its vectors and refuses another).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from decimal import ROUND_DOWN, Decimal
from typing import Any

from persistence.db import Database
from persistence.migrate import upgrade
from retrieval.knowledge import KnowledgeBase
from retrieval.l1.collection_model import EmbeddingMismatch
from retrieval.served import (
    Served,
    ServerRefused,
    ServerUnavailable,
    held_by_server,
    held_message,
    snake_keys,
)
from settings import Settings, SettingsError, load_settings

# The API's keys whose values are data-keyed maps (left as they are by its camelCase).
_OPAQUE = {"served", "byCategory", "byStatus", "routeWeights", "timingsMs"}


def _progress(event: dict[str, Any]) -> None:
    if event["event"] == "start":
        print(f"importing {event['total']} file(s), {event['skipped']} unchanged", file=sys.stderr)
    elif event["event"] == "file" and event["status"] != "PROCESSING":
        err = f" — {event['error']}" if event.get("error") else ""
        print(
            f"[{event['index']}/{event['total']}] {event['status']:<8} {event['file']}{err}",
            file=sys.stderr,
        )


def cut(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, cut rather than rounded: a confidence of 0.7499 beside
    REFERENCE reads 0.74, never 0.75 (the HIGHLY_RELEVANT threshold). Cut from its shortest
    decimal form (``repr``), so binary fractions lose no digit."""
    step = Decimal(1).scaleb(-digits)
    return str(Decimal(repr(float(value))).quantize(step, rounding=ROUND_DOWN))


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
            conf = "-" if d["confidence"] is None else cut(d["confidence"], 2)
            sim = "-" if d["dense_similarity"] is None else cut(d["dense_similarity"], 3)
            bm = "-" if d["bm25_score"] is None else cut(d["bm25_score"], 2)
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


def _served_stats(settings: Settings) -> dict[str, Any] | None:
    """The running server's own count (``GET /api/knowledge/stats``), or None if none answers."""
    try:
        return Served.of(settings).request("GET", "/api/knowledge/stats", timeout=5)
    except (ServerUnavailable, ServerRefused):
        return None


class _Outcome:
    """A lookup the running server made (``POST /api/knowledge/lookup``), shaped as the CLI's own."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.payload, self.artifact = body["result"], snake_keys(body["scores"], _OPAQUE)


def _served_lookup(settings: Settings, query: str) -> _Outcome:
    """The lookup by the server holding the Milvus Lite folder: the same answer as over HTTP."""
    served = Served.of(settings)
    try:
        body = served.request("POST", "/api/knowledge/lookup", json={"query": query})
    except ServerUnavailable as exc:
        raise ServerUnavailable(held_message(settings, str(exc))) from None
    print(f"(looked up by the running server on {served.where})", file=sys.stderr)
    return _Outcome(body)


async def _stats(kb: KnowledgeBase) -> dict[str, Any]:
    """Counts from the stores; a Milvus Lite file held by a running server is counted by it.

    Milvus Lite lets one process open its file at a time, so while the server runs this process
    cannot count the vectors itself; it asks the server (on HOST:PORT) instead."""
    s = kb.settings
    held = held_by_server(s)
    out = await kb.stats(count_vectors=not held)
    if not held:
        return out
    served = await asyncio.to_thread(_served_stats, s)
    if served is not None and served.get("vectors") is not None:
        out["vectors"] = served["vectors"]
        out["vectors_counted_by"] = f"the running server on {s.host}:{s.port}"
        return out
    out["vectors_error"] = (
        f"{s.milvus_uri} is a Milvus Lite file, which one process at a time can open, and another "
        f"process has it open; no server answered on {s.host}:{s.port} to count them. Ask that "
        "process (GET /api/knowledge/stats on its port) or stop it and run this again"
    )
    return out


async def _run(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.cmd == "lookup" and held_by_server(settings):
        # Opening the folder here would fail (DataDirLockedError): the server looks it up.
        outcome = await asyncio.to_thread(_served_lookup, settings, args.query)
        _print_lookup(outcome, args.json)
        return 0
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
            print(json.dumps(await _stats(kb), ensure_ascii=False, indent=2))
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
    except (SettingsError, EmbeddingMismatch, ServerUnavailable, ServerRefused) as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
