"""Pure LangGraph: the graphs' shape and the answers they build. No persistence (``runs/`` records).

Shape: ``state.py`` (one state for both graphs, input schemas, the per-run reset), ``context.py``
(per-run knobs, Studio-editable), ``deps.py`` (what the nodes need), ``chat.py`` / ``aiops.py`` /
``loop.py``, ``executor.py`` (a plan step as a subgraph that returns a ``StepReport``),
``graphs.py`` (compiled in one place), ``nodes.py``, ``routing.py`` (simple/complex,
symptoms), ``rules.py`` (deterministic loop rules, the default supervisor), ``served_graph.py``
(Studio beside a running server), ``prompts.py``.
Answers: ``compact.py`` (the bounded context the executor and assistant see), ``evidence.py``,
``findings.py`` (distilled findings for the answer call), ``extractive.py`` (answers made from tool
results: one part per symptom, worded by relevance level), ``intent.py`` (what a question asks),
``sections.py`` (a runbook's sections by heading kind, zh/en), ``runbook_answer.py`` (one runbook's
part, quoted whole), ``excerpt.py``, ``report.py`` + ``diagnosis/`` (the AI-Ops report: causes
judged against evidence, timeline, causal chain), ``ledger.py`` (the evidence ledger ``[E3]``).
"""
