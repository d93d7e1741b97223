"""Reading the stores back and mending them: ``catalog_loader.py``, ``recovery.py`` (interrupted
imports, in the background), ``consistency.py``."""
