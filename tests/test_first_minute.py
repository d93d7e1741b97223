"""The first minute on the shipped knowledge base: a newcomer's first questions, in Chinese, are
answered from the runbook that holds the answer, which the answer cites (offline chat model)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from graph.context import Context
from graph.state import run_input
from tests.support.kb import started_services
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # imports the whole shipped knowledge base

FIRST_QUESTIONS = {
    "数据库连接池超时怎么排查？": ("infrastructure/mysql-connection-pool.md", "连接池"),
    "Redis 内存满了怎么处理？": ("cache/redis-memory-full.md", "maxmemory"),
    "线上出故障了先做什么？": ("troubleshooting/fault-diagnosis-process.md", "止血"),
    "支付接口超时以后怎么安全重试？": ("api/payment-timeout-retry.md", "幂等"),
}


@pytest.fixture(scope="module")
async def shipped(tmp_path_factory: pytest.TempPathFactory, embeddings):
    base = tmp_path_factory.mktemp("first-minute")
    kb = shutil.copytree(ROOT / "knowledge_base", base / "shipped")
    async with started_services(base, embeddings, knowledge_base_dir=kb) as svc:
        yield svc


@pytest.mark.parametrize("question", list(FIRST_QUESTIONS))
async def test_first_questions_are_answered_from_their_runbook(shipped, question: str) -> None:
    source, phrase = FIRST_QUESTIONS[question]
    out = await shipped.graphs.chat.ainvoke(
        run_input(question, "CHAT"),
        {"configurable": {"thread_id": uuid.uuid4().hex}},
        context=Context(),
    )
    answer = out["answer"]
    assert "未找到" not in answer, answer
    assert source in answer, answer  # cited
    assert phrase in answer, answer  # and answered from its text
    assert source in {p for paths in out["retrieved"].values() for p in paths}


async def test_the_shipped_runbooks_all_import(shipped) -> None:
    shipped_files = sorted(
        p.relative_to(ROOT / "knowledge_base").as_posix()
        for p in (ROOT / "knowledge_base").rglob("*.md")
    )
    assert len(shipped_files) >= 20
    assert len(shipped.kb.catalog) == len(shipped_files)
    assert Path(shipped.settings.knowledge_base_dir).name == "shipped"
