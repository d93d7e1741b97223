"""How an unfinished session resumes, judged from its thread's latest checkpoint. Pure.

Checkpoints carry the session id of the run that wrote them (config metadata). The thread's latest
checkpoint therefore says whether this session's run is where the thread stopped (continue it, or
just close it when its graph had finished), whether the run never got a checkpoint stored (start it
again from its question), or whether a later question moved the conversation on (refuse: resuming
would rewind it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["continue", "close", "restart", "refuse"]


@dataclass(frozen=True)
class ResumePlan:
    action: Action
    reason: str = ""


def plan_resume(
    session_id: str,
    session_order: int,
    head_session_id: str | None,
    head_has_tasks: bool,
    head_session_order: int | None,
) -> ResumePlan:
    """``*_order`` are the sessions' row ids (creation order); ``head_session_order`` is None when
    the head's session is not recorded here."""
    if head_session_id == session_id:
        if head_has_tasks:
            return ResumePlan("continue")
        return ResumePlan("close", "its graph had finished; only its record was left open")
    if head_session_id is None or (
        head_session_order is not None and head_session_order < session_order
    ):
        return ResumePlan(
            "restart", "no checkpoint of this run was stored; it starts again from its question"
        )
    return ResumePlan(
        "refuse",
        f"the conversation moved on: session {head_session_id} asked a later question on the same "
        f"thread, and resuming session {session_id} would rewind it; ask again instead",
    )
