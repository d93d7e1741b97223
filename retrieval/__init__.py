"""The knowledge base, in rooms that import one way (``tests/test_layers.py``, ``ROOMS``):
``parsing`` → ``l0`` / ``l1`` → ``judging`` → ``lookup`` / ``writing`` → ``repair``.

At the top: ``knowledge.py`` (wiring the rooms into one ``KnowledgeBase``), ``domains.py``,
``served.py`` (the CLIs beside a running server), ``__main__.py`` (the CLI).
``docs/retrieval.md`` explains the algorithm and its eval.
"""
