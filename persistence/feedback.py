"""User feedback on a session: ``useful`` files the session into the case library, once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from persistence import repository as repo
from persistence.db import Database
from persistence.models import CaseLibrary, utcnow

FEEDBACK_VALUES = ("useful", "not_useful")


class FeedbackError(ValueError):
    status = 400
    code = "invalid_feedback"


class SessionNotFound(LookupError):
    status = 404
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
        row = await repo.get_session(s, session_id)
        if row is None:
            raise SessionNotFound(f"session {session_id} does not exist")
        await repo.update_session(s, session_id, feedback=feedback, feedback_at=utcnow())
        if feedback == "not_useful":
            return FeedbackResult(True, "feedback recorded")
        case = CaseLibrary(
            case_id=uuid.uuid4().hex,
            session_id=session_id,
            title=(row.query or "")[:100],
            problem=row.query,
            root_cause=row.answer,
            solution=row.answer,
            category="GENERAL",
            source="AUTO",
        )
        # The unique session_id makes this idempotent, also under concurrent submissions.
        saved, created = await repo.add_case_once(s, case)
    message = "case created" if created else "case already exists"
    return FeedbackResult(True, message, saved.case_id)
