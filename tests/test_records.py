"""Every table round-trips on SQLite and MariaDB, JSON keeps nested Chinese, keys stay unique."""

import asyncio

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from persistence import document_repository as docs_repo
from persistence import repository as repo
from persistence import run_rows
from persistence.db import Database
from persistence.models import (
    AgentStep,
    ApiDocument,
    CaseLibrary,
    DiagnosisSession,
    KnowledgeDomain,
    SessionStatus,
    ToolInvocation,
)

CHINESE = {
    "l0_titles": ["MySQL 连接池配置 (HikariCP)"],
    "l1_scores": [{"dense": 0.81, "bm25": 3.2, "rrf": 0.032, "breadcrumb": "连接池 > 超时"}],
    "nested": {"说明": ["连接池超时", {"深层": None}]},
}


@pytest.fixture
async def db(db_url: str):
    database = Database(db_url)
    yield database
    await database.dispose()


async def test_session_step_invocation_round_trip(db: Database) -> None:
    async with db.session() as s:
        await repo.create_session(s, session_id="s-1", query="连接池超时怎么办？", thread_id="t-1")
        step, created = await run_rows.append_step(
            s,
            AgentStep(
                session_id="s-1",
                step_key="executor:1",
                step_index=1,
                agent_name="executor",
                model_input="问题：连接池超时",
                output_message={
                    "content": "查询知识库",
                    "tool_calls": [{"name": "lookup_knowledge"}],
                },
                has_tool_call=True,
                token_count=42,
            ),
        )
        assert created
        inv, _ = await run_rows.append_invocation(
            s,
            ToolInvocation(
                session_id="s-1",
                step_id=step.id,
                call_key="call-1",
                tool_name="lookup_knowledge",
                input_params={"query": "连接池超时"},
                output_preview="找到 mysql-connection-pool.md",
                output_length=1234,
                retrieval_layer="L1",
                l0_match_count=0,
                l1_match_count=3,
                relevance_level="HIGHLY_RELEVANT",
                retrieval_details=CHINESE,
            ),
        )
        # A nullable-everything invocation: NULLs survive as NULLs.
        await run_rows.append_invocation(
            s, ToolInvocation(session_id="s-1", call_key="call-2", tool_name="get_current_time")
        )
        await run_rows.finish_session(
            s, "s-1", status=SessionStatus.SUCCESS, answer="调整 maximumPoolSize"
        )

    async with db.session() as s:
        trace = await repo.get_trace(s, "s-1")
    assert trace is not None
    assert trace.session.status == "SUCCESS"
    assert trace.session.answer == "调整 maximumPoolSize"
    assert trace.session.total_steps == 1
    assert trace.session.total_tool_calls == 2
    assert trace.session.total_tokens == 42
    assert trace.session.completed_at is not None and trace.session.created_at.tzinfo is not None
    assert trace.steps[0].output_message["content"] == "查询知识库"
    first, second = trace.invocations
    assert first.retrieval_details == CHINESE
    assert first.input_params == {"query": "连接池超时"}
    assert (second.relevance_level, second.dedup_reason, second.retrieval_details) == (
        None,
        None,
        None,
    )
    assert second.input_params is None and second.step_id is None
    assert inv.id == first.id


async def test_json_is_stored_as_readable_chinese(db: Database) -> None:
    async with db.session() as s:
        await repo.create_session(s, session_id="s-raw", query="q")
        await repo.update_session(s, "s-raw", self_evaluation={"factors": ["命中 L0"]})
        raw = (
            await s.execute(
                sa.text("SELECT self_evaluation FROM diagnosis_session WHERE session_id='s-raw'")
            )
        ).scalar_one()
    assert "命中 L0" in raw  # not \\u547d...


async def test_document_domain_case_round_trip(db: Database) -> None:
    async with db.session() as s:
        s.add(
            ApiDocument(
                doc_id="d-1",
                file_name="redis-config.md",
                file_path="infrastructure/redis-config.md",
                title="Redis 配置",
                category="infrastructure",
                doc_metadata={"keywords": ["maxmemory", "淘汰策略"], "derived": []},
                content_hash="ab" * 32,
                file_size=2048,
            )
        )
        s.add(
            KnowledgeDomain(
                name="infrastructure", when_to_retrieve="数据库、缓存、迁移问题", document_count=3
            )
        )
        await s.commit()
        case, created = await repo.add_case_once(
            s,
            CaseLibrary(
                case_id="c-1", session_id="s-9", title="连接池超时", tags=["mysql", "连接池"]
            ),
        )
        assert created
        doc = await docs_repo.get_document_by_path(s, "infrastructure/redis-config.md")
        domain = (await s.execute(sa.select(KnowledgeDomain))).scalar_one()
    assert doc is not None and doc.doc_metadata == {
        "keywords": ["maxmemory", "淘汰策略"],
        "derived": [],
    }
    assert doc.status == "PENDING" and doc.error_message is None and doc.indexed_at is None
    assert domain.when_to_retrieve == "数据库、缓存、迁移问题"
    assert case.tags == ["mysql", "连接池"] and case.category == "GENERAL" and case.source == "AUTO"


async def test_fs6_distribution_query(db: Database) -> None:
    levels = ["PRECISE", "PRECISE", "HIGHLY_RELEVANT", "REFERENCE", None]
    async with db.session() as s:
        await repo.create_session(s, session_id="s-fs6", query="q")
        for i, level in enumerate(levels):
            await run_rows.append_invocation(
                s,
                ToolInvocation(
                    session_id="s-fs6",
                    call_key=f"c{i}",
                    tool_name="lookup_knowledge",
                    relevance_level=level,
                    dedup_reason="doc_retrieved" if level is None else None,
                ),
            )
        await run_rows.append_invocation(
            s, ToolInvocation(session_id="s-fs6", call_key="t", tool_name="get_current_time")
        )
        dist = await repo.relevance_distribution(s)
    assert dist == {"PRECISE": 2, "HIGHLY_RELEVANT": 1, "REFERENCE": 1, None: 1}


async def test_session_id_is_unique(db: Database) -> None:
    async with db.session() as s:
        s.add(DiagnosisSession(session_id="dup", query="a"))
        await s.commit()
        s.add(DiagnosisSession(session_id="dup", query="b"))
        with pytest.raises(IntegrityError):
            await s.commit()


async def test_document_file_path_is_unique(db: Database) -> None:
    async with db.session() as s:
        s.add(ApiDocument(doc_id="a", file_name="x.md", file_path="api/x.md"))
        await s.commit()
        s.add(ApiDocument(doc_id="b", file_name="x.md", file_path="api/x.md"))
        with pytest.raises(IntegrityError):
            await s.commit()


async def test_keyed_writes_are_idempotent_under_concurrency(db: Database) -> None:
    async def write(i: int) -> bool:
        async with db.session() as s:
            _, created = await run_rows.append_step(
                s, AgentStep(session_id="s-c", step_key="k", step_index=i, agent_name="executor")
            )
            return created

    results = await asyncio.gather(*(write(i) for i in range(8)))
    assert results.count(True) == 1
    async with db.session() as s:
        assert len(await repo.list_steps(s, "s-c")) == 1


async def test_knowledge_version_bumps(db: Database) -> None:
    async with db.session() as s:
        assert await docs_repo.knowledge_version(s) == 0
        assert await docs_repo.bump_knowledge_version(s) == 1
        assert await docs_repo.bump_knowledge_version(s) == 2


async def test_list_sessions_newest_first_and_filtered(db: Database) -> None:
    async with db.session() as s:
        for i in range(3):
            await repo.create_session(s, session_id=f"l-{i}", query=f"q{i}", agent_flow="CHAT")
        await repo.update_session(s, "l-1", status="FAILED")
        page = await repo.list_sessions(s, limit=2)
        failed = await repo.list_sessions(s, status="FAILED")
    assert page.total == 3 and [r.session_id for r in page.items] == ["l-2", "l-1"]
    assert [r.session_id for r in failed.items] == ["l-1"]
