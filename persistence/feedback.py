"""User feedback on a session: ``useful`` files the session into the case library, once;
``not_useful`` afterwards retracts it (the case is removed)."""

from __future__ import annotations

from dataclasses import dataclass

from persistence.cases import write_feedback
from persistence.db import Database

FEEDBACK_VALUES = ("useful", "not_useful")


class FeedbackError(ValueError):
    """Not a feedback value this service knows; ``code`` is the kind (the API maps it)."""

    code = "invalid_feedback"


class SessionNotFound(LookupError):
    code = "session_not_found"


@dataclass
class FeedbackResult:
    success: bool
    message: str
    case_id: str | None = None


async def submit_feedback(db: Database, session_id: str, feedback: str) -> FeedbackResult:
    if feedback not in FEEDBACK_VALUES:
        raise FeedbackError(
            f"feedback must be one of {', '.join(FEEDBACK_VALUES)}; got {feedback!r}"
        )
    async with db.session() as s:
        written = await write_feedback(s, session_id, feedback)
    if not written.found:
        raise SessionNotFound(f"session {session_id} does not exist")
    if feedback == "not_useful":
        message = "feedback recorded; case removed" if written.removed else "feedback recorded"
        return FeedbackResult(True, message)
    assert written.case is not None  # filed in the same transaction
    message = "case created" if written.created else "case already exists"
    return FeedbackResult(True, message, written.case.case_id)
