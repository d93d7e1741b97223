"""``python -m persistence migrate | drift | sessions list | sessions show ID | sessions replay ID``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from persistence.migrate import drift, upgrade
from settings import Settings, SettingsError, load_settings


def _row(s: Any) -> str:
    score = (s.self_evaluation or {}).get("evidence_score", "-")
    dur = f"{s.total_duration_ms}ms" if s.total_duration_ms is not None else "-"
    return (
        f"{s.session_id}  {s.status:<7} {s.agent_flow:<6} {dur:>8} tok={s.total_tokens:<6} "
        f"score={score!s:<3} fb={s.feedback or '-':<10} {s.query[:50]}"
    )


async def _sessions(settings: Settings, args: argparse.Namespace) -> int:
    from persistence import repository as repo
    from persistence.db import Database

    if args.action in ("list", "show"):
        db = Database(settings.database_url)
        try:
            async with db.session() as s:
                if args.action == "list":
                    page = await repo.list_sessions(s, status=args.status, limit=args.limit)
                    for row in page.items:
                        print(_row(row))
                    print(f"({len(page.items)} of {page.total})")
                    return 0
                trace = await repo.get_trace(s, args.id)
        finally:
            await db.dispose()
        if trace is None:
            print(f"session {args.id} not found", file=sys.stderr)
            return 1
        print(_row(trace.session))
        if trace.session.error_message:
            print(f"error: {trace.session.error_message}")
        for st in trace.steps:
            print(
                f"  step {st.step_index:>2} {st.agent_name:<12} {st.duration_ms or 0:>5}ms tok={st.token_count or 0:<5} {(st.model_output or '')[:90]!r}"
            )
        for inv in trace.invocations:
            print(
                f"  tool {inv.tool_name:<24} ok={inv.success!s:<5} layer={inv.retrieval_layer or '-':<5} "
                f"level={inv.relevance_level or '-':<16} dedup={inv.dedup_reason or '-'}"
            )
        print(f"answer:\n{trace.session.answer or ''}")
        return 0

    from retrieval.served import held_by_server

    if held_by_server(settings):
        return await asyncio.to_thread(_served_replay, settings, args)

    from runs.replay import StoreNotOpen
    from services import Services

    services = await Services.start(settings)
    try:
        replayer = services.replayer()
        if args.from_checkpoint:
            result = await replayer.from_checkpoint(args.id, args.from_checkpoint)
            print(json.dumps(result.__dict__, ensure_ascii=False, indent=2))
        elif args.list_checkpoints:
            print(json.dumps(await replayer.checkpoints(args.id), ensure_ascii=False, indent=2))
        else:
            print(json.dumps(await replayer.rerun(args.id), ensure_ascii=False, indent=2))
        return 0  # the replay's evidence score: ``services.close`` waits for it
    except StoreNotOpen as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        await services.close()


def _served_replay(settings: Settings, args: argparse.Namespace) -> int:
    """The replay by the server that holds the Milvus Lite folder (this process cannot open it):
    the same report as ``POST /api/sessions/{id}/replay``, the replay recorded by that server."""
    from retrieval.served import (
        Served,
        ServerRefused,
        ServerUnavailable,
        held_message,
        snake_keys,
    )

    served = Served.of(settings)
    path = f"/api/sessions/{args.id}"
    try:
        if args.list_checkpoints:
            out = served.request("GET", f"{path}/checkpoints")
        elif args.from_checkpoint:
            body = {"mode": "checkpoint", "checkpointId": args.from_checkpoint}
            out = served.request("POST", f"{path}/replay", json=body)
        else:
            out = served.request("POST", f"{path}/replay", json={"mode": "rerun"})
    except ServerUnavailable as exc:
        print(f"not replayed: {held_message(settings, str(exc))}", file=sys.stderr)
        return 1
    except ServerRefused as exc:
        print(f"not replayed: {exc}", file=sys.stderr)
        return 1
    print(f"(replayed by the running server on {served.where})", file=sys.stderr)
    print(json.dumps(snake_keys(out), ensure_ascii=False, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m persistence")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("migrate", help="upgrade the database in DATABASE_URL to the newest schema")
    sub.add_parser("drift", help="list differences between the models and the live schema")
    sessions = sub.add_parser("sessions", help="inspect and replay recorded sessions")
    ssub = sessions.add_subparsers(dest="action", required=True)
    ls = ssub.add_parser("list", help="newest sessions first")
    ls.add_argument("--status", choices=["RUNNING", "SUCCESS", "FAILED"])
    ls.add_argument("--limit", type=int, default=20)
    show = ssub.add_parser("show", help="a session's full trace")
    show.add_argument("id")
    rp = ssub.add_parser("replay", help="re-run with recorded model outputs, or time-travel")
    rp.add_argument("id")
    rp.add_argument("--from-checkpoint", metavar="C", help="continue from this checkpoint id")
    rp.add_argument("--list-checkpoints", action="store_true", help="only list the checkpoints")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.cmd == "migrate":
        upgrade(settings.database_url)
        print(f"database ({settings.database_kind}) is at the newest schema")
        return 0
    if args.cmd == "drift":
        diffs = drift(settings.database_url)
        for d in diffs:
            print(d)
        return 1 if diffs else 0
    return asyncio.run(_sessions(settings, args))


if __name__ == "__main__":
    sys.exit(main())
