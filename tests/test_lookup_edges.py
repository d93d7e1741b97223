"""A lookup never fails on empty or partial candidates: the state a crash or a lost vector store
leaves behind (catalog and L0 full, vectors gone), and sessions that already hold every match."""

from __future__ import annotations

import asyncio
from pathlib import Path

from retrieval.lookup.memory import SessionMemory
from tests.support.kb import started_kb


async def test_vectors_gone_under_a_full_catalog(tmp_path: Path, embeddings) -> None:
    async with started_kb(tmp_path, embeddings) as (kb, _):
        await asyncio.to_thread(kb.store.drop)  # what a crash or removed Milvus files leave
        mem = SessionMemory()
        for query in [
            "ERR_TIMEOUT",  # one L0 match: PRECISE, L1 never asked
            "HikariCP Flyway",  # several L0 matches, no vectors: answered from L0
            "quarterly marketing budget",  # nothing at all
            "ERR_TIMEOUT",  # the same document again: de-duplicated
            "HikariCP Flyway",
        ]:
            out = kb.lookup(query, mem)
            mem = out.memory
            # never HIGHLY_RELEVANT: there is no L1 evidence to claim it
            assert out.payload["relevanceLevel"] in {"PRECISE", "REFERENCE", "NONE"}, out.payload
            assert isinstance(out.payload["message"], str) and out.payload["message"]
        assert mem.lookups == 5
        both = kb.lookup("HikariCP Flyway", SessionMemory()).payload
        assert both["found"] and both["relevanceLevel"] == "REFERENCE"
        assert both["primary"]["matchType"] == "L0_SUMMARY" and "L1" in both["message"]


async def test_every_match_already_returned(tmp_path: Path, embeddings) -> None:
    async with started_kb(tmp_path, embeddings) as (kb, _):
        everything = {}
        for doc in kb.catalog.all():
            everything.setdefault(doc.category, []).append(doc.file_path)
        mem = SessionMemory.of(everything)
        for query in ["database connection pool timeout", "连接池超时", "HikariCP Flyway"]:
            out = kb.lookup(query, mem)
            assert out.payload["found"] in (True, False)
            assert out.payload["primary"] is None and out.payload["supplement"] == []
            assert out.artifact["dedup_reason"] in {"doc_retrieved", "domain_retrieved", None}
