"""Knowledge base: frontmatter, chunking, L0 keyword index, embeddings, Milvus store, relevance, lookup, ingestion."""
