"""Reading the stores back and mending them: ``catalog_loader.py``, ``recovery.py`` (interrupted
imports, in the background), ``consistency.py``, ``store_rebuild.py`` (a damaged vector store set
aside and rebuilt from the documents)."""
