"""What one run is: the attempt on its session (``Run``), how its graph starts (``Launch``), and how
it ended (``RunResult``). Plain data, shared by the modules that open, stream, close and resume it.
"""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from persistence.leases import Lease


@dataclass
class Run:
    """One attempt at running a session: which session, on which thread, holding which lease."""

    session_id: str
    thread_id: str
    flow: str
    question: str
    lease: Lease
    continued: bool = False  # the session has rows from an earlier attempt


@dataclass(frozen=True)
class Launch:
    """How a run's graph starts. By default from the run's question, on the graph of its flow, in a
    default context; ``resume`` instead continues the thread from its latest checkpoint (or from
    ``checkpoint_id``); ``graph`` replaces the flow's graph (a replay's, a test's)."""

    graph: CompiledStateGraph | None = None
    context: Context | None = None
    resume: bool = False
    checkpoint_id: str | None = None


@dataclass
class RunResult:
    session_id: str
    thread_id: str
    status: str
    answer: str | None
    error: str | None = None


class RunStopped(Exception):
    """The run must stop for a reason outside the graph (its lease was lost, or it cannot be
    recorded); the message says which, in words."""
