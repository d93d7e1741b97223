"""``LookupService.lookup(query, memory)``: L0 → (L1) → relevance → session de-dup → payload.

The payload is what the model sees (no scores); the artifact carries the raw scores into
``tool_invocation.retrieval_details``; the returned memory is the session's updated action memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from retrieval.catalog import DocInfo, DocumentCatalog, compact_summary
from retrieval.fusion import FusedHit
from retrieval.memory import SessionMemory
from retrieval.payload import (
    BUDGET_HINT,
    NONE_HINT,
    chunk_content,
    cjk_ratio,
    l0_listing,
    truncate,
)
from retrieval.relevance import RelevanceLevel, Thresholds, judge, similarity
from retrieval.store import BM25_ROUTE, DENSE_ROUTE, ChunkStore

log = logging.getLogger(__name__)


class DedupReason:
    DOC = "doc_retrieved"  # every matching document was already returned this session
    DOMAIN = "domain_retrieved"  # the domain has nothing left that was not returned
    BUDGET = "budget_exhausted"  # the session's lookup budget is spent; nothing was searched


@dataclass
class LookupConfig:
    thresholds: Thresholds = field(default_factory=Thresholds)
    top_k: int = 5
    candidates: int = 20
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    cjk_dense_weight: float = 0.3
    budget: int = 8
    max_chunk_chars: int = 1200
    max_supplements: int = 3

    @classmethod
    def from_settings(cls, r: Any) -> LookupConfig:
        return cls(
            thresholds=Thresholds.from_settings(r.normalization),
            top_k=r.top_k,
            candidates=r.candidates,
            rrf_k=r.rrf_k,
            dense_weight=r.dense_weight,
            bm25_weight=r.bm25_weight,
            cjk_dense_weight=r.cjk_dense_weight,
            budget=r.session_lookup_budget,
        )


@dataclass
class LookupOutcome:
    payload: dict[str, Any]  # model-facing
    artifact: dict[str, Any]  # raw scores for the records
    memory: SessionMemory  # the session memory after this lookup
    served: dict[str, list[str]]  # domain → paths whose content this lookup returned


class LookupService:
    def __init__(
        self,
        catalog: DocumentCatalog,
        store: ChunkStore | None,
        config: LookupConfig | None = None,
        body_loader: Callable[[DocInfo], str | None] | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.config = config or LookupConfig()
        # Reads a document's body for a query-focused PRECISE summary; None = stored summary only.
        self.body_loader = body_loader

    def summary_for(self, doc: DocInfo, query: str) -> str:
        body = None
        if self.body_loader is not None:
            try:
                body = self.body_loader(doc)
            except Exception as exc:  # the stored summary is a fine answer too
                log.debug("body of %s unavailable: %s", doc.file_path, exc)
        if not body:
            return doc.compact
        return compact_summary(doc.title, doc.summary, body, query)

    def route_weights(self, query: str, config: LookupConfig | None = None) -> dict[str, float]:
        # An English-only dense model cannot read a Chinese query; it must not outvote BM25.
        c = config or self.config
        dense = c.cjk_dense_weight if cjk_ratio(query) > 0.5 else c.dense_weight
        return {DENSE_ROUTE: dense, BM25_ROUTE: c.bm25_weight}

    def lookup(
        self,
        query: str,
        memory: SessionMemory | None = None,
        config: LookupConfig | None = None,
    ) -> LookupOutcome:
        """``config`` overrides the service's configuration for this call (a run's Context)."""
        t0 = time.perf_counter()
        mem = SessionMemory.of(memory.retrieved, memory.lookups) if memory else SessionMemory()
        run = _Run(self, query.strip(), mem, config or self.config)
        outcome = run.execute()
        outcome.artifact["timings_ms"]["total"] = round((time.perf_counter() - t0) * 1000, 2)
        return outcome


class _Run:
    """One lookup's working state; keeps ``lookup`` itself short."""

    def __init__(
        self, svc: LookupService, query: str, mem: SessionMemory, cfg: LookupConfig
    ) -> None:
        self.svc, self.cfg, self.query, self.mem = svc, cfg, query, mem
        self.served: dict[str, list[str]] = {}
        self.truncated = False
        self.timings: dict[str, float] = {}
        self.art: dict[str, Any] = {
            "query": query,
            "layer": None,
            "l0_count": 0,
            "l1_count": 0,
            "l0_titles": [],
            "l1_scores": [],
            "l1_top_score": None,
            "l1_top_similarity": None,
            "dedup_reason": None,
            "l1_error": None,
            "timings_ms": self.timings,
        }

    # --- building blocks ------------------------------------------------------------------------

    def _serve(self, doc: DocInfo) -> None:
        self.mem.mark(doc.category, doc.file_path)
        bucket = self.served.setdefault(doc.category, [])
        if doc.file_path not in bucket:
            bucket.append(doc.file_path)

    def _cut(self, text: str, limit: int) -> str:
        out, cut = truncate(text, limit)
        self.truncated |= cut
        return out

    def _finish(
        self,
        *,
        found: bool,
        level: RelevanceLevel,
        primary: dict[str, Any] | None = None,
        supplement: list[dict[str, Any]] | None = None,
        message: str = "",
        hint: str | None = None,
        dedup: str | None = None,
    ) -> LookupOutcome:
        from retrieval.relevance import COMPLETENESS_HINTS

        hint = hint or COMPLETENESS_HINTS.get(level) or NONE_HINT
        domains = self.mem.domains()
        payload = {
            "found": found,
            "primary": primary,
            "supplement": supplement or [],
            "relevanceLevel": level.value,
            "completenessHint": hint,
            "retrievedDomainsThisSession": domains,
            "message": message,
        }
        self.art.update(
            relevance_level=level.value,
            completeness_hint=hint,
            retrieved_domains=domains,
            dedup_reason=dedup,
            is_truncated=self.truncated,
            served=self.served,
            lookups_this_session=self.mem.lookups,
        )
        return LookupOutcome(payload, self.art, self.mem, self.served)

    def _dedup(self, candidates: list[DocInfo], level: RelevanceLevel) -> LookupOutcome:
        top = candidates[0]
        domain_left = self.svc.catalog.paths_in(top.category) - {
            p for p in self.mem.retrieved.get(top.category, [])
        }
        titles = "、".join(f"《{d.title}》" for d in candidates[:3])
        if not domain_left:
            reason = DedupReason.DOMAIN
            msg = (
                f"领域「{top.category}」的文档本会话已全部返回过（{titles}），请直接使用之前的结果。"
                "不要换关键词重复检索同一领域；若仍缺信息，请在回答中说明缺少的具体维度。"
            )
        else:
            reason = DedupReason.DOC
            msg = (
                f"匹配的文档 {titles} 本会话已返回过，内容不再重复发送，请直接使用之前的结果。"
                "若仍缺信息，请说明缺少的具体维度，而不是换关键词重复检索。"
            )
        return self._finish(found=True, level=level, message=msg, dedup=reason)

    # --- the algorithm --------------------------------------------------------------------------

    def execute(self) -> LookupOutcome:
        if not self.query:
            return self._finish(
                found=False,
                level=RelevanceLevel.NONE,
                message="查询为空：请给出要检索的关键词或问题。",
            )
        if self.mem.lookups >= self.cfg.budget:
            return self._finish(
                found=False,
                level=RelevanceLevel.NONE,
                hint=BUDGET_HINT,
                dedup=DedupReason.BUDGET,
                message=(
                    f"本会话的知识库检索次数已达上限（{self.cfg.budget} 次），本次未检索。"
                    "请基于已获得的结果作答，并说明仍缺少的信息。"
                ),
            )
        self.mem.lookups += 1

        t = time.perf_counter()
        l0 = self.svc.catalog.l0.search(self.query)
        self.timings["l0"] = round((time.perf_counter() - t) * 1000, 3)
        l0_docs = [d for m in l0 if (d := self.svc.catalog.get(m.entry.doc_id))]
        self.art.update(l0_count=len(l0_docs), l0_titles=[d.title for d in l0_docs])

        if len(l0_docs) == 1:
            self.art["layer"] = "L0"
            return self._precise(l0_docs[0])
        hits = self._l1()
        self.art["layer"] = "L0+L1" if l0_docs else "L1"
        return self._ranked(l0_docs, hits)

    def _precise(self, doc: DocInfo) -> LookupOutcome:
        level = RelevanceLevel.PRECISE
        if self.mem.is_doc_retrieved(doc.file_path):
            return self._dedup([doc], level)
        self._serve(doc)
        content = self.svc.summary_for(doc, self.query)
        primary = {"content": content, "source": doc.file_path, "matchType": "L0_EXACT"}
        return self._finish(
            found=True,
            level=level,
            primary=primary,
            message=f"关键词精确命中《{doc.title}》（L1 未执行）。",
        )

    def _l1(self) -> list[FusedHit]:
        store = self.svc.store
        if store is None:
            self.art["l1_error"] = "L1 store is not configured"
            return []
        weights = self.svc.route_weights(self.query, self.cfg)
        self.art["route_weights"] = weights
        try:
            t = time.perf_counter()
            vector = store.embeddings.embed_query(self.query)
            self.timings["embed"] = round((time.perf_counter() - t) * 1000, 2)
            t = time.perf_counter()
            result = store.search(
                self.query,
                vector,
                candidates=self.cfg.candidates,
                limit=self.cfg.top_k,
                weights=weights,
                rrf_k=self.cfg.rrf_k,
            )
            self.timings["l1"] = round((time.perf_counter() - t) * 1000, 2)
        except Exception as exc:  # L1 down must not take L0 with it
            log.warning("L1 search failed, answering from L0 only: %s", exc)
            self.art["l1_error"] = f"L1 unavailable: {type(exc).__name__}: {exc}"[:500]
            return []
        th = self.cfg.thresholds
        scores = []
        for h in result.hits:
            d = h.scores.get("dense_distance")
            sim = similarity(d, th.max_l2_distance) if d is not None else None
            scores.append(
                {
                    "source": h.fields.get("file_path"),
                    "breadcrumb": h.fields.get("breadcrumb"),
                    "chunk_index": h.fields.get("chunk_index"),
                    "rrf": round(h.rrf, 6),
                    "dense_distance": None if d is None else round(d, 6),
                    "dense_similarity": None if sim is None else round(sim, 6),
                    "bm25_score": h.scores.get(BM25_ROUTE),
                    "dense_rank": h.ranks.get(DENSE_ROUTE),
                    "bm25_rank": h.ranks.get(BM25_ROUTE),
                    "valid": sim is not None and sim >= th.reference,
                }
            )
        self.art["l1_scores"] = scores
        self.art["l1_count"] = sum(1 for s in scores if s["valid"])
        distances = [s["dense_distance"] for s in scores if s["dense_distance"] is not None]
        if distances:
            top = min(distances)
            self.art["l1_top_score"] = top
            self.art["l1_top_similarity"] = round(similarity(top, th.max_l2_distance), 6)
        return [h for h, s in zip(result.hits, scores, strict=True) if s["valid"]]

    def _ranked(self, l0_docs: list[DocInfo], hits: list[FusedHit]) -> LookupOutcome:
        th = self.cfg.thresholds
        top = self.art["l1_top_score"] if hits else None
        judgement = judge(len(l0_docs), top, th)
        level = judgement.level
        catalog = self.svc.catalog
        hit_docs = [(h, catalog.by_path(h.fields.get("file_path", ""))) for h in hits]
        hit_docs = [(h, d) for h, d in hit_docs if d is not None]
        if not judgement.found:
            note = f"（{self.art['l1_error']}）" if self.art["l1_error"] else ""
            return self._finish(
                found=False,
                level=level,
                message=f"知识库中没有与该查询足够相关的文档{note}。",
            )
        new_hits = [(h, d) for h, d in hit_docs if not self.mem.is_doc_retrieved(d.file_path)]
        new_l0 = [d for d in l0_docs if not self.mem.is_doc_retrieved(d.file_path)]
        l1_note = (
            f" 注意：{self.art['l1_error']}，仅返回关键词结果。" if self.art["l1_error"] else ""
        )

        if l0_docs and hit_docs:
            # Several keyword matches: list them (metadata only) and let L1 supply the content.
            if not new_hits:
                return self._dedup([d for _, d in hit_docs] + l0_docs, level)
            primary = {
                "content": l0_listing(l0_docs),
                "source": ", ".join(d.file_path for d in l0_docs),
                "matchType": "L0_MULTI",
            }
            supplement = self._chunks(new_hits)
            msg = f"关键词命中 {len(l0_docs)} 篇文档（仅列元数据），正文来自混合检索。"
            return self._finish(
                found=True, level=level, primary=primary, supplement=supplement, message=msg
            )

        if l0_docs:
            # Several keyword matches and no valid L1 hit: the best one's compact summary.
            if not new_l0:
                return self._dedup(l0_docs, level)
            best, others = new_l0[0], [d for d in l0_docs if d is not new_l0[0]]
            self._serve(best)
            content = self.svc.summary_for(best, self.query)
            primary = {"content": content, "source": best.file_path, "matchType": "L0_SUMMARY"}
            supplement = (
                [
                    {
                        "content": l0_listing(others),
                        "source": ", ".join(d.file_path for d in others),
                        "breadcrumb": "其他关键词命中（仅元数据）",
                    }
                ]
                if others
                else []
            )
            msg = f"关键词命中 {len(l0_docs)} 篇文档，返回最相关一篇的摘要。{l1_note}"
            return self._finish(
                found=True, level=level, primary=primary, supplement=supplement, message=msg.strip()
            )

        if not new_hits:
            return self._dedup([d for _, d in hit_docs], level)
        (h0, d0), rest = new_hits[0], new_hits[1:]
        self._serve(d0)
        primary = {
            "content": self._cut(chunk_content(h0), self.cfg.max_chunk_chars),
            "source": d0.file_path,
            "matchType": "L1_HYBRID",
        }
        return self._finish(
            found=True,
            level=level,
            primary=primary,
            supplement=self._chunks(rest),
            message=f"混合检索（dense + BM25）返回 {1 + min(len(rest), self.cfg.max_supplements)} 个片段。",
        )

    def _chunks(self, hits: list[tuple[FusedHit, DocInfo]]) -> list[dict[str, Any]]:
        out = []
        for h, d in hits[: self.cfg.max_supplements]:
            self._serve(d)
            out.append(
                {
                    "content": self._cut(chunk_content(h), self.cfg.max_chunk_chars),
                    "source": d.file_path,
                    "breadcrumb": h.fields.get("breadcrumb", ""),
                }
            )
        return out
