"""Which embedding model made a collection's vectors: recorded on the collection, checked on open.

Vectors of two models must never meet in one collection (their distances mean nothing to each
other), and neither must chunks of two index layouts (chunking, analyzer). The identity lives in
the collection's own properties — Milvus and Milvus Lite keep them — so it travels with the data.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# Bumped when what is indexed changes shape (chunking, analyzer): an older layout is re-indexed
# like another model's vectors.
INDEX_LAYOUT = 2
REINDEX_HINT = "python -m retrieval reindex"
PROP_MODEL, PROP_DIM, PROP_LAYOUT = (
    "superbiz.embedding_model",
    "superbiz.dimension",
    "superbiz.index_layout",
)


class EmbeddingMismatch(RuntimeError):
    """The collection holds vectors of another embedding model (or index layout)."""


def check(
    client: Any,
    collection: str,
    uri: str,
    model_id: str,
    dim: int | None,
    field: str,
    aliases: tuple[str, ...] = (),
) -> bool:
    """``True`` when the collection exists and is this model's (under its id or an id an earlier
    release recorded for it, ``aliases``); raises when it is another's; ``False`` when there is no
    collection yet (it is recorded on the first write)."""
    if not client.has_collection(collection):
        return False
    info = client.describe_collection(collection)
    props = info.get("properties") or {}
    dense = next((f for f in info.get("fields", []) if f.get("name") == field), None)
    have_dim = int(dense["params"]["dim"]) if dense else None
    want_dim = dim or have_dim
    have = props.get(PROP_MODEL) or "an unrecorded model"
    layout = int(props.get(PROP_LAYOUT, 1))
    if have_dim == want_dim and have in (model_id, *aliases) and layout == INDEX_LAYOUT:
        return True
    raise EmbeddingMismatch(
        f"the vector collection '{collection}' at {uri} holds vectors of {have} "
        f"({have_dim}-d, index layout {layout}), but the configured embedding model is "
        f"{model_id} ({want_dim}-d, index layout {INDEX_LAYOUT}). Vectors of two models "
        f"are never mixed: re-index with `{REINDEX_HINT}` (drops the collection and imports "
        "every document again), or set retrieval.collection to a new name."
    )


def record(client: Any, collection: str, model_id: str, dim: int) -> None:
    """Write the model's identity onto a collection (after its first write)."""
    props = {PROP_MODEL: model_id, PROP_DIM: str(dim), PROP_LAYOUT: str(INDEX_LAYOUT)}
    try:
        client.alter_collection_properties(collection, properties=props)
    except Exception:  # a server that refuses custom properties: the dimension check remains
        log.warning("could not record the embedding model on %s", collection, exc_info=True)
