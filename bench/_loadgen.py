"""An open-loop load generator light enough to share two cores with the server it loads.

httpx's async client spent ~5 ms of CPU per request: at 200 requests/s it took a whole core, could
offer only ~120/s, and its own backlog made latencies of minutes that the server never caused
(measured: p50 496 s with 30 s timeouts). Here a request is one write and one read on a kept-alive
HTTP/1.1 connection over asyncio streams (tens of µs), on a bounded pool of connections.

Latency is measured from the moment a request was *due* (open loop: request ``i`` is due at
``i / rate``), not from when a connection became free: a client that waits for the server must not
hide that wait (coordinated omission).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

KEEP_ALIVE_S = 4.0  # below the server's keep-alive timeout (uvicorn's default: 5 s)


@dataclass
class Result:
    status: int | str  # an HTTP status, "unfinished" (no answer in time) or the error's name
    ms: float  # from the moment the request was due
    retry_after: bool


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.idle_since = time.monotonic()

    def reusable(self) -> bool:
        # uvicorn closes a connection idle for 5 s (its keep-alive timeout): a request written
        # into one that is closing is lost, so such a connection is dropped instead.
        return not self.reader.at_eof() and time.monotonic() - self.idle_since < KEEP_ALIVE_S

    async def post_json(self, host: str, path: str, body: dict) -> tuple[int, dict[str, str]]:
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode()
        self.writer.write(head + payload)
        await self.writer.drain()
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        await self.reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers

    def close(self) -> None:
        self.writer.close()


class Pool:
    """At most ``size`` kept-alive connections; a request waits for a free one (that wait counts)."""

    def __init__(self, base_url: str, size: int) -> None:
        u = urlsplit(base_url)
        self.host, self.port, self.netloc = u.hostname or "127.0.0.1", u.port or 80, u.netloc
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(size)

    async def post_json(self, path: str, body: dict) -> tuple[int, dict[str, str]]:
        async with self._slots:
            conn = None
            while self._idle and conn is None:
                conn = self._idle.pop()  # the most recently used first
                if not conn.reusable():
                    conn.close()
                    conn = None
            if conn is None:
                conn = _Connection(*await asyncio.open_connection(self.host, self.port))
            try:
                status, headers = await conn.post_json(self.netloc, path, body)
            except BaseException:
                conn.close()  # a half-read answer: the connection is unusable
                raise
            if headers.get("connection", "").lower() == "close":
                conn.close()
            else:
                conn.idle_since = time.monotonic()
                self._idle.append(conn)
            return status, headers

    def close(self) -> None:
        for conn in self._idle:
            conn.close()


async def offer(
    base_url: str,
    path: str,
    bodies: list[dict],
    rate: float,
    timeout_s: float,
    connections: int = 128,
) -> tuple[list[Result], float]:
    """POST ``bodies[i]`` at ``i / rate`` s; returns the results and the seconds the offering took."""
    pool = Pool(base_url, connections)
    results: list[Result] = []

    async def one(body: dict, due: float) -> None:
        try:
            status, headers = await asyncio.wait_for(pool.post_json(path, body), timeout_s)
            results.append(
                Result(status, (time.perf_counter() - due) * 1000, "retry-after" in headers)
            )
        except TimeoutError:
            results.append(Result("unfinished", (time.perf_counter() - due) * 1000, False))
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            results.append(Result(type(exc).__name__, (time.perf_counter() - due) * 1000, False))

    tasks = []
    start = time.perf_counter()
    for i, body in enumerate(bodies):
        due = start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(body, due)))
    offered_s = time.perf_counter() - start
    await asyncio.gather(*tasks)
    pool.close()
    return results, offered_s
