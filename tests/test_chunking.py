"""Heading-aware chunking, pure (a whitespace/CJK-char token counter stands in for the tokenizer)."""

import re

from retrieval.parsing.chunking import chunk_document, split_sections


def count(text: str) -> int:
    # One token per CJK character or per ASCII word: close to what WordPiece does for this text.
    return len(re.findall(r"[\u4e00-\u9fff]|[A-Za-z0-9_]+", text))


DOC = """# 连接池手册

引言段落。

## 参数
### maximumPoolSize
池大小公式 connections = cores * 2。

```properties
# this is not a heading
maximumPoolSize=20

connectionTimeout=30000
```

### connectionTimeout
超时时间说明。

## 排查
步骤一。
"""


def test_sections_follow_headings_and_ignore_hashes_in_code() -> None:
    sections = split_sections(DOC)
    assert [s.headings for s in sections] == [
        ("连接池手册",),
        ("连接池手册", "参数", "maximumPoolSize"),
        ("连接池手册", "参数", "connectionTimeout"),
        ("连接池手册", "排查"),
    ]
    assert "# this is not a heading" in sections[1].text


def test_breadcrumbs_are_prepended_to_indexed_text() -> None:
    chunks = chunk_document("连接池手册", DOC, size=500, overlap=50, count=count)
    crumbs = [c.breadcrumb for c in chunks]
    assert crumbs == [
        "连接池手册",
        "连接池手册 > 参数 > maximumPoolSize",
        "连接池手册 > 参数 > connectionTimeout",
        "连接池手册 > 排查",
    ]
    assert chunks[1].indexed_text.startswith("连接池手册 > 参数 > maximumPoolSize\n\n")
    assert [c.index for c in chunks] == [0, 1, 2, 3]


def test_size_is_respected_and_code_blocks_stay_whole() -> None:
    paras = "\n\n".join(f"第{i}段 " + "内容" * 30 for i in range(12))
    code = "```bash\n" + "\n".join(f"echo step {i}" for i in range(20)) + "\n```"
    body = f"## 长章节\n{paras}\n\n{code}\n\n尾段。"
    chunks = chunk_document("T", body, size=200, overlap=40, count=count)
    assert len(chunks) > 3
    assert all(c.token_count <= 200 for c in chunks)
    whole = [c for c in chunks if "```bash" in c.text]
    assert len(whole) == 1 and whole[0].text.count("```") == 2  # not cut inside the fence


def test_overlap_repeats_the_tail_of_the_previous_chunk() -> None:
    paras = [f"段落{i} " + "词" * 40 for i in range(10)]
    chunks = chunk_document("T", "\n\n".join(paras), size=100, overlap=45, count=count)
    assert len(chunks) >= 4
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        last_para = prev.text.split("\n\n")[-1]
        assert nxt.text.startswith(last_para)


def test_oversized_code_block_is_split_and_refenced() -> None:
    code = (
        "```sql\n" + "\n".join(f"SELECT {i} FROM t WHERE id = {i};" for i in range(200)) + "\n```"
    )
    chunks = chunk_document("T", code, size=120, overlap=0, count=count)
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.startswith("```sql") and c.text.rstrip().endswith("```")
        assert c.token_count <= 120


def test_oversized_paragraph_uses_the_recursive_splitter() -> None:
    para = "。".join("句子" + "长" * 20 for _ in range(40))
    chunks = chunk_document("T", para, size=100, overlap=0, count=count)
    assert len(chunks) > 1 and all(c.token_count <= 100 for c in chunks)
    assert "".join(c.text for c in chunks).replace("\n", "") == para
