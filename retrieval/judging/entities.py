"""Salient entities of a query, and which of them a document never mentions. Pure.

A runbook for a neighbouring alert or another product shares many words with a question (``replica``,
``election``, ``memory``, ``lag``) and still does not answer it. What tells them apart are the
*entities* the question names:

* **technologies** — products an operator runs (MongoDB, Kafka, Redis, …; a curated vocabulary with
  the names and abbreviations operators type, Chinese ones included). A document that mentions none
  of the query's technologies is about another technology;
* **alert names** — the firing alert's ``alertname``, or alert-like identifiers in the text
  (``KubePodCrashLooping``). A document that never mentions the alert is at best a sibling's runbook;
* **Kubernetes resource kinds** (``StatefulSet``, ``CronJob``, ``PVC``, …).

Platform words every runbook of a base shares (Kubernetes, Linux, Docker) and languages/runtimes that
questions name in passing (Java, Go) are not technologies here: a question about a Java service's
connection pool is still answered by a runbook that never says "Java".

A document's mentions are read from what the catalog already keeps per document — its distinct
content terms (title, file name, keywords and body, ``DocInfo.terms``) and what names it — so the
check costs a few set look-ups per judged document, never a scan of the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from retrieval.parsing.textnorm import code_tokens, compact_term, split_identifier

# canonical name → lower-case aliases an operator or a runbook uses (words, identifier parts).
TECHNOLOGIES: dict[str, tuple[str, ...]] = {
    "mongodb": ("mongodb", "mongo", "mongod", "mongos"),
    "cassandra": ("cassandra", "nodetool"),
    "elasticsearch": ("elasticsearch", "弹性搜索"),
    "opensearch": ("opensearch",),
    "kafka": ("kafka", "卡夫卡"),
    "rabbitmq": ("rabbitmq", "rabbit"),
    "rocketmq": ("rocketmq",),
    "pulsar": ("pulsar",),
    "nats": ("nats",),
    "activemq": ("activemq",),
    "redis": ("redis",),
    "memcached": ("memcached", "memcache"),
    "mysql": ("mysql", "mysqld", "innodb", "mariadb"),
    "postgresql": ("postgresql", "postgres", "psql", "pgbouncer"),
    "oracle": ("oracle",),
    "sqlserver": ("sqlserver", "mssql"),
    "tidb": ("tidb", "tikv"),
    "oceanbase": ("oceanbase",),
    "clickhouse": ("clickhouse",),
    "dameng": ("dameng", "达梦"),
    "kingbase": ("kingbase", "人大金仓", "金仓"),
    "hbase": ("hbase",),
    "hdfs": ("hdfs", "hadoop", "namenode", "datanode"),
    "spark": ("spark",),
    "flink": ("flink",),
    "influxdb": ("influxdb",),
    "zookeeper": ("zookeeper",),
    "etcd": ("etcd", "etcdctl"),
    "consul": ("consul",),
    "nacos": ("nacos",),
    "coredns": ("coredns",),
    "nginx": ("nginx",),
    "haproxy": ("haproxy",),
    "envoy": ("envoy",),
    "istio": ("istio", "istiod"),
    "traefik": ("traefik",),
    "calico": ("calico",),
    "cilium": ("cilium",),
    "ceph": ("ceph", "rook"),
    "minio": ("minio",),
    "longhorn": ("longhorn",),
    "prometheus": ("prometheus", "普罗米修斯"),
    "alertmanager": ("alertmanager",),
    "grafana": ("grafana",),
    "loki": ("loki",),
    "thanos": ("thanos",),
    "velero": ("velero",),
    "certmanager": ("certmanager", "cert-manager"),
    "jenkins": ("jenkins",),
    "argocd": ("argocd",),
    "harbor": ("harbor",),
    "vault": ("vault",),
    "keycloak": ("keycloak",),
    "celery": ("celery",),
}
# Abbreviations operators type in upper case ("ES 集群 red", "PG 主从"); matched case-sensitively in
# queries only (as lower-case words they are too common to read in documents).
ABBREVIATIONS: dict[str, str] = {
    "ES": "elasticsearch",
    "PG": "postgresql",
    "ZK": "zookeeper",
    "CK": "clickhouse",
    "MQ": "",  # any message queue: not one technology
}
# One product's documents also answer for its close relatives (same protocol, same tooling).
FAMILIES: tuple[frozenset[str], ...] = (frozenset({"elasticsearch", "opensearch"}),)

KINDS: dict[str, tuple[str, ...]] = {
    "statefulset": ("statefulset",),
    "daemonset": ("daemonset",),
    "deployment": ("deployment",),
    "replicaset": ("replicaset",),
    "cronjob": ("cronjob",),
    "persistentvolumeclaim": ("persistentvolumeclaim", "pvc"),
    "persistentvolume": ("persistentvolume",),
    "horizontalpodautoscaler": ("horizontalpodautoscaler", "hpa"),
    "poddisruptionbudget": ("poddisruptionbudget", "pdb"),
    "ingress": ("ingress",),
    "networkpolicy": ("networkpolicy",),
    "configmap": ("configmap",),
}
# Identifiers that are Kubernetes reasons or states, not alert names (an error code, still salient);
# the API server's status reasons too (``Error from server (InternalError)``).
_REASON_TEXT = """CrashLoopBackOff ImagePullBackOff ErrImagePull OOMKilled CreateContainerConfigError
    CreateContainerError ContainerCreating ProgressDeadlineExceeded FailedScheduling FailedMount
    FailedAttachVolume DeadlineExceeded BackoffLimitExceeded Evicted InvalidImageName
    RunContainerError PodInitializing MemoryPressure DiskPressure PIDPressure NetworkUnavailable
    OutOfMemoryError StackOverflowError
    InternalError AlreadyExists NotFound BadRequest ServiceUnavailable TooManyRequests
    ServerTimeout MethodNotAllowed RequestEntityTooLarge UnsupportedMediaType"""
REASONS = frozenset(compact_term(r) for r in _REASON_TEXT.split())

_ALIAS_TECH = {a: t for t, aliases in TECHNOLOGIES.items() for a in aliases}
_ALIAS_KIND = {a: k for k, aliases in KINDS.items() for a in aliases}
_SEPARATORS = re.compile(r"[\s_\-]+")  # what compact_term drops, for a quick membership test
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._-][A-Za-z0-9]+)*")
_CJK_ALIASES = tuple(a for a in _ALIAS_TECH if not a.isascii())
_NAMES = frozenset(compact_term(a) for a in [*_ALIAS_TECH, *_ALIAS_KIND])


@dataclass(frozen=True)
class QueryEntities:
    technologies: frozenset[str] = frozenset()
    alert_names: tuple[str, ...] = ()  # compact forms
    kinds: frozenset[str] = frozenset()
    # of ``technologies``, those named only inside label-like values (``data-kafka-2``: whose
    # volume it is), not by the query's own words or its alert's name
    in_context: frozenset[str] = frozenset()
    # each technology with the query's words that named it, compacted (``loki``: ``lokistack``):
    # a document that has the word mentions the technology, however it spells the product
    tech_words: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Kubernetes reasons and states it names, compacted (``imagepullbackoff``)
    reasons: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.technologies or self.alert_names or self.kinds)


def _words(text: str) -> list[tuple[str, list[str]]]:
    """Each word of ``text`` with its identifier parts (lower-cased)."""
    return [
        (m.group(0), [p.casefold() for p in split_identifier(m.group(0))])
        for m in _WORD.finditer(text)
    ]


def _named_by(text: str) -> dict[str, set[str]]:
    """Each technology ``text`` names, with the words (compacted) that name it."""
    found: dict[str, set[str]] = {}
    for word, parts in _words(text):
        if word in ABBREVIATIONS:
            if ABBREVIATIONS[word]:
                found.setdefault(ABBREVIATIONS[word], set()).add(compact_term(word))
            continue
        whole = compact_term(word)
        techs = {_ALIAS_TECH[p] for p in [whole, *parts] if p in _ALIAS_TECH}
        for t in techs:
            found.setdefault(t, set()).add(whole)
    for a in _CJK_ALIASES:
        if a in text:
            found.setdefault(_ALIAS_TECH[a], set()).add(a)
    return found


def technologies_in(text: str) -> frozenset[str]:
    return frozenset(_named_by(text))


# A lower-case hyphenated name (``elasticsearch-external``, ``ocs-storagecluster-ceph-rbd``): in
# pasted alert text, the name of an output, a storage class or a pod — whose, not what about.
_HYPHENATED = re.compile(r"(?<![\w./-])[a-z0-9]+(?:-[a-z0-9]+)+(?![\w/-])")


# An object's quoted name after its kind, as kubectl and the API server write it
# (``pods "nginx-7d4b8c5f9-" is forbidden``, ``container "nginx"``, ``deployments.apps "redis"``),
# or a custom resource's kind (``no matches for kind "PostgresCluster"``): the name of the user's
# object or operator, not what the message is about.
_QUOTED_NAME = re.compile(
    r"(?i)\b(?:pods?|containers?|init containers?|deployments?|statefulsets?|daemonsets?|"
    r"replicasets?|jobs?|cronjobs?|services?|configmaps?|secrets?|namespaces?|nodes?|"
    r"persistentvolumeclaims?|ingresses|ingress|serviceaccounts?|kind|resource type)"
    r"(?:\.[a-z0-9.]+)?\s+\"([^\"\n]{1,253})\""
)


def _without_quoted_names(text: str) -> str:
    return _QUOTED_NAME.sub(lambda m: m.group(0).replace(m.group(1), " "), text)


def _outside_names(text: str) -> str:
    """``text`` without its object names: hyphenated names, but for those that are a product's
    own name (``cert-manager``), and names quoted after their kind (``container "nginx"``)."""
    text = _without_quoted_names(text)
    return _HYPHENATED.sub(
        lambda m: m.group(0) if compact_term(m.group(0)) in _ALIAS_TECH else " ", text
    )


def kinds_in(text: str) -> frozenset[str]:
    found = set()
    for word, _parts in _words(text):
        whole = compact_term(word)
        if whole in _ALIAS_KIND:
            found.add(_ALIAS_KIND[whole])
    return frozenset(found)


def is_alert_name(identifier: str) -> bool:
    """An alert-like identifier: CamelCase of two or more parts that is not a product, a resource
    kind or a Kubernetes reason (``KubePodCrashLooping``, ``TargetDown``; not ``OOMKilled``,
    ``StatefulSet`` or ``RabbitMQ``)."""
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]+", identifier):
        return False
    flat = compact_term(identifier)
    if flat in REASONS or flat in _NAMES:
        return False
    parts = split_identifier(identifier)
    words = [p for p in parts if any(c.islower() for c in p)]
    return len(parts) >= 3 or (len(parts) == 2 and len(words) == 2)


def query_entities(text: str, alertname: str = "", prose: str | None = None) -> QueryEntities:
    """The salient entities of a query (``alertname``: the structured alert's, if any;
    ``prose``: the text without its label-like values, when some were taken out)."""
    names = [compact_term(alertname)] if alertname.strip() else []
    # a quoted object name or kind (``kind "PostgresCluster"``) is the user's, not an alert
    names += [compact_term(c) for c in code_tokens(_without_quoted_names(text)) if is_alert_name(c)]
    named = _named_by(f"{alertname} {text}")
    techs = frozenset(named)
    said = technologies_in(f"{alertname} {_outside_names(text if prose is None else prose)}")
    return QueryEntities(
        technologies=techs,
        alert_names=tuple(dict.fromkeys(n for n in names if n)),
        kinds=kinds_in(text),
        in_context=techs - said,
        tech_words=tuple((t, tuple(sorted(w))) for t, w in sorted(named.items())),
        reasons=tuple(
            dict.fromkeys(r for w, _ in _words(text) if (r := compact_term(w)) in REASONS)
        ),
    )


@lru_cache(maxsize=8192)
def _doc_tokens(terms: frozenset[str], name_text: str) -> frozenset[str]:
    """A document's words and their identifier parts, compacted (cached per document)."""
    out = {compact_term(t) for t in terms}
    for word, parts in _words(name_text):
        out.add(compact_term(word))
        out.update(parts)
    return frozenset(out)


def _related(tech: str) -> frozenset[str]:
    for family in FAMILIES:
        if tech in family:
            return family
    return frozenset({tech})


@dataclass(frozen=True)
class Missing:
    """What of a query's entities a document never mentions."""

    technologies: int = 0  # of the query's technologies, none of whose aliases the document has
    alert_names: int = 0
    kinds: int = 0
    of: QueryEntities = QueryEntities()
    # alert names not in what names the document (title, file, keywords, summary): a runbook that
    # mentions a neighbouring alert in passing ("see also") does not name it
    unnamed_alerts: int = 0
    # the query names its products only inside label values (whose volume, whose pod) and what
    # names the document (title, file, keywords, summary) names no other product: a platform
    # runbook (a volume's, a node's) may answer, another product's may not
    context_technology: bool = False

    @property
    def other_technology(self) -> bool:
        """The query names products and the document mentions none of them."""
        n = len(self.of.technologies)
        return n > 0 and self.technologies == n

    @property
    def sibling_alert(self) -> bool:
        """The query names alerts and the document mentions none of them."""
        n = len(self.of.alert_names)
        return n > 0 and self.alert_names == n

    def share(self) -> float:
        """Share of the query's entities the document never mentions (0 when it names none)."""
        q = self.of
        total = len(q.technologies) + len(q.alert_names) + len(q.kinds)
        return (self.technologies + self.alert_names + self.kinds) / total if total else 0.0


def missing_in(
    entities: QueryEntities,
    terms: frozenset[str],
    name_text: str = "",
    extra_text: str = "",
) -> Missing:
    """Which of ``entities`` a document lacks: ``terms`` are its content terms (``DocInfo.terms``),
    ``name_text`` what names it, ``extra_text`` any retrieved text of it (chunks)."""
    if not entities:
        return Missing(of=entities)
    tokens = _doc_tokens(terms, name_text)
    lower = extra_text.casefold()
    # alert names are compact identifiers: looked for in the compacted text (once, when needed)
    flat_extra = _SEPARATORS.sub("", lower) if entities.alert_names else ""

    def has(alias: str) -> bool:
        flat = compact_term(alias)
        if flat in tokens or (not alias.isascii() and (alias in name_text or alias in lower)):
            return True
        return bool(lower) and _alias_pattern(alias).search(lower) is not None

    words = dict(entities.tech_words)

    def mentions_tech(tech: str) -> bool:
        if any(w in tokens for w in words.get(tech, ())):
            return True
        return any(has(a) for t in _related(tech) for a in TECHNOLOGIES[t])

    named = _name_tokens(name_text)
    return Missing(
        technologies=sum(1 for t in entities.technologies if not mentions_tech(t)),
        alert_names=sum(1 for a in entities.alert_names if a not in tokens and a not in flat_extra),
        kinds=sum(1 for k in entities.kinds if not any(has(a) for a in KINDS[k])),
        of=entities,
        unnamed_alerts=sum(1 for a in entities.alert_names if a not in named),
        context_technology=_context_only(entities, name_text),
    )


def _context_only(entities: QueryEntities, name_text: str) -> bool:
    """The query's products are whose, not what about, and what names the document names no
    other product: a platform runbook may answer (not confidently). Whose: named only inside
    label values or object names, or beside a Kubernetes state the document is named after
    (``ImagePullBackOff`` pulling from a Harbor registry, on ``KubePodImagePullBackOff``)."""
    techs = entities.technologies
    if not techs:
        return False
    flat = compact_term(name_text) if entities.reasons else ""
    named_state = bool(flat) and all(r in flat for r in entities.reasons)
    if not (techs <= entities.in_context or named_state):
        return False
    ours = {r for t in techs for r in _related(t)}
    return not _name_technologies(name_text) - ours


@lru_cache(maxsize=8192)
def _name_technologies(name_text: str) -> frozenset[str]:
    return technologies_in(name_text)


@lru_cache(maxsize=1024)
def _alias_pattern(alias: str) -> re.Pattern[str]:
    """``alias`` as a word of lower-cased text (also the first part of an identifier:
    ``kafkaconsumerlag`` does not count, ``kafka-broker`` and ``kafka_lag`` do)."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(alias)}(?![a-z0-9])")


@lru_cache(maxsize=8192)
def _name_tokens(name_text: str) -> frozenset[str]:
    return frozenset(compact_term(w) for w, _ in _words(name_text))


def known_anywhere(tech: str, document_frequency: Callable[[str], int]) -> bool:
    """Does any document of the base mention ``tech`` (by the catalog's term statistics)?"""
    return any(document_frequency(a) > 0 for t in _related(tech) for a in TECHNOLOGIES[t])


def vocabulary_words() -> Iterable[str]:
    """Every alias (for the label-value recogniser: these words are evidence, never context)."""
    return [*_ALIAS_TECH, *_ALIAS_KIND]
