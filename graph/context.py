"""Per-run knobs, passed as the graphs' ``context_schema`` so LangGraph Studio shows and edits them.

A field left ``None`` uses the setting (env / config.yaml) or the prompt file; a run may override any
of them. The lookup knobs (thresholds, judge, top-k, weights, budget, …) are inherited from
``retrieval.lookup.knobs.LookupKnobs``, declared there once; the lookup tool applies them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import ValidationError

from retrieval.lookup.knobs import LookupKnobs
from tools.world import World


def _d(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(kw_only=True)
class Context(LookupKnobs):
    model: Annotated[str | None, {"__template_metadata__": {"kind": "llm"}}] = field(
        default=None,
        metadata=_d(
            "Chat model name on the OpenAI-compatible endpoint (LLM_BASE_URL). Unset = LLM_MODEL, "
            "or the deterministic offline model when no endpoint is configured. 'offline' forces it."
        ),
    )
    supervisor: Literal["rules", "model"] = field(
        default="rules",
        metadata=_d(
            "Who routes between planner and executor: rules (from the plan state, no model call) "
            "or model (one model call per turn, with the rules as its guard)."
        ),
    )
    max_supervisor_turns: int = field(
        default=12, metadata=_d("Supervisor turns before the run is ended with what was found.")
    )
    max_planner_turns: int = field(default=6, metadata=_d("Planner steps per run."))
    max_executor_steps: int = field(
        default=6, metadata=_d("Model calls per executor/assistant ReAct loop.")
    )
    map_budget_tokens: int = field(
        default=1000,
        metadata=_d(
            "Tokens of knowledge map in the planner prompt: the domains the question's symptoms "
            "touch first, the rest by name (retrieval/lookup/knowledge_map.py)."
        ),
    )
    answer_evidence_tokens: int = field(
        default=2400,
        metadata=_d(
            "Tokens of distilled findings the final-answer call sees, shared by the plan's "
            "steps (graph/findings.py)."
        ),
    )
    supervisor_prompt: str | None = field(
        default=None, metadata=_d("Override of the supervisor prompt (unset = prompts/*.md).")
    )
    planner_prompt: str | None = field(
        default=None,
        metadata=_d("Override of the planner prompt; {knowledge_map} is filled in."),
    )
    executor_prompt: str | None = field(
        default=None, metadata=_d("Override of the executor prompt.")
    )
    assistant_prompt: str | None = field(
        default=None, metadata=_d("Override of the simple-route assistant prompt.")
    )
    answer_prompt: str | None = field(
        default=None, metadata=_d("Override of the final-answer prompt.")
    )
    world: dict[str, Any] | None = field(
        default=None,
        metadata=_d(
            "A recorded incident for this run: {now, alerts, logs} that get_current_time, "
            "query_prometheus_alerts and query_logs return instead of the clock, Prometheus and "
            "Loki (alerts as Prometheus' /api/v1/alerts lists them). Unset = the configured "
            "sources. The incident eval suite sets it."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()  # the lookup knobs' bounds
        # Studio and callers may send anything; a knob out of range would silently misjudge.
        if self.supervisor not in ("rules", "model"):
            raise ValueError(f"supervisor must be 'rules' or 'model' (got {self.supervisor!r})")
        for name in ("map_budget_tokens", "answer_evidence_tokens"):
            if getattr(self, name) < 200:
                raise ValueError(f"{name} must be at least 200 (got {getattr(self, name)})")
        if self.world is not None:
            try:  # the tools read it on every call: refuse a malformed one before the run starts
                World.model_validate(self.world)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "world"
                raise ValueError(f"world.{where}: {first['msg']}") from None

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> Context:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (values or {}).items() if k in names})


def run_context(runtime: Any) -> Context:
    """A node's run context: the ``Runtime``'s, or the defaults when a graph runs without one."""
    ctx = getattr(runtime, "context", None)
    return ctx if isinstance(ctx, Context) else Context()
