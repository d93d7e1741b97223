"""notebooks/quickstart.ipynb runs top to bottom, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support.kb import copy_fixture_kb
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # a Jupyter kernel runs the whole notebook


def test_quickstart_notebook_executes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPERBIZ_NOTEBOOK_DIR", str(tmp_path))
    # The notebook keeps a knowledge base it finds in its folder: give it the fixture runbooks.
    copy_fixture_kb(tmp_path / "knowledge_base")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    client.execute()
    outputs = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert "PRECISE api/payment-errors.md L0" in outputs
    assert "SUCCESS" in outputs and "'identical': True" in outputs
    assert not any(
        o.get("output_type") == "error"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
