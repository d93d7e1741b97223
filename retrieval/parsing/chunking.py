"""Heading-aware chunking with breadcrumbs. Pure: the token counter is passed in.

Sections are split at Markdown headings (outside code fences); each section is packed into chunks of
at most ``size`` tokens from whole blocks (paragraphs, lists, tables, complete code blocks), so a code
block is only cut when it alone exceeds ``size`` — and then every piece is re-fenced. Prose blocks
that are too long go through langchain's ``RecursiveCharacterTextSplitter``. The breadcrumb
(``Doc title > H2 > H3``) is prepended to the text that is embedded and BM25-indexed.

(langchain's ``MarkdownHeaderTextSplitter`` was not used for the heading split: it joins a section's
lines and drops the blank lines between paragraphs, which this packer needs.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from langchain_text_splitters import RecursiveCharacterTextSplitter

from retrieval.parsing.textnorm import split_identifier

TokenCounter = Callable[[str], int]
# Milvus' VARCHAR ``max_length`` counts UTF-8 bytes (a Chinese character is 3). A chunk's indexed
# text (breadcrumb + text) goes into the 65,535-byte ``text`` field, its breadcrumb also into the
# 1,024-byte ``breadcrumb`` field; a chunk within its tokens can still be far over in bytes (a
# 3,000-level list is mostly indentation, which the tokenizer drops), so both are bounded here.
TEXT_FIELD_BYTES = 65535
BREADCRUMB_BYTES = 1024
CHUNK_TEXT_BYTES = TEXT_FIELD_BYTES - BREADCRUMB_BYTES - 2048  # margin: "\n\n" joins of blocks
HEADING_RE = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
BREADCRUMB_SEP = " > "


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]  # H1..H4 path, empty strings removed
    text: str


@dataclass(frozen=True)
class Chunk:
    index: int
    breadcrumb: str
    text: str  # the section text of this chunk, as written
    token_count: int

    @property
    def indexed_text(self) -> str:
        """What is embedded and BM25-indexed: the breadcrumb gives every chunk its context."""
        return f"{self.breadcrumb}\n\n{self.text}"


def split_sections(body: str) -> list[Section]:
    path: list[str] = ["", "", "", ""]
    sections: list[Section] = []
    buf: list[str] = []
    in_code = False

    def flush() -> None:
        text = "\n".join(buf).strip("\n")
        if text.strip():
            sections.append(Section(tuple(h for h in path if h), text))
        buf.clear()

    for line in body.splitlines():
        if FENCE_RE.match(line):
            in_code = not in_code
        elif not in_code and (m := HEADING_RE.match(line)):
            flush()
            level = len(m.group(1))
            path[level - 1] = m.group(2).strip()
            for deeper in range(level, 4):
                path[deeper] = ""
            continue
        buf.append(line)
    flush()
    return sections


def split_blocks(text: str) -> list[str]:
    """Paragraph-level blocks; a fenced code block is one block even with blank lines inside."""
    blocks: list[str] = []
    buf: list[str] = []
    in_code = False
    for line in text.splitlines():
        if FENCE_RE.match(line):
            if not in_code and buf:
                blocks.append("\n".join(buf))
                buf = []
            buf.append(line)
            in_code = not in_code
            if not in_code:
                blocks.append("\n".join(buf))
                buf = []
            continue
        if not in_code and not line.strip():
            if buf:
                blocks.append("\n".join(buf))
                buf = []
            continue
        buf.append(line)
    if buf:
        blocks.append("\n".join(buf))
    return [b for b in blocks if b.strip()]


def _split_code(block: str, size: int, count: TokenCounter) -> list[str]:
    lines = block.splitlines()
    opener = lines[0].strip()
    fence = opener[:3]
    inner = lines[1:-1] if len(lines) > 1 and FENCE_RE.match(lines[-1]) else lines[1:]
    pieces, cur = [], []
    budget = max(size - count(opener) - count(fence) - 2, 1)
    for line in inner:
        if cur and count("\n".join([*cur, line])) > budget:
            pieces.append(cur)
            cur = []
        cur.append(line)
    if cur:
        pieces.append(cur)
    return ["\n".join([opener, *p, fence]) for p in pieces]


def _split_prose(block: str, size: int, count: TokenCounter) -> list[str]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size,
        chunk_overlap=0,
        length_function=count,
        separators=["\n", "。", "；", ". ", "，", ", ", " ", ""],
        keep_separator="end",
    )
    return splitter.split_text(block)


def _fit(blocks: list[str], size: int, count: TokenCounter) -> list[str]:
    out = []
    for b in blocks:
        if count(b) <= size:
            out.append(b)
        elif FENCE_RE.match(b):
            out.extend(_split_code(b, size, count))
        else:
            out.extend(_split_prose(b, size, count))
    return out


def _tail(blocks: list[str], overlap: int, count: TokenCounter) -> list[str]:
    """Trailing whole blocks (no code) that fit in ``overlap`` tokens, to open the next chunk."""
    tail: list[str] = []
    used = 0
    for b in reversed(blocks):
        n = count(b)
        if FENCE_RE.match(b) or used + n > overlap:
            break
        tail.insert(0, b)
        used += n
    return tail


def pack(blocks: list[str], size: int, overlap: int, count: TokenCounter) -> list[str]:
    chunks: list[str] = []
    cur: list[str] = []
    cur_tokens = 0
    fresh = 0  # blocks in `cur` that are not overlap carried from the previous chunk
    for b in _fit(blocks, size, count):
        n = count(b)
        if cur and fresh and cur_tokens + n > size:
            chunks.append("\n\n".join(cur))
            cur = _tail(cur, overlap, count)
            cur_tokens = sum(count(x) for x in cur)
            fresh = 0
            if cur_tokens + n > size:
                cur, cur_tokens = [], 0
        cur.append(b)
        cur_tokens += n
        fresh += 1
    if cur and fresh:
        chunks.append("\n\n".join(cur))
    return chunks


def fit_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode(errors="ignore")


def byte_bounded(count: TokenCounter, size: int, max_bytes: int) -> TokenCounter:
    """A counter that also charges bytes: a text it counts within ``size`` holds at most ``size``
    tokens and at most ``max_bytes`` bytes, so the packer and the splitters keep both bounds."""

    def bounded(text: str) -> int:
        return max(count(text), -(-len(text.encode()) * size // max_bytes))

    return bounded


def breadcrumb(title: str, headings: tuple[str, ...]) -> str:
    # The H1 usually repeats the title; keep it only when it says something else.
    parts = [title] + [h for h in headings if h.strip().lower() != title.strip().lower()]
    return fit_bytes(BREADCRUMB_SEP.join(parts), BREADCRUMB_BYTES)


def _within(texts: list[str], size: int, count: TokenCounter) -> list[str]:
    """Texts still over ``size`` (a single huge line inside a code block is kept whole by the code
    splitter) are cut by the prose splitter, down to single characters if it must."""
    out: list[str] = []
    for t in texts:
        # Only code (whose splitter keeps a line whole) or a text over the bytes can be over:
        # everything else was packed within ``size``; no second tokenization of every chunk.
        suspect = "```" in t or "~~~" in t or len(t.encode()) > CHUNK_TEXT_BYTES
        out.extend(_split_prose(t, size, count) if suspect and count(t) > size else [t])
    return out


MIN_CHUNK_TOKENS = 32


def chunk_document(
    title: str,
    body: str,
    *,
    size: int = 500,
    overlap: int = 50,
    count: TokenCounter,
    window: int | None = None,
) -> list[Chunk]:
    """Chunks of at most ``size`` tokens; with ``window`` (the embedding model's, in its own tokens)
    each chunk's indexed text — breadcrumb included — also fits the window, so nothing is cut off
    when it is embedded."""
    chunks: list[Chunk] = []
    for section in split_sections(body):
        crumb = breadcrumb(title, section.headings)
        limit = size
        if window is not None:
            limit = max(min(size, window - count(crumb) - 1), MIN_CHUNK_TOKENS)
        # The window can cut the chunk below the configured size; the overlap shrinks with it.
        ov = overlap if limit == size else min(overlap, limit // 4)
        fits = byte_bounded(count, limit, CHUNK_TEXT_BYTES)
        for text in _within(pack(split_blocks(section.text), limit, ov, fits), limit, fits):
            chunks.append(Chunk(len(chunks), crumb, text, count(text)))
    return chunks


def card_text(
    *, file_stem: str, keywords: list[str], summary: str, covers: list[str], sections: list[str]
) -> str:
    """A document's own description as one short chunk: what an operator types to find it (file
    name words, keywords, summary, topics, section titles) sits next to the title, where both
    routes score it without the body's bulk."""
    name = " ".join(split_identifier(file_stem))
    lines = [f"{file_stem} ({name})" if name.casefold() != file_stem.casefold() else file_stem]
    if keywords:
        lines.append(", ".join(keywords))
    if summary:
        lines.append(summary)
    if covers:
        lines.append("; ".join(covers))
    if sections:
        lines.append(" / ".join(sections))
    return "\n".join(lines)


CARD_HEADING = "概要 (card)"


def with_card(
    chunks: list[Chunk], title: str, card: str, limit: int, count: TokenCounter
) -> list[Chunk]:
    """The card as chunk 0 (cut to ``limit`` tokens), then the body's chunks renumbered."""
    crumb = breadcrumb(title, (CARD_HEADING,))
    size = max(limit - count(crumb) - 1, MIN_CHUNK_TOKENS)
    fits = byte_bounded(count, size, CHUNK_TEXT_BYTES)
    pieces = _within(pack(split_blocks(card), size, 0, fits), size, fits)
    head = [Chunk(0, crumb, pieces[0], count(pieces[0]))] if pieces else []
    return head + [Chunk(len(head) + c.index, c.breadcrumb, c.text, c.token_count) for c in chunks]
