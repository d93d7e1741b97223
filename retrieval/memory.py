"""FS-3 action memory: per session, which documents of which domains were already returned. Pure.

``SessionMemory`` is one session's view — the graph keeps it in its checkpointed state
(``retrieved``: domain → paths, ``lookup_count``). ``RetrievalMemory`` keeps many sessions for
callers outside a graph (CLI, retrieval test, tests) and is safe under concurrent sessions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


def merge_retrieved(
    left: Mapping[str, Iterable[str]] | None, right: Mapping[str, Iterable[str]] | None
) -> dict[str, list[str]]:
    """Union of two domain → paths maps, keeping first-retrieved order (the graph's reducer)."""
    out: dict[str, list[str]] = {d: list(p) for d, p in (left or {}).items()}
    for domain, paths in (right or {}).items():
        bucket = out.setdefault(domain, [])
        for p in paths:
            if p not in bucket:
                bucket.append(p)
    return out


@dataclass
class SessionMemory:
    retrieved: dict[str, list[str]] = field(default_factory=dict)
    lookups: int = 0

    @classmethod
    def of(cls, retrieved: Mapping[str, Iterable[str]] | None, lookups: int = 0) -> SessionMemory:
        return cls(merge_retrieved(None, retrieved), lookups)

    def mark(self, domain: str, path: str) -> None:
        self.retrieved = merge_retrieved(self.retrieved, {domain: [path]})

    def is_doc_retrieved(self, path: str) -> bool:
        return any(path in paths for paths in self.retrieved.values())

    def is_domain_retrieved(self, domain: str) -> bool:
        return bool(self.retrieved.get(domain))

    def domains(self) -> list[str]:
        return [d for d, paths in self.retrieved.items() if paths]


class RetrievalMemory:
    """Many sessions' memories behind one lock; sessions never see each other's entries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionMemory] = {}

    def mark_retrieved(self, session_id: str, domain: str, path: str) -> None:
        with self._lock:
            self._sessions.setdefault(session_id, SessionMemory()).mark(domain, path)

    def is_doc_retrieved(self, session_id: str, path: str) -> bool:
        with self._lock:
            mem = self._sessions.get(session_id)
            return bool(mem and mem.is_doc_retrieved(path))

    def is_domain_retrieved(self, session_id: str, domain: str) -> bool:
        with self._lock:
            mem = self._sessions.get(session_id)
            return bool(mem and mem.is_domain_retrieved(domain))

    def get_retrieved_domains(self, session_id: str) -> list[str]:
        with self._lock:
            mem = self._sessions.get(session_id)
            return mem.domains() if mem else []

    def view(self, session_id: str) -> SessionMemory:
        """A copy of the session's memory to pass to a lookup."""
        with self._lock:
            mem = self._sessions.get(session_id) or SessionMemory()
            return SessionMemory.of(mem.retrieved, mem.lookups)

    def record(self, session_id: str, memory: SessionMemory) -> None:
        """Store the memory a lookup returned (merged, never shrinking)."""
        with self._lock:
            cur = self._sessions.setdefault(session_id, SessionMemory())
            cur.retrieved = merge_retrieved(cur.retrieved, memory.retrieved)
            cur.lookups = max(cur.lookups, memory.lookups)

    def clear_session(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)
