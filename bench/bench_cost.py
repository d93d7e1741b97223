"""Model cost per answer (issues 14 and 19): model calls, tokens per call role and the planner's
prompt for three runs — an AI-Ops analysis, the three-symptom chat and the ISS-002 scenario.

Measured on the **shipped base** (the 30 runbooks in ``knowledge_base/``), for the baseline commit
and the working tree in the same run, and on a **synthetic 1,000-runbook base** (the shipped
runbooks plus generated ones over 30 more domains; working tree only): the planner's map must stay
within its budget however large the base grows.

Each variant runs in a subprocess (``--as-variant``) against its own code: the baseline is
extracted with ``git archive`` (``_common.seed_tree``), the working tree is this checkout. Each
starts the offline stack on a private copy of the runbooks. Tokens are what each model call
reports in ``usage_metadata`` (the figure ``agent_step.token_count`` records): the offline model's
estimate, and for the ISS-002 model the same estimator over what it was sent. "Prompt" tokens are
a call's ``input_tokens``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import _common
from _cost_scripted import scripted_factory

BASELINE_REV = "33847d9"  # the commit issue 19 measured (18,080 tokens for the three symptoms)
SHIPPED_KB = _common.ROOT / "knowledge_base"
SYNTHETIC_RUNBOOKS = 1000
SYNTHETIC_DOMAINS = 30  # generated runbooks spread over this many extra domains
THREE_SYMPTOMS = (
    "订单服务最近连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，"
    "请综合分析可能的根因并给出排查步骤和处理建议"
)
ISS002_QUESTION = "连接池问题排查"


# --- inside one variant -------------------------------------------------------------------------


def _counter():  # noqa: ANN202 - a callback handler class built on the variant's LangChain
    from langchain_core.callbacks import AsyncCallbackHandler

    class Counts(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.calls: Counter[str] = Counter()
            self.tokens: Counter[str] = Counter()
            self.prompt: dict[str, list[int]] = {}  # node → each call's input tokens
            self.per_call: list[int] = []
            self.tools: Counter[str] = Counter()
            self._node: dict[Any, str] = {}

        async def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kw):  # noqa: ANN001
            node = str((metadata or {}).get("langgraph_node") or "?")
            self._node[run_id] = node
            self.calls[node] += 1

        async def on_llm_end(self, response, *, run_id, **kw):  # noqa: ANN001
            msg = getattr(response.generations[0][0], "message", None)
            usage = getattr(msg, "usage_metadata", None) or {}
            n = int(usage.get("total_tokens") or 0)
            node = self._node.pop(run_id, "?")
            self.tokens[node] += n
            self.prompt.setdefault(node, []).append(int(usage.get("input_tokens") or 0))
            self.per_call.append(n)

        async def on_tool_start(self, serialized, input_str, *, metadata=None, **kw):  # noqa: ANN001
            self.tools[str((serialized or {}).get("name") or kw.get("name") or "?")] += 1

    return Counts()


def _run_input(question: str, flow: str) -> dict[str, Any]:
    from graph import state

    if hasattr(state, "run_input"):
        return state.run_input(question, flow)  # type: ignore[return-value]
    if flow == "AI_OPS":
        from graph.aiops import AIOPS_TASK

        question = question or AIOPS_TASK
    return state.new_run_input(question, uuid.uuid4().hex, flow)


async def _one(graph: Any, question: str, flow: str, context: Any) -> dict[str, Any]:
    counts = _counter()
    config = {"configurable": {"thread_id": uuid.uuid4().hex}, "callbacks": [counts]}
    out = await graph.ainvoke(_run_input(question, flow), config, context=context)
    return {
        "out": out,
        "model_calls": sum(counts.calls.values()),
        "tokens": sum(counts.tokens.values()),
        "calls_by_node": dict(counts.calls),
        "tokens_by_node": dict(counts.tokens),
        "prompt_tokens_by_node": counts.prompt,
        "planner_prompt_tokens": max(counts.prompt.get("planner", []), default=0),
        "max_call_tokens": max(counts.per_call, default=0),
        "tool_calls": sum(counts.tools.values()),
        "lookups": counts.tools["lookup_knowledge"],
    }


def _public(r: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {k: v for k, v in r.items() if k != "out"} | extra


def _lookup_payloads(out: dict[str, Any]) -> list[dict[str, Any]]:
    from langchain_core.messages import ToolMessage

    return [
        json.loads(m.content)
        for m in out["scratch"]
        if isinstance(m, ToolMessage) and m.name == "lookup_knowledge"
    ]


def _served_twice(out: dict[str, Any]) -> list[str]:
    per_doc = Counter(
        src
        for p in _lookup_payloads(out)
        for src in [
            *([p["primary"]["source"]] if p.get("primary") else []),
            *[s["source"] for s in p.get("supplement") or []],
        ]
        if "," not in src
    )
    return sorted(d for d, n in per_doc.items() if n > 1)


def _alerts_covered(out: dict[str, Any]) -> dict[str, Any]:
    from langchain_core.messages import ToolMessage

    names: list[str] = []
    for m in out["scratch"]:
        if isinstance(m, ToolMessage) and m.name == "query_prometheus_alerts":
            names = [a["alertname"] for a in json.loads(m.content).get("alerts", [])]
    report = out.get("answer") or ""
    analysed = report.count("告警根因分析")
    return {
        "alerts": names,
        "analysis_sections": analysed,
        "every_alert_covered": bool(names)
        and analysed >= len(names)
        and all(n in report for n in names),
    }


async def variant(kb: Path) -> dict[str, Any]:
    from graph.context import Context
    from graph.graphs import compile_graphs
    from services import Services
    from settings import load_settings

    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        base = Path(tmp)
        shutil.copytree(kb, base / "knowledge_base")
        settings = load_settings(
            database_url=f"sqlite+aiosqlite:///{base / 'kb.db'}",
            milvus_uri=str(base / "milvus.db"),
            knowledge_base_dir=base / "knowledge_base",
            data_dir=base,
        )
        svc = await Services.start(settings)
        try:
            graphs = svc.graphs
            aiops = await _one(graphs.aiops, "", "AI_OPS", Context())
            chat = await _one(graphs.chat, THREE_SYMPTOMS, "CHAT", Context())
            factory = scripted_factory()
            if hasattr(svc, "deps"):  # today: the nodes read their models from AgentDeps
                deps = dataclasses.replace(svc.deps, models=factory)
                scripted = compile_graphs(deps, svc.checkpointer)
            else:  # the baseline: from the services object
                svc.models = factory
                scripted = compile_graphs(svc, svc.checkpointer)
            iss = await _one(scripted.chat, ISS002_QUESTION, "CHAT", Context(max_executor_steps=25))
            size = {"documents": len(svc.kb.catalog), "domains": len(svc.kb.catalog.categories())}
        finally:
            await svc.close()
    return {
        "base": size,
        "aiops": _public(aiops, **_alerts_covered(aiops["out"])),
        "three_symptom_chat": _public(
            chat,
            route=chat["out"].get("route"),
            domains=sorted(chat["out"].get("retrieved") or {}),
            queries=_queries(chat["out"]),
            steps=[f["instruction"] for f in chat["out"].get("executor_feedback") or []],
            cited=_cited(chat["out"].get("answer") or ""),
        ),
        "iss002": _public(
            iss,
            issued=len(_lookup_payloads(iss["out"])),
            served_twice=_served_twice(iss["out"]),
            answered=bool(iss["out"].get("answer")),
        ),
    }


def _cited(answer: str) -> list[str]:
    """The sources an answer lists on its 来源 line."""
    for line in reversed(answer.splitlines()):
        if line.startswith("来源："):
            return [x.strip() for x in line.removeprefix("来源：").split("、") if x.strip()]
    return []


def _queries(out: dict[str, Any]) -> list[str]:
    from langchain_core.messages import AIMessage

    return [
        str(tc["args"].get("query", ""))
        for m in out["scratch"]
        if isinstance(m, AIMessage)
        for tc in m.tool_calls
        if tc["name"] == "lookup_knowledge"
    ]


# --- the comparison -----------------------------------------------------------------------------


def _share(new: float, old: float) -> float:
    return round(new / old, 3) if old else float("nan")


def compare(base: dict[str, Any] | None, cur: dict[str, Any]) -> dict[str, Any]:
    """The shipped base: current and (when measured) baseline side by side, with shares."""
    out: dict[str, Any] = {"base": cur.get("base")}
    for run in ("aiops", "three_symptom_chat", "iss002"):
        c = cur[run]
        out[run] = {"current": c}
        if base is not None:
            b = base[run]
            out[run] |= {
                "baseline": b,
                "token_share": _share(c["tokens"], b["tokens"]),
                "model_call_share": _share(c["model_calls"], b["model_calls"]),
                "planner_prompt_share": _share(
                    c.get("planner_prompt_tokens", 0), b.get("planner_prompt_tokens", 0)
                ),
            }
    return out


def targets(shipped: dict[str, Any], synthetic: dict[str, Any]) -> dict[str, bool]:
    a, t, i = (shipped[r]["current"] for r in ("aiops", "three_symptom_chat", "iss002"))
    planner_shipped = max(a["planner_prompt_tokens"], t["planner_prompt_tokens"])
    planner_synthetic = max(
        synthetic["aiops"]["planner_prompt_tokens"],
        synthetic["three_symptom_chat"]["planner_prompt_tokens"],
    )
    return {
        "three_symptom_tokens_le_7800": t["tokens"] <= 7800,
        "three_symptom_one_lookup_per_symptom": t["lookups"] == len(t["steps"]) >= 3,
        "planner_prompt_le_2000_shipped": planner_shipped <= 2000,
        "planner_prompt_le_2500_synthetic": planner_synthetic <= 2500,
        "aiops_model_calls_le_8": a["model_calls"] <= 8,
        "aiops_every_alert_covered": a["every_alert_covered"],
        "iss002_no_document_served_twice": not i["served_twice"],
    }


# What a baseline imports that today's environment no longer installs (the seed parsed
# frontmatter with python-frontmatter), as its pyproject.toml pinned it.
BASELINE_ONLY = ["python-frontmatter>=1.3,<1.4"]


def _baseline_env(seed: Path) -> dict[str, str]:
    """PYTHONPATH holding the baseline-only packages, installed once next to the extracted tree
    — only for a baseline that imports them (issue 14's did; issue 19's does not)."""
    uses = subprocess.run(
        ["grep", "-rlq", "^import frontmatter", str(seed / "retrieval")], check=False
    )
    if uses.returncode != 0:
        return {}
    target = seed.parent / f"{seed.name}-deps"
    if not (target / ".done").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
            + [str(target), *BASELINE_ONLY],
            check=True,
        )
        (target / ".done").touch()
    return {"PYTHONPATH": str(target)}


def synthetic_base(folder: Path, total: int, seed: int = 5) -> Path:
    """The shipped runbooks plus generated ones (``_common.runbook``) up to ``total``, the
    generated ones spread over ``SYNTHETIC_DOMAINS`` domains of their own."""
    import random

    shutil.copytree(SHIPPED_KB, folder)
    shipped = sum(1 for _ in folder.rglob("*.md"))
    rng = random.Random(seed)
    for i in range(max(total - shipped, 0)):
        rel, text = _common.runbook(rng, i)
        old = rel.split("/", 1)[0]
        domain = f"synthetic-{i % SYNTHETIC_DOMAINS:02d}"
        text = text.replace(f"\ncategory: {old}\n", f"\ncategory: {domain}\n", 1)
        path = folder / domain / rel.split("/", 1)[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rev", default=BASELINE_REV, help="baseline commit (default: %(default)s)")
    ap.add_argument("--kb", type=Path, default=SHIPPED_KB, help="the measured base's runbooks")
    ap.add_argument(
        "--synthetic",
        type=int,
        default=SYNTHETIC_RUNBOOKS,
        help="runbooks in the synthetic base (default: %(default)s)",
    )
    ap.add_argument("--no-baseline", action="store_true", help="measure the working tree only")
    ap.add_argument(
        "--smoke", action="store_true", help="no baseline, a 60-runbook synthetic base (CI)"
    )
    ap.add_argument("--as-variant", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.as_variant:
        print(json.dumps(asyncio.run(variant(args.kb)), ensure_ascii=False, default=str))
        return
    if args.smoke:
        args.no_baseline, args.synthetic = True, 60
    base = None
    if not args.no_baseline:
        seed = _common.seed_tree(args.rev)
        if seed is None:
            sys.exit(f"cannot extract baseline {args.rev} with git archive")
        kb = ["--kb", str(args.kb.resolve())]
        base = _common.run_variant("bench_cost.py", seed, kb, env=_baseline_env(seed))
    current = _common.run_variant("bench_cost.py", _common.ROOT, ["--kb", str(args.kb.resolve())])
    with tempfile.TemporaryDirectory(prefix="bench-cost-synthetic-") as tmp:
        folder = synthetic_base(Path(tmp) / "knowledge_base", args.synthetic)
        synthetic = _common.run_variant("bench_cost.py", _common.ROOT, ["--kb", str(folder)])
    shipped = compare(base, current)
    goals = targets(shipped, synthetic)
    doc = {
        "bench": "model_cost",
        "baseline_rev": None if base is None else args.rev,
        "machine": _common.machine(),
        "shipped": shipped,
        "synthetic": synthetic,
        "summary": {
            "three_symptom_tokens": current["three_symptom_chat"]["tokens"],
            "three_symptom_model_calls": current["three_symptom_chat"]["model_calls"],
            "planner_prompt_tokens_shipped": current["three_symptom_chat"]["planner_prompt_tokens"],
            "planner_prompt_tokens_synthetic": synthetic["three_symptom_chat"][
                "planner_prompt_tokens"
            ],
            "aiops_model_calls": current["aiops"]["model_calls"],
            "aiops_planner_prompt_tokens": current["aiops"]["planner_prompt_tokens"],
            "synthetic_base": synthetic.get("base"),
        },
        "targets": goals,
        "all_targets_met": all(goals.values()),
    }
    print(json.dumps(doc, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
