"""``runbook_reader`` keeps parsed bodies by file state: a changed file is read anew."""

from __future__ import annotations

import os
from pathlib import Path

from retrieval.lookup import runbook_reader as module
from retrieval.lookup.runbook_reader import runbook_reader

DOC = "---\ntitle: Pool\n---\n# Pool\n\n{}\n"


def test_bodies_are_kept_until_the_file_changes(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    (tmp_path / "ops").mkdir()
    path = tmp_path / "ops" / "pool.md"
    path.write_text(DOC.format("first body"), encoding="utf-8")
    parsed = []
    real = module.parse_document
    monkeypatch.setattr(module, "parse_document", lambda *a: parsed.append(a[1]) or real(*a))
    read = runbook_reader(tmp_path)
    assert "first body" in read("ops/pool.md")
    assert "first body" in read("ops/pool.md")
    assert parsed == ["ops/pool.md"]  # parsed once
    path.write_text(DOC.format("second"), encoding="utf-8")  # another size
    assert "second" in read("ops/pool.md")
    path.write_text(DOC.format("third!"), encoding="utf-8")  # the same size, a later mtime
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "third!" in read("ops/pool.md")
    assert len(parsed) == 3
    path.unlink()
    assert read("ops/pool.md") is None
    assert read("../outside.md") is None


def test_large_bodies_are_read_but_not_kept(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    (tmp_path / "big.md").write_text(DOC.format("x" * (module.CACHED_BYTES + 10)), encoding="utf-8")
    parsed = []
    real = module.parse_document
    monkeypatch.setattr(module, "parse_document", lambda *a: parsed.append(a[1]) or real(*a))
    read = runbook_reader(tmp_path)
    assert read("big.md") == read("big.md")
    assert len(parsed) == 2
