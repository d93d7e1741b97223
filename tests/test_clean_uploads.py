"""Uploads and imports leave nothing half-done: refused content stores nothing, long names are
refused whole, an unchanged refused file is not parsed again, and parsing never stalls the server."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from retrieval.parsing.documents import DocumentError, parse_document
from tests.support.hostile import alias_bomb, assert_error, document_rows, isolated_client, kb_files

GOOD = b"---\ntitle: Disk full\nkeywords: [DISK_FULL_QZ]\n---\n# Disk full\n\nClean /var/log.\n"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory, embeddings) -> AsyncIterator:  # noqa: ANN001
    async with isolated_client(tmp_path_factory.mktemp("clean-uploads"), embeddings) as c:
        yield c


async def upload(
    client: httpx.AsyncClient, name: str, data: bytes, *, replace: bool = False
) -> httpx.Response:
    return await client.post(
        "/api/documents/upload",
        files={"file": (name, data, "text/markdown")},
        data={"category": "ops", "replace": str(replace).lower()},
    )


async def wait_for_job(client: httpx.AsyncClient, force: bool = False) -> dict:
    job = (await client.post("/api/knowledge/init", params={"force": force})).json()
    while job["status"] == "running":
        await asyncio.sleep(0.1)
        job = (await client.get(f"/api/knowledge/jobs/{job['jobId']}")).json()
    return job


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"  \n\t\n ", "empty"),
        (alias_bomb(), "line 3: the YAML alias '*a' is not allowed"),
        (b"---\ntitle: x\n\n# Body\n", "line 1: the frontmatter opened by '---' is never closed"),
        (b"---\ntitle: x\nupdated: 2024-13-01\n---\nbody\n", "line 3: '2024-13-01' is not a valid"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not valid UTF-8"),
        (b"# Title\n\n\x00\x00\x00\x00", "NUL byte"),
    ],
    ids=["empty", "whitespace", "alias-bomb", "unclosed", "bad-date", "png", "nul"],
)
async def test_refused_content_stores_nothing(client, data: bytes, words: str) -> None:  # noqa: ANN001
    files, rows = kb_files(client.kb_dir), await document_rows(client.services)
    t0 = time.perf_counter()
    message = assert_error(await upload(client, "hostile.md", data), 422, "invalid_document")
    assert time.perf_counter() - t0 < 5
    assert words in message and "nothing was stored" in message, message
    assert kb_files(client.kb_dir) == files  # no file, no temporary file
    assert await document_rows(client.services) == rows  # no row


async def test_refused_replacement_keeps_the_stored_version(client) -> None:  # noqa: ANN001
    first = await upload(client, "disk-full.md", GOOD)
    assert first.status_code == 201 and first.json()["result"]["status"] == "INDEXED"
    before = kb_files(client.kb_dir)
    assert_error(await upload(client, "disk-full.md", alias_bomb(), replace=True), 422)
    assert kb_files(client.kb_dir) == before
    doc = (await client.get(f"/api/documents/{first.json()['document']['docId']}")).json()
    assert doc["status"] == "INDEXED" and doc["chunks"]
    found = (await client.post("/api/knowledge/lookup", json={"query": "DISK_FULL_QZ"})).json()
    assert found["result"]["primary"]["source"] == "ops/disk-full.md"


async def test_long_names_are_refused_never_cut(client) -> None:  # noqa: ANN001
    before = kb_files(client.kb_dir)
    for name in (
        "n" * 246 + ".md",  # 250 characters
        "x" * 190 + ".html" + "y" * 50 + ".md",  # cut at 200 it would end in .html
        "故障" * 40 + ".md",  # 80 characters, 243 bytes
    ):
        message = assert_error(await upload(client, name, GOOD), 400, "invalid_upload")
        assert "limit is 200" in message and "keeping its extension" in message
    assert kb_files(client.kb_dir) == before

    longest = "k" * 197 + ".md"  # exactly at the limit: stored whole, extension kept
    ok = await upload(client, longest, GOOD.replace(b"DISK_FULL_QZ", b"LONG_NAME_QZ"))
    assert ok.status_code == 201, ok.text
    assert ok.json()["document"]["filePath"] == f"ops/{longest}"
    assert (client.kb_dir / "ops" / longest).is_file()
    job = await wait_for_job(client)
    assert job["status"] == "done" and job["summary"]["removed"] == 0
    doc = (await client.get(f"/api/documents/{ok.json()['document']['docId']}")).json()
    assert doc["status"] == "INDEXED"
    suffixes = {p.rsplit(".", 1)[-1] for p in kb_files(client.kb_dir)}
    assert suffixes <= {"md", "markdown", "txt"}, suffixes


async def test_unchanged_refused_file_is_not_parsed_again(client) -> None:  # noqa: ANN001
    path = client.kb_dir / "ops" / "bomb.md"
    path.write_bytes(alias_bomb())
    first = await wait_for_job(client)
    assert first["summary"]["failed"] == 1
    [failed] = [f for f in first["files"] if f["file"] == "ops/bomb.md"]
    assert failed["status"] == "FAILED" and "line 3" in failed["error"]
    listing = (await client.get("/api/documents", params={"q": "bomb"})).json()
    [row] = listing["items"]
    assert row["status"] == "FAILED" and "alias" in row["errorMessage"]

    again = await wait_for_job(client)
    assert again["summary"]["failed"] == 1  # still reported, with the remembered reason …
    assert {"file": "ops/bomb.md", "error": failed["error"]}.items() <= next(
        f for f in again["files"] if f["file"] == "ops/bomb.md"
    ).items()
    [same] = (await client.get("/api/documents", params={"q": "bomb"})).json()["items"]
    assert same["updatedAt"] == row["updatedAt"]  # … and its row untouched: not imported again

    path.write_bytes(GOOD.replace(b"DISK_FULL_QZ", b"BOMB_DEFUSED_QZ"))  # fixed: parsed again
    fixed = await wait_for_job(client)
    assert {"file": "ops/bomb.md", "status": "INDEXED"}.items() <= next(
        f for f in fixed["files"] if f["file"] == "ops/bomb.md"
    ).items()
    path.unlink()
    await wait_for_job(client)


RUNS = 3  # a loaded machine pauses a process now and then: the best of RUNS is judged
# The loop's own granularity (10 ms ticks, the GIL handed over every 5 ms): off the loop the
# longest stall was 0.02-0.03 s at every load seen, so a bound under this would judge noise.
STALL_FLOOR_S = 0.04


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """No garbage collection: a full one of this test process' heap (the model, many started
    stacks) took 0.75 s here, a pause of the process, not of the route (likely the 0.8 s stall
    that failed CI against the former bound)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parse_time(data: bytes) -> float:
    """How long parsing ``data`` takes on this thread: what it would hold the loop for."""
    with collector_off():
        t0 = time.perf_counter()
        with contextlib.suppress(DocumentError):
            parse_document(data, "ops/stall.md")
        return time.perf_counter() - t0


async def longest_stall(client: httpx.AsyncClient, payloads: list[bytes]) -> float:
    """The longest gap between 10 ms ticks of the loop while ``payloads`` are uploaded and
    refused."""
    stalls: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            stalls.append(now - last)
            last = now

    with collector_off():
        tick = asyncio.create_task(ticker())
        try:
            for data in payloads:
                r = await upload(client, "stall.md", data)
                assert r.status_code == 422, r.text
        finally:
            stop.set()
            await tick
    return max(stalls)


async def test_hostile_frontmatter_does_not_stall_the_server(client) -> None:  # noqa: ANN001
    deep = b"---\nx: " + b"[" * 20000 + b"]" * 20000 + b"\n---\nbody\n"
    wide = b"---\nkeywords: [" + b",".join([b'"k"'] * 9000) + b"]\n---\n# Wide\n\nbody\n"
    # A refused upload first: the route's one-time costs (imports, first parse) are not a stall.
    r = await upload(client, "stall.md", b"---\nupdated: 2024-13-01\n---\nx\n")
    assert r.status_code == 422, r.text
    # Judged against what parsing the wide list on the loop would hold it, here and now (load
    # slows both alike). Measured at load averages 6-7 on 2 cores: off the loop the longest stall
    # 0.02-0.03 s, the parse 0.05-0.13 s; parsed on the loop the stall is the parse (0.05-0.15 s).
    bound = max(min(parse_time(wide) for _ in range(RUNS)) / 2, STALL_FLOOR_S)
    runs: list[float] = []
    for _ in range(RUNS):
        runs.append(await longest_stall(client, [deep, wide, alias_bomb()]))
        if runs[-1] < bound:
            break
    assert min(runs) < bound, (
        f"the event loop stalled for {runs} s (best of {RUNS}); bound {bound:.3f} s"
    )


async def test_import_job_messages_are_words(client) -> None:  # noqa: ANN001
    """An unreadable file fails alone, in words; the rest of the import goes on."""
    broken = client.kb_dir / "ops" / "unreadable.md"
    broken.symlink_to("/proc/self/mem")  # a regular file that cannot be read from offset 0
    (client.kb_dir / "ops" / "fine.md").write_bytes(GOOD.replace(b"DISK_FULL_QZ", b"FINE_QZ"))
    try:
        job = await wait_for_job(client)
    finally:
        broken.unlink()
        (client.kb_dir / "ops" / "fine.md").unlink()
    assert job["status"] == "done" and job["error"] is None, job
    by_file = {f["file"]: f for f in job["files"]}
    assert by_file["ops/fine.md"]["status"] == "INDEXED"
    failed = by_file["ops/unreadable.md"]
    assert failed["status"] == "FAILED"
    assert (
        failed["error"]
        == "ops/unreadable.md: a file could not be read or written (Input/output error)"
    )
    await wait_for_job(client)


async def test_refusals_on_mariadb(tmp_path, embeddings, mysql_url: str) -> None:  # noqa: ANN001
    async with isolated_client(tmp_path, embeddings, database_url=mysql_url) as c:
        files, rows = kb_files(c.kb_dir), await document_rows(c.services)
        assert_error(await upload(c, "empty.md", b""), 422, "invalid_document")
        assert_error(await upload(c, "bomb.md", alias_bomb()), 422, "invalid_document")
        assert_error(await upload(c, "n" * 246 + ".md", GOOD), 400, "invalid_upload")
        assert kb_files(c.kb_dir) == files and await document_rows(c.services) == rows
        ok = await upload(c, "disk-full.md", GOOD)
        assert ok.status_code == 201 and ok.json()["result"]["status"] == "INDEXED"
        stored = kb_files(c.kb_dir)
        assert_error(await upload(c, "disk-full.md", b"---\ntitle: x\n", replace=True), 422)
        assert kb_files(c.kb_dir) == stored
