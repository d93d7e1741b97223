"""``python -m evals run | list | validate | runs`` — the incident eval suite.

``run`` prints the results as JSON on stdout (``--json FILE`` also writes it to a file) and a table
with each failed check's reason on stderr, and stores the run for the console (``/evals``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

from settings import Settings, SettingsError, load_settings

USAGE_EXAMPLES = """examples:
  python -m evals run                              every scenario, offline model
  python -m evals run --only 'zh-*' --repeat 3     the Chinese scenarios, three times each
  LLM_BASE_URL=http://localhost:8000/v1 python -m evals run --model qwen2.5-7b --judge qwen2.5-7b
  python -m evals run --json /tmp/evals.json --fail-under 0.85
"""


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {}
    if getattr(args, "base_url", None):
        overrides["llm_base_url"] = args.base_url
    return load_settings(**overrides)


async def _run(settings: Settings, args: argparse.Namespace) -> int:
    from evals.report import table
    from evals.suite import Suite, SuiteOptions

    judge = None if args.judge in (None, "none") else args.judge
    if args.judge is None and args.model != "offline":
        judge = args.model  # a hosted model judges its own answers unless told otherwise
    options = SuiteOptions(
        model=args.model,
        judge=judge,
        only=[p for part in args.only for p in part.split(",") if p.strip()],
        repeat=args.repeat,
        suite=args.suite,
        workdir=Path(args.workdir) if args.workdir else None,
        fresh=args.fresh,
    )
    suite = Suite(settings, options, progress=lambda line: print(line, file=sys.stderr, flush=True))
    report = await suite.run()
    data = report.as_json()
    text = json.dumps(data, ensure_ascii=False, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    print("\n" + table(report), file=sys.stderr)
    if args.fail_under is not None and (report.pass_rate or 0) < args.fail_under:
        print(f"pass rate {report.pass_rate} is under {args.fail_under}", file=sys.stderr)
        return 1
    return 0


def _list(settings: Settings, args: argparse.Namespace) -> int:
    from evals.loader import load_scenarios
    from evals.suite import scenario_folders, select

    for s in select(load_scenarios(scenario_folders(settings, args.suite)), args.only):
        print(f"{s.id:<44} {s.language} {s.flow:<5} {s.intent:<10} {s.knowledge_base:<7} {s.title}")
    return 0


def _validate(settings: Settings, args: argparse.Namespace) -> int:
    from evals.loader import ScenarioError, load_file, unknown_runbooks
    from evals.workspace import runbook_paths

    problems: list[str] = []
    for name in args.files:
        try:
            s = load_file(Path(name))
        except ScenarioError as exc:
            problems += exc.problems
            continue
        problems += unknown_runbooks([s], runbook_paths(settings, s.knowledge_base))
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(args.files)} file(s), {len(problems)} problem(s)")
    return 1 if problems else 0


async def _runs(settings: Settings, args: argparse.Namespace) -> int:
    from persistence import eval_runs
    from persistence.db import Database
    from persistence.migrate import upgrade

    await asyncio.to_thread(upgrade, settings.database_url)
    db = Database(settings.database_url)
    try:
        async with db.session() as s:
            page = await eval_runs.list_runs(s, limit=args.limit)
    finally:
        await db.dispose()
    for r in page.items:
        rate = f"{r.pass_rate:.0%}" if r.pass_rate is not None else "-"
        print(
            f"{r.run_id}  {r.created_at:%Y-%m-%d %H:%M}  {r.status:<7} {r.model:<20} "
            f"{r.passed}/{r.result_count} {rate:>4}  commit {r.git_commit or '?'}  "
            f"prompts {r.prompt_hash}  {r.model_calls} calls {r.total_tokens} tokens"
        )
    print(f"({len(page.items)} of {page.total})")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m evals",
        description="The incident eval suite: recorded incidents replayed against a model, scored.",
        epilog=USAGE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run the scenarios and print the results")
    run.add_argument(
        "--model",
        default="offline",
        help="offline (default) or a model name on the OpenAI-compatible endpoint (LLM_BASE_URL)",
    )
    run.add_argument("--base-url", help="the OpenAI-compatible endpoint (default: LLM_BASE_URL)")
    run.add_argument(
        "--judge",
        help="model scoring 'answers the question' apart from the checks; 'none' to skip "
        "(default: the --model when it is hosted, none offline)",
    )
    run.add_argument(
        "--only", action="append", default=[], help="scenario ids or patterns (zh-*), repeatable"
    )
    run.add_argument("--repeat", type=int, default=1, help="runs per scenario (default 1)")
    run.add_argument("--suite", choices=("shipped", "local", "all"), default="all")
    run.add_argument("--json", help="also write the JSON results to this file")
    run.add_argument("--workdir", help="eval knowledge bases here (default DATA_DIR/evals)")
    run.add_argument("--fresh", action="store_true", help="rebuild the eval knowledge bases")
    run.add_argument(
        "--fail-under", type=float, help="exit 1 when the pass rate is below this (0..1)"
    )
    ls = sub.add_parser("list", help="list the scenarios")
    ls.add_argument("--suite", choices=("shipped", "local", "all"), default="all")
    ls.add_argument("--only", action="append", default=[])
    val = sub.add_parser("validate", help="check scenario files (schema and runbook paths)")
    val.add_argument("files", nargs="+")
    runs = sub.add_parser("runs", help="list the stored eval runs")
    runs.add_argument("--limit", type=int, default=20)
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    from evals.loader import ScenarioError
    from evals.suite import SuiteError

    try:
        settings = _settings(args)
        if args.cmd == "run":
            return asyncio.run(_run(settings, args))
        if args.cmd == "list":
            return _list(settings, args)
        if args.cmd == "validate":
            return _validate(settings, args)
        return asyncio.run(_runs(settings, args))
    except (SettingsError, ScenarioError, SuiteError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
