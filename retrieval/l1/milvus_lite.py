"""Milvus Lite specifics that the public pymilvus API does not offer. Best effort by design."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# pymilvus pings its channel every 10 s; Milvus Lite's gRPC server keeps gRPC's defaults (a ping
# without data at most every 5 min, two strikes), so a minute into every idle spell it sent GOAWAY
# too_many_pings (an error line in the log) and the client reconnected. Milvus Lite runs in this
# process, on loopback: no pings (tests/test_grpc_keepalive.py patches ``store.LITE_GRPC_OPTIONS``).
LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": 0}


def merge_segments(uri: str, collection: str) -> bool:
    """Milvus Lite in this process: compact every data file of the collection into one, without
    the rows deleted since (a single file too, when rows were deleted).

    Milvus Lite 3.2 compacts only by size tiers and has no manual compaction (its
    ``ManualCompaction`` RPC is a no-op), so this drives the engine's own compaction routine
    under the engine's maintenance lock. Best effort: on any mismatch with the engine's
    internals it logs and leaves the segments as they are (searches stay correct, BM25 then
    uses per-segment statistics).

    A delete only records tombstones: the one merged file kept every deleted row, loaded in
    memory with its BM25 postings and counted in BM25's statistics, until some later write.
    After deleting three large documents (5,173 chunks, ``bench/bench_memory.py``) the server
    held ~100 MB of them (Arrow, Python objects), the allocators more around them.
    """
    try:
        from milvus_lite.server_manager import server_manager_instance

        entry = server_manager_instance._servers.get(os.path.abspath(uri))
        if entry is None:
            return False
        col = entry[1].get_collection(collection)
        col._wait_for_bg()  # let a running background compaction finish first
        merged = False
        with col._maintenance_lock:
            deleted = len(col._delta_index) > 0  # tombstones the data files may still hold
            for partition in col._manifest.list_partitions():
                files = list(col._manifest.get_data_files(partition))
                if len(files) < 2 and not (files and deleted):
                    continue
                folder = os.path.join(col._data_dir, "partitions", partition)
                col._compaction_mgr._compact_files(
                    partition, folder, files, col._manifest, col._delta_index
                )
                merged = True
            if merged:
                col._compaction_mgr._gc_tombstones(col._manifest, col._delta_index)
                col._refresh_segment_cache()
                col._cleanup_orphan_index_files()
        if merged:
            col._ensure_loaded_segments_indexed()  # dense ANN index, when one is configured
        return merged
    except Exception:
        log.warning(
            "could not merge Milvus Lite segments; BM25 keeps per-segment statistics",
            exc_info=True,
        )
        return False


def engine_search(
    uri: str,
    collection: str,
    data: Any,  # noqa: ANN401 - a dense vector or a BM25 query text
    *,
    anns_field: str,
    limit: int,
    filter: str,  # noqa: A002 - pymilvus' name
    output_fields: Sequence[str],
    search_params: dict[str, Any],
) -> list[tuple[Any, float, dict[str, Any]]] | None:
    """One query's hits ``(pk, distance, fields)`` straight from this process's Milvus Lite engine,
    as its gRPC servicer would answer them (distances rounded to float32 as its reply carries
    them; only ``output_fields``), or None: not this process's Milvus Lite, other internals, or
    the engine failed (the caller asks over gRPC then, which answers or raises as it always did).

    Why: the servicer's protobuf work is Python in this process too. On the shipped base a dense
    search took 9.3 ms over gRPC and 3.4 ms here, BM25 (with the stored vectors) 11.6 and 3.4 ms
    (p50, load ~5 on 2 cores; identical hits, issue 17)."""
    try:
        from milvus_lite.server_manager import server_manager_instance

        entry = server_manager_instance._servers.get(os.path.abspath(uri))
        if entry is None:
            return None
        col = entry[1].get_collection(collection)
        if isinstance(data, str):
            query: Any = data
        else:  # gRPC sends the vector as float32
            query = np.asarray(data, dtype=np.float32).tolist()
        hits = col.search(
            [query],
            top_k=limit,
            metric_type=search_params["metric_type"],
            expr=filter or None,
            output_fields=list(output_fields),
            anns_field=anns_field,
            search_params=search_params.get("params") or {},
        )[0]
        return [
            (h["id"], float(np.float32(h["distance"])), {f: h["entity"][f] for f in output_fields})
            for h in hits
        ]
    except Exception:
        log.debug("Milvus Lite engine search failed; asking over gRPC", exc_info=True)
        return None


def arrow_on_malloc() -> None:
    """Milvus Lite's Arrow buffers (segments, compaction, query results) from glibc's heap, which
    ``freed_memory.release_freed_memory`` trims after every knowledge-base write, instead of
    Arrow's default mimalloc, which kept freed pages resident: after the deletes of
    ``bench/bench_memory.py`` its arena held 164 MB for 27 MB of live buffers (43 MB at start);
    in-process, writing and deleting 5,100 chunks left RSS 117–207 MB higher with mimalloc,
    93 MB with the system allocator. Process-wide; only Milvus Lite uses Arrow here."""
    try:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    except Exception:  # no pyarrow, or no system pool: Arrow's default stays
        log.debug("could not put Arrow on the system allocator", exc_info=True)


def warm_jieba() -> None:
    """Load jieba's dictionary (≈0.6 s) off the request path; Milvus Lite's analyzer uses it."""
    try:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
    except Exception:  # an optional warm-up; the analyzer loads it on first use anyway
        log.debug("jieba warm-up failed", exc_info=True)


def collection_on_disk(uri: str, collection: str) -> bool:
    """Whether Milvus Lite's files for ``collection`` are still there: its data folder (the URI)
    holds ``collections/<name>/manifest.json`` from the moment the collection is created."""
    folder = os.path.join(os.path.abspath(uri), "collections", collection)
    return os.path.isfile(os.path.join(folder, "manifest.json"))


def held_elsewhere(uri: str) -> bool:
    """Whether another process has this Milvus Lite file open (it takes an exclusive ``flock`` on
    ``<uri>/LOCK`` for as long as it runs). Opening it here would fail with a logged traceback."""
    import fcntl

    path = os.path.join(os.path.abspath(uri), "LOCK")
    if not os.path.isfile(path):
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def in_use_by_another_server(uri: str) -> bool:
    """Held by another process, not by this one's own Milvus Lite (pymilvus keeps one per path in
    this process, and a test or CLI may open the same stack again)."""
    try:
        from milvus_lite import server_manager_instance

        ours = os.path.abspath(uri) in getattr(server_manager_instance, "_servers", {})
    except Exception:  # another milvus_lite layout: judge by the lock alone
        ours = False
    return not ours and held_elsewhere(uri)


def in_use_message(uri: str) -> str:
    return (
        f"the Milvus Lite file {uri} is in use by another process (another server on the same "
        "DATA_DIR?): a Milvus Lite file belongs to one process. Stop the other server, give this "
        "one its own DATA_DIR (or MILVUS_URI), or let several processes share a Milvus Lite "
        "server (docs/deploy.md, 'Several processes on one host')"
    )


def in_process_setup(connection: dict[str, Any]) -> None:
    """What Milvus Lite in this process wants before the first connection: its gRPC options,
    Arrow on the system allocator, and jieba (its BM25 analyzer) warmed in the background."""
    connection["grpc_options"] = dict(LITE_GRPC_OPTIONS)
    arrow_on_malloc()
    threading.Thread(target=warm_jieba, name="jieba-warm-up", daemon=True).start()
