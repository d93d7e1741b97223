"""How a replayed run differs from the recorded one, step by step: another agent asked, a different
model input (e.g. a prompt edit), another tool call or arguments, a different tool result, or a
different answer. The first difference is the report's headline. Pure.
"""

from __future__ import annotations

import json
from typing import Any


def _calls(step: Any) -> list[tuple[str, str]]:
    """The tool calls one model step asked for, as a sorted list: the calls of one step run in
    parallel, so their order carries no meaning and a replay compares them as a (multi)set."""
    msg = step.output_message or {}
    calls = (msg.get("data") or {}).get("tool_calls") or []
    return sorted(
        (c.get("name", ""), json.dumps(c.get("args", {}), sort_keys=True, ensure_ascii=False))
        for c in calls
    )


def _step_diffs(i: int, a: Any, b: Any) -> list[dict[str, Any]]:
    """How the i-th recorded and replayed model steps differ (either may be missing)."""
    if a is None or b is None:
        return [
            {
                "step": i + 1,
                "kind": "step_count",
                "recorded": a.agent_name if a else None,
                "replayed": b.agent_name if b else None,
            }
        ]
    diffs: list[dict[str, Any]] = []
    if a.agent_name != b.agent_name:
        diffs.append(
            {"step": i + 1, "kind": "agent", "recorded": a.agent_name, "replayed": b.agent_name}
        )
    elif a.input_hash and b.input_hash and a.input_hash != b.input_hash:
        diffs.append(
            {
                "step": i + 1,
                "agent": b.agent_name,
                "kind": "model_input",
                "recorded": a.model_input,
                "replayed": b.model_input,
            }
        )
    ca, cb = _calls(a), _calls(b)
    if ca != cb:
        same_tools = [n for n, _ in ca] == [n for n, _ in cb]
        diffs.append(
            {
                "step": i + 1,
                "agent": b.agent_name,
                "kind": "tool_arguments" if same_tools else "tool_call",
                "recorded": ca,
                "replayed": cb,
            }
        )
    return diffs


def _outcome(inv: Any) -> tuple[str, str, str, str]:
    """What a tool call returned, for comparison: its tool, arguments, level and output."""
    args = json.dumps(inv.input_params or {}, sort_keys=True, ensure_ascii=False, default=str)
    return (inv.tool_name, args, inv.relevance_level or "", inv.output_preview or "")


def _by_step(trace: Any) -> list[list[Any]]:
    """A trace's tool calls grouped by the model step that asked for them, in step order.

    Parallel calls of one step finish (and are recorded) in whatever order they complete, so
    only the grouping is stable across runs; calls with no known step form one last group."""
    position = {st.id: i for i, st in enumerate(trace.steps)}
    groups: list[list[Any]] = [[] for _ in range(len(trace.steps) + 1)]
    for inv in trace.invocations:
        groups[position.get(inv.step_id, len(trace.steps))].append(inv)
    return [sorted(g, key=_outcome) for g in groups if g]


def _result_diffs(recorded: Any, replayed: Any) -> list[dict[str, Any]]:
    """Tool calls whose result (relevance level or output) differs. Within a step the calls are
    matched as a set; ``tool_call`` counts calls in that canonical order (step, then sorted)."""
    pairs = [
        pair
        for xs, ys in zip(_by_step(recorded), _by_step(replayed), strict=False)
        for pair in zip(xs, ys, strict=False)
    ]
    return [
        {
            "tool_call": j + 1,
            "kind": "tool_result",
            "tool": y.tool_name,
            "recorded": x.relevance_level or (x.output_preview or "")[:120],
            "replayed": y.relevance_level or (y.output_preview or "")[:120],
        }
        for j, (x, y) in enumerate(pairs)
        if _outcome(x) != _outcome(y)
    ]


def divergence(recorded: Any, replayed: Any, notes: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare two traces step by step; the first difference is the headline."""
    rs, ps = recorded.steps, replayed.steps
    diffs = [
        d
        for i in range(max(len(rs), len(ps)))
        for d in _step_diffs(i, rs[i] if i < len(rs) else None, ps[i] if i < len(ps) else None)
    ]
    diffs += _result_diffs(recorded, replayed)
    answers = (recorded.session.answer or ""), (replayed.session.answer or "")
    same_answer = answers[0] == answers[1]
    if not same_answer:
        diffs.append({"kind": "answer", "recorded": answers[0][:300], "replayed": answers[1][:300]})
    return {
        "original_session_id": recorded.session.session_id,
        "replay_session_id": replayed.session.session_id,
        "identical": not diffs,
        "first_divergence": diffs[0] if diffs else None,
        "differences": diffs,
        "replay_notes": notes,
        "recorded_steps": len(rs),
        "replayed_steps": len(ps),
        "same_answer": same_answer,
    }
