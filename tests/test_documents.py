"""Frontmatter parsing, derived fields and failures, pure."""

import pytest

from retrieval.parsing.documents import DocumentError, parse_document

FULL = """---
title: Redis 配置
keywords: [maxmemory, 淘汰策略]
summary: Redis 内存与淘汰。
category: infrastructure
covers: [内存, 淘汰]
when_to_retrieve: Redis 内存告警时
---
# Redis 配置

正文第一段。

## 内存
maxmemory 2gb
"""


def test_full_frontmatter_is_used_as_written() -> None:
    d = parse_document(FULL.encode(), "infrastructure/redis.md")
    assert d.title == "Redis 配置"
    assert d.keywords == ["maxmemory", "淘汰策略"]
    assert d.category == "infrastructure"
    assert d.covers == ["内存", "淘汰"]
    assert d.when_to_retrieve == "Redis 内存告警时"
    assert d.derived == [] and d.warnings == []
    assert d.metadata()["sections"] == ["内存"]


def test_missing_frontmatter_derives_fields_with_a_warning() -> None:
    raw = "# 磁盘满处理\n\n先清理 /var/log 下的旧日志，再扩容。\n\n## 步骤\n执行 df -h。\n".encode()
    d = parse_document(raw, "ops/disk-full.md")
    assert d.title == "磁盘满处理"
    assert d.category == "ops"
    assert d.summary == "先清理 /var/log 下的旧日志，再扩容。"
    assert d.keywords == []
    assert set(d.derived) == {"title", "summary", "category", "keywords"}
    assert d.warnings and "no frontmatter" in d.warnings[0]


def test_title_falls_back_to_file_name() -> None:
    d = parse_document(b"just some text without heading", "notes/on-call-tips.md")
    assert d.title == "on call tips"


def test_folder_wins_over_conflicting_category() -> None:
    raw = FULL.replace("category: infrastructure", "category: api").encode()
    d = parse_document(raw, "infrastructure/redis.md")
    assert d.category == "infrastructure"
    assert any("differs from folder" in w for w in d.warnings)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        ("# 标题\n中文".encode("gbk"), "UTF-8"),
        (b"---\ntitle: [unclosed\n---\nbody", "not valid YAML"),
        (b"---\n- a\n- b\n---\nbody", "mapping"),
        (b"---\ntitle: x\nkeywords: {a: 1}\n---\nbody", "keywords"),
        (b"---\ntitle: only frontmatter\n---\n", "no body"),
    ],
)
def test_bad_files_fail_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason):
        parse_document(raw, "x/bad.md")
