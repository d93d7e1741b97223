"""Chat models: ``factory.py`` (``ChatOpenAI`` on any OpenAI-compatible endpoint, else offline) and
``offline/`` (the documented offline model: plans one lookup per symptom, answers extractively from
the runbooks; only the factory reaches it, ``tests/test_layers.py``)."""
