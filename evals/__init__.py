"""The incident eval suite: recorded incidents replayed against any model and scored.

``python -m evals run`` (``evals/__main__.py``). Scenarios are YAML files (``evals/scenarios/``,
schema in ``schema.py``); the runner drives the real graphs through the same ``Runner`` the API uses
(``runner.py``, on an eval knowledge base: ``workspace.py``), the checks are pure (``checks.py``),
results are printed (``report.py``) and stored (``store.py``). A case from the case library becomes a
scenario through ``export.py``.
"""
