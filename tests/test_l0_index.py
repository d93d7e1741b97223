"""L0 keyword index, pure."""

from retrieval.l0_index import L0Entry, L0Index, naive_search

PAY = L0Entry(
    "p",
    "api/payment-errors.md",
    "支付网关错误码手册 (Payment Gateway Error Codes)",
    "api",
    ("ERR_TIMEOUT", "ERR_CARD_DECLINED", "支付超时"),
)
POOL = L0Entry(
    "m",
    "infrastructure/mysql-connection-pool.md",
    "MySQL 连接池配置",
    "infrastructure",
    ("HikariCP", "连接池超时", "maxLifetime"),
)
REDIS = L0Entry(
    "r",
    "infrastructure/redis-config.md",
    "Redis 配置",
    "infrastructure",
    ("Redis", "maxmemory-policy"),
)


def index() -> L0Index:
    return L0Index([PAY, POOL, REDIS])


def ids(matches) -> list[str]:  # noqa: ANN001
    return [m.entry.doc_id for m in matches]


def test_exact_keyword_case_insensitive() -> None:
    assert ids(index().search("err_timeout 是什么意思")) == ["p"]
    assert ids(index().search("hikaricp")) == ["m"]


def test_ascii_terms_need_word_boundaries() -> None:
    assert index().search("ERR_TIMEOUTS happened") == []
    assert ids(index().search("redis-cli 连不上")) == ["r"]
    assert index().search("predisposed") == []


def test_chinese_terms_match_inside_sentences() -> None:
    assert ids(index().search("线上出现连接池超时怎么办")) == ["m"]


def test_title_parts_match() -> None:
    assert ids(index().search("payment gateway error codes")) == ["p"]


def test_more_matched_keywords_rank_first() -> None:
    ranked = index().search("Redis 和 HikariCP 连接池超时 maxLifetime")
    assert ids(ranked) == ["m", "r"]
    assert sorted(ranked[0].keywords) == ["hikaricp", "maxlifetime", "连接池超时"]


def test_add_and_remove_update_the_index() -> None:
    idx = index()
    idx.add(L0Entry("k", "ops/k8s.md", "Kubernetes 排障", "ops", ("CrashLoopBackOff",)))
    assert ids(idx.search("pod CrashLoopBackOff")) == ["k"]
    idx.remove("k")
    assert idx.search("pod CrashLoopBackOff") == []
    idx.add(L0Entry("m", POOL.file_path, POOL.title, POOL.category, ("Druid",)))  # re-import
    assert idx.search("HikariCP") == [] and ids(idx.search("druid")) == ["m"]


def test_same_answers_as_the_naive_scan() -> None:
    entries = [PAY, POOL, REDIS]
    for q in ["ERR_CARD_DECLINED 和 支付超时", "maxmemory-policy 调整", "无关问题"]:
        assert sorted(ids(L0Index(entries).search(q))) == sorted(naive_search(entries, q))


def test_empty_index_and_query() -> None:
    assert L0Index().search("anything") == []
    assert index().search("   ") == []
