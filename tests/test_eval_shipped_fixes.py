"""Three shipped eval scenarios that failed on the offline model and pass since it changed (each a
user-visible defect): run through the suite as ``python -m evals run --only`` runs them.

* ``zh-chat-slow-query-diagnose``: the first lookup reduced the question to two-character keywords,
  lost "慢" and found no runbook;
* ``zh-chat-logs-pool-leak``: the logs the operator asked for were never read, and the leak's
  stack frame (ExportService.export) was only echoed, never named;
* ``en-chat-alerts-what-first``: the alerts were listed but the most severe one's runbook was never
  looked up, and once it was, the answer dropped the alert list.
"""

from __future__ import annotations

import pytest

from evals.loader import load_scenarios
from evals.suite import Suite, SuiteOptions, select
from tests.support.kb import kb_settings
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # builds the shipped eval knowledge base and runs three scenarios

FIXED = ["zh-chat-slow-query-diagnose", "zh-chat-logs-pool-leak", "en-chat-alerts-what-first"]


async def test_the_fixed_scenarios_pass(tmp_path, embeddings) -> None:  # noqa: ANN001
    scenarios = select(load_scenarios([ROOT / "evals" / "scenarios"]), FIXED)
    assert sorted(s.id for s in scenarios) == sorted(FIXED)
    suite = Suite(
        kb_settings(tmp_path), SuiteOptions(workdir=tmp_path / "evals"), embeddings=embeddings
    )
    report = await suite.run(scenarios)
    failed = {r.scenario.id: [f"{c.name}: {c.reason}" for c in r.failed] for r in report.results}
    assert not any(failed.values()), failed
