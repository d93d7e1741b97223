"""What a lookup reads from its input: the text the routes and the judge see, and its evidence. Pure.

A lookup gets a query, a firing alert, or both. From them:

* ``text`` — the query (or, with only an alert, its rendered annotations) with label values taken
  out (``alert_input.strip_context``): what L0, BM25 and the judge's term evidence read (the dense
  model embeds ``dense_text``, the text as rendered: to it the values are context it can use);
* ``alertname`` — the alert's name, matched as an identifier (L0 term, ``code_missing``) and as the
  query's alert entity;
* ``entities`` — products, alert names and resource kinds the judge checks each document for
  (``entities.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from retrieval.judging.entities import QueryEntities, is_alert_name, missing_in, query_entities
from retrieval.lookup.alert_input import AlertInput, is_label_code, strip_context
from retrieval.parsing.terms import query_terms
from retrieval.parsing.textnorm import code_tokens, compact_term, split_identifier


@dataclass(frozen=True)
class LookupQuery:
    raw: str  # what the caller asked (the query, or the alert's rendered text)
    text: str  # ``raw`` without label values, the alertname added when the text lacks it
    alertname: str = ""
    context: tuple[str, ...] = ()  # the label values taken out
    alert: AlertInput | None = field(default=None, compare=False)

    @property
    def dense_text(self) -> str:
        """What the dense model embeds: the text as rendered (label values kept), with the
        alert's name."""
        if self.alertname and compact_term(self.alertname) not in compact_term(self.raw):
            return f"{self.alertname} {self.raw}"
        return self.raw

    @cached_property
    def terms(self) -> list[str]:
        """Content terms, an alert name's words included (``HikariPoolPendingThreadsHigh`` →
        ``hikari``, ``pool``, …: what BM25 reads and what the runbook says). Without them the name
        was one term no document has (coverage 0, ``unknown_share`` 1): the connection-pool
        runbook's confidence for its pool's alert was 0.0006 (now 0.40). Kinds and reasons stay
        whole (``StatefulSet`` is not about sets)."""
        names = [self.alertname, *(c for c in self.codes if is_alert_name(c))]
        words = " ".join(" ".join(split_identifier(n)) for n in names if n)
        return query_terms(f"{self.text} {words}")

    @cached_property
    def codes(self) -> list[str]:
        """The query's identifiers (error codes, alert names, settings), label values left out."""
        return [c for c in code_tokens(self.text) if not is_label_code(c, self.text)]

    @cached_property
    def code_only(self) -> bool:
        """Nothing but identifiers, one of them a code (``ERR_TIMEOUT``): see ``judge.py``. An
        alert name alone is words an operator might have typed; when no runbook names it, one
        that covers its words may answer, at most REFERENCE (``calibration.capped``)."""
        rest = self.text
        for code in self.codes:
            rest = rest.replace(code, " ")
        strict = any(not is_alert_name(code) for code in self.codes)
        return strict and not query_terms(rest)

    @cached_property
    def entities(self) -> QueryEntities:
        return query_entities(self.text, self.alertname, self.prose)

    @property
    def prose(self) -> str | None:
        """The query's own words: ``raw`` without the label values taken out (None: none were)."""
        if not self.context:
            return None
        text = self.raw
        for value in sorted(self.context, key=len, reverse=True):
            text = text.replace(value, " ")
        return text

    def not_named_for(self, doc: Any, matched: list[str]) -> bool:
        """An L0 keyword named ``doc`` (by ``matched``, compact terms), but the document misses
        the query's product, or its alert while no identifier of the query (an error code) named
        it: a sibling's or another product's runbook, for the judge to weigh, not PRECISE."""
        m = missing_in(self.entities, doc.terms, doc.name_text)
        codes = {compact_term(c) for c in self.codes} - set(self.entities.alert_names)
        return m.other_technology or (m.sibling_alert and not codes & set(matched))

    def record(self) -> dict[str, list[str]]:
        """The entities as the artifact keeps them."""
        e = self.entities
        return {
            "technologies": sorted(e.technologies),
            "alert_names": list(e.alert_names),
            "kinds": sorted(e.kinds),
        }

    def aspect(self, text: str) -> LookupQuery:
        """One symptom of this query, judged on its own."""
        return LookupQuery(raw=text, text=text, alertname=self.alertname, alert=self.alert)


def prepare(
    query: str,
    alert: AlertInput | None = None,
    *,
    known: Callable[[str], bool] = lambda t: False,
    named: Callable[[list[str]], bool] = lambda words: False,
) -> LookupQuery:
    """``known(term)``: does a document of the base hold the term (catalog statistics);
    ``named(words)``: do the words name something the base is about (``strip_context``)."""
    raw = query.strip() or (alert.text() if alert else "")
    values = alert.context_values() if alert else ()
    stripped = strip_context(raw, values, known=known, named=named)
    text = stripped.text or raw
    name = alert.alertname if alert else ""
    if name and compact_term(name) not in compact_term(text):
        text = f"{name} {text}"
    return LookupQuery(raw, text, name, stripped.values, alert)


def prepare_for(catalog: Any, query: str, alert: AlertInput | None = None) -> LookupQuery:
    """``prepare`` against a ``DocumentCatalog``: a label value's name is evidence when the base
    holds all its words and one of them is specific (``fluent bit``), not when they are words every
    runbook has (``kube system``)."""
    df = catalog.document_frequency
    return prepare(
        query,
        alert,
        known=lambda t: df(t) > 0,
        named=lambda ws: all(df(w) > 0 for w in ws) and any(catalog.is_specific(w) for w in ws),
    )
