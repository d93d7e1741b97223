"""The deterministic checks: one scenario's expectations against what one run did. Pure.

Each check judges meaning, not layout — which runbook the answer cites, whether it names the cause,
uses the evidence, avoids the wrong claims, stays within cost — so an answer reworded or re-sectioned
(issue 19) is judged the same. Every failed check says why, in words an engineer can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.schema import Concept, Scenario
from evals.words import (
    Synonyms,
    cited_documents,
    cited_paths,
    claims,
    names,
    normalize,
    positions,
    says_not_found,
)
from graph.evidence import Evidence


@dataclass
class Observation:
    """What the runs of one scenario did: its answers (the last is judged), the tool results of
    every turn, and the cost of all of them."""

    answers: list[str]
    statuses: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    model_calls: int = 0
    tokens: int = 0
    session_ids: list[str] = field(default_factory=list)
    duration_ms: int = 0

    @property
    def answer(self) -> str:
        return self.answers[-1] if self.answers else ""

    def retrieved(self) -> list[str]:
        """Documents any lookup of the scenario returned."""
        out: list[str] = []
        for ev in self.evidence:
            if ev.tool == "lookup_knowledge" and ev.ok:
                out += [s for s in ev.sources() if s not in out]
        return out

    def alert_names(self) -> set[str]:
        return {
            str(a.get("alertname", ""))
            for ev in self.evidence
            if ev.tool == "query_prometheus_alerts" and ev.ok
            for a in ev.data.get("alerts", [])
        }

    def log_messages(self) -> list[str]:
        return [
            str(x.get("message", ""))
            for ev in self.evidence
            if ev.tool == "query_logs" and ev.ok
            for x in ev.data.get("lines", [])
        ]

    def log_queries(self) -> list[str]:
        return [str(ev.args.get("service", "")) for ev in self.evidence if ev.tool == "query_logs"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


CHECKS = (
    "completed",
    "runbook_cited",
    "wrong_runbook",
    "citations_exist",
    "says_no_runbook",
    "cause_named",
    "answer_names",
    "evidence_used",
    "no_forbidden_claim",
    "cost",
)


def _ok(name: str) -> CheckResult:
    return CheckResult(name, True)


def _fail(name: str, reason: str) -> CheckResult:
    return CheckResult(name, False, reason)


def _word(c: Concept) -> str:
    return c if isinstance(c, str) else " / ".join(c)


def _missing(text: str, concepts: Sequence[Concept], synonyms: Synonyms) -> list[str]:
    return [_word(c) for c in concepts if not names(text, c, synonyms)]


def check_completed(obs: Observation) -> CheckResult:
    failed = [
        f"turn {i + 1}: {e or s}"
        for i, (s, e) in enumerate(zip(obs.statuses, obs.errors, strict=False))
        if s != "SUCCESS"
    ]
    if failed:
        return _fail("completed", "the run did not succeed — " + "; ".join(failed))
    if not obs.answer.strip():
        return _fail("completed", "the answer is empty")
    return _ok("completed")


def check_runbook_cited(s: Scenario, obs: Observation, titles: dict[str, str]) -> CheckResult:
    cited = cited_documents(obs.answer, titles) if titles else cited_paths(obs.answer)
    retrieved = obs.retrieved()
    problems = []
    for group in s.expected.runbook_groups():
        hit = [p for p in group if p in cited]
        if not hit:
            fetched = [p for p in group if p in retrieved]
            why = (
                f"retrieved {fetched[0]} but did not cite it"
                if fetched
                else "no lookup returned it"
            )
            problems.append(f"cites none of {', '.join(group)} ({why})")
        elif not any(p in retrieved for p in hit):
            problems.append(
                f"cites {hit[0]} although no lookup in this run returned it (ungrounded)"
            )
    if problems:
        return _fail(
            "runbook_cited", "; ".join(problems) + f"; cited: {', '.join(cited) or 'none'}"
        )
    return _ok("runbook_cited")


def check_wrong_runbook(s: Scenario, obs: Observation, titles: dict[str, str]) -> CheckResult:
    cited = cited_documents(obs.answer, titles) if titles else cited_paths(obs.answer)
    wrong = [p for p in s.expected.wrong_runbooks if p in cited]
    if wrong:
        return _fail("wrong_runbook", f"cites {', '.join(wrong)}, which is about something else")
    return _ok("wrong_runbook")


def check_citations_exist(obs: Observation, known: set[str]) -> CheckResult:
    unknown = [p for p in cited_paths(obs.answer) if p not in known]
    if unknown:
        return _fail(
            "citations_exist",
            f"cites {', '.join(unknown)}, which the knowledge base does not hold",
        )
    return _ok("citations_exist")


def check_says_no_runbook(obs: Observation) -> CheckResult:
    if says_not_found(obs.answer):
        return _ok("says_no_runbook")
    cited = cited_paths(obs.answer)
    tail = f" and answers from {', '.join(cited)} instead" if cited else ""
    return _fail(
        "says_no_runbook",
        f"no runbook covers this, but the answer does not say it found none{tail}",
    )


def own_words(s: Scenario, obs: Observation) -> str:
    """The answer without what it merely echoes: the questions, the world's log lines and alert
    texts. Quoting ``slow query 12.4s`` from a log is evidence, not a diagnosis; a cause or a
    step is named only when the answer says it in its own words (or the runbook's)."""
    echoed = [*obs.questions, *obs.log_messages(), *(x.message for x in s.world.logs)]
    for a in s.world.alerts:
        echoed += [v for k, v in a.annotations.items() if k in ("summary", "description")]
    text = obs.answer
    for piece in sorted({e.strip() for e in echoed if len(e.strip()) >= 8}, key=len, reverse=True):
        text = text.replace(piece, " ")
    return text


def check_cause(s: Scenario, obs: Observation, synonyms: Synonyms) -> CheckResult:
    cause = s.expected.cause
    assert cause is not None
    missing = _missing(own_words(s, obs), cause.names, synonyms)
    if missing:
        return _fail(
            "cause_named",
            f"does not name the cause ({cause.category}): missing {'; '.join(missing)}",
        )
    return _ok("cause_named")


def check_names(s: Scenario, obs: Observation, synonyms: Synonyms) -> CheckResult:
    missing = _missing(own_words(s, obs), s.expected.names, synonyms)
    if missing:
        return _fail("answer_names", f"does not name {'; '.join(missing)}")
    return _ok("answer_names")


def _in_question(obs: Observation, name: str) -> bool:
    return any(positions(normalize(q), name) for q in obs.questions)


def check_evidence(s: Scenario, obs: Observation) -> CheckResult:
    problems: list[str] = []
    answer = normalize(obs.answer)
    seen_alerts = obs.alert_names()
    for name in s.expected.evidence.alerts:
        if name not in seen_alerts and not _in_question(obs, name):
            problems.append(
                f"alert {name}: never listed (query_prometheus_alerts did not return it)"
            )
        elif not positions(answer, name):
            problems.append(f"alert {name}: listed but the answer does not name it")
    messages = [normalize(m) for m in obs.log_messages()]
    for fragment in s.expected.evidence.logs:
        f = normalize(fragment)
        if not any(f in m for m in messages):
            queried = ", ".join(sorted(set(obs.log_queries()))) or "no service"
            problems.append(f"log «{fragment}»: never returned (query_logs asked for {queried})")
        elif f not in answer:
            problems.append(f"log «{fragment}»: returned by query_logs but not used in the answer")
    if problems:
        return _fail("evidence_used", "; ".join(problems))
    return _ok("evidence_used")


def check_forbidden(s: Scenario, obs: Observation) -> CheckResult:
    text = own_words(s, obs)
    made = [(phrase, where) for phrase in s.expected.forbidden for where in claims(text, phrase)]
    if made:
        phrase, where = made[0]
        more = f" (and {len(made) - 1} more)" if len(made) > 1 else ""
        return _fail("no_forbidden_claim", f"claims «{phrase}»: …{where}…{more}")
    return _ok("no_forbidden_claim")


def check_cost(s: Scenario, obs: Observation) -> CheckResult:
    ceiling = s.expected.cost
    over = []
    if obs.model_calls > ceiling.model_calls:
        over.append(f"{obs.model_calls} model calls > {ceiling.model_calls}")
    if obs.tokens > ceiling.tokens:
        over.append(f"{obs.tokens} tokens > {ceiling.tokens}")
    if over:
        return _fail("cost", "over the ceiling: " + ", ".join(over))
    return _ok("cost")


def run_checks(
    s: Scenario,
    obs: Observation,
    *,
    titles: dict[str, str],
    synonyms: Synonyms,
) -> list[CheckResult]:
    """Every check that applies to ``s``, in ``CHECKS`` order. ``titles``: the knowledge base
    the scenario ran on (path → title), for citations by path or title."""
    e = s.expected
    out = [check_completed(obs)]
    if e.runbook_groups():
        out.append(check_runbook_cited(s, obs, titles))
    if e.wrong_runbooks:
        out.append(check_wrong_runbook(s, obs, titles))
    out.append(check_citations_exist(obs, set(titles)))
    if e.no_runbook:
        out.append(check_says_no_runbook(obs))
    if e.cause and e.cause.names:
        out.append(check_cause(s, obs, synonyms))
    if e.names:
        out.append(check_names(s, obs, synonyms))
    if e.evidence.alerts or e.evidence.logs:
        out.append(check_evidence(s, obs))
    if e.forbidden:
        out.append(check_forbidden(s, obs))
    out.append(check_cost(s, obs))
    return out
