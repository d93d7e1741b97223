"""Text normal forms shared by L0 matching, query expansion and the relevance features. Pure.

``compact`` is the form L0 matches in: case-folded, with spaces, hyphens and underscores removed, so
``ClusterOperatorDown``, ``cluster operator down`` and ``cluster-operator-down`` are one string and
``数据库 连接池 超时`` contains ``连接池超时``. It keeps, for every character, where it came from, so
a match can still be checked against word boundaries in the original text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

SEPARATORS = frozenset("-_") | frozenset(" \t\r\n\u3000\u00a0")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*")
_CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))


def compact(text: str) -> tuple[str, list[int]]:
    """Case-folded ``text`` without separators, and each kept character's index in ``text``."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch in SEPARATORS or ch.isspace():
            continue
        for c in ch.casefold():
            out.append(c)
            where.append(i)
    return "".join(out), where


_SEPARATOR_RUNS = re.compile(r"[\s\-_]+")  # SEPARATORS and every other space, as ``compact``


def compact_term(text: str) -> str:
    """``compact(text)``'s string alone, without the index (fast enough for whole bodies)."""
    return _SEPARATOR_RUNS.sub("", text).casefold()


def is_word_char(ch: str) -> bool:
    """Letters and digits of alphabetic scripts: a term may not run into one of these."""
    return ch.isalnum() and not is_cjk(ch)


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def split_identifier(word: str) -> list[str]:
    """``KubePodCrashLooping`` → ``[Kube, Pod, Crash, Looping]``; ``ERR_TIMEOUT`` → ``[ERR, TIMEOUT]``."""
    parts: list[str] = []
    for piece in re.split(r"[_\-]+", word):
        parts += [p for p in _CAMEL.split(piece) if p]
    return parts


# No quantified group that could split one run of characters two ways: ``(?:[A-Z][A-Za-z0-9]*)+``
# (the same strings as ``[A-Z][A-Za-z0-9]*``) took 2^n steps on ``AbCdCd…Cd_``, which a pasted
# query or a whole document (``terms.document_codes``) may hold.
_CODE = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b"  # ERR_TIMEOUT, used_memory, vm.max_map_count
    r"|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"  # ClusterOperatorDown, OutOfMemoryError
    r"|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b"  # OOMKilled, TLSHandshake
)


def code_tokens(text: str) -> list[str]:
    """Identifiers an operator pastes (error codes, alert names, settings): exact-match material."""
    return list(dict.fromkeys(m.group(0) for m in _CODE.finditer(text)))


def expand_identifiers(query: str) -> str:
    """The query with every multi-part identifier spelled out as words after it.

    An alert name such as ``KubePodCrashLooping`` is one token to BM25's analyzer and a string of
    sub-word pieces to the embedding model; its words (``Kube Pod Crash Looping``) are what the
    runbook text says. The identifier itself is kept, so an exact match still counts.
    """
    extra = [" ".join(split_identifier(w)) for w in compound_identifiers(query)]
    return f"{query} ({'; '.join(extra)})" if extra else query


def compound_identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` made of several words (``EtcdNoLeader``, ``redis-memory``)."""
    return [w for m in _IDENT.finditer(text) if len(split_identifier(w := m.group(0))) > 1]


@lru_cache(maxsize=4096)
def script_of(ch: str) -> str:
    """A coarse script name for a character: ``latin``, ``cjk``, ``digit``, ``cyrillic``, …"""
    if ch.isdigit():
        return "digit"
    if is_cjk(ch):
        return "cjk"
    if ch.isascii():
        return "latin" if ch.isalpha() else "other"
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "other"
    first = name.split(" ", 1)[0].lower()
    if first in {"hiragana", "katakana", "cjk"}:
        return "cjk"
    return first if ch.isalpha() else "other"
