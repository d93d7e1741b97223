"""The catalog's document frequencies forget a deleted document's terms (issue 20)."""

from __future__ import annotations

from retrieval.l0.catalog import DocInfo, DocumentCatalog


def doc(doc_id: str, *terms: str) -> DocInfo:
    return DocInfo(doc_id, f"ops/{doc_id}.md", doc_id, "ops", terms=frozenset(terms))


def test_removed_and_replaced_documents_leave_no_terms_behind() -> None:
    catalog = DocumentCatalog()
    catalog.replace_all([doc("a", "redis", "pool")])
    catalog.put(doc("b", "redis", "超时", "重试"))
    catalog.put(doc("b", "redis", "超时"))  # re-import without one term
    assert "重试" not in catalog._df
    catalog.remove("b")
    # Counter.subtract kept every term at 0: a large document's thousands stayed after its delete.
    assert dict(catalog._df) == {"redis": 1, "pool": 1}
    assert catalog.document_frequency("超时") == 0
    catalog.disable("a")
    assert not catalog._df
