"""How a failed tool call reads — to the model, in the records and in an answer: in words, never
an exception class.

Two kinds of failure. *Expected*: the tool reports a condition it knows (``ToolException``: Loki
unreachable, a required argument missing) or the model passed arguments the tool's schema refuses;
the model can read it and go on, and the answer says what could not be checked. *Unexpected*: the
tool itself broke; what it would have returned is missing, so a run built on it is not a success.
"""

from __future__ import annotations

from langchain_core.tools import ToolException
from langgraph.prebuilt.tool_node import ToolInvocationError
from pydantic import ValidationError

UNEXPECTED = "failed unexpectedly"


def is_expected(exc: BaseException) -> bool:
    return isinstance(exc, ToolException | ToolInvocationError | ValidationError)


def tool_error_text(exc: Exception) -> str:
    """The tool result a failed call leaves (``ToolNode(handle_tool_errors=tool_error_text)``)."""
    if isinstance(exc, ToolInvocationError):
        return exc.message
    if isinstance(exc, ToolException):
        return str(exc) or "the tool reported a failure without details"
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        return f"the arguments do not match the tool's schema: {problems}"
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"the tool {UNEXPECTED}" + (f" ({detail})" if detail else "") + "; see the server log"


def is_unexpected_text(text: str | None) -> bool:
    """Whether a recorded tool error is an unexpected failure (see ``tool_error_text``)."""
    return bool(text) and f"the tool {UNEXPECTED}" in (text or "")
