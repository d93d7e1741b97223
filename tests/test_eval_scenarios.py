"""The incident eval suite's scenario files: the shipped suite is complete and sound, and a bad
file is refused with an error naming the file and the field."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evals.loader import (
    SHIPPED_SCENARIOS,
    ScenarioError,
    dump_scenario,
    load_scenarios,
    parse_scenario,
    unknown_runbooks,
)
from evals.schema import INTENTS
from settings import SHIPPED_KNOWLEDGE_DIR

GOOD = """
id: zh-chat-example
title: 例子
language: zh
flow: chat
intent: fix
question: "连接池满了怎么办"
expected:
  runbooks: [infrastructure/mysql-connection-pool.md]
  cost: {model_calls: 4, tokens: 6000}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_suite_covers_both_languages_every_intent_and_both_flows() -> None:
    scenarios = load_scenarios([SHIPPED_SCENARIOS])
    assert len(scenarios) >= 40
    languages = Counter(s.language for s in scenarios)
    assert abs(languages["zh"] - languages["en"]) <= 2, languages
    assert set(Counter(s.intent for s in scenarios)) == set(INTENTS)
    flows = Counter(s.flow for s in scenarios)
    assert flows["aiops"] >= 10 and flows["chat"] >= 30, flows
    tags = Counter(t for s in scenarios for t in s.tags)
    for kind in ("causal_chain", "red_herring", "multi_alert", "followup", "no_runbook"):
        assert tags[kind] >= 1, f"no {kind} scenario"
    assert sum(s.expected.no_runbook for s in scenarios) >= 5
    # Every scenario states what a right answer does beyond citing a document.
    assert all(s.expected.cause or s.expected.names or s.expected.no_runbook for s in scenarios)


def test_every_expected_runbook_is_a_shipped_runbook() -> None:
    shipped = {
        p.relative_to(SHIPPED_KNOWLEDGE_DIR).as_posix() for p in SHIPPED_KNOWLEDGE_DIR.rglob("*.md")
    }
    scenarios = load_scenarios([SHIPPED_SCENARIOS])
    assert unknown_runbooks(scenarios, shipped) == []
    # A missing runbook is named with its scenario.
    [problem] = unknown_runbooks(
        scenarios[:1], shipped - set(scenarios[0].expected.all_runbooks()[:1])
    )
    assert scenarios[0].id in problem and scenarios[0].expected.all_runbooks()[0] in problem


def test_a_scenario_survives_a_round_trip_through_yaml() -> None:
    for s in load_scenarios([SHIPPED_SCENARIOS]):
        assert parse_scenario(dump_scenario(s)) == s


@pytest.mark.parametrize(
    ("change", "field", "hint"),
    [
        (("  runbooks:", "  runbook:"), "expected.runbook", "Extra inputs are not permitted"),
        (("language: zh", "language: cn"), "language", "'zh' or 'en'"),
        (("intent: fix", "intent: repair"), "intent", "what_is"),
        (("  cost: {model_calls: 4, tokens: 6000}", ""), "expected.cost", "Field required"),
        (
            ("infrastructure/mysql-connection-pool.md", "mysql-connection-pool"),
            "expected.runbooks",
            "e.g. database/mysql-slow-query.md",
        ),
        (('question: "连接池满了怎么办"', "turns: [a, b]\nquestion: x"), "(top level)", "either"),
    ],
)
def test_a_bad_field_is_named_with_its_file(
    tmp_path: Path, change: tuple[str, str], field: str, hint: str
) -> None:
    path = _write(tmp_path, "zh-chat-example", GOOD.replace(*change))
    with pytest.raises(ScenarioError) as err:
        load_scenarios([tmp_path])
    message = str(err.value)
    assert str(path) in message and field in message and hint in message, message


def test_file_level_problems_are_all_reported(tmp_path: Path) -> None:
    _write(tmp_path / "a", "zh-chat-example", GOOD)
    _write(tmp_path / "b", "zh-chat-example", GOOD)  # the same id twice
    _write(tmp_path / "a", "other-name", GOOD)  # id differs from the file name
    _write(tmp_path / "a", "broken", "id: broken\ntitle: [unclosed\n")
    with pytest.raises(ScenarioError) as err:
        load_scenarios([tmp_path / "a", tmp_path / "b"])
    problems = err.value.problems
    assert any("is also used by" in p for p in problems)
    assert any("other-name.yaml" in p and "must match the file name" in p for p in problems)
    assert any("broken.yaml" in p and "not valid YAML at line" in p for p in problems)


def test_an_aiops_scenario_asks_no_question_and_a_followup_has_turns(tmp_path: Path) -> None:
    aiops = GOOD.replace("flow: chat", "flow: aiops")
    with pytest.raises(ScenarioError, match="aiops scenario has no question"):
        parse_scenario(aiops)
    followup = GOOD.replace("intent: fix", "intent: followup")
    with pytest.raises(ScenarioError, match="followup needs at least two turns"):
        parse_scenario(followup)
    nothing = GOOD.replace("  runbooks: [infrastructure/mysql-connection-pool.md]\n", "")
    with pytest.raises(ScenarioError, match="expects nothing"):
        parse_scenario(nothing)
    alert = GOOD.replace(
        "expected:", "world:\n  alerts:\n    - labels: {severity: critical}\nexpected:"
    )
    with pytest.raises(ScenarioError, match="labels.alertname"):
        parse_scenario(alert)
