"""The only writer: ``ingestion.py``, ``indexer.py``, ``progress.py`` (per chunk batch),
``enablement.py`` (disable / enable), ``uploads.py``, ``upload_undo.py`` (a full disk undoes an
upload: 507, nothing changed), ``failures.py``, ``errors.py``, ``seed.py`` (samples into
``DATA_DIR`` on first start), ``import_rows.py``."""
