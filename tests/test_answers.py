"""Offline answers an on-call engineer can follow: numbered steps whole, clean Markdown, the
question quoted whole, follow-ups resolved from the conversation. Pure functions on the shipped
runbooks; the end-to-end runs are in ``test_followups.py``."""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage, HumanMessage

from graph.evidence import Evidence
from graph.excerpt import as_markdown, parse, quote, select
from graph.extractive import extractive_answer
from graph.report import build_report
from llm.offline.followup import earlier_questions, with_subject
from tests.support.paths import ROOT

RUNBOOKS = ROOT / "knowledge_base"
# What the lookup returned for "Redis OOM command not allowed 怎么处理？" (an L0 summary of
# infrastructure/redis-config.md): before, the answer showed "- 4. 用 redis-cli --bigkeys…" alone.
REDIS_OOM_SNIPPET = """《Redis 配置与常见故障处理 (Redis Configuration)》
摘要：汇总生产环境 Redis 的内存淘汰、持久化、超时保活，并给出 OOM、READONLY 等常见报错的处理步骤。
正文节选（内存与淘汰策略 > OOM command not allowed 处理）：
报错全文：`OOM command not allowed when used memory > 'maxmemory'.`

1. `INFO memory` 确认 `used_memory` 已达到 `maxmemory`；
2. `CONFIG GET maxmemory-policy` 检查是否为 `noeviction`，或是 `volatile-*` 但 key 没有 TTL；
3. `INFO keyspace` 查看各库 key 数与 `expires` 数量对比；
4. 用 `redis-cli --bigkeys` 找出异常增长的大 Key；
5. 止血：临时调大 `maxmemory`（确认主机内存有余量）或切换为 `allkeys-lru`，然后清理无 TTL 的脏数据。
"""
REDIS_ALERT = {
    "alertname": "RedisMemoryUsageHigh",
    "severity": "warning",
    "service": "session-cache",
    "summary": "Redis 内存使用率超过 90%",
    "description": "used_memory / maxmemory = 93%，maxmemory-policy=noeviction，写入可能返回 OOM command not allowed。",
    "labels": {"instance": "redis-session-0"},
}


def _lookup(source: str, content: str, found: bool = True) -> Evidence:
    data = {"found": found, "primary": {"source": source, "content": content}} if found else {}
    return Evidence("lookup_knowledge", {"query": "q"}, "call-1", True, "{}", data)


def _body(path: str) -> str:
    """A runbook without its frontmatter, as a lookup returns it."""
    return (RUNBOOKS / path).read_text(encoding="utf-8").split("---", 2)[2]


def _ordered_lists(markdown: str) -> list[list[int]]:
    """The numbers of each run of consecutive "N. " lines."""
    runs: list[list[int]] = []
    prev_numbered = False
    for line in markdown.splitlines():
        m = re.match(r"^(\d+)\. ", line)
        if m and prev_numbered:
            runs[-1].append(int(m.group(1)))
        elif m:
            runs.append([int(m.group(1))])
        prev_numbered = bool(m)
    return runs


def assert_clean_markdown(markdown: str) -> None:
    for line in markdown.splitlines():
        prose = re.sub(r"`[^`]*`", "", line)  # inline code may hold any asterisks
        assert not re.match(r"^\s*[-*+]\s+[-*+]\s", line), f"doubled bullet: {line!r}"
        assert not re.match(r"^\s*[-*+]\s+\d+[.)]\s", line), f"a step inside a bullet: {line!r}"
        assert prose.count("**") % 2 == 0, f"unbalanced bold: {line!r}"
        assert not re.search(r"(?<!\*)\*[^*\s][^*]*\*\*", prose), f"broken emphasis: {line!r}"
    for run in _ordered_lists(markdown):
        assert run == list(range(1, len(run) + 1)), f"steps not whole: {run}"


def test_a_picked_step_brings_its_whole_list_in_its_own_numbering() -> None:
    answer = extractive_answer(
        "Redis OOM command not allowed 怎么处理？",
        [_lookup("infrastructure/redis-config.md", REDIS_OOM_SNIPPET)],
    )
    assert_clean_markdown(answer)
    assert _ordered_lists(answer) == [[1, 2, 3, 4, 5]]
    assert "4. 用 `redis-cli --bigkeys` 找出异常增长的大 Key；" in answer
    assert "来源：infrastructure/redis-config.md" in answer


def test_steps_across_code_blocks_are_one_list_and_commands_stay_code() -> None:
    text = _body("cache/redis-memory-full.md")
    lines = parse(text)
    emergency = [ln for ln in lines if ln.group is not None and "maxmemory" in ln.text]
    group = emergency[0].group
    assert [ln.number for ln in lines if ln.group == group] == [1, 2, 3, 4, 5]
    picked = select("客户端缓冲区过大 omem CLIENT KILL", text, 2)
    assert [ln.number for ln in picked if ln.group == group] == [1, 2, 3, 4, 5]
    commands = [ln for ln in lines if ln.code]
    assert any(
        ln.text.startswith("redis-cli -h redis-cache-0 CONFIG SET maxmemory 12gb")
        for ln in commands
    )
    assert "- `redis-cli -h redis-cache-0 CONFIG SET maxmemory 12gb`" in as_markdown(commands)


def test_a_list_cut_by_its_chunk_keeps_its_numbers_in_words() -> None:
    # A chunk that begins mid-list: a Markdown list would show "4." as "1.".
    md = "\n".join(
        as_markdown(parse("4. **客户端缓冲区过大**：CLIENT KILL\n5. 集群模式：rebalance"))
    )
    assert md.splitlines() == [
        "- 第 4 步：**客户端缓冲区过大**：CLIENT KILL",
        "- 第 5 步：集群模式：rebalance",
    ]


def test_text_cut_short_leaves_no_open_emphasis() -> None:
    md = "\n".join(as_markdown(parse("- 现象：**写入失败\n- **客户端自…")))
    assert_clean_markdown(md)
    assert "客户端自…" in md and "**" not in md


def test_redis_oom_report_is_clean_markdown_with_whole_steps() -> None:
    text = _body("cache/redis-memory-full.md")
    evidence = [_lookup("cache/redis-memory-full.md", text)]
    report = build_report([REDIS_ALERT], {"RedisMemoryUsageHigh": evidence})
    assert_clean_markdown(report)
    section = report.split("## 处理方案执行1")[1].split("## ")[0]
    # the plan is for the cause the alert shows (noeviction): that step whole, in plan order
    steps = _ordered_lists(section)[0]
    assert steps == list(range(1, len(steps) + 1))
    assert "1. **纯缓存实例**：把策略从 `noeviction` 改成 `allkeys-lru`" in section
    assert "activedefrag" not in section
    assert "- **现象**：used_memory / maxmemory = 93%" in report


def test_not_found_quotes_the_question_whole() -> None:
    question = (
        "How do I rotate the flux capacitor coolant on the primary deflector array "
        "when the warp core is offline?"
    )
    answer = extractive_answer(question, [_lookup("", "", found=False)])
    assert f"「{question}」" in answer
    assert quote("a " * 300).endswith("…") and len(quote("a " * 300)) <= 201
    assert quote("connection refused " * 30).endswith("refused…")  # never inside a word


def test_a_follow_up_carries_the_earlier_subject() -> None:
    conversation = [
        HumanMessage("ERR_TIMEOUT 是什么意思"),
        AIMessage("……"),
        HumanMessage("那收到它之后可以直接重试吗？"),
    ]
    earlier = earlier_questions(conversation)
    assert earlier == ["ERR_TIMEOUT 是什么意思"]
    assert with_subject("那收到它之后可以直接重试吗？", earlier) == (
        "ERR_TIMEOUT 那收到它之后可以直接重试吗？"
    )
    assert with_subject("Can I retry it right away?", ["What is ERR_TIMEOUT?"]) == (
        "ERR_TIMEOUT Can I retry it right away?"
    )
    # a question with its own subject, or no pointer back, is left alone
    own = "那 ERR_CARD_DECLINED 呢？这个能重试吗"
    assert with_subject(own, earlier) == own
    assert with_subject("Redis 内存满了怎么办", earlier) == "Redis 内存满了怎么办"
    assert with_subject("它能重试吗", []) == "它能重试吗"
