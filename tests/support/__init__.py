"""Helpers shared by the test modules (fixtures themselves live in ``tests/conftest.py``).

| module | holds |
|---|---|
| ``paths`` | ``ROOT`` (the checkout), ``FIXTURE_KB`` (the tests' own runbooks) |
| ``kb`` | settings, knowledge bases and started stacks on a private copy of ``FIXTURE_KB`` |
| ``mysql`` | a fresh MariaDB/MySQL database per test, ``MYSQL_SKIP`` |
| ``embeddings`` | the real embedding model, each document text embedded once per run |
| ``spies`` | ``ModelInputs``: what each graph node sent to the model |
| ``payloads`` | ``sse_events``, ``all_keys`` |
| ``scripted_model`` | a model that re-queries one domain with keyword variants |
| ``openai_stub`` | a local OpenAI-protocol server (``StubLLM``) |
| ``processes`` | real ``python -m server`` and Milvus Lite server processes |
| ``browser`` | the system Chromium for the browser tests |
"""
