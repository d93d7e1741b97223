"""Answers by intent (issue 19): the question's intent picks the runbook's sections, quoted whole;
one part per symptom; honest wording by relevance level; only documents in the base cited.

Pure: the shipped runbooks, read as the offline model reads them, and lookup results shaped as
``lookup_knowledge`` returns them. Each ``test_defect_*`` is one defect seen on commit 33847d9.
"""

from __future__ import annotations

import re

import pytest

from evals.words import cited_paths
from graph.evidence import Evidence
from graph.extractive import extractive_answer
from graph.intent import Intent, detect, intents
from graph.sections import parse, pick
from persistence.evaluation import Call, evidence_score
from retrieval.parsing.documents import parse_document
from tests.support.paths import ROOT

RUNBOOKS = ROOT / "knowledge_base"
SHIPPED = {p.relative_to(RUNBOOKS).as_posix() for p in RUNBOOKS.rglob("*.md")}
NONE_HINT = "知识库中没有找到足够相关的文档，请基于已有信息作答，或说明缺少的具体信息"


def read(path: str) -> tuple[str, str] | None:
    file = RUNBOOKS / path
    if not file.is_file():
        return None
    doc = parse_document(file.read_bytes(), path)
    return doc.title, doc.body


def lookup(
    query: str, level: str, primary: str, *supplements: str, aspects: dict | None = None
) -> Evidence:
    """A lookup result: each document's content is its opening text, as a chunk would be."""

    def item(path: str) -> dict:
        out = {"source": path, "content": read(path)[1][:600]}
        if aspects and path in aspects:
            out |= {"aspect": aspects[path][0], "relevanceLevel": aspects[path][1]}
        return out

    data = {
        "found": True,
        "relevanceLevel": level,
        "primary": item(primary),
        "supplement": [item(p) for p in supplements],
    }
    return Evidence("lookup_knowledge", {"query": query}, "c1", True, "{}", data)


def answer(question: str, *evs: Evidence) -> str:
    return extractive_answer(question, list(evs), read=read)


def ordered_runs(markdown: str) -> list[list[int]]:
    runs: list[list[int]] = []
    prev = False
    for line in markdown.splitlines():
        m = re.match(r"^(\d+)\. ", line)
        if m:
            (runs[-1].append(int(m.group(1))) if prev else runs.append([int(m.group(1))]))
        prev = bool(m) or (prev and line.startswith(" "))
    return runs


# --- intent ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("How do I fix a pod in CrashLoopBackOff?", Intent.FIX),
        ("redis 报 OOM command not allowed 了，写不进去，怎么救", Intent.FIX),
        ("支付网关返回 ERR_TIMEOUT 到底啥意思？", Intent.WHAT_IS),
        ("What does ERR_TIMEOUT from the payment gateway actually mean?", Intent.WHAT_IS),
        ("从库延迟突然到了 600 秒，一般是啥原因", Intent.WHY),
        ("kubectl get hpa shows TARGETS <unknown>/70% and it never scales. why?", Intent.WHY),
        ("pod 一直 CrashLoopBackOff，咋看它为啥挂的", Intent.WHY),
        ("怎么查到底是哪条 SQL 慢", Intent.DIAGNOSE),
        ("How do I find out who is holding the connections?", Intent.DIAGNOSE),
        ("线上出故障了先做什么？", Intent.FIRST_STEP),
        ("Lettuce keeps timing out. where do I even start?", Intent.FIRST_STEP),
        ("Redis 集群", Intent.GENERAL),
    ],
)
def test_intent_of_questions_in_both_languages(question: str, intent: Intent) -> None:
    assert detect(question) == intent


def test_a_question_asking_two_things_has_both_intents() -> None:
    both = intents("What does 'Deadlock found' mean, and is it safe to retry?")
    assert Intent.WHAT_IS in both and Intent.FIX in both


# --- sections ----------------------------------------------------------------------------------


def test_headings_inside_code_blocks_are_not_sections() -> None:
    sections = parse(read("kubernetes/pod-crashloopbackoff.md")[1])
    headings = [s.heading for s in sections]
    assert "止血" in headings and "第四步：保留现场调试" in headings
    assert not any(h.startswith("或在副本上覆盖命令") for h in headings)  # a shell comment


@pytest.mark.parametrize(
    ("path", "question", "wanted"),
    [
        ("kubernetes/pod-crashloopbackoff.md", "线上出故障了先做什么？", "止血"),
        ("troubleshooting/fault-diagnosis-process.md", "线上出故障了先做什么？", "常用止血手段"),
        ("cache/redis-latency.md", "what do I check first?", "Step 1"),
        ("kubernetes/hpa-not-scaling.md", "how do we mitigate it now?", "Mitigation"),
    ],
)
def test_intent_picks_sections_by_heading_in_either_language(
    path: str, question: str, wanted: str
) -> None:
    taken, _, _ = pick(parse(read(path)[1]), question, intents(question), 2400)
    assert any(wanted in s.heading for s in taken), [s.heading for s in taken]


# --- the defects -------------------------------------------------------------------------------


def test_defect_fix_question_gets_the_steps_and_the_mitigation_not_the_symptoms() -> None:
    q = "How do I fix a pod in CrashLoopBackOff? order-service keeps restarting since today's deploy"
    text = answer(
        q, lookup("CrashLoopBackOff pod", "PRECISE", "kubernetes/pod-crashloopbackoff.md")
    )
    assert "0/1     CrashLoopBackOff   7 (2m13s ago)" not in text  # the symptom block
    for step in ("第一步：看退出原因", "第二步：看上一次崩溃的日志", "止血"):
        assert f"**{step}**" in text, text
    assert "--previous" in text and "rollout undo" in text
    assert "```bash\nkubectl -n order describe pod" in text  # commands stay code blocks


def test_defect_kafka_lag_fix_is_more_than_the_first_command() -> None:
    q = "consumer group order-sync is 2M messages behind and the lag keeps growing. how do I fix it?"
    text = answer(q, lookup("consumer lag", "PRECISE", "messaging/kafka-consumer-lag.md"))
    assert "**止血**" in text, text
    assert text.count("```") >= 4  # several commands, each a whole code block


def test_defect_err_timeout_is_not_cut_mid_sentence_and_causes_keep_their_numbers() -> None:
    q = "支付网关返回 ERR_TIMEOUT 到底啥意思？用户说钱好像扣了"
    text = answer(q, lookup("ERR_TIMEOUT 支付 网关", "PRECISE", "api/payment-errors.md"))
    assert "可能已经扣了" in text and "PROCESSING" in text
    assert "第 3 步" not in text and "第 4 步" not in text
    assert not re.search(r"[\u4e00-\u9fff]…", text), text  # nothing cut inside a sentence
    for run in ordered_runs(text):
        assert run == list(range(run[0], run[0] + len(run)))  # the runbook's own numbering


def test_defect_paths_in_commands_stay_code_and_only_base_documents_are_cited() -> None:
    q = "HikariCP pool is full, how do I find out who is holding the connections?"
    text = answer(q, lookup("HikariCP", "PRECISE", "infrastructure/mysql-connection-pool.md"))
    assert "/tmp/threads-1.txt" in text  # the jstack step is quoted…
    line = next(ln for ln in text.splitlines() if "/tmp/threads-1.txt" in ln)
    assert "来源" not in line and "见 " not in line  # …as a command, not as a reference
    assert set(cited_paths(text)) <= SHIPPED
    assert text.rstrip().endswith("来源：infrastructure/mysql-connection-pool.md")


def test_defect_not_found_is_said_once_with_what_to_add() -> None:
    none = Evidence(
        "lookup_knowledge",
        {"query": "RabbitMQ memory alarm"},
        "c1",
        True,
        "{}",
        {"found": False, "relevanceLevel": "NONE", "message": NONE_HINT},
    )
    text = answer("RabbitMQ memory alarm blocked all publishers, how do we recover?", none, none)
    assert text.count("未找到") + text.count("没有找到") == 1, text
    assert "建议在知识库中补充" in text and "RabbitMQ" in text
    assert "来源" not in text


def test_defect_three_symptoms_get_one_part_each_and_unrelated_runbooks_are_left_out() -> None:
    q = "订单服务最近连接池等待线程很高，支付网关又报 ERR_TIMEOUT，Redis 内存也快满了，分别怎么处理？"
    pool = lookup(
        "连接池", "HIGHLY_RELEVANT", "infrastructure/mysql-connection-pool.md",
        "jvm/jvm-thread-pool-cpu-high.md",
    )  # fmt: skip
    timeout = lookup("ERR_TIMEOUT 支付 网关", "PRECISE", "api/payment-errors.md")
    redis = lookup(
        "Redis 内存", "REFERENCE", "cache/redis-latency.md", "cache/redis-memory-full.md"
    )
    text = answer(q, pool, timeout, redis)
    assert [m for m in re.findall(r"^### (\d+)\.", text, flags=re.M)] == ["1", "2", "3"], text
    cited = text.rsplit("来源：", 1)[1]
    assert cited.split("、") == [
        "infrastructure/mysql-connection-pool.md",
        "api/payment-errors.md",
        "cache/redis-memory-full.md",
    ]
    assert "jvm-thread-pool-cpu-high" not in text and "redis-latency" not in text


def test_defect_reference_answer_opens_with_what_may_not_match() -> None:
    q = "our MongoDB replica set keeps electing a new primary, what's going on?"
    text = answer(q, lookup("MongoDB primary", "REFERENCE", "cache/redis-cluster-failover.md"))
    assert text.startswith("注意：知识库中没有与问题直接对应的文档"), text
    assert "根据知识库检索结果" not in text


def test_defect_off_topic_evidence_never_outscores_an_honest_not_found() -> None:
    reference = Call("lookup_knowledge", True, 0, 3, relevance_level="REFERENCE")
    miss = Call("lookup_knowledge", True, 0, 0, relevance_level="NONE")
    precise = Call("lookup_knowledge", True, 1, 0, relevance_level="PRECISE")

    def score(*calls: Call) -> int:
        return evidence_score("SUCCESS", list(calls))["evidence_score"]

    assert score(reference) < score(miss)
    assert score(reference, miss) < score(miss, miss)
    assert score(precise) == 65 and score(miss) == 20


def test_an_answer_names_what_it_left_out_and_where() -> None:
    q = "ERR_TIMEOUT 是什么意思"
    text = answer(q, lookup("ERR_TIMEOUT", "PRECISE", "api/payment-errors.md"))
    left = next(ln for ln in text.splitlines() if ln.startswith("（未展示："))
    assert "「重试与幂等规范」" in left or "等" in left
    assert left.endswith("完整内容见 api/payment-errors.md）")


# --- routing: one symptom spanning two domains is one lookup ----------------------------------


def test_one_clause_naming_two_domains_is_one_symptom() -> None:
    from graph.routing import classify, symptom_domains

    domains = {
        "READONLY": {"cache", "infrastructure"},
        "ERR_TIMEOUT": {"api"},
        "HikariCP": {"infra"},
    }

    def named(text: str) -> set[str]:
        return set().union(*(d for k, d in domains.items() if k in text))

    one = "after the sentinel failover our app still gets READONLY. what's wrong?"
    assert symptom_domains(one, named) == set()  # one clause names both domains
    two = "支付网关 ERR_TIMEOUT 突增，同时订单服务 HikariCP 连接池超时，分别怎么排查？"
    assert symptom_domains(two, named) == {"api", "infra"}
    assert classify(two, symptom_domains(two, named)) == "complex"
    assert (
        classify("How do I fix X? it keeps restarting since the deploy", {"kubernetes"}) == "simple"
    )


def test_logs_part_names_the_code_a_stack_points_at() -> None:
    """zh-chat-logs-pool-leak: the logs showed the leak detector's stack at ExportService.export,
    but the answer only echoed the lines; it now names the frame as a clue (JDK frames are not)."""
    logs = Evidence(
        "query_logs",
        {"service": "order-service"},
        "c2",
        True,
        "{}",
        {
            "service": "order-service",
            "lines": [
                {"ts": "t1", "message": "Pool stats (total=20, active=20, idle=0, waiting=44)"},
                {
                    "ts": "t2",
                    "message": "java.lang.Exception: Apparent connection leak detected at "
                    "java.lang.Thread.run(Thread.java:833) at "
                    "com.acme.order.report.ExportService.export(ExportService.java:87)",
                },
            ],
        },
    )
    text = answer("order-service 的连接池为什么满了", logs)
    clue = next(line for line in text.splitlines() if "代码位置" in line)
    assert "com.acme.order.report.ExportService.export" in clue and "ExportService.java:87" in clue
    assert "Thread.run" not in clue
