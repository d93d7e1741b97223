"""Text helpers for the model-facing lookup payload. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from retrieval.catalog import DocInfo

NONE_HINT = "知识库中没有找到足够相关的文档，请基于已有信息作答，或说明缺少的具体信息"
BUDGET_HINT = "本会话检索次数已用完，请基于已获得的结果作答"

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LETTER = re.compile(r"[A-Za-z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among letters: decides how far the dense route is trusted."""
    letters = _LETTER.findall(text)
    return len(_CJK.findall(text)) / len(letters) if letters else 0.0


def truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + "…（已截断）", True


def chunk_content(hit: Any) -> str:
    """The chunk as the model reads it: breadcrumb first, then the section text."""
    return str(hit.fields.get("text", ""))


def l0_listing(docs: Sequence[DocInfo]) -> str:
    return "\n".join(f"- 《{d.title}》（{d.file_path}）：{d.summary}" for d in docs)
