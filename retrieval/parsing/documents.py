"""Parse a runbook: YAML frontmatter (read within bounds by ``frontmatter.py``) plus Markdown body. Pure.

A document without frontmatter is still imported with derived fields (title from the first ``#``
heading or the file name, category from its folder, summary from the first paragraph, no keywords)
and a warning naming them. An empty, non-UTF-8 or malformed file raises :class:`DocumentError`
with a reason a person can act on, naming the line when there is one.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from retrieval.parsing import frontmatter
from retrieval.parsing.doc_fields import FRONTMATTER_KEYS, MAX_LENGTHS, MIN_CHUNK_SIZE, DocFields

FIELDS = ("title", "keywords", "summary", "category", "covers", "when_to_retrieve")
CATEGORY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
DEFAULT_CATEGORY = "general"
SUMMARY_CHARS = 200
# Parsing is bounded by the frontmatter limits and takes milliseconds; the budget is a backstop so
# one file can never hold an import (and the document-write lock) for long.
PARSE_BUDGET_S = 10.0
# Longer values are refused rather than cut: the title prefixes every indexed chunk, and a value
# this long is a mistake (or an attack), not a runbook.
MAX_CHARS = {
    "title": 300,
    "category": 64,
    **{key: MAX_LENGTHS[name] for key, name in FRONTMATTER_KEYS.items() if name in MAX_LENGTHS},
}
MAX_CHUNK_PARAM = 100_000  # a sanity bound; the model's window is checked at import
MAX_TEXT_CHARS = 4000
MAX_LIST_ITEMS, MAX_ITEM_CHARS = 500, 300


class DocumentError(ValueError):
    """The file cannot be imported; the message says why and what to do (``line``: 1-based, or 0)."""

    def __init__(self, message: str, *, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class ParsedDocument:
    file_path: str  # relative, '/'-separated
    title: str
    keywords: list[str]
    summary: str
    category: str
    covers: list[str]
    when_to_retrieve: str
    body: str
    derived: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fields: DocFields = field(default_factory=DocFields)  # fault source, API, version, chunking

    @property
    def file_name(self) -> str:
        return PurePosixPath(self.file_path).name

    def metadata(self) -> dict[str, Any]:
        return {
            "keywords": self.keywords,
            "summary": self.summary,
            "covers": self.covers,
            "when_to_retrieve": self.when_to_retrieve,
            "derived": self.derived,
            "warnings": self.warnings,
            "sections": section_titles(self.body),
        }


def decode(raw: bytes, file_path: str) -> str:
    if not raw.strip():
        raise DocumentError(f"{file_path}: the file is empty; add Markdown content or delete it")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{file_path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "re-save the file as UTF-8"
        ) from None
    if not text.strip():
        raise DocumentError(f"{file_path}: the file is empty; add Markdown content or delete it")
    if (nul := text.find("\x00")) >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DocumentError(
            f"{file_path}: line {line} contains a NUL byte, so this is not a text file; "
            "upload Markdown or plain text",
            line=line,
        )
    return text


def category_from_path(file_path: str) -> str:
    parts = PurePosixPath(file_path).parts
    return parts[0].lower() if len(parts) > 1 else DEFAULT_CATEGORY


@dataclass
class _Fields:
    """The frontmatter values, checked field by field; a wrong type names the field and its line."""

    meta: dict[str, Any]
    lines: dict[str, int]
    file_path: str

    def _wrong(self, name: str, expected: str) -> DocumentError:
        line = self.lines.get(name, 0)
        where = f" (line {line})" if line else ""
        return DocumentError(
            f"{self.file_path}: frontmatter '{name}'{where} must be {expected}", line=line
        )

    def text(self, name: str) -> str:
        value = self.meta.get(name)
        if value is None:
            return ""
        if isinstance(value, list | dict):
            raise self._wrong(name, "a single line of text, not a list or a mapping")
        text = str(value).strip()
        limit = MAX_CHARS.get(name, MAX_TEXT_CHARS)
        if len(text) > limit:
            raise self._wrong(name, f"at most {limit} characters (it has {len(text)})")
        return text

    def count(self, name: str, low: int) -> int | None:
        value = self.meta.get(name)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not low <= value <= MAX_CHUNK_PARAM
        ):
            raise self._wrong(name, f"a whole number of tokens from {low}, e.g. {name}: 200")
        return value

    def doc_fields(self) -> DocFields:
        """fault_source, api_name, version and chunking; either spelling of each key."""
        values: dict[str, object] = {}
        for key, name in FRONTMATTER_KEYS.items():
            if key not in self.meta:
                continue
            if name.startswith("chunk_"):
                values[name] = self.count(key, MIN_CHUNK_SIZE if name == "chunk_size" else 0)
            else:
                values[name] = self.text(key) or None
        return DocFields(**values)  # type: ignore[arg-type]

    def str_list(self, name: str) -> list[str]:
        value = self.meta.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            items = [v.strip() for v in re.split(r"[,，]", value) if v.strip()]
        elif isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            items = [str(v).strip() for v in value if str(v).strip()]
        else:
            raise self._wrong(name, "a list of strings, e.g. [redis, maxmemory]")
        if len(items) > MAX_LIST_ITEMS or any(len(v) > MAX_ITEM_CHARS for v in items):
            raise self._wrong(
                name, f"at most {MAX_LIST_ITEMS} entries of at most {MAX_ITEM_CHARS} characters"
            )
        return items


def _first_heading(body: str) -> str | None:
    in_code = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        elif not in_code and (m := re.match(r"^#\s+(.+?)\s*#*\s*$", line)):
            return m.group(1).strip()
    return None


def first_paragraph(body: str, limit: int = SUMMARY_CHARS) -> str:
    in_code, para = False, []
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code or (stripped.startswith(("#", "|", "---", ">")) and not para):
            continue
        if not stripped:
            if para:
                break
            continue
        para.append(stripped)
    text = " ".join(para)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def section_titles(body: str) -> list[str]:
    """The ``##``/``###`` headings, outside code blocks, in order."""
    out, in_code = [], False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        elif not in_code and (m := re.match(r"^(#{2,3})\s+(.+?)\s*#*\s*$", line)):
            out.append(m.group(2).strip())
    return out


def parse_document(raw: bytes, file_path: str) -> ParsedDocument:
    """Parse one file; ``file_path`` is relative to the knowledge base (its folder = category)."""
    text = decode(raw, file_path)
    try:
        parts = frontmatter.split(text)
        meta, key_lines = (
            frontmatter.load(parts.block, parts.first_line) if parts.block is not None else ({}, {})
        )
    except frontmatter.FrontmatterError as exc:
        raise DocumentError(f"{file_path}: {exc}", line=exc.line) from None
    body = parts.body
    if not body.strip():
        raise DocumentError(f"{file_path}: the document has frontmatter but no body text")

    derived: list[str] = []
    warnings: list[str] = []
    folder_category = category_from_path(file_path)

    fields = _Fields(meta, key_lines, file_path)
    title = fields.text("title")
    if not title:
        title = _first_heading(body) or PurePosixPath(file_path).stem.replace("-", " ")
        title = title[: MAX_CHARS["title"]]
        derived.append("title")
    summary = fields.text("summary")
    if not summary:
        summary = first_paragraph(body)
        derived.append("summary")
    category = fields.text("category").lower()
    if not category:
        category = folder_category
        derived.append("category")
    elif category != folder_category and folder_category != DEFAULT_CATEGORY:
        warnings.append(
            f"frontmatter category '{category}' differs from folder '{folder_category}'; "
            "the folder wins"
        )
        category = folder_category
    if not CATEGORY_RE.match(category):
        raise DocumentError(
            f"{file_path}: category '{category[:80]}' must be lowercase letters, digits, '-' or '_'",
            line=key_lines.get("category", 0),
        )
    keywords = fields.str_list("keywords")
    if "keywords" not in meta:
        derived.append("keywords")
    covers = fields.str_list("covers")
    when = fields.text("when_to_retrieve")
    doc_fields = fields.doc_fields()

    if not meta:
        warnings.insert(0, "no frontmatter; derived " + ", ".join(derived))
    elif derived:
        warnings.insert(0, "frontmatter incomplete; derived " + ", ".join(derived))
    return ParsedDocument(
        file_path=file_path,
        title=title,
        keywords=keywords,
        summary=summary,
        category=category,
        covers=covers,
        when_to_retrieve=when,
        body=body,
        derived=derived,
        warnings=warnings,
        fields=doc_fields,
    )


async def parse_bounded(raw: bytes, file_path: str) -> ParsedDocument:
    """:func:`parse_document` off the event loop, within :data:`PARSE_BUDGET_S`."""
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(parse_document, raw, file_path), PARSE_BUDGET_S
        )
    except TimeoutError:
        raise DocumentError(
            f"{file_path}: reading the document took longer than {PARSE_BUDGET_S:.0f} s; "
            "simplify its frontmatter"
        ) from None
