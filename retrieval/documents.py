"""Parse a runbook: YAML frontmatter (python-frontmatter) plus Markdown body. Pure.

A document without frontmatter is still imported with derived fields (title from the first ``#``
heading or the file name, category from its folder, summary from the first paragraph, no keywords)
and a warning naming them. An empty, non-UTF-8 or malformed file raises :class:`DocumentError`
with a reason a person can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import frontmatter
import yaml

FIELDS = ("title", "keywords", "summary", "category", "covers", "when_to_retrieve")
CATEGORY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
DEFAULT_CATEGORY = "general"
SUMMARY_CHARS = 200


class DocumentError(ValueError):
    """The file cannot be imported; the message says why and what to do."""


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
    return text


def category_from_path(file_path: str) -> str:
    parts = PurePosixPath(file_path).parts
    return parts[0].lower() if len(parts) > 1 else DEFAULT_CATEGORY


def _str_list(value: Any, name: str, file_path: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,，]", value) if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v).strip() for v in value if str(v).strip()]
    raise DocumentError(f"{file_path}: frontmatter '{name}' must be a list of strings")


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


def _check_mapping(text: str, file_path: str) -> None:
    # python-frontmatter silently drops a frontmatter block that is not a mapping (e.g. a list).
    handler = frontmatter.YAMLHandler()
    if handler.detect(text):
        fm, _ = handler.split(text)
        loaded = yaml.safe_load(fm) if fm.strip() else {}
        if loaded is not None and not isinstance(loaded, dict):
            raise DocumentError(f"{file_path}: frontmatter must be a YAML mapping of fields")


def parse_document(raw: bytes, file_path: str) -> ParsedDocument:
    """Parse one file; ``file_path`` is relative to the knowledge base (its folder = category)."""
    text = decode(raw, file_path)
    try:
        _check_mapping(text, file_path)
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        where = ""
        if mark := getattr(exc, "problem_mark", None):
            where = f" at line {mark.line + 2}, column {mark.column + 1}"
        raise DocumentError(
            f"{file_path}: frontmatter is not valid YAML{where}; fix the block between the '---' lines"
        ) from None
    meta = post.metadata
    if not isinstance(meta, dict):
        raise DocumentError(f"{file_path}: frontmatter must be a YAML mapping of fields")
    body = post.content
    if not body.strip():
        raise DocumentError(f"{file_path}: the document has frontmatter but no body text")

    derived: list[str] = []
    warnings: list[str] = []
    folder_category = category_from_path(file_path)

    title = str(meta.get("title") or "").strip()
    if not title:
        title = _first_heading(body) or PurePosixPath(file_path).stem.replace("-", " ")
        derived.append("title")
    summary = str(meta.get("summary") or "").strip()
    if not summary:
        summary = first_paragraph(body)
        derived.append("summary")
    category = str(meta.get("category") or "").strip().lower()
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
            f"{file_path}: category '{category}' must be lowercase letters, digits, '-' or '_'"
        )
    keywords = _str_list(meta.get("keywords"), "keywords", file_path)
    if "keywords" not in meta:
        derived.append("keywords")
    covers = _str_list(meta.get("covers"), "covers", file_path)
    when = str(meta.get("when_to_retrieve") or "").strip()

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
    )
