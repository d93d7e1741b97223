"""A bounded, deterministic corpus of hostile requests against the real app.

Bad JSON, wrong types and content types, huge fields, NUL and lone surrogates, traversal names,
binaries, YAML bombs, deep nesting, unclosed frontmatter, paging abuse, wrong methods and
cross-site headers. Every answer must be below 500 (refusals a 4xx in the JSON error contract,
in words), and afterwards the knowledge-base folder, the documents and the sessions are exactly
as they were: no debris, no new rows. Nothing in the corpus starts an agent run.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.support.hostile import CLASS_NAME, alias_bomb, document_rows, isolated_client, kb_files

pytestmark = pytest.mark.slow

UNKNOWN = "0123456789abcdef0123456789abcdef"
JSON_ROUTES = [
    "/api/chat",
    "/api/chat_stream",
    "/api/ai_ops",
    "/api/feedback",
    "/api/knowledge/lookup",
    f"/api/sessions/{UNKNOWN}/replay",
]


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    url: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    refused: bool = True  # must be a 4xx; otherwise any answer below 500 will do


def _raw(body: bytes, ctype: str = "application/json") -> dict[str, Any]:
    return {"content": body, "headers": {"content-type": ctype}}


SYNTAX = {
    "open-brace": b"{",
    "close-brace": b"}",
    "open-bracket": b"[",
    "bare-word": b"{not json}",
    "single-quotes": b"{'question': 'x'}",
    "trailing-comma": b'{"question": "x",}',
    "nul": b"\x00",
    "utf16-garbage": b"\xff\xfe\x00",
    "deep-array": b"[" * 5000,
    "deep-object": b'{"a":' * 3000,
    "unterminated": b'"' + b"a" * 100,
    "overflow": b"1e999999",
    "binary": bytes(range(256)),
}
WRONG_SHAPE = {"list": b"[]", "number": b"1", "string": b'"x"', "bool": b"true", "nan": b"NaN"}


def json_cases() -> Iterator[Case]:
    for route in JSON_ROUTES:
        for name, body in SYNTAX.items():
            yield Case(f"{route} syntax {name}", "POST", route, _raw(body))
        for name, body in WRONG_SHAPE.items():
            yield Case(f"{route} shape {name}", "POST", route, _raw(body))
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "application/xml",
                      "application/jsonx", "multipart/form-data; boundary=x"):  # fmt: skip
            yield Case(f"{route} ctype {ctype}", "POST", route, _raw(b'{"question":"x"}', ctype))
    long_q = "x" * 8001
    for route in ("/api/chat", "/api/chat_stream"):
        for name, body in {
            "empty-object": {},
            "question-null": {"question": None},
            "question-int": {"question": 1},
            "question-list": {"question": ["x"]},
            "question-object": {"question": {"a": 1}},
            "question-empty": {"question": ""},
            "question-8001": {"question": long_q},
            "id-traversal": {"question": "x", "id": "../../etc"},
            "id-65": {"question": "x", "id": "a" * 65},
            "id-int": {"question": "x", "id": 5},
            "id-space": {"question": "x", "id": "a b"},
            "id-nul": {"question": "x", "id": "a\x00b"},
            "extra-field": {"question": "x", "admin": True},
        }.items():
            yield Case(f"{route} {name}", "POST", route, {"json": body})
    for name, body in {
        "id-traversal": {"id": "../x"},
        "id-int": {"id": 5},
        "extra": {"foo": 1},
        "id-65": {"id": "a" * 65},
    }.items():
        yield Case(f"/api/ai_ops {name}", "POST", "/api/ai_ops", {"json": body})
    for name, body in {
        "unknown-session": {"sessionId": UNKNOWN, "feedback": "useful"},
        "bad-value": {"sessionId": UNKNOWN, "feedback": "maybe"},
        "empty-session": {"sessionId": "", "feedback": "useful"},
        "long-session": {"sessionId": "x" * 65, "feedback": "useful"},
        "long-feedback": {"sessionId": UNKNOWN, "feedback": "x" * 33},
        "nul-session": {"sessionId": "a\x00b", "feedback": "useful"},
        "missing-feedback": {"sessionId": UNKNOWN},
        "missing-session": {"feedback": "useful"},
        "snake-case": {"session_id": UNKNOWN, "feedback": "useful", "extra": 1},
        "feedback-list": {"sessionId": UNKNOWN, "feedback": ["useful"]},
    }.items():
        yield Case(f"/api/feedback {name}", "POST", "/api/feedback", {"json": body})
    for name, body in {
        "empty": {"query": ""},
        "2001": {"query": "x" * 2001},
        "null": {"query": None},
        "int": {"query": 1},
        "list": {"query": ["x"]},
        "extra": {"query": "x", "k": 1},
    }.items():
        yield Case(f"lookup {name}", "POST", "/api/knowledge/lookup", {"json": body})
    for name, body in {
        "bad-mode": {"mode": "time-travel"},
        "long-checkpoint": {"mode": "checkpoint", "checkpointId": "x" * 65},
        "checkpoint-int": {"mode": "checkpoint", "checkpointId": 5},
    }.items():
        yield Case(f"replay {name}", "POST", f"/api/sessions/{UNKNOWN}/replay", {"json": body})


def lookup_queries() -> Iterator[Case]:
    """Hostile but valid queries: answered (200), never a 5xx."""
    rng = random.Random(11)
    queries = [
        "\x00",
        "a\x00b ERR_TIMEOUT",
        "' OR 1=1 --",
        "<script>alert(1)</script>",
        "../../etc/passwd",
        "*" * 2000,
        "\u3000" * 100,
        "😀🔥💥" * 50,
        "\u202eedoc_rorre\u202c",
        "%s%s%n%x",
        "\\",
        "(a+)+$" * 50,
        "磁盘" * 1000,
        "SELECT * FROM api_document; DROP TABLE api_document;",
        "{{7*7}} ${7*7}",
        "\r\n\r\n",
        "ERR_TIMEOUT" * 181,
        "e\u0301" * 500,
        " ".join(rng.choice(["redis", "连接池", "timeout", "🙂", "\t"]) for _ in range(300)),
        "".join(chr(rng.randrange(0x20, 0xD7FF)) for _ in range(500)),
    ]
    for i, q in enumerate(queries):
        yield Case(
            f"lookup hostile {i}", "POST", "/api/knowledge/lookup", {"json": {"query": q}}, False
        )
    lone = b'{"query": "\\ud800 ERR_TIMEOUT \\udfff"}'
    yield Case("lookup lone surrogates", "POST", "/api/knowledge/lookup", _raw(lone), False)


def paging_cases() -> Iterator[Case]:
    bad = [
        {"page": 0}, {"page": -1}, {"page": "abc"}, {"page": "1e9"}, {"page": 100001},
        {"page": 10**20}, {"pageSize": 0}, {"pageSize": 201}, {"pageSize": -5},
        {"pageSize": "abc"}, {"pageSize": 10**12}, {"status": "BOGUS"},
        {"status": "indexed; DROP TABLE"}, {"page": "1.5"},
    ]  # fmt: skip
    for route in ("/api/documents", "/api/sessions"):
        for i, params in enumerate(bad):
            yield Case(f"{route} paging {i}", "GET", route, {"params": params})
    for i, params in enumerate([{"q": "x" * 201}, {"category": "x" * 65}]):
        yield Case(f"documents filter {i}", "GET", "/api/documents", {"params": params})
    yield Case("sessions flow", "GET", "/api/sessions", {"params": {"flow": "BAD"}})
    odd = [
        {"q": "%"}, {"q": "_"}, {"q": "' OR 1=1 --"}, {"q": "\x00"}, {"q": "\\"},
        {"category": "../etc"}, {"category": "\x00"}, {"page": 99999, "pageSize": 200},
        {"q": "😀"}, {"q": "[a-z]*"},
    ]  # fmt: skip
    for i, params in enumerate(odd):
        yield Case(f"documents odd filter {i}", "GET", "/api/documents", {"params": params}, False)
    for i, force in enumerate(["maybe", "2", "", "[]"]):
        yield Case(f"init force {i}", "POST", "/api/knowledge/init", {"params": {"force": force}})


def path_cases() -> Iterator[Case]:
    ids = [
        "..%2F..%2Fetc%2Fpasswd", "%00", "x" * 5000, "%F0%9F%98%80", "'%20OR%20'1'='1",
        "%2e%2e", "a%0d%0aSet-Cookie:x=1", "%ff%fe",
    ]  # fmt: skip
    for i, raw_id in enumerate(ids):
        for method, template in [
            ("GET", "/api/documents/{}"),
            ("DELETE", "/api/documents/{}"),
            ("POST", "/api/documents/{}/reindex"),
            ("GET", "/api/sessions/{}"),
            ("GET", "/api/sessions/{}/checkpoints"),
            ("POST", "/api/sessions/{}/resume"),
            ("GET", "/api/knowledge/jobs/{}"),
            ("GET", "/api/knowledge/jobs/{}/events"),
        ]:
            yield Case(f"{method} {template} id {i}", method, template.format(raw_id))


def hostile_documents() -> dict[str, bytes]:
    rng = random.Random(7)
    fm = b"---\ntitle: x\n"
    return {
        "empty": b"",
        "whitespace": b" \n\t\r\n",
        "nul": b"# T\n\n\x00\x00",
        "png": b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(512)),
        "random": bytes(rng.randrange(256) for _ in range(4096)),
        "utf16": "# 标题\n\n正文".encode("utf-16"),
        "latin1": "# Café\n\nrésumé".encode("latin-1"),
        "bomb-6": alias_bomb(6),
        "bomb-9": alias_bomb(9, width=5),
        "bomb-2": alias_bomb(2),
        "merge-alias": fm + b"base: &b {a: 1}\nx:\n  <<: *b\n---\nbody",
        "deep-flow": fm + b"x: " + b"[" * 20000 + b"]" * 20000 + b"\n---\nbody",
        "deep-block": b"---\n" + b"".join(b"  " * i + b"k:\n" for i in range(60)) + b"---\nb",
        "oversize": fm + b"summary: " + b"y" * 70_000 + b"\n---\nbody",
        "many-values": fm + b"keywords: [" + b",".join([b"k"] * 20_000) + b"]\n---\nbody",
        "unclosed": fm + b"keywords: [a]\n\n# body\n",
        "list": b"---\n- a\n- b\n---\nbody",
        "scalar": b"---\nhello\n---\nbody",
        "bad-month": fm + b"date: 2024-13-01\n---\nbody",
        "bad-day": fm + b"date: 2023-02-30\n---\nbody",
        "python-tag": b"---\ntitle: !!python/object/apply:os.system [id]\n---\nbody",
        "unknown-tag": b"---\ntitle: !secret x\n---\nbody",
        "title-list": b"---\ntitle: [a, b]\n---\nbody",
        "keywords-map": fm + b"keywords: {a: 1}\n---\nbody",
        "covers-nested": fm + b"covers: [[a]]\n---\nbody",
        "long-title": b"---\ntitle: " + b"t" * 400 + b"\n---\nbody",
        "long-summary": fm + b"summary: " + b"s" * 5000 + b"\n---\nbody",
        "frontmatter-only": fm + b"---\n",
        "control-char": b"---\ntitle: a\x07b\n---\nbody",
        "tab-indent": fm + b"\tk: 1\n---\nbody",
        "huge-int": b"---\ntitle: " + b"9" * 5000 + b"\n---\nbody",
        "bad-yaml": b"---\ntitle: [oops\n---\nbody",
        "unhashable-key": b"---\n? [a]\n: 1\n---\nbody",
    }


def _upload(name: str, data: bytes, category: str = "ops", **extra: str) -> dict[str, Any]:
    return {
        "files": {"file": (name, data, "text/markdown")},
        "data": {"category": category, **extra},
    }


def upload_cases() -> Iterator[Case]:
    url = "/api/documents/upload"
    for name, data in hostile_documents().items():
        yield Case(f"upload content {name}", "POST", url, _upload(f"hostile-{name}.md", data))
        replace = _upload("payment-errors.md", data, "api", replace="true")
        yield Case(f"replace with {name}", "POST", url, replace)
    good = b"# Fine\n\nA fine runbook.\n"
    names = [
        "../../etc/passwd", "..", ".md", ".hidden.md", "x.html", "x.md.exe", "x", "CON",
        "n" * 246 + ".md", "故障" * 40 + ".md", "x" * 190 + ".html" + "y" * 50 + ".md",
        "a.md/..", "-.md", "...", "x.MD.php", "x.md\x00.html",
    ]  # fmt: skip
    for i, name in enumerate(names):
        yield Case(f"upload name {i}", "POST", url, _upload(name, good))
    for i, category in enumerate(["", "Ops!", "../etc", "a" * 65, "a b", "\x00", "ops/../x"]):
        yield Case(f"upload category {i}", "POST", url, _upload(f"cat-{i}.md", good, category))
    yield Case("upload no file", "POST", url, {"data": {"category": "ops"}})
    yield Case("upload no category", "POST", url, {"files": {"file": ("n.md", good)}})
    yield Case("upload json body", "POST", url, {"json": {"file": "x", "category": "ops"}})
    yield Case("upload bad replace", "POST", url, _upload("r.md", good, replace="perhaps"))
    yield Case("upload file as text", "POST", url, {"data": {"file": "# x", "category": "ops"}})
    yield Case("upload text/plain", "POST", url, _raw(b"# x", "text/plain"))
    yield Case(
        "upload broken multipart",
        "POST",
        url,
        _raw(b"--b\r\nContent-Disposition: form-data; name=", "multipart/form-data; boundary=b"),
    )


def cross_site_cases(doc_id: str) -> Iterator[Case]:
    variants = [
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://test:1", "Sec-Fetch-Site": "same-site"},
    ]
    routes = [
        ("POST", "/api/chat", {"json": {"question": "ERR_TIMEOUT"}}),
        ("POST", "/api/chat_stream", {"json": {"question": "ERR_TIMEOUT"}}),
        ("POST", "/api/ai_ops", {}),
        ("POST", "/api/knowledge/init", {"params": {"force": "true"}}),
        ("POST", "/api/documents/upload", _upload("payment-errors.md", b"# x\n\ny", "api", replace="true")),
        ("POST", f"/api/documents/{doc_id}/reindex", {}),
        ("DELETE", f"/api/documents/{doc_id}", {}),
        ("POST", f"/api/sessions/{UNKNOWN}/resume", {}),
    ]  # fmt: skip
    for i, headers in enumerate(variants):
        for method, url, kwargs in routes:
            merged = {**kwargs, "headers": {**kwargs.get("headers", {}), **headers}}
            yield Case(f"cross-site {i} {method} {url}", method, url, merged)


def method_cases() -> Iterator[Case]:
    for method in ("PUT", "PATCH"):
        for url in ("/api/documents", "/api/chat", "/api/knowledge/init", "/api/sessions"):
            yield Case(f"{method} {url}", method, url)
    yield Case("DELETE sessions", "DELETE", "/api/sessions")
    yield Case("POST healthz", "POST", "/healthz")


def corpus(doc_id: str) -> list[Case]:
    return [
        *json_cases(),
        *lookup_queries(),
        *paging_cases(),
        *path_cases(),
        *upload_cases(),
        *cross_site_cases(doc_id),
        *method_cases(),
    ]


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory, embeddings) -> AsyncIterator:  # noqa: ANN001
    async with isolated_client(tmp_path_factory.mktemp("hostile"), embeddings) as c:
        yield c


async def _sessions(services: Any) -> int:
    from persistence.models import DiagnosisSession

    async with services.db.session() as s:
        return (await s.execute(sa.select(sa.func.count()).select_from(DiagnosisSession))).scalar()


def _problem(case: Case, r: httpx.Response) -> str | None:
    if r.status_code >= 500:
        return f"{r.status_code}: {r.text[:200]}"
    if case.refused and not 400 <= r.status_code < 500:
        return f"expected a refusal, got {r.status_code}: {r.text[:200]}"
    if r.status_code >= 400:
        try:
            body = r.json()
        except json.JSONDecodeError:
            return f"{r.status_code} without a JSON body: {r.text[:200]}"
        message = body.get("message") if isinstance(body, dict) else None
        if not message or "error" not in body:
            return f"{r.status_code} outside the error contract: {r.text[:200]}"
        if CLASS_NAME.search(message):
            return f"class name in the message: {message[:200]}"
    return None


async def test_hostile_corpus_leaves_no_trace(client) -> None:  # noqa: ANN001
    listing = (await client.get("/api/documents", params={"q": "payment-errors"})).json()
    doc_id = listing["items"][0]["docId"]
    cases = corpus(doc_id)
    assert len(cases) >= 350 and len({c.name for c in cases}) == len(cases)
    files = kb_files(client.kb_dir)
    rows = await document_rows(client.services)
    sessions = await _sessions(client.services)

    problems, statuses = [], Counter()
    for case in cases:
        r = await client.request(case.method, case.url, **case.kwargs)
        statuses[r.status_code] += 1
        if problem := _problem(case, r):
            problems.append(f"{case.name}: {problem}")

    print(f"\n{len(cases)} hostile requests; statuses {dict(sorted(statuses.items()))}")

    assert not problems, "\n".join(problems)
    assert kb_files(client.kb_dir) == files  # no file, no temporary file, nothing replaced
    assert await document_rows(client.services) == rows  # no row added, none changed
    assert await _sessions(client.services) == sessions  # nothing ran
    assert not (await client.get("/api/knowledge/stats")).json()["importing"]
