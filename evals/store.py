"""Eval runs into the records (``eval_run`` / ``eval_result``), where the console lists them."""

from __future__ import annotations

from typing import Any

from evals.report import ScenarioResult, SuiteReport
from persistence import eval_runs
from persistence.db import Database
from persistence.models import EvalResult, EvalRun, EvalRunStatus

ANSWER_CHARS = 20000


async def open_run(db: Database, meta: dict[str, Any]) -> None:
    async with db.session() as s:
        await eval_runs.create_run(
            s,
            EvalRun(
                run_id=meta["run_id"],
                model=meta["model"],
                judge_model=meta.get("judge_model"),
                git_commit=meta.get("git_commit"),
                prompt_hash=meta["prompt_hash"],
                embedding_model=meta.get("embedding_model"),
                scenario_count=meta.get("scenario_count", 0),
                summary={"options": meta.get("options", {})},
            ),
        )


async def store_result(db: Database, run_id: str, r: ScenarioResult) -> None:
    s, o = r.scenario, r.observation
    async with db.session() as session:
        await eval_runs.add_result(
            session,
            EvalResult(
                run_id=run_id,
                scenario_id=s.id,
                repeat_index=r.repeat,
                title=s.title[:255],
                language=s.language,
                flow=s.flow,
                intent=s.intent,
                passed=r.passed,
                checks=[c.as_dict() for c in r.checks],
                session_ids=o.session_ids,
                answer=o.answer[:ANSWER_CHARS],
                model_calls=o.model_calls,
                total_tokens=o.tokens,
                duration_ms=o.duration_ms,
                judge=r.judge,
            ),
        )


async def close_run(
    db: Database, report: SuiteReport, *, status: EvalRunStatus, error: str | None = None
) -> None:
    meta = report.meta
    cost = report.cost()
    async with db.session() as s:
        await eval_runs.finish_run(
            s,
            meta["run_id"],
            status=status,
            error=error,
            knowledge_hash=meta.get("knowledge_hash"),
            scenario_count=len({r.scenario.id for r in report.results}),
            result_count=len(report.results),
            passed=report.passed,
            pass_rate=report.pass_rate,
            model_calls=cost["model_calls"],
            total_tokens=cost["tokens"],
            duration_ms=int(meta.get("duration_s", 0) * 1000),
            summary={
                **report.summary(),
                "options": meta.get("options", {}),
                "load": meta.get("load"),
            },
        )
