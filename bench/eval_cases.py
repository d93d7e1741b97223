"""The development eval's cases: query files, topics, and the split by document. Pure (YAML in).

Query files in ``bench/eval/`` (``queries_<lang>.yaml``, ``queries_<lang>_*.yaml``,
``queries_*_<lang>.yaml``; a file whose name holds no language sorts its cases by ``lang`` or id
prefix). Each case: ``id``, ``query``, ``expected`` (paths; any one right; ``[]`` = no document
answers), ``kind``, and optionally

* ``topic`` — the runbook topic it is about (``topics.yaml`` may mark a topic ``present: false``:
  its runbook is missing from the corpus, so the case is a missing-runbook probe);
* ``present: false`` — the same, on the case itself;
* ``alert: {alertname, labels, annotations}`` — the firing alert; ``query`` is then its rendered
  text as a user pastes it (asked as text, and again as structured input);
* ``kind: multi`` with ``aspects: [[paths], [paths]]`` — one list of right documents per symptom.

The split is **by document**: a case belongs to the part of its document (``doc_key``), so no
runbook is both fitted on and reported on; ``fit`` and ``held`` part the documents about 2 : 1,
and ``fold_of`` deals them into folds for out-of-fold estimates.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

LANGS = ("en", "zh")
FOLDS = 5
HELD_FOLDS = frozenset({0, 3})  # of FOLDS: the held-back part (~40 % of the documents)
WRONG_TECH_KINDS = frozenset({"wrong_tech", "wrong_technology", "other_technology"})


@dataclass
class Case:
    id: str
    lang: str
    query: str
    expected: frozenset[str]
    kind: str = ""
    topic: str = ""
    present: bool = True
    alert: dict[str, Any] | None = None
    aspects: list[frozenset[str]] = field(default_factory=list)
    source: str = ""  # the file it came from

    @property
    def answerable(self) -> bool:
        return bool(self.expected)

    @property
    def missing_runbook(self) -> bool:
        return not self.present

    @property
    def wrong_tech(self) -> bool:
        return self.kind in WRONG_TECH_KINDS

    @property
    def doc_key(self) -> str:
        """What the split goes by: the case's document (its first right path), else its topic,
        else its id (a negative that names no document)."""
        if self.expected:
            return sorted(self.expected)[0]
        return f"topic:{self.topic}" if self.topic else f"id:{self.id}"


def fold_of(key: str, folds: int = FOLDS) -> int:
    return zlib.crc32(key.encode()) % folds


def split_of(key: str) -> str:
    return "held" if fold_of(key) in HELD_FOLDS else "fit"


def _lang_of_file(path: Path) -> str | None:
    parts = path.stem.split("_")
    found = [p for p in parts if p in LANGS]
    return found[0] if found else None


def _lang_of_case(raw: dict[str, Any], file_lang: str | None) -> str | None:
    if raw.get("lang") in LANGS:
        return str(raw["lang"])
    if file_lang:
        return file_lang
    prefix = str(raw.get("id", "")).split("-", 1)[0]
    return prefix if prefix in LANGS else None


def load_topics(root: Path) -> dict[str, dict[str, Any]]:
    """``topics.yaml``: a list of topics (``id`` or ``topic``) or a mapping topic → fields."""
    path = root / "topics.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if isinstance(data, dict) and "topics" in data:
        data = data["topics"]
    if isinstance(data, dict):
        return {str(k): (v if isinstance(v, dict) else {}) for k, v in data.items()}
    out = {}
    for t in data or []:
        if isinstance(t, dict) and (t.get("id") or t.get("topic")):
            out[str(t.get("id") or t.get("topic"))] = t
    return out


def _case(raw: dict[str, Any], lang: str, topics: dict[str, dict[str, Any]], source: str) -> Case:
    topic = str(raw.get("topic") or "")
    present = raw.get("present", topics.get(topic, {}).get("present", True))
    aspects = [frozenset(a) for a in raw.get("aspects") or []]
    expected = frozenset(raw.get("expected") or []) | frozenset().union(*aspects)
    return Case(
        id=str(raw["id"]),
        lang=lang,
        query=str(raw.get("query") or ""),
        expected=expected,
        kind=str(raw.get("kind") or ""),
        topic=topic,
        present=bool(present),
        alert=raw.get("alert"),
        aspects=aspects,
        source=source,
    )


def query_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("queries*.yaml") if p.is_file())


def load_cases(lang: str, root: Path) -> list[Case]:
    topics = load_topics(root)
    out: list[Case] = []
    seen: set[str] = set()
    for path in query_files(root):
        file_lang = _lang_of_file(path)
        if file_lang not in (None, lang):
            continue
        for raw in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            if not isinstance(raw, dict) or _lang_of_case(raw, file_lang) != lang:
                continue
            case = _case(raw, lang, topics, path.name)
            if case.id in seen:
                raise SystemExit(f"{path.name}: case id {case.id} appears twice")
            seen.add(case.id)
            out.append(case)
    return out
