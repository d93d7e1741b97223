"""Knowledge base: frontmatter, chunking, L0 keyword index, embeddings, Milvus store, fusion,
relevance (dense and calibrated judges), lookup, ingestion, domains."""
