"""How relevant a document is: ``relevance.py`` (FS-1/FS-2, the dense judge), ``entities.py``
(products, alert names, resource kinds a document never mentions), ``calibration.py`` +
``calibration.json`` (the calibrated judge and its entity rules), ``judge.py``."""
