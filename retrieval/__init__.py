"""Knowledge base: frontmatter, chunking, L0 keyword index, embeddings, Milvus store, relevance,
lookup, ingestion, domains."""

import os as _os

# pymilvus reads MILVUS_URI at import time and rejects a Milvus Lite file path (./data/milvus.db),
# while our settings use that same variable for exactly that. Hide it from pymilvus' import only.
_uri = _os.environ.get("MILVUS_URI")
if _uri and _uri.endswith(".db"):
    del _os.environ["MILVUS_URI"]
    try:
        import pymilvus  # noqa: F401
    finally:
        _os.environ["MILVUS_URI"] = _uri
