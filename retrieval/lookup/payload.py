"""Text the model reads (the lookup payload) and the score rows the records keep. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval.judging.relevance import Thresholds, similarity
from retrieval.l0.catalog import DocInfo
from retrieval.l1.fusion import DocHit, FusedHit
from retrieval.parsing.chunking import CARD_HEADING

NONE_HINT = "知识库中没有找到足够相关的文档，请基于已有信息作答，或说明缺少的具体信息"
BUDGET_HINT = "本会话检索次数已用完，请基于已获得的结果作答"


def truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + "…（已截断）", True


def is_card(chunk: FusedHit) -> bool:
    return str(chunk.fields.get("breadcrumb", "")).endswith(CARD_HEADING)


def doc_content(doc: DocHit, limit: int, *, chunks: int) -> tuple[str, bool]:
    """The document's best ``chunks`` body chunks, in document order (breadcrumb first in each).

    The card chunk (the document's own description) is left out: it helps find the document, the
    body answers the question. Empty when only the card or nothing was found.
    """
    body = [c for c in doc.chunks if not is_card(c)][:chunks]
    body.sort(key=lambda c: int(c.fields.get("chunk_index", 0)))
    text = "\n\n".join(str(c.fields.get("text", "")) for c in body)
    return truncate(text, limit) if text else ("", False)


def l0_listing(docs: Sequence[DocInfo]) -> str:
    return "\n".join(f"- 《{d.title}》（{d.file_path}）：{d.summary}" for d in docs)


def score_rows(judged: Sequence[Any], shown: Sequence[Any], t: Thresholds) -> list[dict[str, Any]]:
    """Per-chunk rows for the records and the retrieval test page: each route's rank and score."""
    rows = []
    shown_paths = {j.doc.path for j in shown}
    for j in judged:
        for c in j.doc.chunks[:3]:
            d = c.scores.get("dense_distance")
            rows.append(
                {
                    "source": j.doc.path,
                    "breadcrumb": c.fields.get("breadcrumb"),
                    "chunk_index": c.fields.get("chunk_index"),
                    "rrf": round(c.rrf, 6),
                    "dense_distance": None if d is None else round(d, 6),
                    "dense_similarity": None
                    if d is None
                    else round(similarity(d, t.max_l2_distance), 6),
                    "bm25_score": c.scores.get("bm25"),
                    "dense_rank": c.ranks.get("dense"),
                    "bm25_rank": c.ranks.get("bm25"),
                    "valid": j.doc.path in shown_paths,
                }
            )
    return rows
