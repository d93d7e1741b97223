"""Knowledge domains: one per category, with a model-written ``when_to_retrieve``.

- At import, a document without ``covers`` / ``when_to_retrieve`` gets them from the model
  (fallback on failure: covers=[] and when_to_retrieve=summary).
- A domain's ``when_to_retrieve`` is aggregated by the model from its documents and stored in
  ``knowledge_domain``; only the domains a change touches are recomputed (fallback: the documents'
  own texts joined).
- The knowledge map (YAML) goes to the planner only. It is built from the catalog and the
  ``knowledge_domain`` rows read from the database, so every worker sees the same map.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from persistence import repository as repo
from persistence.db import Database
from persistence.models import KnowledgeDomain
from retrieval.l0.catalog import DocInfo, DocumentCatalog
from retrieval.lookup.knowledge_map import DEFAULT_BUDGET, budgeted_map, rank_documents
from retrieval.parsing.documents import ParsedDocument, section_titles

log = logging.getLogger(__name__)


class DocumentFields(BaseModel):
    """Retrieval fields for one document."""

    covers: list[str] = Field(description="4-8 short topics the document covers")
    when_to_retrieve: str = Field(description="one sentence: when an agent should retrieve it")


class DomainSummary(BaseModel):
    """Retrieval guidance for one knowledge domain."""

    when_to_retrieve: str = Field(description="1-2 sentences: which questions need this domain")


def _block(data: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(data, ensure_ascii=False, indent=1) + "\n```"


S = TypeVar("S", bound=BaseModel)


async def _ask(model: BaseChatModel, schema: type[S], prompt: str, data: dict[str, Any]) -> S:
    structured = model.with_structured_output(schema, method="function_calling")
    out = await structured.ainvoke([SystemMessage(prompt), HumanMessage(_block(data))])
    if out is None:  # the parser found no call to the schema's tool
        raise ValueError(f"model did not call {schema.__name__}")
    return out  # type: ignore[return-value]


def knowledge_map_yaml(categories: dict[str, list[DocInfo]], when: dict[str, str]) -> str:
    """domains → when_to_retrieve + documents[title, covers, keywords], as YAML for the planner."""
    domains: dict[str, Any] = {}
    for name, docs in sorted(categories.items()):
        domains[name] = {
            "when_to_retrieve": when.get(name, ""),
            "documents": [
                {"title": d.title, "covers": list(d.covers), "keywords": list(d.keywords)}
                for d in docs
            ],
        }
    return yaml.safe_dump(
        {"domains": domains}, allow_unicode=True, sort_keys=False, width=120
    ).strip()


class DomainService:
    def __init__(
        self,
        db: Database,
        catalog: DocumentCatalog,
        model_for: Callable[[str], BaseChatModel],
        enricher_prompt: str,
        summary_prompt: str,
    ) -> None:
        self.db, self.catalog, self.model_for = db, catalog, model_for
        self.enricher_prompt, self.summary_prompt = enricher_prompt, summary_prompt

    async def enrich(self, doc: ParsedDocument) -> ParsedDocument:
        """Fill covers / when_to_retrieve the author left out (never fails an import)."""
        if doc.covers and doc.when_to_retrieve:
            return doc
        data = {
            "title": doc.title,
            "summary": doc.summary,
            "keywords": doc.keywords,
            "sections": section_titles(doc.body),
        }
        try:
            fields = await _ask(
                self.model_for("enricher"), DocumentFields, self.enricher_prompt, data
            )
            covers = doc.covers or [c for c in fields.covers if c][:8]
            when = doc.when_to_retrieve or fields.when_to_retrieve.strip() or doc.summary
            source = "model"
        except Exception as exc:
            log.warning("document enrichment failed for %s: %s", doc.file_path, exc)
            covers, when, source = doc.covers or [], doc.when_to_retrieve or doc.summary, "fallback"
        missing = [
            f
            for f, v in (("covers", doc.covers), ("when_to_retrieve", doc.when_to_retrieve))
            if not v
        ]
        # Name only what was generated: the author's own values were kept as written.
        return replace(
            doc,
            covers=covers,
            when_to_retrieve=when,
            derived=[*doc.derived, *missing],
            warnings=[*doc.warnings, f"{' and '.join(missing)} generated ({source})"],
        )

    async def refresh(self, categories: set[str]) -> None:
        """Recompute the touched domains only; a domain left without documents is removed."""
        groups = self.catalog.categories()
        for name in sorted(categories):
            docs = groups.get(name, [])
            if not docs:
                async with self.db.session() as s:
                    await repo.delete_domain(s, name)
                continue
            when, source = await self._summarise(name, docs)
            async with self.db.session() as s:
                await repo.save_domain(
                    s, name, when_to_retrieve=when, source=source, document_count=len(docs)
                )

    async def _summarise(self, name: str, docs: list[DocInfo]) -> tuple[str, str]:
        data = {
            "domain": name,
            "documents": [
                {"title": d.title, "covers": list(d.covers), "when_to_retrieve": d.when_to_retrieve}
                for d in docs
            ],
        }
        try:
            out = await _ask(
                self.model_for("domain_summary"), DomainSummary, self.summary_prompt, data
            )
            if out.when_to_retrieve.strip():
                return out.when_to_retrieve.strip(), "MODEL"
            raise ValueError("empty when_to_retrieve")
        except Exception as exc:
            log.warning("domain summary failed for %s: %s", name, exc)
            joined = "；".join(d.when_to_retrieve or d.summary or d.title for d in docs)
            return joined[:2000], "FALLBACK"

    async def ensure_all(self) -> list[str]:
        """At start: generate rows for domains that have documents but no row yet."""
        async with self.db.session() as s:
            known = await repo.domain_names(s)
        missing = set(self.catalog.categories()) - known
        if missing:
            await self.refresh(missing)
        return sorted(missing)

    async def rows(self) -> list[KnowledgeDomain]:
        async with self.db.session() as s:
            return list(await repo.list_domains(s))

    async def knowledge_map(self, focus: Sequence[str] = (), budget: int | None = None) -> str:
        """The planner's map: with ``focus`` (the question's symptoms) or a ``budget``, the
        domains the symptoms touch first, within ``budget`` tokens (``retrieval.lookup.knowledge_map``);
        with neither, every document (the full map)."""
        when = {r.name: r.when_to_retrieve or "" for r in await self.rows()}
        categories = self.catalog.categories()
        if not focus and budget is None:
            return knowledge_map_yaml(categories, when)
        docs = self.catalog.all()
        per_symptom = [
            rank_documents(
                s, docs, self.catalog.idf, self.catalog.l0.search(s), self.catalog.is_specific
            )
            for s in focus
        ]
        return budgeted_map(categories, when, per_symptom, budget or DEFAULT_BUDGET, focus)
