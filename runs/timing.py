"""How long each step of a run took, stamped onto the events it streams.

A ``node_end`` event gets the time since its ``node`` event (paired by LangGraph's task id); a
``tool_result`` gets the time since its ``tool_call`` (paired by the call id). Both measure what an
operator waits for, wall time on this worker. The clock is injected so the pairing is testable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any


class StepTimer:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.started: dict[str, float] = {}  # task id / tool call id → when it started

    def stamp(self, events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for event in events:
            now = self.clock()
            kind = event.get("type")
            if kind == "node" and event.get("task_id"):
                self.started[event["task_id"]] = now
            elif kind == "tool_call" and event.get("call_id"):
                self.started[event["call_id"]] = now
            elif kind in ("node_end", "tool_result"):
                key = event.get("task_id") if kind == "node_end" else event.get("call_id")
                began = self.started.pop(key, None) if key else None
                if began is not None:
                    event["durationMs"] = round((now - began) * 1000, 1)
            yield event
