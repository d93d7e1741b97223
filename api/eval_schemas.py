"""Response and request models of the incident eval suite: eval runs, results, and a case exported
as a scenario (camelCase on the wire; ``scenario`` is the scenario file's own fields, as its YAML
holds them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from api.schemas import Camel, Page
from evals.schema import Scenario


class CheckOut(Camel):
    name: str
    passed: bool
    reason: str = ""


class EvalRunOut(Camel):
    run_id: str
    status: str = Field(description="RUNNING | DONE | FAILED")
    model: str
    judge_model: str | None
    git_commit: str | None = Field(description="the checkout's commit; -dirty when edited")
    prompt_hash: str = Field(description="fingerprint of the prompts the runs were sent")
    knowledge_hash: str | None = Field(description="fingerprint of the runbooks judged on")
    embedding_model: str | None
    scenario_count: int
    result_count: int = Field(description="scenarios × repeats judged")
    passed: int
    pass_rate: float | None
    model_calls: int
    total_tokens: int
    duration_ms: int | None
    summary: dict[str, Any] | None = Field(
        description="pass rates by language, flow and intent; failing checks; options"
    )
    error_message: str | None
    created_at: datetime
    completed_at: datetime | None


class EvalRunPage(Page):
    items: list[EvalRunOut]


class EvalResultOut(Camel):
    scenario_id: str
    repeat_index: int
    title: str
    language: str
    flow: str
    intent: str
    passed: bool
    checks: list[CheckOut]
    session_ids: list[str] = Field(description="the recorded sessions (open them in /sessions)")
    answer: str | None
    model_calls: int
    total_tokens: int
    duration_ms: int | None
    judge: dict[str, Any] | None = Field(description="the optional LLM judge, apart from checks")


class EvalRunDetail(Camel):
    run: EvalRunOut
    results: list[EvalResultOut]


class ScenarioDraftOut(Camel):
    scenario: Scenario = Field(description="the draft, as the scenario file holds it")
    yaml: str = Field(description="the draft as YAML (what saving writes)")
    path: str = Field(description="where saving writes it (DATA_DIR/evals/scenarios)")
    exists: bool = Field(description="a scenario with this id is already saved there")
    recorded_checks: list[CheckOut] = Field(description="the draft's checks on the recorded run")
    passes_on_recorded_answer: bool
    warnings: list[str]
    categories: dict[str, str] = Field(description="root-cause categories and what they mean")
    intents: dict[str, str]


class ScenarioSaveRequest(Camel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    scenario: Scenario
    overwrite: bool = Field(default=False, description="replace a saved scenario with this id")


class ScenarioSaved(Camel):
    scenario_id: str
    path: str
    yaml: str
    recorded_checks: list[CheckOut]
    passes_on_recorded_answer: bool
