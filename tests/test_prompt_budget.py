"""Prompts bounded by design (issue 19): the planner's map within a token budget, led by the domains
the question's symptoms touch; one plan step per symptom; the answer call on distilled findings.

The runs use the shipped base (30 runbooks): the issue's figures are for it, and the full map's
growth with the base is what the budget must stop. The 1,000-runbook figure is ``bench_cost.py``'s;
here the map builder is checked on a 1,000-document catalog directly."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
from langchain_core.messages import AIMessage

from graph.context import Context
from graph.findings import answer_evidence, distil
from graph.routing import classify, symptoms
from graph.state import run_input
from llm.offline.text import estimate_tokens
from retrieval.domains import knowledge_map_yaml
from retrieval.l0.catalog import DocInfo
from retrieval.lookup.knowledge_map import budgeted_map, rank_documents
from tests.support.kb import started_services
from tests.support.paths import ROOT
from tests.support.spies import ModelInputs

THREE_SYMPTOMS = (
    "订单服务最近连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，"
    "请综合分析可能的根因并给出排查步骤和处理建议"
)
EACH_SYMPTOM = [
    "infrastructure/mysql-connection-pool.md",
    "api/payment-errors.md",
    "cache/redis-memory-full.md",
]
UNRELATED = ["jvm/jvm-thread-pool-cpu-high.md", "jvm/jvm-outofmemoryerror.md"]


@pytest.fixture(scope="module")
async def shipped(tmp_path_factory: pytest.TempPathFactory, embeddings):
    """The offline stack on a copy of the shipped base (its vectors ship with it: nothing embeds)."""
    base = tmp_path_factory.mktemp("shipped")
    kb = base / "shipped-kb"
    shutil.copytree(ROOT / "knowledge_base", kb)
    async with started_services(base, embeddings, knowledge_base_dir=kb) as svc:
        yield svc


class Usage(ModelInputs):
    """What each node sent, and the tokens each call reported."""

    def __init__(self) -> None:
        super().__init__()
        from langchain_core.callbacks import AsyncCallbackHandler

        outer, self.totals = self, []

        class _Totals(AsyncCallbackHandler):
            async def on_llm_end(self, response, **kw):  # noqa: ANN001
                msg = response.generations[0][0].message
                outer.totals.append((msg.usage_metadata or {}).get("total_tokens", 0))

        self.usage = _Totals()


async def _run(svc, question: str, flow: str = "CHAT"):  # noqa: ANN001, ANN202
    seen = Usage()
    config = {
        "configurable": {"thread_id": uuid.uuid4().hex},
        "callbacks": [seen.handler, seen.usage],
    }
    graph = svc.graphs.aiops if flow == "AI_OPS" else svc.graphs.chat
    out = await graph.ainvoke(run_input(question, flow), config, context=Context())
    return out, seen


def _tokens(messages) -> int:  # noqa: ANN001
    return estimate_tokens("\n".join(str(m.content) for m in messages))


def _json(block: str) -> dict:
    """The JSON of a ```json block (its strings may hold fences of their own)."""
    return json.loads(block[block.index("```json") + 7 : block.rindex("```")])


def _cited(answer: str) -> list[str]:
    line = next(x for x in reversed(answer.splitlines()) if x.startswith("来源："))
    return line.removeprefix("来源：").split("、")


# --- whole runs on the shipped base -------------------------------------------------------------


async def test_three_symptom_chat_plans_one_step_per_symptom_within_the_cost_ceiling(
    shipped,  # noqa: ANN001
) -> None:
    out, seen = await _run(shipped, THREE_SYMPTOMS)
    (planner,) = seen.for_node("planner")
    assert _tokens(planner) <= 2000  # was 5,879: the map listed every document of the base
    assert len(out["executor_feedback"]) == 3  # one step per symptom, no JVM or "分析" step
    assert _cited(out["answer"]) == EACH_SYMPTOM  # each symptom's runbook, nothing unrelated
    assert not any(doc in out["answer"] for doc in UNRELATED)
    assert len(seen.calls) <= 7 and sum(seen.totals) <= 7800  # was 9 calls, 18,080 tokens


async def test_planner_map_leads_with_the_symptoms_domains_and_stays_out_of_the_executor(
    shipped,  # noqa: ANN001
) -> None:
    _, seen = await _run(shipped, THREE_SYMPTOMS)
    system = seen.for_node("planner")[0][0].content
    kmap = system[system.index("```yaml") : system.index("## 规则")]
    order = [
        line.strip().rstrip(":")
        for line in kmap.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert order[:3] == ["infrastructure", "api", "cache"]  # the symptoms' domains, in order
    for title in ("MySQL 连接池配置", "支付网关错误码手册", "Redis 内存满与淘汰策略处理"):
        assert title in kmap
    # A domain no symptom touches is named, its documents not listed.
    assert "Kafka 消费积压处理" not in kmap and "messaging" in kmap
    task = _json(seen.for_node("planner")[0][1].content)
    assert len(task["symptoms"]) == 3
    for messages in seen.for_node("executor"):  # FS-5: the map goes to the planner only
        assert (
            "domains:" not in messages[0].content
            and "MySQL 连接池配置与" not in messages[0].content
        )


async def test_answer_call_sees_distilled_findings(shipped) -> None:  # noqa: ANN001
    out, seen = await _run(shipped, THREE_SYMPTOMS)
    (answer,) = seen.for_node("answer")
    assert _tokens(answer) <= Context().answer_evidence_tokens + 600  # was 6,913
    data = _json(answer[1].content)
    steps = {f["instruction"] for f in out["executor_feedback"]}
    lookups = [e for e in data["evidence"] if e["tool"] == "lookup_knowledge"]
    assert len(lookups) == 3 and {e["step"] for e in lookups} == steps
    for e in lookups:  # a confident lookup answers with its primary: its supplements are left out
        if e["result"].get("relevanceLevel") in ("PRECISE", "HIGHLY_RELEVANT"):
            assert e["result"]["supplement"] == []


async def test_aiops_planner_prompt_is_bounded_and_calls_stay_few(shipped) -> None:  # noqa: ANN001
    out, seen = await _run(shipped, "", flow="AI_OPS")
    assert all(_tokens(m) <= 2000 for m in seen.for_node("planner"))
    assert len(seen.calls) <= 8 and out["answer"].count("## 告警根因分析") >= 3


# --- the map builder on a large base (pure) ------------------------------------------------------


def _catalog(n: int = 1000, domains: int = 30) -> list[DocInfo]:
    docs = [
        DocInfo(
            doc_id=f"d{i}",
            file_path=f"area-{i % domains:02d}/runbook-{i:04d}.md",
            title=f"Service {i} 组件 {i % 7} 故障处理手册 (Component {i} Runbook)",
            category=f"area-{i % domains:02d}",
            keywords=(f"ERR_CODE_{i:04d}", f"svc-{i}", "故障处理", "component"),
            covers=("现象与影响", "诊断步骤", "止血操作", "根因与修复"),
            terms=frozenset({"service", "组件", "故障", "处理", f"err_code_{i:04d}"}),
        )
        for i in range(n)
    ]
    docs.append(
        DocInfo(
            doc_id="pool",
            file_path="infrastructure/mysql-connection-pool.md",
            title="MySQL 连接池配置与连接池超时排查 (HikariCP Connection Pool)",
            category="infrastructure",
            keywords=("HikariCP", "连接池超时", "连接池耗尽"),
            covers=("连接池超时与连接池耗尽的诊断流程",),
            terms=frozenset({"mysql", "连接池", "超时", "hikaricp", "等待"}),
        )
    )
    return docs


def test_map_stays_within_budget_on_a_thousand_runbooks() -> None:
    docs = _catalog()
    categories: dict[str, list[DocInfo]] = {}
    for d in docs:
        categories.setdefault(d.category, []).append(d)
    when = {c: f"领域 {c} 的运维手册，问题涉及该领域的组件故障时检索。" * 3 for c in categories}
    full = knowledge_map_yaml(categories, when)
    assert estimate_tokens(full) > 20 * 1000  # what the planner used to be sent
    symptom = "订单服务 HikariCP 连接池超时"
    ranked = [rank_documents(symptom, docs, lambda t: 5.0 if t == "hikaricp" else 1.0)]
    kmap = budgeted_map(categories, when, ranked, budget=1000)
    assert estimate_tokens(kmap) <= 1000
    assert kmap.index("infrastructure:") < kmap.index("area-")  # the touched domain first
    assert "MySQL 连接池配置与连接池超时排查" in kmap and "HikariCP" in kmap
    assert "omitted_domains" in kmap or "other_domains" in kmap  # the rest named or counted


# --- symptoms and routing (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (THREE_SYMPTOMS, 3),
        ("Kafka consumer lag keeps growing and also the broker disk is almost full", 2),
        ("Redis 内存快满了，订单服务又报连接超时，怎么排查", 2),
        # One incident told in several clauses, or with several codes, is one symptom.
        ("ES 查询越来越慢，数据节点的老年代一直在做 GC", 1),
        (
            "etcd reports 'mvcc: database space exceeded' and the kube-apiserver rejects every write",
            1,
        ),
        ("KafkaUnderReplicatedPartitions is firing, producers get NotEnoughReplicasException", 1),
        ("线上有个几百万字段的 hash，想删掉又怕把 redis 卡住，怎么删比较稳", 1),
        ("帮我看下服务 order-service 的日志，连接池是不是又满了，为什么会满", 1),
        ("how do I diagnose and fix a deadlock in MySQL", 1),
    ],
)
def test_symptoms_of_a_question(question: str, expected: int) -> None:
    found = symptoms(question)
    assert len(found) == expected, found


def test_a_multi_symptom_question_takes_the_planner_route() -> None:
    # the routing narrows a question's domains to one unless its clauses name several
    assert classify(THREE_SYMPTOMS, {"infrastructure"}) == "complex"
    assert classify("ES 查询越来越慢，数据节点的老年代一直在做 GC", {"jvm"}) == "simple"
    # asks for the tools, names no runbook's domain: the assistant calls them, no plan
    assert classify("现在几点？看下当前告警，以及服务 billing 的日志", set()) == "simple"


# --- distilled findings (pure) ------------------------------------------------------------------


def test_distil_keeps_whole_paragraphs_and_steps_within_the_budget() -> None:
    steps = "\n".join(
        f"{i}. 第 {i} 步：执行 `kubectl rollout undo` 并确认 Pod 恢复。" for i in range(1, 6)
    )
    filler = "\n\n".join(f"背景说明第 {i} 段，与回滚无关的历史信息。" * 4 for i in range(8))
    text = f"手册 > 止血\n\n{filler}\n\n{steps}\n\n{filler}"
    out = distil(text, "怎么回滚 rollout undo", 200)
    assert estimate_tokens(out) <= 230 and out.startswith("手册 > 止血")
    assert steps in out  # the numbered list whole, with its own numbering
    assert "未列出" in out  # says what it left out
    assert distil("短文本。", "x", 200) == "短文本。"


def test_findings_keep_the_supplement_a_later_step_points_back_to() -> None:
    from graph.evidence import Evidence

    first = {
        "found": True,
        "relevanceLevel": "PRECISE",
        "primary": {"source": "a/pool.md", "content": "连接池手册正文"},
        "supplement": [
            {
                "source": "b/pay.md",
                "breadcrumb": "支付错误码 > 超时",
                "content": "ERR_TIMEOUT 说明",
            },
            {"source": "c/jvm.md", "breadcrumb": "JVM 线程 > 栈", "content": "线程栈说明"},
        ],
    }
    again = {
        "found": True,
        "message": "匹配的文档 《支付错误码》 本会话已返回过，内容不再重复发送。",
    }
    evs = [
        Evidence("lookup_knowledge", {"query": "连接池"}, "c1", True, "", first),
        Evidence("lookup_knowledge", {"query": "ERR_TIMEOUT"}, "c2", True, "", again),
    ]
    feedback = [
        {"instruction": "连接池", "call_ids": ["c1"]},
        {"instruction": "ERR_TIMEOUT", "call_ids": ["c2"]},
    ]
    items = answer_evidence(evs, feedback, 2400, "q")
    sups = items[0]["result"]["supplement"]
    assert [s["source"] for s in sups] == ["b/pay.md"]  # the JVM supplement answers no step
    assert items[1]["step"] == "ERR_TIMEOUT" and "已返回过" in items[1]["result"]["message"]
    assert all(isinstance(i, dict) and "result" in i for i in items)
    assert not isinstance(items[0]["result"], AIMessage)
