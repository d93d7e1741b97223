"""Per-run knobs, passed as the graphs' ``context_schema`` so LangGraph Studio shows and edits them.

Defaults come from settings (env / config.yaml) and the prompt files; a run may override any field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any


def _d(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(kw_only=True)
class Context:
    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default="",
        metadata=_d(
            "Chat model name on the OpenAI-compatible endpoint (LLM_BASE_URL). Empty = LLM_MODEL, "
            "or the deterministic offline model when no endpoint is configured. 'offline' forces it."
        ),
    )
    lookup_budget: int = field(
        default=0, metadata=_d("lookup_knowledge calls served per run (0 = setting).")
    )
    max_supervisor_turns: int = field(
        default=12, metadata=_d("Supervisor turns before the run is ended with what was found.")
    )
    max_planner_turns: int = field(default=6, metadata=_d("Planner steps per run."))
    max_executor_steps: int = field(
        default=6, metadata=_d("Model calls per executor/assistant ReAct loop.")
    )
    highly_relevant_threshold: float = field(
        default=-1.0, metadata=_d("FS-2 threshold override (-1 = setting).")
    )
    reference_threshold: float = field(
        default=-1.0, metadata=_d("FS-2 threshold override (-1 = setting).")
    )
    max_l2_distance: float = field(
        default=-1.0, metadata=_d("FS-1 max L2 distance override (-1 = setting).")
    )
    supervisor_prompt: str = field(
        default="", metadata=_d("Override of the supervisor prompt (empty = prompts/*.md).")
    )
    planner_prompt: str = field(
        default="", metadata=_d("Override of the planner prompt; {knowledge_map} is filled in.")
    )
    executor_prompt: str = field(default="", metadata=_d("Override of the executor prompt."))
    assistant_prompt: str = field(
        default="", metadata=_d("Override of the simple-route assistant prompt.")
    )
    answer_prompt: str = field(default="", metadata=_d("Override of the final-answer prompt."))

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> Context:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (values or {}).items() if k in names})
