"""The first import, seen from lookups: while it runs, a lookup answers from the documents already
indexed and says so, so neither the model nor the operator mistakes "not found yet" for "not in the
knowledge base". Fed by the import's progress events; pure apart from its own counters."""

from __future__ import annotations

from typing import Any

from retrieval.lookup.service import LookupOutcome


class FirstImport:
    ARTIFACT = "first_import"  # where a lookup's artifact carries the counts

    def __init__(self) -> None:
        self.active = False
        self.total = 0
        self.processed = 0

    def begin(self) -> None:
        self.active, self.total, self.processed = True, 0, 0

    def end(self) -> None:
        self.active = False

    def on_event(self, event: dict[str, Any]) -> None:
        """An import progress callback (``IngestionService.init(progress=…)``)."""
        if event["event"] == "start":
            self.total = int(event["total"])
        elif event["event"] == "file" and event.get("status") != "PROCESSING":
            self.processed = int(event["index"])

    def note(self) -> str:
        return (
            f"知识库首次导入进行中（已导入 {self.processed}/{self.total} 个文件）："
            "本结果只来自已索引的文档，导入完成后再查可能找到更多。"
        )

    def annotate(self, outcome: LookupOutcome) -> LookupOutcome:
        """Put the note before the lookup's own message and the counts into its artifact."""
        if not self.active:
            return outcome
        own = outcome.payload.get("message")
        outcome.payload["message"] = f"{self.note()} {own}" if own else self.note()
        outcome.artifact[self.ARTIFACT] = {"processed": self.processed, "total": self.total}
        return outcome
