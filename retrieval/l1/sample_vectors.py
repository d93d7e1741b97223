"""Vectors of the shipped sample runbooks, computed ahead: a first start embeds nothing.

The shipped ``knowledge_base/`` carries, for the default embedding model, the vector of every
chunk the importer makes of it with the default settings (``knowledge_base/.vectors/<model>.npz``:
the chunks' content keys and fp16 vectors; the seed copy into ``DATA_DIR`` skips hidden folders).
The store offers them the way it offers vectors read back from its own collection
(``embedding_cache.py``): a chunk whose exact text is a shipped one takes its vector, any other
text (an edited sample, an operator's own runbook, other chunk settings) is embedded as usual.
So the file can make an import faster, never different; after the samples or the chunking change,
``python -m retrieval.l1.sample_vectors`` rewrites it (``tests/test_sample_vectors.py`` says when).

Why: multilingual-e5-small embeds about half as fast as the English MiniLM on 2 CPU cores, and the
first start of a fresh install is the one import every new user waits for.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from retrieval.l1.embedding_cache import content_key

log = logging.getLogger(__name__)

FOLDER = ".vectors"


def path_for(model_id: str, samples: Path | None = None) -> Path:
    from settings import SHIPPED_KNOWLEDGE_DIR

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return (samples or SHIPPED_KNOWLEDGE_DIR) / FOLDER / f"{slug}.npz"


def load(model_id: str, samples: Path | None = None) -> dict[str, list[float]]:
    """Content key → unit vector for ``model_id``; empty when none ship (another model) or the
    file is unreadable (then every chunk is embedded, as without it)."""
    path = path_for(model_id, samples)
    if not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["model_id"]) != model_id:
                return {}
            keys = [bytes(k).hex() for k in data["keys"]]  # uint8 rows: the 32 digest bytes
            vectors = data["vectors"].astype(np.float32)
    except (OSError, KeyError, ValueError):
        log.warning("shipped sample vectors %s unreadable; embedding every chunk", path)
        return {}
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # fp16 rounding moved the norm
    return dict(zip(keys, vectors.tolist(), strict=True))


def write(model_id: str, rows: Iterable[tuple[str, list[float]]], path: Path) -> int:
    """Save ``(indexed text, vector)`` rows under their content keys; returns how many."""
    by_key = {content_key(model_id, text): vector for text, vector in rows}
    keys = sorted(by_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        model_id=np.array(model_id),
        # uint8, not a bytes dtype: numpy's "S" strips trailing NUL bytes of a digest
        keys=np.array([list(bytes.fromhex(k)) for k in keys], dtype=np.uint8).reshape(-1, 32),
        vectors=np.array([by_key[k] for k in keys], dtype=np.float16),
    )
    return len(keys)


async def compute(samples: Path) -> tuple[str, list[tuple[str, list[float]]]]:
    """Import ``samples`` as a first start does (default settings, a private temp data folder)
    and read every stored chunk back: (model id, [(indexed text, vector)])."""
    from persistence.db import Database
    from persistence.migrate import upgrade
    from retrieval.knowledge import KnowledgeBase
    from settings import load_settings

    work = Path(tempfile.mkdtemp(prefix="sample-vectors-"))
    try:
        kb_dir = work / "knowledge_base"
        shutil.copytree(samples, kb_dir, ignore=shutil.ignore_patterns(".*"))
        settings = load_settings(
            database_url=f"sqlite+aiosqlite:///{work / 'kb.db'}",
            milvus_uri=str(work / "milvus.db"),
            knowledge_base_dir=kb_dir,
            data_dir=work,
        )
        upgrade(settings.database_url)
        kb = KnowledgeBase.build(settings, Database(settings.database_url))
        try:
            report = await kb.start()
            if report is None or report.count("FAILED"):
                raise SystemExit(f"the sample import failed: {report and report.as_dict()}")
            paths = [r.file_path for r in report.results]
            rows = kb.store.stored_chunks(file_paths=paths)
            return kb.store.model_id, [(r.text, list(r.vector)) for r in rows]
        finally:
            await kb.close()
            await kb.db.dispose()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m retrieval.l1.sample_vectors``: recompute the shipped samples' vectors."""
    from settings import SHIPPED_KNOWLEDGE_DIR

    logging.basicConfig(level=logging.WARNING)
    samples = Path(argv[0]) if argv else SHIPPED_KNOWLEDGE_DIR
    model_id, rows = asyncio.run(compute(samples))
    path = path_for(model_id, samples)
    n = write(model_id, rows, path)
    print(f"wrote {n} vectors of {model_id} to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
