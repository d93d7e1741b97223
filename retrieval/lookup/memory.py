"""FS-3 action memory: per session, which documents of which domains were already returned. Pure.

``SessionMemory`` is one session's view — the graph keeps it in its checkpointed state
(``retrieved``: domain → paths, ``lookup_count``), so each run (and each worker resuming it) sees
its own memory and no other session's.
"""

from __future__ import annotations

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
