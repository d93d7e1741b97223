"""Salient entities of a query, what a document never mentions, and the judge's entity rules."""

from __future__ import annotations

import pytest

from retrieval.judging.calibration import OTHER_TECHNOLOGY, SIBLING_ALERT, capped
from retrieval.judging.entities import is_alert_name, missing_in, query_entities, technologies_in
from retrieval.judging.relevance import RelevanceLevel, level_for
from retrieval.parsing.terms import document_terms


@pytest.mark.parametrize(
    ("text", "techs"),
    [
        ("MongoDB replica set election keeps happening", {"mongodb"}),
        ("mongod primary stepped down", {"mongodb"}),
        ("Elasticsearch cluster health is red", {"elasticsearch"}),
        ("ES 集群状态 red 了", {"elasticsearch"}),
        ("日志写不进 es 了", set()),  # lower-case "es" is a word, not the product
        ("PG 主从延迟", {"postgresql"}),
        ("KafkaConsumerLagHigh on order-events", {"kafka"}),
        ("达梦数据库连接数满了", {"dameng"}),
        ("Redis 内存快满了，订单服务又报连接超时", {"redis"}),
        ("Java 服务连接池超时", set()),  # runtimes are not technologies here
        ("kubernetes pod pending", set()),  # nor is the platform
    ],
)
def test_technologies(text: str, techs: set[str]) -> None:
    assert technologies_in(text) == techs


@pytest.mark.parametrize(
    ("word", "alert"),
    [
        ("KubePodCrashLooping", True),
        ("TargetDown", True),
        ("KubeAPIDown", True),
        ("CPUThrottlingHigh", True),
        ("OOMKilled", False),  # a reason
        ("CrashLoopBackOff", False),
        ("StatefulSet", False),  # a kind
        ("RabbitMQ", False),  # a product
        ("HikariCP", False),
        ("Watchdog", False),  # one word: only a structured alertname says so
    ],
)
def test_alert_names(word: str, alert: bool) -> None:
    assert is_alert_name(word) is alert


def test_a_document_without_the_product_or_the_alert() -> None:
    kafka = frozenset(document_terms("Kafka broker leader election; controller failover steps"))
    q = query_entities("MongoDB replica set election keeps happening")
    assert missing_in(q, kafka, "Kafka Broker Offline").other_technology

    sibling = query_entities("EtcdInsufficientMembers fired")
    doc = frozenset(document_terms("EtcdMembersDown: one or more etcd members are down"))
    m = missing_in(sibling, doc, "EtcdMembersDown etcd members down")
    assert m.sibling_alert and not m.other_technology

    own = query_entities("", "EtcdMembersDown")
    assert not missing_in(own, doc, "EtcdMembersDown").sibling_alert


def test_a_product_is_found_in_the_documents_name_and_its_family() -> None:
    q = query_entities("OpenSearch cluster is red")
    es = frozenset(document_terms("cluster health red, unassigned shards"))
    assert not missing_in(q, es, "ElasticsearchClusterRed Elasticsearch cluster red").technologies
    assert query_entities("StatefulSet stuck").kinds == frozenset({"statefulset"})


def test_rules_cap_the_level() -> None:
    x = {"tech_missing": 1.0, "alert_missing": 0.0}
    conf, rule = capped(0.93, x, 0.75, 0.5)
    assert rule == OTHER_TECHNOLOGY and level_for(conf) is RelevanceLevel.NONE

    conf, rule = capped(0.93, {"alert_missing": 1.0}, 0.75, 0.5)
    assert rule == SIBLING_ALERT and level_for(conf) is RelevanceLevel.REFERENCE

    conf, rule = capped(0.93, {"tech_missing": 0.5, "alert_missing": 0.5}, 0.75, 0.5)
    assert rule is None and conf == 0.93  # one of two products mentioned: the model decides
    assert capped(0.3, x, 0.75, 0.5) == (0.3, None)  # already below: nothing to cap


def _l0_only(*docs):  # noqa: ANN001, ANN202
    from retrieval.l0.catalog import DocumentCatalog
    from retrieval.lookup.service import LookupService

    catalog = DocumentCatalog()
    catalog.replace_all(docs)
    return LookupService(catalog, None)  # no vector store: L0 alone answers


def test_a_keyword_hit_on_a_sibling_alerts_runbook_is_not_precise() -> None:
    from retrieval.l0.catalog import DocInfo
    from retrieval.lookup.alert_input import AlertInput

    body = "KubeHpaMaxedOut: the HPA runs at its maximum replicas; raise maxReplicas"
    hpa = DocInfo(
        "d1",
        "kubernetes/hpa-not-scaling.md",
        "HPA not scaling",
        "kubernetes",
        keywords=("HPA", "KubeHpaMaxedOut"),
        terms=frozenset(document_terms(body)),
    )
    svc = _l0_only(hpa)
    alert = AlertInput.parse(
        {"alertname": "KubeHpaReplicasMismatch", "annotations": {"summary": "HPA replicas off"}}
    )
    sibling = svc.lookup("", alert=alert).payload
    assert sibling["found"] and sibling["relevanceLevel"] == "REFERENCE"  # not PRECISE
    own = svc.lookup("KubeHpaMaxedOut").payload
    assert own["relevanceLevel"] == "PRECISE"
    other = svc.lookup("MongoDB HPA scaling").payload
    assert other["relevanceLevel"] != "PRECISE"


def test_a_product_spelled_as_one_word_by_the_document_is_mentioned() -> None:
    # the query's LokiStack names Loki; a runbook that writes "Lokistack" mentions it
    q = query_entities("log collector gets 403 forbidden when writing to LokiStack")
    doc = frozenset(document_terms("Check the Lokistack gateway and the collector's token"))
    assert not missing_in(q, doc, "CollectorHigh403ForbiddenResponseRate").other_technology
    kafka = frozenset(document_terms("Kafka broker leader election"))
    assert missing_in(q, kafka, "KafkaBrokerDown").other_technology


def test_a_product_only_inside_a_hyphenated_name_is_context() -> None:
    # pasted alert text: the output, storage class or pod is whose, not what the alert is about
    q = query_entities("Collector has 23% output errors sending to output elasticsearch-external")
    assert q.technologies == {"elasticsearch"} and q.in_context == {"elasticsearch"}
    said = query_entities("Elasticsearch cluster health is red")
    assert said.in_context == frozenset()
    # a product whose own name has a hyphen is said, not context
    assert query_entities("cert-manager failed to renew").in_context == frozenset()


def test_a_product_only_as_an_objects_quoted_name_is_context() -> None:
    # kubectl / API server errors quote the user's object after its kind: whose, not what about
    forbidden = (
        'pods "nginx-7d4b8c5f9-" is forbidden: violates PodSecurity "restricted:latest": '
        'allowPrivilegeEscalation != false (container "nginx" must set '
        "securityContext.allowPrivilegeEscalation=false)"
    )
    q = query_entities(forbidden)
    assert q.technologies == {"nginx"} and q.in_context == {"nginx"}
    platform = frozenset(document_terms("Pod Security Admission rejects pods: securityContext"))
    missing = missing_in(q, platform, "pod-security-admission-violations")
    assert missing.context_technology  # the platform runbook may answer (REFERENCE, not NONE)
    assert query_entities('deployments.apps "redis" not found').in_context == {"redis"}
    # named in the message itself, the product is what it is about
    assert query_entities('nginx returns 502 for container "api"').in_context == frozenset()


def test_a_kubernetes_state_the_runbook_is_named_after_makes_the_product_context() -> None:
    # the registry's product is whose image it is; the runbook named after the state answers
    q = query_entities("ImagePullBackOff pulling from our private harbor, the secret looks right")
    platform = frozenset(document_terms("image pull back off: registry secret, credentials"))
    named = "KubePodImagePullBackOff Kube Pod Image Pull Back Off"
    assert missing_in(q, platform, named).context_technology
    # without the state, or on a runbook named for another product, the product is the subject
    assert not missing_in(
        query_entities("harbor replication keeps failing"), platform, named
    ).context_technology
    kafka = "KafkaBrokerImagePullBackOff Kafka broker image pull"
    assert not missing_in(q, platform, kafka).context_technology


def test_a_custom_resources_kind_is_the_users_object_not_the_subject() -> None:
    # kubectl on a CRD that is not installed: the operator's kind names whose object it is
    crd = (
        'error: resource mapping not found for name: "orders-db" namespace: "shop" from '
        '"cluster.yaml": no matches for kind "PostgresCluster" in version '
        '"postgres-operator.crunchydata.com/v1beta1"'
    )
    q = query_entities(crd)
    assert q.in_context == {"postgresql"} and q.alert_names == ()
    operators = frozenset(document_terms("CRD and operator troubleshooting: no matches for kind"))
    assert missing_in(q, operators, "05-crd-operator-troubleshooting").context_technology
    # an alert name outside quotes is still an alert name
    assert query_entities('KubePodCrashLooping for pod "api-1"').alert_names == (
        "kubepodcrashlooping",
    )


@pytest.mark.parametrize("reason", ["InternalError", "TooManyRequests", "AlreadyExists"])
def test_the_api_servers_status_reasons_are_not_alert_names(reason: str) -> None:
    # ``Error from server (InternalError)``: a sibling-alert rule must not read it as an alert
    assert not is_alert_name(reason)
    q = query_entities(f"Error from server ({reason}): the request failed")
    assert q.alert_names == () and q.reasons == (reason.casefold(),)
