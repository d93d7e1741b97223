"""Per-run knobs: unset means "use the setting", a set value reaches the lookup tool, bad values are
refused with the field's name."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from langchain_core.messages import ToolMessage
from pydantic import TypeAdapter

from graph.context import Context
from graph.graphs import compile_graphs
from graph.state import run_input
from retrieval.judging.relevance import Thresholds
from retrieval.lookup.knobs import LookupKnobs
from retrieval.lookup.service import LookupConfig
from settings import RetrievalSettings, load_settings
from tests.support.scripted_model import ScriptedFactory, ScriptedModel
from tools.knowledge import run_config

BASE = LookupConfig(thresholds=Thresholds(2.0, 0.75, 0.5), top_k=7, budget=8)


def test_unset_knobs_keep_every_configured_value() -> None:
    assert run_config(BASE, Context()) == BASE
    assert run_config(BASE, None) is BASE


def test_set_knobs_override_only_themselves() -> None:
    cfg = run_config(BASE, Context(lookup_budget=0, reference_threshold=0.3, max_l2_distance=1.5))
    assert cfg.budget == 0  # zero is a value now, not "use the setting"
    assert cfg.thresholds == Thresholds(1.5, 0.75, 0.3)
    assert cfg.top_k == 7 and dataclasses.replace(cfg, budget=8, thresholds=BASE.thresholds) == BASE


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("highly_relevant_threshold", 1.5),
        ("reference_threshold", -0.1),
        ("max_l2_distance", 0.0),
        ("lookup_budget", -1),
        ("top_k", 0),
        ("relevance_judge", "llm"),
    ],
)
def test_out_of_range_knob_is_refused_naming_it(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        Context(**{field: value})


def test_a_run_may_set_every_lookup_knob_and_studio_shows_their_bounds() -> None:
    # top-k, the route weights and the judge were retrieval-test settings only before
    cfg = run_config(
        BASE, Context(top_k=2, dense_weight=0, bm25_weight=2.5, relevance_judge="dense")
    )
    assert (cfg.top_k, cfg.dense_weight, cfg.bm25_weight, cfg.judge) == (2, 0, 2.5, "dense")
    schema = TypeAdapter(Context).json_schema()["properties"]  # what Studio's form is drawn from
    assert {f.name for f in dataclasses.fields(LookupKnobs)} <= set(schema)
    top_k = next(s for s in schema["top_k"]["anyOf"] if s["type"] == "integer")
    assert (top_k["minimum"], top_k["maximum"]) == (1, 10)


def test_the_lookups_defaults_are_the_settings_defaults() -> None:
    """Stated once, in settings.py: a configuration built without settings has the same values,
    and every knob-backed setting reaches the configuration."""
    plain = dataclasses.replace(LookupConfig(), calibration=None)
    assert plain == dataclasses.replace(
        LookupConfig.from_settings(RetrievalSettings()), calibration=None
    )
    cfg = LookupConfig.from_settings(
        RetrievalSettings(
            top_k=7, session_lookup_budget=3, dense_weight=0.5, relevance={"judge": "dense"}
        )
    )
    assert (cfg.top_k, cfg.budget, cfg.dense_weight, cfg.judge) == (7, 3, 0.5, "dense")


async def test_a_runs_budget_reaches_the_lookup_tool(services) -> None:  # noqa: ANN001
    model = ScriptedModel(queries=["HikariCP", "Flyway", "Redis"], sent_tokens=[])
    graphs = compile_graphs(
        dataclasses.replace(services.deps, models=ScriptedFactory(model)), services.checkpointer
    )
    out = await graphs.chat.ainvoke(
        run_input("连接池问题排查"),
        {"configurable": {"thread_id": uuid.uuid4().hex}},
        context=Context(lookup_budget=1),
    )
    reasons = [
        m.artifact["dedup_reason"]
        for m in out["scratch"]
        if isinstance(m, ToolMessage) and m.name == "lookup_knowledge"
    ]
    assert reasons == [None, "budget_exhausted", "budget_exhausted"]
    assert out["lookup_count"] == 1 and out["answer"]


def test_the_supplement_floor_is_a_setting_and_a_knob_of_a_run(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("RETRIEVAL__SUPPLEMENT_FLOOR", "0.2")
    assert LookupConfig.from_settings(load_settings().retrieval).supplement_floor == 0.2
    assert run_config(BASE, Context(supplement_floor=0)).supplement_floor == 0
    with pytest.raises(ValueError, match="supplement_floor"):
        Context(supplement_floor=1.5)
