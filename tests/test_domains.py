"""Knowledge domains: enrichment at import, per-domain summaries, the planner's map; prompt files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel

from graph.prompts import NAMES, PromptError, load_prompts
from retrieval.parsing.documents import parse_document
from settings import SHIPPED_PROMPTS_DIR
from tests.support.kb import started_services

PLAIN = "# 磁盘满处理\n\n先清理 /var/log 下的旧日志，再扩容磁盘。\n\n## 清理步骤\n执行 du -sh。\n\n## 扩容\n在线扩容 LVM。\n"


class BrokenModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "broken"

    def bind_tools(self, tools, **kw):  # noqa: ANN001, ANN201
        return self

    def _generate(self, *a, **kw):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("model endpoint down")


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, embeddings):
    async with started_services(tmp_path_factory.mktemp("domains"), embeddings) as svc:
        yield svc


async def test_domains_generated_at_start_and_map_is_yaml(stack) -> None:
    rows = {r.name: r for r in await stack.domains.rows()}
    assert set(rows) == {"api", "domain", "infrastructure", "troubleshooting"}
    assert rows["infrastructure"].document_count == 3 and rows["infrastructure"].when_to_retrieve
    kmap = await stack.domains.knowledge_map()
    assert "domains:" in kmap and "MySQL 连接池配置" in kmap and "when_to_retrieve" in kmap


async def test_missing_fields_are_generated_and_only_the_touched_domain_recomputed(stack) -> None:
    before = {r.name: r.updated_at for r in await stack.domains.rows()}
    result = await stack.kb.ingestion.upload("disk-full.md", PLAIN.encode(), "ops")
    assert result.status == "INDEXED"
    doc = stack.kb.catalog.by_path("ops/disk-full.md")
    assert doc.covers == ("清理步骤", "扩容") and "磁盘满处理" in doc.when_to_retrieve
    after = {r.name: r for r in await stack.domains.rows()}
    assert "ops" in after and after["ops"].document_count == 1
    assert all(after[n].updated_at == t for n, t in before.items())  # untouched domains kept
    await stack.kb.ingestion.delete(doc.doc_id)
    assert "ops" not in {r.name for r in await stack.domains.rows()}


async def test_model_failure_falls_back(stack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack.domains, "model_for", lambda role: BrokenModel())
    doc = await stack.domains.enrich(parse_document(PLAIN.encode(), "ops/disk.md"))
    assert doc.covers == [] and doc.when_to_retrieve == doc.summary
    await stack.domains.refresh({"api"})
    api = next(r for r in await stack.domains.rows() if r.name == "api")
    assert api.source == "FALLBACK" and api.when_to_retrieve


def test_missing_prompt_file_stops_startup_naming_it(tmp_path: Path) -> None:
    for name in NAMES:
        shutil.copy(SHIPPED_PROMPTS_DIR / f"{name}.md", tmp_path / f"{name}.md")
    assert load_prompts(tmp_path)["chat_executor"]
    (tmp_path / "aiops_planner.md").unlink()
    with pytest.raises(PromptError, match="aiops_planner.md"):
        load_prompts(tmp_path)
    (tmp_path / "aiops_planner.md").write_text("no map slot here", encoding="utf-8")
    with pytest.raises(PromptError, match="knowledge_map"):
        load_prompts(tmp_path)


def test_prompts_dir_setting_chooses_the_folder_start_up_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services import Services
    from settings import load_settings

    folder = tmp_path / "site-prompts"
    folder.mkdir()
    for name in NAMES:
        shutil.copy(SHIPPED_PROMPTS_DIR / f"{name}.md", folder / f"{name}.md")
    (folder / "chat_answer.md").unlink()
    monkeypatch.setenv("PROMPTS_DIR", str(folder))
    with pytest.raises(PromptError, match="site-prompts/chat_answer.md"):
        Services.build(load_settings())
