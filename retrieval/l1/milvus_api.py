"""pymilvus and langchain-milvus, imported on first use.

pymilvus validates ``MILVUS_URI`` when it is imported and rejects a Milvus Lite file path
(``./data/milvus.db``) — while this project uses that same variable for exactly that. So the import
runs with the variable hidden for its duration and restores it at once; nothing else touches the
environment, and nothing happens merely because a module was imported.
"""

from __future__ import annotations

import functools
import os
import threading
from types import SimpleNamespace

_lock = threading.Lock()


@functools.cache
def milvus() -> SimpleNamespace:
    with _lock:
        uri = os.environ.get("MILVUS_URI")
        hide = bool(uri) and uri.endswith(".db") and "://" not in uri
        if hide:
            del os.environ["MILVUS_URI"]
        try:
            from langchain_milvus import BM25BuiltInFunction, Milvus
            from pymilvus import DataType, MilvusClient
        finally:
            if hide:
                os.environ["MILVUS_URI"] = uri
    return SimpleNamespace(
        Milvus=Milvus,
        BM25BuiltInFunction=BM25BuiltInFunction,
        MilvusClient=MilvusClient,
        DataType=DataType,
    )
