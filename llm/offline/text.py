"""Text utilities for the offline model: term extraction, token estimates, JSON/YAML blocks."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache

import yaml

from telemetry.tokens import estimate_tokens  # noqa: F401 - the offline model's usage

_ASCII_TERM = re.compile(r"[A-Za-z][A-Za-z0-9_.\-@]*[A-Za-z0-9]|[A-Za-z]{2,}")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_JSON_BLOCK = re.compile(r"```json\s*(\{.*?\})\s*```", re.S)
_YAML_BLOCK = re.compile(r"```yaml\s*(.*?)```", re.S)

EN_STOP = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "to",
    "of",
    "in",
    "on",
    "for",
    "is",
    "are",
    "was",
    "be",
    "how",
    "what",
    "why",
    "when",
    "which",
    "do",
    "does",
    "i",
    "we",
    "my",
    "our",
    "it",
    "this",
    "that",
    "with",
    "can",
    "should",
    "please",
    "me",
    "about",
    "from",
    "at",
    "by",
    "as",
    "if",
    "vs",
}
ZH_STOP = {
    "怎么",
    "怎么办",
    "如何",
    "什么",
    "为什么",
    "哪些",
    "是否",
    "可以",
    "应该",
    "需要",
    "一下",
    "请问",
    "这个",
    "那个",
    "我们",
    "你们",
    "他们",
    "出现",
    "发生",
    "问题",
    "情况",
    "时候",
    "现在",
    "已经",
    "还是",
    "以及",
    "并且",
    "或者",
    "然后",
    "导致",
    "处理",
    "进行",
    "相关",
    "告诉",
    "分别",
    "同时",
    "意思",
    "含义",
    "办法",
    "解决",
    "排查",
    "原因",
    "看看",
    "一些",
    "帮我",
}


@lru_cache(maxsize=1)
def _jieba():  # noqa: ANN202 - jieba module, imported lazily (it builds a dictionary on first use)
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def terms(text: str) -> list[str]:
    """Distinct content terms in order: English words/codes and Chinese words (jieba)."""
    out: list[str] = []
    for m in _ASCII_TERM.finditer(text):
        t = m.group(0)
        if t.lower() not in EN_STOP and t not in out:
            out.append(t)
    for run in _CJK_RUN.findall(text):
        for w in _jieba().lcut(run):
            if len(w) >= 2 and w not in ZH_STOP and w not in out:
                out.append(w)
    return out


def json_block(text: str) -> dict | None:
    m = _JSON_BLOCK.search(text)
    if not m:
        return None
    try:
        data = json.loads(m.group(1))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def yaml_block(text: str) -> object:
    m = _YAML_BLOCK.search(text)
    if not m:
        return None
    try:
        return yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return None


def unique(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for x in items:
        if x and x not in seen:
            seen.append(x)
    return seen
