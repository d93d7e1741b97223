"""A run's lifecycle, between ``services.py`` and ``graph/``: one runner per process, built by
``services.py`` and shared by the API, replay, the CLIs, the eval suite and Studio.

- ``runner.py``: ``Runner``, the one object the others are handed; it puts the steps below together.
- ``run.py``: what a run is (``Run``, the attempt on its session; ``Launch``, how its graph starts;
  ``RunResult``).
- ``start.py``: a run starts — its session created RUNNING and leased, or an unfinished one
  claimed; one turn at a time per conversation; the LangGraph config carrying the session id.
- ``stream.py``: a run streams — the graph under the lease, recorded as it goes, events to the UI.
- ``events.py``: what a run streams, translated from LangGraph's chunks; ``timing.py``: the step
  durations stamped on them.
- ``recorder.py``: the callback writing each model call and tool call as it happens.
- ``finish.py``: a run ends — its session closed with totals recounted, retried when the database
  refuses, then scored in the background; ``drain`` waits for that work. ``db_outage.py``: a
  record the database refused, written once it is back.
- ``resume.py``: an unfinished session continues — planned from its thread's head, same session.
- ``replay.py``: a recorded session replayed (time travel, or a re-run on ``tape.py``'s recorded
  model outputs), compared by ``divergence.py``.
- ``run_evidence.py``: what a recorded run's tools returned, in full, from its checkpoints.
- ``studio_session.py``: a LangGraph Studio run recorded as a session.
"""
