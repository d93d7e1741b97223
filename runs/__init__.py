"""A run's lifecycle, between ``services.py`` and ``graph/``: one runner shared by the API, replay,
the CLIs, the eval suite and Studio.

``runner.py`` (one run = one recorded session, under a lease), ``db_outage.py`` (a record the
database refused, written once it is back), ``events.py`` (what a run streams),
``timing.py`` (step durations on the stream), ``recorder.py`` (callback writing steps and tool
calls), ``run_evidence.py``, ``resume.py`` (how an unfinished session resumes), ``replay.py``,
``studio_session.py`` (a Studio run recorded as a session).
"""
