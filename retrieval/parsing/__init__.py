"""From a Markdown file to chunks: ``frontmatter.py`` (bounded YAML), ``documents.py``,
``doc_fields.py`` (fault source, API name, version, chunk parameters: form over frontmatter),
``chunking.py`` (window-fit chunks, the card), ``textnorm.py`` (compact forms, identifiers),
``terms.py``, ``textmatch.py``."""
