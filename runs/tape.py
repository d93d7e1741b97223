"""The recorded model outputs of a session, played back in order: a re-run (``runs/replay.py``)
asks these models instead of the real ones, so it is offline and repeats the recorded choices. Where
the new run asks something else — another agent, a different model input, past the recording's end
— the tape notes it, and the replay's report names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.deps import ModelSource
from runs.recorder import input_digest


@dataclass
class Tape:
    """The recorded model outputs of a session, consumed in order by every RecordingModel."""

    steps: list[Any]
    cursor: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)

    def next(self, role: str, messages: list[BaseMessage]) -> AIMessage | None:
        index = self.cursor
        self.cursor += 1
        if index >= len(self.steps):
            self.notes.append({"index": index + 1, "agent": role, "kind": "extra_model_call"})
            return None
        rec = self.steps[index]
        if rec.agent_name != role:
            self.notes.append(
                {"index": index + 1, "agent": role, "kind": "agent", "recorded": rec.agent_name}
            )
        elif rec.input_hash and rec.input_hash != input_digest(messages):
            self.notes.append({"index": index + 1, "agent": role, "kind": "model_input"})
        msg = messages_from_dict([rec.output_message])[0] if rec.output_message else None
        return msg if isinstance(msg, AIMessage) else None


class RecordingModel(BaseChatModel):
    """Plays back the tape; past its end (or on a broken entry) answers with the fallback model."""

    role: str
    tape: Any
    fallback: Any = None

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Any, **kwargs: Any) -> BaseChatModel:  # type: ignore[override]
        fb = self.fallback.bind_tools(tools, **kwargs) if self.fallback is not None else None
        return self.model_copy(update={"fallback": fb})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        msg = self.tape.next(self.role, messages)
        if msg is None:
            if self.fallback is None:
                raise RuntimeError("replay ran past the recording and no fallback model is set")
            msg = self.fallback.invoke(messages)
        return ChatResult(generations=[ChatGeneration(message=msg)])


class ReplayModels:
    def __init__(self, tape: Tape, fallback: ModelSource) -> None:
        self.tape, self.fallback = tape, fallback

    def for_role(self, role: str, ctx: Any = None) -> BaseChatModel:
        return RecordingModel(role=role, tape=self.tape, fallback=self.fallback.for_role(role, ctx))
