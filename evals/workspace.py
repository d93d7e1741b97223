"""The knowledge base an eval runs on: its own stack under DATA_DIR/evals, never the user's stores.

Each knowledge base a suite names (``shipped``: the runbooks of ``knowledge_base/``; ``local``: this
installation's ``KNOWLEDGE_BASE_DIR``) gets a workspace folder with its own SQLite database, Milvus
Lite file and a mirror of the runbooks. The mirror is brought in line with its source on every run
(changed files copied, removed ones deleted) and re-imported incrementally, so a second run embeds
nothing new and a runbook edit is judged at once. Documents are enriched by the offline model
whatever model is judged, so every model is judged on the same knowledge base.

The runs themselves are recorded in the configured database (sessions with origin ``eval``), where
the console shows them; only the knowledge base lives here.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from graph.graphs import Graphs, compile_graphs
from llm.factory import ModelFactory
from services import Services
from settings import SHIPPED_KNOWLEDGE_DIR, Settings

log = logging.getLogger(__name__)
WORKSPACE_SUBDIR = Path("evals")


def default_workdir(settings: Settings) -> Path:
    return Path(settings.data_dir) / WORKSPACE_SUBDIR


def source_dir(settings: Settings, knowledge_base: str) -> Path:
    return (
        SHIPPED_KNOWLEDGE_DIR if knowledge_base == "shipped" else Path(settings.knowledge_base_dir)
    )


def runbook_paths(settings: Settings, knowledge_base: str) -> set[str]:
    """The Markdown files a knowledge base's source folder holds, as the answers cite them."""
    folder = source_dir(settings, knowledge_base)
    return {rel for rel in _files(folder) if rel.endswith(".md")} if folder.is_dir() else set()


def _files(folder: Path) -> dict[str, Path]:
    return {
        p.relative_to(folder).as_posix(): p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    }


def mirror(source: Path, target: Path) -> int:
    """Make ``target`` hold exactly ``source``'s (non-hidden) files; returns how many changed."""
    if not source.is_dir():
        raise FileNotFoundError(f"knowledge-base folder {source} does not exist")
    want, have = _files(source), _files(target) if target.is_dir() else {}
    changed = 0
    for rel, src in want.items():
        dst = target / rel
        if rel in have and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        changed += 1
    for rel in set(have) - set(want):
        (target / rel).unlink()
        changed += 1
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):  # a category whose runbooks are all gone
            folder.rmdir()
    return changed


def knowledge_hash(folder: Path) -> str:
    """A fingerprint of the runbooks judged on: their paths and contents."""
    h = hashlib.sha256()
    for rel, path in sorted(_files(folder).items()):
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def workspace_settings(settings: Settings, folder: Path) -> Settings:
    """The user's settings with every store moved into ``folder`` and no model or live source:
    the knowledge base is built offline, and the runs read their world, not Prometheus/Loki."""
    return settings.model_copy(
        update={
            "data_dir": folder,
            "database_url": f"sqlite+aiosqlite:///{folder / 'eval.db'}",
            "milvus_uri": str(folder / "milvus.db"),
            "knowledge_base_dir": folder / "knowledge_base",
            "llm_base_url": "",
            "llm_model": "",
            "prometheus_url": "",
            "loki_url": "",
        }
    )


@dataclass
class EvalStack:
    """A started knowledge base and graphs for the scenarios of one knowledge base."""

    name: str
    services: Services
    titles: dict[str, str]  # path → title of every indexed runbook
    knowledge_hash: str

    def graphs(self, run_settings: Settings) -> Graphs:
        """The graphs with the models of ``run_settings`` (the endpoint being judged)."""
        documents = getattr(self.services.deps.models, "documents", None)
        deps = replace(self.services.deps, models=ModelFactory(run_settings, documents))
        return compile_graphs(deps, self.services.checkpointer)


@asynccontextmanager
async def eval_stack(
    settings: Settings,
    knowledge_base: str,
    *,
    workdir: Path | None = None,
    embeddings: Any = None,
    fresh: bool = False,
) -> AsyncIterator[EvalStack]:
    """Start the eval stack of ``knowledge_base`` (``shipped`` or ``local``), brought up to date."""
    folder = (workdir or default_workdir(settings)) / f"kb-{knowledge_base}"
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    changed = mirror(source_dir(settings, knowledge_base), folder / "knowledge_base")
    services = await Services.start(workspace_settings(settings, folder), embeddings=embeddings)
    try:
        if changed:
            report = await services.kb.ingestion.init()
            failed = [r for r in report.results if r.status == "FAILED"]
            for r in failed:
                log.warning(
                    "eval knowledge base %s: %s failed: %s", knowledge_base, r.file_path, r.error
                )
        titles = {d.file_path: d.title for d in services.kb.catalog.all()}
        yield EvalStack(knowledge_base, services, titles, knowledge_hash(folder / "knowledge_base"))
    finally:
        await services.close()
