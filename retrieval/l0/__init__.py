"""L0, exact keywords: ``l0_index.py`` and ``catalog.py`` (documents, term statistics)."""
