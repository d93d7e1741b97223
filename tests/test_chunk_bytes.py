"""Every chunk fits the store's fields, in bytes (issue 20, item 5).

Milvus' VARCHAR ``max_length`` counts UTF-8 bytes. A chunk within the model's window can be far
over 65,535 bytes when most of it is what the tokenizer drops (a 3,000-level list is mostly
indentation; a line padded with tabs), and a Chinese heading of 400 characters is 1,200 bytes of a
1,024-byte breadcrumb field. Such a runbook was accepted (201) and stored FAILED after 33 s with
"VARCHAR field 'text' value length 78385 exceeds max_length=65535".
"""

from __future__ import annotations

from pathlib import Path

from retrieval.parsing.chunking import BREADCRUMB_BYTES, TEXT_FIELD_BYTES, chunk_document, fit_bytes
from tests.support.hostile import isolated_client

NESTED = "# 深层列表\n\n" + "\n".join("  " * i + f"- 第{i}项 check" for i in range(1500))
PADDED_LINE = "# Padded\n\n" + ("数据" + "\t" * 300 + "x ") * 4000  # one line, ~1.2 MB
LONG_HEADING = "## " + "磁盘空间告警处理" * 60 + "\n\n清理日志目录。\n"


def test_fit_bytes_never_cuts_inside_a_character() -> None:
    assert fit_bytes("数据库", 7) == "数据"
    assert fit_bytes("abc", 10) == "abc"


def test_chunks_of_whitespace_heavy_text_fit_in_bytes(embeddings) -> None:  # noqa: ANN001
    count = embeddings.count_tokens
    for body in (NESTED, PADDED_LINE, LONG_HEADING):
        chunks = chunk_document("T", body, count=count, window=embeddings.max_tokens)
        assert chunks
        assert max(len(c.indexed_text.encode()) for c in chunks) <= TEXT_FIELD_BYTES
        assert max(len(c.breadcrumb.encode()) for c in chunks) <= BREADCRUMB_BYTES
        assert max(c.token_count for c in chunks) <= embeddings.max_tokens
        # nothing is dropped: the chunks together hold every non-space character
        kept = "".join(c.text for c in chunks)
        assert sum(not ch.isspace() for ch in kept) >= sum(
            not ch.isspace() for ch in body.split("\n", 2)[-1]
        )


async def test_such_runbooks_upload_as_indexed(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    async with isolated_client(tmp_path, embeddings) as client:
        for name, body in (("nested.md", NESTED), ("padded.md", PADDED_LINE)):
            r = await client.post(
                "/api/documents/upload",
                files={"file": (name, body.encode(), "text/markdown")},
                data={"category": "ops"},
            )
            assert r.status_code == 201, r.text
            doc = r.json()["document"]
            assert doc["status"] == "INDEXED", doc
            assert doc["chunkCount"] > 1
        heading = await client.post(
            "/api/documents/upload",
            files={"file": ("heading.md", LONG_HEADING.encode(), "text/markdown")},
            data={"category": "ops"},
        )
        assert heading.json()["document"]["status"] == "INDEXED", heading.text
        detail = (await client.get(f"/api/documents/{heading.json()['document']['docId']}")).json()
        assert all(len(c["breadcrumb"].encode()) <= BREADCRUMB_BYTES for c in detail["chunks"])
