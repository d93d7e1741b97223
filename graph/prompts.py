"""Every prompt is a Markdown file in ``prompts/``, loaded once at start-up.

A missing or empty file stops start-up with an error naming it — a run must never go out with a
silently empty prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAMES = (
    "chat_supervisor",
    "chat_planner",
    "chat_executor",
    "chat_assistant",
    "chat_answer",
    "aiops_supervisor",
    "aiops_planner",
    "aiops_executor",
    "document_enricher",
    "domain_summary",
    "runbook_draft",  # the knowledge-gap report's "draft a runbook" with a hosted model
)
KNOWLEDGE_MAP_SLOT = "{knowledge_map}"


class PromptError(RuntimeError):
    pass


@dataclass(frozen=True)
class Prompts:
    texts: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.texts[name]

    def planner(self, flow: str, knowledge_map: str, override: str | None = None) -> str:
        base = override or self.texts["aiops_planner" if flow == "AI_OPS" else "chat_planner"]
        return base.replace(KNOWLEDGE_MAP_SLOT, knowledge_map)


def load_prompts(directory: Path) -> Prompts:
    """Every prompt in ``directory`` (the ``prompts_dir`` setting)."""
    directory = Path(directory)
    texts = {}
    for name in NAMES:
        path = directory / f"{name}.md"
        if not path.is_file():
            raise PromptError(f"prompt file missing: {path} (every prompt in {NAMES} is required)")
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            raise PromptError(f"prompt file is empty: {path}")
        texts[name] = text
    for name in ("chat_planner", "aiops_planner"):
        if KNOWLEDGE_MAP_SLOT not in texts[name]:
            raise PromptError(f"{directory / (name + '.md')} must contain {KNOWLEDGE_MAP_SLOT}")
    return Prompts(texts)
