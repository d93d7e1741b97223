"""A case from the case library as a scenario: what an operator marked useful becomes a test.

The draft takes the case's conversation as the question(s), what the recorded tools returned as the
world (alerts, log lines, the clock), the runbooks the answer cited as the expected runbooks, the
evidence the answer quoted as the evidence it must use, and the recorded cost (plus headroom) as
the ceiling. The root cause is the operator's to write: the draft leaves it empty and saving
requires it. The draft is judged at once against the recorded answer, so the operator sees whether
the answer they marked useful meets what they wrote.

Saved scenarios go to ``DATA_DIR/evals/scenarios/`` (``knowledge_base: local``): a running server
never writes into the checkout. ``python -m evals run --suite local`` runs them.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.checks import CheckResult, Observation, run_checks
from evals.loader import ScenarioError, dump_scenario, local_scenarios_dir, unknown_runbooks
from evals.observe import observe_session
from evals.schema import Cost, Evidence, Expected, Scenario, Source
from evals.words import cited_documents, normalize, says_not_found, shipped_synonyms
from graph.aiops import AIOPS_TASK
from graph.evidence import Evidence as ToolResult
from persistence import cases as cases_repo
from persistence import repository as repo
from services import Services
from tools.world import World, WorldAlert, WorldLog

MAX_TURNS = 5
LOG_FRAGMENT_CHARS = 100
HEADROOM = 1.5  # the cost ceiling: what the recorded run cost, times this
_CJK = re.compile(r"[\u3400-\u9fff]")
INTENT_HINTS = [
    ("what_is", re.compile(r"是什么|什么意思|啥意思|含义|what does|what is|what's .* mean", re.I)),
    (
        "first_step",
        re.compile(r"第一步|先做什么|先干|where .*start|first step|what .* first", re.I),
    ),
    ("why", re.compile(r"为什么|为啥|原因|\bwhy\b", re.I)),
    ("diagnose", re.compile(r"怎么查|排查|定位|诊断|diagnos|find out|how do i find", re.I)),
    (
        "fix",
        re.compile(r"怎么办|怎么处理|咋整|怎么解决|恢复|\bfix\b|resolve|recover|mitigat", re.I),
    ),
]


class CaseNotFound(LookupError):
    pass


class CaseNotExportable(ValueError):
    """The case's session cannot become a scenario (gone, or never answered)."""


@dataclass
class Draft:
    scenario: Scenario
    observation: Observation
    checks: list[CheckResult]
    warnings: list[str] = field(default_factory=list)

    @property
    def passes(self) -> bool:
        return all(c.passed for c in self.checks)


def language_of(text: str) -> str:
    return "zh" if _CJK.search(text or "") else "en"


def intent_of(questions: list[str], flow: str) -> str:
    if len(questions) > 1:
        return "followup"
    if flow == "aiops":
        return "diagnose"
    for intent, pattern in INTENT_HINTS:
        if pattern.search(questions[-1]):
            return intent
    return "diagnose"


def world_from(results: list[ToolResult]) -> World:
    """What the tools returned, as a world: the last alert listing, every log line (once), the
    clock's answer."""
    alerts: list[WorldAlert] = []
    logs: dict[tuple[str, str, str], WorldLog] = {}
    now = None
    for r in results:
        if not r.ok:
            continue
        if r.tool == "query_prometheus_alerts":
            alerts = [_alert(a) for a in r.data.get("alerts", []) if a.get("alertname")]
        elif r.tool == "query_logs":
            for x in r.data.get("lines", []):
                line = WorldLog(
                    ts=str(x.get("ts", "")),
                    service=str(x.get("service") or r.data.get("service", "")),
                    # A line without a level came from an error-level query (Loki's filter).
                    level=str(x.get("level") or "ERROR"),
                    message=str(x.get("message", "")),
                )
                logs[(line.ts, line.service, line.message)] = line
        elif r.tool == "get_current_time" and r.data.get("utc"):
            now = datetime.fromisoformat(str(r.data["utc"]).replace("Z", "+00:00"))
    return World(now=now, alerts=alerts, logs=sorted(logs.values(), key=lambda x: x.ts))


def _alert(a: dict[str, Any]) -> WorldAlert:
    # The tool derived name, severity and service from these labels: keeping them as they were
    # makes the replayed tool return what the recorded one did.
    labels = {str(k): str(v) for k, v in (a.get("labels") or {}).items()}
    labels.setdefault("alertname", str(a["alertname"]))
    notes = {k: str(a[k]) for k in ("summary", "description") if a.get(k)}
    return WorldAlert(
        labels=labels,
        annotations=notes,
        state=a.get("state") if a.get("state") in ("firing", "pending", "inactive") else "firing",
        activeAt=a.get("activeAt"),
        value=None if a.get("value") is None else str(a.get("value")),
    )


def evidence_used(answer: str, world: World) -> Evidence:
    """The alerts the answer names and the log lines it quotes."""
    text = normalize(answer)
    alerts = [a.labels["alertname"] for a in world.alerts if a.labels["alertname"] in answer]
    logs = []
    for line in world.logs:
        fragment = line.message.strip()[:LOG_FRAGMENT_CHARS].strip()
        if fragment and normalize(fragment) in text and fragment not in logs:
            logs.append(fragment)
    return Evidence(alerts=list(dict.fromkeys(alerts)), logs=logs)


def _first_mention(answer: str, path: str, title: str) -> int:
    found = [i for i in (answer.find(path), answer.find(title)) if i >= 0]
    return min(found, default=len(answer))


def _window(obs: Observation) -> float:
    """The widest time window the run asked for logs in (minutes)."""
    asked = [float(r.args.get("minutes") or 60) for r in obs.evidence if r.tool == "query_logs"]
    return max(asked, default=60.0)


def ceiling(calls: int, tokens: int) -> Cost:
    return Cost(
        model_calls=max(calls + 1, math.ceil(calls * HEADROOM)),
        tokens=max(1000, math.ceil(tokens * HEADROOM / 100) * 100),
    )


async def _conversation(services: Services, row: Any) -> list[Any]:
    """The sessions of the case's conversation up to the case's own, oldest first (≤ MAX_TURNS)."""
    if not row.thread_id:
        return [row]
    async with services.db.session() as s:
        page = await repo.list_sessions(s, thread_id=row.thread_id, limit=200)
    earlier = [r for r in page.items if (r.id or 0) <= (row.id or 0) and r.status == "SUCCESS"]
    earlier.sort(key=lambda r: r.id or 0)
    mine = [r for r in earlier if r.session_id != row.session_id][-(MAX_TURNS - 1) :]
    return [*mine, row]


async def draft_from_case(services: Services, case_id: str) -> Draft:
    async with services.db.session() as s:
        case = await cases_repo.get_case(s, case_id)
        if case is None:
            raise CaseNotFound(
                f"case {case_id} does not exist (it may have been retracted); list the cases "
                "with GET /api/cases"
            )
        row = await repo.get_session(s, case.session_id)
    if row is None:
        raise CaseNotExportable(f"the session {case.session_id} of case {case_id} no longer exists")
    if row.status != "SUCCESS" or not (row.answer or "").strip():
        raise CaseNotExportable(
            f"session {row.session_id} did not finish with an answer ({row.status}); a scenario "
            "needs the answer the operator marked useful"
        )
    turns = await _conversation(services, row)
    flow = "aiops" if row.agent_flow == "AI_OPS" else "chat"
    obs = Observation(answers=[])
    warnings: list[str] = []
    graphs = services.graphs
    for turn in turns:
        t_row, results, calls, tokens = await observe_session(services.db, graphs, turn.session_id)
        obs.questions.append(t_row.query)
        obs.answers.append(t_row.answer or "")
        obs.statuses.append(t_row.status)
        obs.errors.append(t_row.error_message)
        obs.session_ids.append(t_row.session_id)
        obs.evidence += results
        obs.model_calls += calls
        obs.tokens += tokens
    if any(r.ok and not r.data and r.tool != "lookup_knowledge" for r in obs.evidence):
        warnings.append(
            "some tool results were kept only as 500-character previews (the run's checkpoints "
            "are gone); the world may be incomplete — check alerts and logs before saving"
        )
    world = world_from(obs.evidence)
    titles = {d.file_path: d.title for d in services.kb.catalog.all()}
    retrieved = obs.retrieved()
    cited = sorted(
        (p for p in cited_documents(obs.answer, titles) if p in retrieved),
        key=lambda p: _first_mention(obs.answer, p, titles[p]),
    )
    no_runbook = not cited and says_not_found(obs.answer)
    if not cited and not no_runbook:
        warnings.append("the answer cites no runbook the run retrieved: add the expected runbooks")
    if len(cited) > 1:
        # "Any of" the expected runbooks passes: listing every document an answer showed would
        # pass an answer that shows the wrong one. The first cited is the answer's main source.
        warnings.append(
            f"the answer also cites {', '.join(cited[1:])}: add those that are right too"
        )
    used = evidence_used(obs.answer, world)
    if len(used.logs) > 1:
        warnings.append(
            "evidence.logs lists every log line the answer quoted: keep those a right answer must use"
        )
    questions = [t.query for t in turns]
    asked: dict[str, Any] = {"question": None, "turns": [], "note": None}
    if flow == "aiops":
        asked["note"] = None if (row.query or "") == AIOPS_TASK else row.query
    elif len(questions) > 1:
        asked["turns"] = questions
    else:
        asked["question"] = questions[0]
    if (
        world.now is not None
        and world.logs
        and len(world.log_lines(_window(obs))) < len(world.logs)
    ):
        # The recorded logs are older than the window before the recorded clock (bundled
        # fixtures): a replay keeping that clock would filter them out.
        world = world.model_copy(update={"now": None})
        warnings.append("the recorded clock time is left out: the logs returned are older than it")
    scenario = Scenario.model_construct(
        id=f"case-{case_id[:12].lower()}",
        title=(case.title or row.query or case_id)[:255],
        language=language_of(" ".join(questions)),
        flow=flow,
        intent=intent_of(questions, flow),
        tags=["from_case"],
        knowledge_base="local",
        **asked,
        world=world,
        expected=Expected.model_construct(
            runbooks=cited[:1],
            runbooks_each=[],
            wrong_runbooks=[],
            no_runbook=no_runbook,
            cause=None,
            names=[],
            evidence=used,
            forbidden=[],
            cost=ceiling(obs.model_calls, obs.tokens),
        ),
        notes=f"Exported from case {case_id}: the world is what the tools returned in session "
        f"{row.session_id}; the expected root cause is the operator's.",
        source=Source(case_id=case_id, session_id=row.session_id, exported_at=datetime.now(UTC)),
    )
    checks = judge_recorded(scenario, obs, titles)
    return Draft(scenario, obs, checks, warnings)


def judge_recorded(
    scenario: Scenario, obs: Observation, titles: dict[str, str]
) -> list[CheckResult]:
    """The scenario's checks against the recorded run (its answer, tool results and cost)."""
    return run_checks(scenario, obs, titles=titles, synonyms=shipped_synonyms())


def scenario_path(services: Services, scenario_id: str) -> Path:
    return local_scenarios_dir(services.settings) / f"{scenario_id}.yaml"


def _write_atomically(path: Path, text: str) -> None:
    """Write a whole file or nothing: a crash mid-write never leaves a half scenario."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def save_from_case(
    services: Services, case_id: str, scenario: Scenario, *, overwrite: bool = False
) -> tuple[Path, str, Draft]:
    """Save the operator's edit of the case's draft; returns (path, YAML, the recorded run judged
    by it). ``ScenarioError``: the scenario names runbooks its knowledge base lacks, or gives no
    root cause; ``FileExistsError``: a scenario with that id is saved and ``overwrite`` is off."""
    draft = await draft_from_case(services, case_id)
    e = scenario.expected
    problems = []
    if not e.no_runbook and not (e.cause and e.cause.names):
        problems.append(
            "expected.cause: give the root cause (category and at least one name a right "
            "diagnosis uses) — it is what this case teaches"
        )
    known = {d.file_path for d in services.kb.catalog.all()}
    if scenario.knowledge_base == "local":
        problems += unknown_runbooks([scenario], known)
    if problems:
        raise ScenarioError(problems)
    path = scenario_path(services, scenario.id)
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"a scenario {scenario.id} is already saved ({path}); choose another id or overwrite"
        )
    # Where it came from is recorded whatever the operator sent.
    source = Source(
        case_id=case_id,
        session_id=draft.observation.session_ids[-1],
        exported_at=datetime.now(UTC),
    )
    scenario = scenario.model_copy(update={"source": source})
    text = dump_scenario(scenario)
    _write_atomically(path, text)
    titles = {d.file_path: d.title for d in services.kb.catalog.all()}
    return (
        path,
        text,
        Draft(scenario, draft.observation, judge_recorded(scenario, draft.observation, titles)),
    )
