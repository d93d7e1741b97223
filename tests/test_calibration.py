"""The calibrated judge, pure: evidence, fitting, the confidence map and the shipped parameters."""

import math
import random

import pytest

from retrieval.judging.calibration import (
    CAP_BELOW,
    FEATURES,
    OTHER_TECHNOLOGY,
    SIBLING_ALERT,
    UNKNOWN_CODE,
    Calibration,
    _unmatched,
    capped,
    entity_rule,
    evidence,
    fit_logistic,
)
from retrieval.judging.judge import judge_documents
from retrieval.judging.relevance import RelevanceLevel, Thresholds
from retrieval.l0.catalog import DocInfo, DocumentCatalog
from retrieval.l1.fusion import BM25_ROUTE, DENSE_ROUTE, RouteHit, fuse_documents
from retrieval.lookup.query_input import prepare
from retrieval.parsing.terms import document_codes, query_terms


def _hit(pk: str, path: str, score: float, text: str, distance: float) -> RouteHit:
    return RouteHit(pk, score, {"file_path": path, "text": text, "dense_distance": distance})


def _docs(read_dense: bool = True):
    dense = [
        RouteHit("a:1", 0.3, {"file_path": "a.md", "text": "redis maxmemory eviction policy"}),
        RouteHit("b:1", 0.9, {"file_path": "b.md", "text": "mysql pool"}),
    ]
    bm25 = [
        _hit("a:1", "a.md", 12.0, "redis maxmemory eviction policy", 0.3),
        _hit("b:1", "b.md", 3.0, "mysql pool", 0.9),
    ]
    return fuse_documents({DENSE_ROUTE: dense if read_dense else [], BM25_ROUTE: bm25})


def test_evidence_of_the_top_document() -> None:
    docs = _docs()
    x = evidence(
        docs,
        0,
        read=1.0,
        terms=["redis", "eviction", "kafka"],
        text_of=lambda d: d.chunks[0].fields["text"],
    )
    assert set(x) == set(FEATURES)
    assert x["dense_sim_read"] == pytest.approx(0.85)  # 1 - 0.3/2
    assert x["bm25_rank_inv"] == 1.0 and x["dense_rank_inv"] == 1.0 and x["agree"] == 1.0
    assert x["bm25_margin"] == pytest.approx((12 - 3) / 12)
    assert x["coverage"] == pytest.approx(2 / 3)
    assert x["bm25_per_term"] == pytest.approx(4.0)
    second = evidence(docs, 1, read=1.0, terms=["redis"], text_of=lambda d: "")
    assert second["bm25_rank_inv"] == 0.5 and second["bm25_margin"] < 0 and second["agree"] == 0.0


def test_a_model_that_cannot_read_contributes_nothing() -> None:
    x = evidence(_docs(), 0, read=0.0, terms=["x"], text_of=lambda d: "")
    assert x["dense_sim_read"] == 0.0 and x["dense_rank_inv"] == 0.0
    assert x["agree"] == 1.0  # BM25 alone decides agreement when the dense route cannot read


def test_fit_recovers_a_separable_rule_and_probabilities_are_ordered() -> None:
    rng = random.Random(7)
    rows, labels = [], []
    for _ in range(400):
        cov = rng.random()
        rows.append({"coverage": cov, "bm25_margin": rng.random() * 0.1})
        labels.append(int(cov + rng.gauss(0, 0.1) > 0.5))
    cal = fit_logistic(rows, labels, features=["coverage", "bm25_margin"])
    w = dict(zip(cal.features, cal.weights, strict=True))
    assert w["coverage"] > 3 * abs(w["bm25_margin"])
    assert cal.probability({"coverage": 0.9}) > 0.9 > 0.1 > cal.probability({"coverage": 0.1})


def test_confidence_map_is_monotone_and_places_the_thresholds() -> None:
    cal = Calibration(knots=[(0.2, 0.5), (0.9, 0.75)])
    assert cal.to_confidence(0.2) == pytest.approx(0.5)
    assert cal.to_confidence(0.9) == pytest.approx(0.75)
    grid = [cal.to_confidence(i / 100) for i in range(101)]
    assert grid == sorted(grid) and grid[0] == 0.0 and grid[-1] == 1.0


def test_the_shipped_calibration_loads_and_separates_evidence() -> None:
    cal = Calibration.load()
    assert cal.features and cal.knots, "retrieval/judging/calibration.json must be a fitted judge"
    assert cal.fitted_on.get("queries", 0) >= 200
    # a document both routes put first by a wide margin, holding every term of the question...
    strong = {
        "dense_sim_read": 0.8,
        "dense_rank_inv": 1,
        "bm25_rank_inv": 1,
        "bm25_per_term": 5,
        "bm25_margin": 0.6,
        "coverage": 1.0,
        "name_coverage": 0.8,
        "idf_coverage": 1.0,
        "dense_margin": 0.2,
        "bm25_ratio": 1.5,
        "agree": 1,
        "rrf_margin": 0.5,
        "read": 1,
    }
    # ...and one that neither route favours, holding few of its terms, the rarest missing
    weak = {
        "dense_sim_read": 0.2,
        "dense_rank_inv": 0.25,
        "bm25_rank_inv": 0.25,
        "bm25_per_term": 0.3,
        "bm25_margin": -0.5,
        "coverage": 0.1,
        "idf_coverage": 0.1,
        "idf_missing": 0.9,
        "unknown_share": 0.5,
        "bm25_ratio": -1.0,
        "read": 1,
    }
    assert cal.confidence(strong) >= 0.75 > 0.5 > cal.confidence(weak)
    assert not math.isnan(cal.confidence({}))


def test_dense_judge_is_the_similarity_rule_and_calibrated_uses_the_evidence() -> None:
    docs = _docs()
    t = Thresholds()
    common = dict(thresholds=t, read=1.0, terms=["redis"], l0_paths=[], title_of=lambda p: p)
    dense = judge_documents(docs, judge="dense", calibration=None, **common)
    assert dense[0].level is RelevanceLevel.HIGHLY_RELEVANT  # similarity 0.85
    assert dense[1].level is RelevanceLevel.REFERENCE  # similarity 1 - 0.9/2 = 0.55
    cal = Calibration(
        features=["coverage"],
        mean=[0.0],
        scale=[1.0],
        weights=[10.0],
        bias=-5.0,
        knots=[(0.5, 0.5), (0.9, 0.75)],
    )
    judged = judge_documents(docs, judge="calibrated", calibration=cal, **common)
    assert judged[0].confidence is not None and judged[0].features["coverage"] == 1.0
    assert judged[0].level is RelevanceLevel.HIGHLY_RELEVANT


def test_the_second_stage_weighs_how_far_a_document_stands_out() -> None:
    # same first-stage evidence for the top document; alone it is likelier right than beside a
    # near twin (a sibling runbook with almost the same evidence)
    cal = Calibration(features=["coverage"], mean=[0.0], scale=[1.0], weights=[4.0], bias=-2.0)
    cal.stack = [0.0, 1.0, 0.5]
    alone = cal.probabilities([{"coverage": 0.9}, {"coverage": 0.1}])[0]
    twin = cal.probabilities([{"coverage": 0.9}, {"coverage": 0.85}])[0]
    assert alone > twin
    cal.stack = []  # off: each document on its own evidence
    assert cal.probabilities([{"coverage": 0.9}, {"coverage": 0.85}])[0] == pytest.approx(
        cal.probability({"coverage": 0.9})
    )


def test_an_alert_named_title_counts_as_its_words() -> None:
    # As one token (``etcdnoleader``) an alert-named title is unsaid by every question that does
    # not paste the name, the right runbook's and its sibling's alike; as words it tells them apart.
    right = DocInfo("1", "control-plane/EtcdNoLeader.md", "EtcdNoLeader", "c")
    sibling = DocInfo("2", "control-plane/EtcdMembersDown.md", "EtcdMembersDown", "c")
    query = "the etcd cluster has no leader since the upgrade"
    terms = query_terms(query)
    unsaid = {
        d.file_path: _unmatched(d.title_terms, terms, query, lambda t: 1.0)
        for d in (right, sibling)
    }
    assert unsaid[right.file_path] == 0.0
    assert unsaid[sibling.file_path] > 0.5
    # a question that pastes the name says all of its words
    assert (
        _unmatched(sibling.title_terms, ["etcdmembersdown"], "etcdmembersdown", lambda t: 1.0) == 0
    )


def test_a_leading_ordinal_is_not_a_title_word() -> None:
    # "05-pod-pending": the number orders a collection; as a rare title term it was "unsaid" by
    # every question. A number that is content (nginx 502) stays.
    doc = DocInfo("1", "trouble/05-pod-pending-troubleshooting.md", "05 - Pod Pending 排查", "c")
    assert doc.title_terms == {"pod", "pending", "troubleshooting", "排查"}
    assert "502" in DocInfo("2", "gateway/502-bad-gateway.md", "502 Bad Gateway", "c").title_terms


def _two_docs(first: str, second: str):
    return fuse_documents(
        {
            BM25_ROUTE: [
                _hit("a:1", "a.md", 9.0, first, 0.4),
                _hit("b:1", "b.md", 8.0, second, 0.5),
            ]
        }
    )


def test_an_identifier_no_runbook_holds_tells_no_document_from_another() -> None:
    # A pasted log line's field (``splunk_prod``) is in no runbook: it used to make every
    # document "lack a code" and the right one NONE. Only identifiers the base holds count.
    docs = _two_docs("ceph health HEALTH_ERR full osd", "ceph pool quota")
    common = dict(read=1.0, terms=["ceph"], text_of=lambda d: d.chunks[0].fields["text"])
    holds = {"healtherr"}.__contains__
    codes = ["HEALTH_ERR", "splunk_prod"]
    right = evidence(docs, 0, codes=codes, holds_code=holds, **common)
    other = evidence(docs, 1, codes=codes, holds_code=holds, **common)
    assert right["code_missing"] == 0.0 and other["code_missing"] == 1.0
    assert right["code_unknown"] == other["code_unknown"] == 0.5
    alone = evidence(docs, 0, codes=["splunk_prod"], holds_code=holds, **common)
    assert alone["code_missing"] == 0.0 and alone["code_unknown"] == 1.0


def test_a_document_without_any_identifier_when_some_are_in_no_runbook_is_not_confident() -> None:
    # The left-out runbook's own alert, a code nobody documented: the base may lack the answer.
    strong = {"code_unknown": 1.0, "code_missing": 0.0}
    assert entity_rule(strong) == UNKNOWN_CODE
    assert capped(0.95, strong, 0.75, 0.5) == (pytest.approx(0.75 * CAP_BELOW), UNKNOWN_CODE)
    assert capped(0.6, strong, 0.75, 0.5) == (0.6, None)  # REFERENCE stays REFERENCE
    # one of its identifiers is in the document: that code's runbook, no rule
    assert entity_rule({"code_unknown": 0.5, "code_missing": 0.0}) is None
    # an alert no runbook names, nor this one: a sibling's at best
    assert entity_rule({"alert_missing": 1.0, "code_unknown": 1.0}) == SIBLING_ALERT


def test_of_two_runbooks_without_the_product_the_likelier_stays_first() -> None:
    # Both lack the query's product (``postgres`` of a pod's name). The rule caps only the one
    # whose confidence reached the cap; that used to send it below the weaker one.
    docs = _two_docs("drain failed evicting pod disruption budget", "pod disruption budget limit")
    catalog = DocumentCatalog()
    catalog.replace_all(
        [
            DocInfo("a", "a.md", "Drain error", "c", terms=frozenset({"drain", "evicting"})),
            DocInfo("b", "b.md", "Disruption budget", "c", terms=frozenset({"budget"})),
        ]
    )
    cal = Calibration(
        features=["bm25_rank_inv"],
        mean=[0.0],
        scale=[1.0],
        weights=[8.0],
        bias=-4.0,
        knots=[(0.5, 0.55), (0.9, 0.75)],
    )
    judged = judge_documents(
        docs,
        judge="calibrated",
        calibration=cal,
        thresholds=Thresholds(),
        read=1.0,
        terms=["drain", "evicting", "postgres"],
        l0_paths=[],
        title_of=lambda p: catalog.by_path(p).title,
        stats=catalog,
        entities=prepare('drain failed: evicting pods/"postgres-0": disruption budget').entities,
    )
    assert [j.level for j in judged] == [RelevanceLevel.REFERENCE] * 2
    assert [j.rule for j in judged] == [OTHER_TECHNOLOGY, None]  # only the first was capped
    assert judged[0].doc.path == "a.md"


def test_the_catalog_knows_which_identifiers_some_runbook_holds() -> None:
    catalog = DocumentCatalog()
    coded = DocInfo("a", "a.md", "Ceph", "c", codes=frozenset(document_codes("HEALTH_ERR seen")))
    catalog.replace_all([coded])
    assert catalog.holds_code("healtherr") and not catalog.holds_code("splunkprod")
    older = DocInfo("b", "b.md", "Old", "c")  # imported before identifiers were recorded
    catalog.put(older)
    assert catalog.holds_code("splunkprod")  # unknown, so held: the judge as it was
    catalog.remove("b")
    catalog.remove("a")
    assert not catalog.holds_code("healtherr")
    assert not catalog._codes  # a deleted document's identifiers leave no keys behind
