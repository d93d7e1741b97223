"""Hostile frontmatter is refused quickly, in bounded memory, with the line and what to change."""

from __future__ import annotations

import re
import time
import tracemalloc

import pytest

from retrieval.parsing.documents import DocumentError, parse_document
from tests.support.hostile import alias_bomb

CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b|Traceback")


def refusal(raw: bytes) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        parse_document(raw, "ops/hostile.md")
    message = str(caught.value)
    assert not CLASS_NAME.search(message), message
    assert message.startswith("ops/hostile.md: ")
    return caught.value


def test_alias_bomb_is_refused_fast_and_small() -> None:
    raw = alias_bomb()
    assert len(raw) < 400  # a few hundred bytes that expand to 9**6 = 531,441 strings
    tracemalloc.start()
    times = []
    try:
        for _ in range(3):  # the fastest of three: a loaded machine may pause any one of them
            t0 = time.perf_counter()
            err = refusal(raw)
            times.append(time.perf_counter() - t0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.line == 3 and "alias '*a'" in str(err) and "write the value out" in str(err)
    assert min(times) < 0.5, f"{min(times):.2f} s"  # refused in about a millisecond here
    assert peak < 2 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize(
    ("raw", "line", "words"),
    [
        (b"---\ntitle: x\nkeywords: [a]\n\n# Body\n", 1, "never closed"),
        (b"---\ntitle: x\nupdated: 2024-13-01\n---\nbody", 3, "month must be in 1..12"),
        (b"---\n- a\n- b\n---\nbody", 2, "mapping of fields"),
        (b"---\njust a sentence\n---\nbody", 2, "mapping of fields"),
        (b"---\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n---\nbody", 2, "not valid YAML"),
        (
            b"---\n" + b"".join(b"  " * i + b"k%d:\n" % i for i in range(40)) + b"---\nbody",
            22,
            "deeper than 20 levels",
        ),
        (b"---\nsummary: " + b"y" * 70_000 + b"\n---\nbody", 2, "larger than 64 KB"),
        (b"---\nkeywords: [" + b",".join([b"k"] * 20_000) + b"]\n---\nbody", 2, "10000 values"),
        (b"---\nbase: &b {a: 1}\nx:\n  <<: *b\n---\nbody", 4, "alias '*b'"),
        (b"---\ntitle: !!python/object:os.system x\n---\nbody", 2, "not valid YAML"),
        (b"---\ntitle: " + b"9" * 5000 + b"\n---\nbody", 2, "not a valid whole number"),
        (b"---\ntitle: [a, b]\n---\nbody", 2, "'title' (line 2) must be a single line"),
        (b"---\ntitle: x\n\nkeywords: {a: 1}\n---\nbody", 4, "'keywords' (line 4)"),
        (b"---\ntitle: " + b"t" * 400 + b"\n---\nbody", 2, "at most 300 characters"),
        (b"---\ntitle: [oops\n---\nbody", 3, "not valid YAML"),
        (b"---\ntitle: x\n\tfoo: 1\n---\nbody", 3, "not valid YAML"),
        (b"---\ntitle: a\x01b\n---\nbody", 2, "control character #x0001"),
        (b"# Title\n\nbody with a NUL \x00 byte\n", 3, "NUL byte"),
    ],
    ids=[
        "unclosed",
        "bad-date",
        "list",
        "scalar",
        "deep-flow",
        "deep-block",
        "oversize",
        "too-many-values",
        "merge-alias",
        "python-tag",
        "huge-int",
        "title-list",
        "keywords-mapping",
        "long-title",
        "unclosed-list",
        "tab",
        "control-char",
        "nul",
    ],
)
def test_malformed_frontmatter_names_line_and_fix(raw: bytes, line: int, words: str) -> None:
    err = refusal(raw)
    assert err.line == line, str(err)
    assert f"line {line}" in str(err) and words in str(err), str(err)


def test_ordinary_frontmatter_still_parses() -> None:
    raw = (
        b"\n---\ntitle: Disk full\nupdated: 2024-02-29\nkeywords: [disk, DISK_FULL]\n"
        b"owner: {team: sre}\n---\n# Disk full\n\nClean /var/log.\n"
    )
    doc = parse_document(raw, "ops/disk.md")
    assert doc.title == "Disk full" and doc.keywords == ["disk", "DISK_FULL"]
    assert doc.body.startswith("# Disk full")
