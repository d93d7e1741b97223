"""Where things are: the checkout and the tests' own knowledge base."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The tests' copy of the sample runbooks: the shipped knowledge_base/ may grow, test outcomes must not.
FIXTURE_KB = ROOT / "tests" / "fixtures" / "knowledge_base"


def fixture_docs() -> list[str]:
    """The fixture runbooks' paths relative to the knowledge-base folder, sorted."""
    return sorted(p.relative_to(FIXTURE_KB).as_posix() for p in FIXTURE_KB.rglob("*.md"))
