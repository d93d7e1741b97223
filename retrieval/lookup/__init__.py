"""One lookup: ``service.py`` (L0 → L1 by document → judge → session de-dup → payload),
``l0_claim.py`` (when an L0 keyword alone may answer PRECISE), ``config.py``, ``alert_input.py`` (a firing alert as input; label values are context),
``query_input.py``, ``aspects.py`` + ``aspect_results.py`` (a multi-symptom question judged per
aspect), ``memory.py`` (FS-3), ``payload.py``, ``knobs.py`` (what a run or a retrieval test may
change of ``config.py``), ``knowledge_map.py`` (the planner's budgeted map), ``runbook_reader.py``
(a cited runbook's whole text), ``first_import.py`` (lookups during the first import say so)."""
