"""A query's English word in another form than the runbook's (``reload`` / ``reloads``) still
counts: BM25 asks for the base's own forms of a word the base never says, and a title's word the
query says in another form is not "a word of the title the query never says"."""

from __future__ import annotations

from pathlib import Path

from retrieval.judging.calibration import evidence
from retrieval.l0.catalog import DocInfo, DocumentCatalog
from retrieval.parsing.word_forms import WordForms, stem
from tests.support.kb import build_kb, kb_settings


def test_a_word_the_base_never_says_brings_the_forms_it_does() -> None:
    forms = WordForms(["reloads", "reloading", "compactions", "failing", "tsdb", "重启"])
    assert forms.forms(["tsdb", "reload", "compaction"]) == ["reloading", "reloads", "compactions"]
    # said as the base says it: its other forms would only count the word twice in BM25
    assert forms.forms(["reloads"]) == []
    # names and Chinese are not inflected words
    assert stem("pod") is None and stem("重启") is None and stem("k8s") is None


def test_the_catalog_knows_the_forms_of_documents_added_and_forgets_removed_ones() -> None:
    catalog = DocumentCatalog()
    catalog.replace_all(
        [DocInfo(doc_id="a", file_path="a.md", title="A", category="x", terms=frozenset({"x"}))]
    )
    assert catalog.word_forms(["rebalanced"]) == []
    catalog.put(
        DocInfo(
            doc_id="b", file_path="b.md", title="B", category="x", terms=frozenset({"rebalancing"})
        )
    )
    assert catalog.word_forms(["rebalanced"]) == ["rebalancing"]
    catalog.put(
        DocInfo(
            doc_id="c", file_path="c.md", title="C", category="x", terms=frozenset({"rebalancing"})
        )
    )
    catalog.remove("b")  # another document still says it
    assert catalog.word_forms(["rebalanced"]) == ["rebalancing"]
    catalog.remove("c")
    assert catalog.word_forms(["rebalanced"]) == []


def test_a_title_word_said_in_another_form_is_not_unmatched() -> None:
    from retrieval.l1.fusion import DocHit

    doc = DocHit(path="m/PrometheusTSDBReloadsFailing.md")

    def unmatched(query: str) -> float:
        x = evidence(
            [doc],
            0,
            read=1.0,
            terms=query.split(),
            text_of=lambda d: "",
            title_terms_of=lambda d: frozenset({"prometheus", "tsdb", "reloads", "failing"}),
            query_text=query,
        )
        return x["title_unmatched"]

    assert unmatched("prometheus tsdb reload fail") == 0.0  # two words in other forms
    assert unmatched("tsdb compaction") == 0.75


RUNBOOKS = {
    "monitoring/PrometheusTSDBReloadsFailing.md": (
        "# Prometheus TSDB reloads failing\n\nPrometheus could not reload blocks from disk. "
        "Check the reload errors in the logs and the permissions of the data directory.\n"
    ),
    "monitoring/PrometheusTSDBCompactionsFailing.md": (
        "# Prometheus TSDB compactions failing\n\nPrometheus could not compact its tsdb blocks: "
        "compaction failures, overlapping blocks and a full disk.\n"
    ),
}


async def test_a_lookup_in_other_words_finds_the_runbook_by_bm25(
    tmp_path: Path, embeddings
) -> None:  # noqa: ANN001
    settings = kb_settings(tmp_path)
    for rel, text in RUNBOOKS.items():
        path = Path(settings.knowledge_base_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    kb = await build_kb(settings, embeddings)
    try:
        await kb.start()
        out = kb.lookup("tsdb reloaded with failures").artifact
        bm25 = {d["source"]: d["ranks"].get("bm25") for d in out["documents"]}
        assert bm25["monitoring/PrometheusTSDBReloadsFailing.md"] == 1, bm25
    finally:
        await kb.close()
        await kb.db.dispose()
