"""``LookupService.lookup(query, memory, alert=)``: L0 → L1 by document → judge → de-dup → payload.

The input is prepared first (``query_input.py``: label values out, the alert's name in); a question
reporting several symptoms is also judged aspect by aspect (``aspects.py``, ``aspect_results.py``).
The payload is what the model sees (no scores); the artifact carries the raw scores into
``tool_invocation.retrieval_details``; the returned memory is the session's updated action memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from retrieval.judging.calibration import Calibration
from retrieval.judging.judge import Judged, judge_documents
from retrieval.judging.relevance import COMPLETENESS_HINTS, RelevanceLevel, similarity
from retrieval.l0.catalog import DocInfo, DocumentCatalog, compact_summary
from retrieval.l1.fusion import BM25_ROUTE, DENSE_ROUTE, L0_ROUTE, DocHit, fuse_documents
from retrieval.l1.store import ChunkStore
from retrieval.lookup.alert_input import AlertInput
from retrieval.lookup.aspect_results import Pick, aspect_fields, aspects_message, combine
from retrieval.lookup.aspects import split_aspects
from retrieval.lookup.config import DedupReason, LookupConfig, LookupOutcome
from retrieval.lookup.l0_claim import agrees, keyword_floor, l0_claim
from retrieval.lookup.l1_search import bm25_keywords, search_routes
from retrieval.lookup.memory import SessionMemory
from retrieval.lookup.payload import BUDGET_HINT, NONE_HINT, doc_content, l0_listing, score_rows
from retrieval.lookup.query_input import LookupQuery, prepare_for
from retrieval.parsing.textnorm import expand_identifiers
from telemetry import metrics

log = logging.getLogger(__name__)


class LookupService:
    def __init__(
        self,
        catalog: DocumentCatalog,
        store: ChunkStore | None,
        config: LookupConfig | None = None,
        body_loader: Callable[[DocInfo], str | None] | None = None,
        readability: Callable[[str], float] | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.config = config or LookupConfig()
        if self.config.calibration is None:
            self.config.calibration = Calibration.load()
        # Reads a document's body for a query-focused summary; None = stored summary only.
        self.body_loader = body_loader
        # How much of a query the embedding model reads (None: all of it).
        self.readability = readability

    def summary_for(self, doc: DocInfo, query: str) -> str:
        body = None
        if self.body_loader is not None:
            try:
                body = self.body_loader(doc)
            except Exception as exc:  # the stored summary is a fine answer too
                log.debug("body of %s unavailable: %s", doc.file_path, exc)
        if not body:
            return doc.compact or l0_listing([doc])
        return compact_summary(doc.title, doc.summary, body, query)

    def read_share(self, query: str) -> float:
        return 1.0 if self.readability is None else float(self.readability(query))

    def route_weights(self, query: str, config: LookupConfig | None = None) -> dict[str, float]:
        """The dense route votes only as far as its model can read the query."""
        c = config or self.config
        return {
            DENSE_ROUTE: round(c.dense_weight * self.read_share(query), 4),
            BM25_ROUTE: c.bm25_weight,
            L0_ROUTE: c.l0_weight,
        }

    def prepare(self, query: str, alert: AlertInput | None = None) -> LookupQuery:
        return prepare_for(self.catalog, query, alert)

    def lookup(
        self,
        query: str,
        memory: SessionMemory | None = None,
        config: LookupConfig | None = None,
        alert: AlertInput | None = None,
    ) -> LookupOutcome:
        """``config`` overrides the service's configuration for this call (a run's Context);
        ``alert`` is the firing alert the lookup is about (its name and label values)."""
        t0 = time.perf_counter()
        mem = SessionMemory.of(memory.retrieved, memory.lookups) if memory else SessionMemory()
        run = _Run(self, self.prepare(query, alert), mem, config or self.config)
        outcome = run.execute()
        seconds = time.perf_counter() - t0
        outcome.artifact["timings_ms"]["total"] = round(seconds * 1000, 2)
        metrics.record_lookup(outcome.artifact, seconds)
        return outcome


class _Run:
    """One lookup's working state; keeps ``lookup`` itself short."""

    def __init__(
        self, svc: LookupService, q: LookupQuery, mem: SessionMemory, cfg: LookupConfig
    ) -> None:
        self.svc, self.cfg, self.q, self.mem = svc, cfg, q, mem
        self.query = q.text  # what L0, BM25 and the judge read
        self.catalog = svc.catalog
        self.served: dict[str, list[str]] = {}
        self.truncated = False
        self.timings: dict[str, float] = {}
        self.art: dict[str, Any] = {
            "query": q.raw,
            "query_text": q.text,
            "alert": q.alert.as_dict() if q.alert else None,
            "context_values": list(q.context),
            "entities": q.record(),
            "layer": None,
            "judge": cfg.judge,
            "l0_count": 0,
            "l1_count": 0,
            **{k: [] for k in ("l0_titles", "l1_scores", "documents")},
            **dict.fromkeys(("l1_top_score", "l1_top_similarity", "confidence"), None),
            **dict.fromkeys(("dedup_reason", "l1_error"), None),
            "timings_ms": self.timings,
        }

    # --- building blocks ------------------------------------------------------------------------

    def _serve(self, doc: DocInfo) -> None:
        self.mem.mark(doc.category, doc.file_path)
        bucket = self.served.setdefault(doc.category, [])
        if doc.file_path not in bucket:
            bucket.append(doc.file_path)

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

    def _dedup(self, docs: list[DocInfo], level: RelevanceLevel) -> LookupOutcome:
        top = docs[0]
        left = self.catalog.paths_in(top.category) - set(self.mem.retrieved.get(top.category, []))
        titles = "、".join(f"《{d.title}》" for d in docs[:3])
        if not left:
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

    def _not_found(self) -> LookupOutcome:
        note = f"（{self.art['l1_error']}）" if self.art["l1_error"] else ""
        return self._finish(
            found=False,
            level=RelevanceLevel.NONE,
            message=f"知识库中没有与该查询足够相关的文档{note}。",
        )

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
        l0 = self.catalog.l0.search(self.query)
        self.timings["l0"] = round((time.perf_counter() - t) * 1000, 3)
        found = [(m, d) for m in l0 if (d := self.catalog.get(m.entry.doc_id))]
        l0_docs = [d for _, d in found]
        named = (claim := l0_claim(found, self.catalog, self.q, self.svc.body_loader)).named
        self.art.update(
            l0_count=len(l0_docs), l0_titles=[d.title for d in l0_docs], l0_named=len(named)
        )
        if claim.alone is not None:
            self.art["layer"] = "L0"
            return self._precise(claim.alone)
        docs = self._l1([d.file_path for d in named])
        self.art["layer"] = "L0+L1" if named else "L1"
        return self._ranked(docs, named, claim.to_confirm)

    def _precise(self, doc: DocInfo, l1: bool = False) -> LookupOutcome:
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
            message=f"关键词精确命中《{doc.title}》{'，L1 结果一致' if l1 else '（L1 未执行）'}。",
        )

    def _l1(self, l0_paths: list[str], text: str | None = None) -> list[DocHit]:
        """Documents ranked by both routes and the L0 matches; L0 alone when L1 is down.

        ``text``: an aspect's text (its scores are not the lookup's own, so the artifact's
        top-level fields keep the whole query's)."""
        aspect = text is not None
        text = self.query if text is None else text
        store = self.svc.store
        weights = self.svc.route_weights(text, self.cfg)
        if not aspect:
            self.art["route_weights"] = weights
            self.art["readability"] = round(self.svc.read_share(text), 4)
        routes: dict[str, Any] = {}
        if store is None:
            self.art["l1_error"] = "L1 store is not configured"
        else:
            expanded = expand_identifiers(text)
            # the dense model reads values as context ("1.1G of 50G": space, not inodes)
            found = search_routes(
                store,
                keywords=bm25_keywords(expanded, self.catalog),
                dense_text=expanded if aspect else expand_identifiers(self.q.dense_text),
                candidates=self.cfg.candidates,
                dense=weights[DENSE_ROUTE] > 0,
                exclude=self.catalog.disabled,
                base_size=len(self.catalog),
            )
            for key, ms in found.timings.items():
                key = f"aspects_{key}" if aspect else key
                self.timings[key] = self.timings.get(key, 0.0) + ms
            routes = found.routes
            if found.error:
                self.art["l1_error"] = found.error
        docs = fuse_documents(routes, weights, self.cfg.rrf_k, {L0_ROUTE: l0_paths})
        known = [d for d in docs if self.catalog.by_path(d.path) is not None]
        distances = [d.best_distance for d in known if d.best_distance is not None]
        if distances and not aspect:
            top = min(distances)
            self.art["l1_top_score"] = round(top, 6)
            self.art["l1_top_similarity"] = round(
                similarity(top, self.cfg.thresholds.max_l2_distance), 6
            )
        return known

    def _judge(self, q: LookupQuery, docs: list[DocHit], l0_paths: list[str]) -> list[Judged]:
        t = time.perf_counter()
        judged = judge_documents(
            docs,
            judge=self.cfg.judge,
            calibration=self.cfg.calibration,
            thresholds=self.cfg.thresholds,
            read=self.svc.read_share(q.text),
            terms=q.terms,
            l0_paths=l0_paths,
            title_of=lambda path: self.catalog.by_path(path).title,  # type: ignore[union-attr]
            name_of=lambda path: self.catalog.by_path(path).name_text,  # type: ignore[union-attr]
            stats=self.catalog,
            codes=q.codes,
            code_only=q.code_only,
            entities=q.entities,
            query_text=q.text,
        )
        self.timings["judge"] = self.timings.get("judge", 0.0) + round(
            (time.perf_counter() - t) * 1000, 3
        )
        return judged

    def _ranked(self, docs: list[DocHit], l0: list[DocInfo], confirm: Any = None) -> LookupOutcome:
        judged = self._judge(self.q, docs, [d.file_path for d in l0])
        if confirm and agrees(confirm, judged):  # the L1 evidence stays in the record
            self.art["documents"] = [j.record(j is judged[0]) for j in judged[:8]]
            return self._precise(confirm, l1=True)
        judged = keyword_floor(confirm, judged)
        new = [j for j in judged if not self.mem.is_doc_retrieved(j.doc.path)]
        first = new[0] if new else None
        aspects = self._aspects() if self.q.alert is None else []
        if aspects:
            outcome = combine(
                judged,
                aspects,
                is_new=lambda p: not self.mem.is_doc_retrieved(p),
                top_k=self.cfg.top_k,
                floor=self.cfg.supplement_floor,
            )
            picks = outcome.shown
            self.art["aspects"] = [
                {"aspect": text, "documents": [j.record(False) for j in js[:3]]}
                for text, js in aspects
            ]
            self.art["aspects_unanswered"] = outcome.unanswered
        else:
            picks = [Pick(j) for j in self._select(judged, new)]
        shown = [p.judged for p in picks]
        self.art["documents"] = [j.record(j in shown) for j in judged[:8]]
        self.art["l1_scores"] = score_rows(judged[:8], shown, self.cfg.thresholds)
        self.art["l1_count"] = len(shown)
        head = shown[0] if shown else first
        self.art["confidence"] = head.confidence if head else None
        if aspects and picks:
            return self._answer(picks, level=outcome.level, unanswered=outcome.unanswered)
        if not judged or (first is None and not judged[0].found):
            return self._not_found()
        if first is None or not first.found:
            if judged[0].found and self.mem.is_doc_retrieved(judged[0].doc.path):
                infos = [self.catalog.by_path(j.doc.path) for j in judged if j.found]
                return self._dedup([d for d in infos if d], judged[0].level)
            return self._not_found()
        return self._answer(picks)

    def _aspects(self) -> list[tuple[str, list[Judged]]]:
        """Each symptom of a multi-symptom question, judged on its own (empty for one symptom)."""
        texts = split_aspects(self.query)
        if len(texts) < 2:
            return []
        out = []
        for text in texts:
            aq = self.q.aspect(text)
            l0 = [
                d for m in self.catalog.l0.search(text) if (d := self.catalog.get(m.entry.doc_id))
            ]
            paths = [d.file_path for d in l0]
            out.append((text, self._judge(aq, self._l1(paths, text), paths)))
        return out

    def _select(self, judged: list[Judged], new: list[Judged]) -> list[Judged]:
        """The primary (the best new document) and the next new documents as supplements."""
        if not new or not new[0].found:
            return []
        if self.cfg.judge == "dense":
            rest = [j for j in new[1:] if j.found]
        else:
            rest = [j for j in new[1:] if (j.confidence or 0.0) >= self.cfg.supplement_floor]
        return [new[0], *rest[: self.cfg.top_k - 1]]

    def _title(self, path: str) -> str:
        return doc.title if (doc := self.catalog.by_path(path)) else path

    def _answer(
        self,
        picks: list[Pick],
        *,
        level: RelevanceLevel | None = None,
        unanswered: list[str] | None = None,
    ) -> LookupOutcome:
        """Primary and supplements; a multi-symptom lookup (``level`` given) marks each document
        with the aspect it answers and that aspect's own level."""
        multi = level is not None
        head_pick, rest_picks = picks[0], picks[1:]
        head = head_pick.judged
        primary_doc = self.catalog.by_path(head.doc.path)
        assert primary_doc is not None  # _l1 keeps catalogued documents only
        content, cut = doc_content(head.doc, self.cfg.primary_chars, chunks=3)
        content = content or self.svc.summary_for(primary_doc, self.query)
        self.truncated |= cut
        self._serve(primary_doc)
        primary = {"content": content, "source": primary_doc.file_path, "matchType": "L1_HYBRID"}
        if self.art["l1_error"]:
            primary["matchType"] = "L0_SUMMARY"
        if multi:
            primary |= aspect_fields(head_pick)
        supplement = []
        for pick in rest_picks:
            j = pick.judged
            doc = self.catalog.by_path(j.doc.path)
            if doc is None:
                continue
            text, cut = doc_content(j.doc, self.cfg.supplement_chars, chunks=1)
            self.truncated |= cut
            self._serve(doc)
            item = {
                "content": text
                or self.svc.summary_for(doc, self.query)[: self.cfg.supplement_chars],
                "source": doc.file_path,
                "breadcrumb": (
                    j.doc.chunks[0].fields.get("breadcrumb") if j.doc.chunks else doc.title
                ),
            }
            supplement.append(item | aspect_fields(pick) if multi else item)
        note = f" 注意：{self.art['l1_error']}，仅返回关键词结果。" if self.art["l1_error"] else ""
        msg = f"混合检索（dense + BM25 + 关键词）返回 {1 + len(supplement)} 篇文档，主结果《{primary_doc.title}》。{note}"
        if multi:
            msg += " " + aspects_message(picks, unanswered or [], self._title)
        return self._finish(
            found=True,
            level=level or head.level,
            primary=primary,
            supplement=supplement,
            message=msg.strip(),
        )
