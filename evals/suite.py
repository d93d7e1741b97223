"""One suite run: load the scenarios, run each on its knowledge base with the model being judged,
check, judge (optionally), record and report.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals import store
from evals.checks import run_checks
from evals.judge import judge
from evals.loader import (
    SHIPPED_SCENARIOS,
    ScenarioError,
    load_scenarios,
    local_scenarios_dir,
    unknown_runbooks,
)
from evals.report import ScenarioResult, SuiteReport
from evals.runner import ScenarioRunner
from evals.schema import Scenario
from evals.words import shipped_synonyms
from evals.workspace import EvalStack, eval_stack, runbook_paths
from graph.context import Context
from graph.prompts import NAMES as PROMPT_NAMES
from llm.factory import OFFLINE, ModelFactory
from persistence.db import Database
from persistence.migrate import upgrade
from persistence.models import EvalRunStatus
from retrieval.l1.embeddings import DEFAULT_LOCAL_MODEL
from services import runner_on
from settings import Settings

ROOT = Path(__file__).resolve().parent.parent
Progress = Callable[[str], None]


class SuiteError(ValueError):
    """The suite cannot run as asked (no such scenario, no endpoint for a hosted model, …)."""


@dataclass
class SuiteOptions:
    model: str = OFFLINE
    judge: str | None = None  # a model name on the endpoint; None = no judge
    only: list[str] = field(default_factory=list)  # scenario ids or glob patterns
    repeat: int = 1
    suite: str = "all"  # shipped | local | all
    workdir: Path | None = None
    fresh: bool = False  # rebuild the eval knowledge bases from scratch


def scenario_folders(settings: Settings, suite: str) -> list[Path]:
    return {
        "shipped": [SHIPPED_SCENARIOS],
        "local": [local_scenarios_dir(settings)],
        "all": [SHIPPED_SCENARIOS, local_scenarios_dir(settings)],
    }[suite]


def select(scenarios: list[Scenario], only: list[str]) -> list[Scenario]:
    if not only:
        return scenarios
    picked = [s for s in scenarios if any(fnmatch.fnmatch(s.id, p) for p in only)]
    if not picked:
        raise SuiteError(f"no scenario matches {', '.join(only)} (list them: python -m evals list)")
    return picked


def prompt_hash(prompts_dir: Path) -> str:
    """The prompts every run is sent, as one fingerprint: a prompt edit is a new version."""
    h = hashlib.sha256()
    for name in PROMPT_NAMES:
        path = Path(prompts_dir) / f"{name}.md"
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
    return h.hexdigest()[:12]


def git_commit(root: Path = ROOT) -> str | None:
    """The checkout's commit, ``-dirty`` when tracked files are changed; None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        sha = git("rev-parse", "--short=12", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("-dirty" if dirty else "")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _check_endpoint(settings: Settings, options: SuiteOptions) -> None:
    hosted = [m for m in (options.model, options.judge) if m and m != OFFLINE]
    if hosted and not settings.llm_base_url:
        raise SuiteError(
            f"--model/--judge {hosted[0]} needs an OpenAI-compatible endpoint: set LLM_BASE_URL "
            "(and LLM_API_KEY), or pass --base-url; use --model offline for the offline model"
        )
    if options.judge == OFFLINE:
        raise SuiteError("the offline model cannot judge answers; give a hosted model or no judge")
    if options.repeat < 1:
        raise SuiteError("--repeat must be 1 or more")


class Suite:
    """Runs scenarios with ``options`` and records into ``settings``' database."""

    def __init__(
        self,
        settings: Settings,
        options: SuiteOptions,
        *,
        embeddings: Any = None,
        progress: Progress | None = None,
    ) -> None:
        _check_endpoint(settings, options)
        self.settings, self.options, self.embeddings = settings, options, embeddings
        self.progress = progress or (lambda _line: None)
        self.synonyms = shipped_synonyms()

    def scenarios(self) -> list[Scenario]:
        folders = scenario_folders(self.settings, self.options.suite)
        return select(load_scenarios(folders), self.options.only)

    def _meta(self, scenarios: list[Scenario]) -> dict[str, Any]:
        o = self.options
        emb = self.settings.retrieval.embedding
        return {
            "run_id": uuid.uuid4().hex,
            "model": o.model,
            "judge_model": o.judge,
            "git_commit": git_commit(),
            "prompt_hash": prompt_hash(self.settings.prompts_dir),
            "embedding_model": f"{emb.provider}:{emb.model or DEFAULT_LOCAL_MODEL}",
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "scenario_count": len(scenarios),
            "repeat": o.repeat,
            "options": {"only": o.only, "repeat": o.repeat, "suite": o.suite},
            "load": {"cpus": os.cpu_count(), "start": _load()},
        }

    async def run(self, scenarios: list[Scenario] | None = None) -> SuiteReport:
        scenarios = self.scenarios() if scenarios is None else scenarios
        problems = [
            p
            for kb in ("shipped", "local")
            for p in unknown_runbooks(
                [s for s in scenarios if s.knowledge_base == kb], runbook_paths(self.settings, kb)
            )
        ]
        if problems:  # before anything is recorded: a scenario naming a missing runbook is a typo
            raise ScenarioError(problems)
        await asyncio.to_thread(upgrade, self.settings.database_url)
        db = Database(self.settings.database_url)
        report = SuiteReport(self._meta(scenarios))
        t0 = time.perf_counter()
        try:
            await store.open_run(db, report.meta)
            try:
                await self._run_all(db, scenarios, report)
            except BaseException as exc:
                report.meta["duration_s"] = round(time.perf_counter() - t0, 1)
                why = (
                    "interrupted"
                    if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
                    else str(exc)
                )
                await asyncio.shield(
                    store.close_run(db, report, status=EvalRunStatus.FAILED, error=why)
                )
                raise
            report.meta["duration_s"] = round(time.perf_counter() - t0, 1)
            report.meta["load"]["end"] = _load()
            await store.close_run(db, report, status=EvalRunStatus.DONE)
        finally:
            await db.dispose()
        return report

    async def _run_all(self, db: Database, scenarios: list[Scenario], report: SuiteReport) -> None:
        total = len(scenarios) * self.options.repeat
        done = 0
        hashes = []
        for kb in ("shipped", "local"):
            mine = [s for s in scenarios if s.knowledge_base == kb]
            if not mine:
                continue
            self.progress(f"preparing the {kb} knowledge base …")
            async with eval_stack(
                self.settings,
                kb,
                workdir=self.options.workdir,
                embeddings=self.embeddings,
                fresh=self.options.fresh,
            ) as stack:
                problems = unknown_runbooks(mine, set(stack.titles))
                if problems:
                    raise ScenarioError(problems)
                hashes.append(stack.knowledge_hash)
                report.meta["knowledge_hash"] = "+".join(hashes)
                runs = runner_on(self.settings, db, stack.graphs(self.settings))
                runner = ScenarioRunner(runs, model=self.options.model)
                try:
                    for s in mine:
                        for rep in range(self.options.repeat):
                            result = await self._one(runner, stack, s, rep)
                            report.results.append(result)
                            await store.store_result(db, report.meta["run_id"], result)
                            done += 1
                            self.progress(_line(done, total, result))
                finally:
                    await runner.drain()

    async def _one(
        self, runner: ScenarioRunner, stack: EvalStack, s: Scenario, rep: int
    ) -> ScenarioResult:
        obs = await runner.run(s)
        checks = run_checks(s, obs, titles=stack.titles, synonyms=self.synonyms)
        result = ScenarioResult(s, rep, obs, checks)
        if self.options.judge:
            model = ModelFactory(self.settings).for_role("judge", Context(model=self.options.judge))
            result.judge = await judge(model, self.options.judge, s, obs)
        return result


def _line(done: int, total: int, r: ScenarioResult) -> str:
    o = r.observation
    head = f"[{done}/{total}] {'PASS' if r.passed else 'FAIL'} {r.scenario.id}"
    tail = f" ({o.model_calls} calls, {o.tokens} tokens, {o.duration_ms / 1000:.1f}s)"
    return head + tail + "".join(f"\n      ✗ {c.name}: {c.reason}" for c in r.failed)
