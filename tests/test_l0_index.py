"""L0 keyword index, pure."""

from retrieval.l0.l0_index import L0Entry, L0Index, naive_search

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


def test_identifiers_match_in_any_spelling() -> None:
    alert = L0Entry("c", "ocp/ClusterOperatorDown.md", "Cluster Operator Down", "ocp")
    idx = L0Index([alert, PAY, POOL, REDIS])
    for q in (
        "ClusterOperatorDown",
        "cluster operator down",
        "cluster-operator-down",
        "CLUSTER_OPERATOR_DOWN firing since 10:02",
        "告警 ClusterOperatorDown 怎么处理",
    ):
        assert ids(idx.search(q)) == ["c"], q
    # ...but never inside a longer identifier
    assert idx.search("ClusterOperatorDownscaled") == []
    assert idx.search("MyClusterOperatorDown") == []


def test_file_stem_is_a_term_but_generic_stems_are_not() -> None:
    idx = L0Index(
        [
            L0Entry("k", "k8s/KubePodCrashLooping.md", "Pod 反复重启", "k8s"),
            L0Entry("x", "k8s/README.md", "说明", "k8s"),
        ]
    )
    assert ids(idx.search("KubePodCrashLooping")) == ["k"]
    assert idx.search("see the readme") == []


def test_spaces_between_chinese_words_do_not_break_a_keyword() -> None:
    assert ids(index().search("数据库 连接池 超时 怎么排查")) == ["m"]
    assert ids(index().search("连接池　超时")) == ["m"]  # full-width space


def test_several_matches_are_ranked_and_one_means_one() -> None:
    idx = index()
    assert len(idx.search("HikariCP")) == 1
    ranked = idx.search("ERR_TIMEOUT 之后 Redis 和 HikariCP 连接池超时")
    assert ids(ranked)[0] == "m" and set(ids(ranked)) == {"m", "p", "r"}
