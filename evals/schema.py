"""What a scenario file holds: an incident (a question or firing alerts, and what the tools return
in it) and what a right answer does. Validated on load; unknown fields are refused, so a typo never
turns a check off silently.

A scenario is written from the runbooks and the world, not from what the agent says today: it
states what an on-call SRE needs to hear, and it keeps failing until the agent says it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graph.aiops import AIOPS_TASK
from tools.world import World

Language = Literal["zh", "en"]
Flow = Literal["chat", "aiops"]
FLOW_OF = {"chat": "CHAT", "aiops": "AI_OPS"}  # the graph flow each scenario flow runs
INTENTS = {
    "what_is": "what an error, alert or state means",
    "why": "why it happens",
    "diagnose": "how to find the cause (for AI-Ops: analyse the firing alerts)",
    "fix": "how to fix or mitigate it",
    "first_step": "what to do first",
    "followup": "a follow-up question on an earlier answer",
    "multi": "several symptoms or alerts in one incident",
    "no_runbook": "the knowledge base has no runbook for it; the right answer says so",
}
Intent = Literal[
    "what_is", "why", "diagnose", "fix", "first_step", "followup", "multi", "no_runbook"
]
CATEGORIES = {
    "slow_query": "a slow or unindexed SQL statement holds connections, locks or CPU",
    "lock_contention": "deadlocks, lock waits, long transactions holding locks",
    "resource_leak": "connections, file descriptors or memory taken and never given back",
    "capacity": "a resource is full or too small for the load (memory, disk, CPU, connections)",
    "configuration": "a setting is wrong (timeouts, probes, limits, policies, retention)",
    "dependency": "a downstream or upstream service, channel or store is slow or down",
    "deployment": "a release, image or configuration change broke it",
    "data_shape": "big keys, hot keys, skewed partitions, huge transactions",
    "replication": "replicas fall behind (replication lag, ISR shrink)",
    "network": "DNS, connectivity, packet loss",
    "certificate": "an expired or incomplete TLS certificate",
    "client_behaviour": "how callers behave: retries, idempotency, timeouts shorter than the server's",
    "unknown": "no runbook covers it; the right answer says what is missing",
}
Category = Literal[
    "slow_query",
    "lock_contention",
    "resource_leak",
    "capacity",
    "configuration",
    "dependency",
    "deployment",
    "data_shape",
    "replication",
    "network",
    "certificate",
    "client_behaviour",
    "unknown",
]
# A concept a right answer names: one word, or a list of words that mean the same (any counts).
Concept = str | list[str]
SCENARIO_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{2,100}$")
RUNBOOK_PATH = re.compile(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*\.md$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _concepts(v: list[Concept]) -> list[Concept]:
    for c in v:
        words = [c] if isinstance(c, str) else c
        if not words or any(not w.strip() for w in words):
            raise ValueError("every word must be non-empty text (a concept: a word or a list)")
    return v


class Cause(_Strict):
    """The root cause a right diagnosis names."""

    category: Category = Field(description="; ".join(f"{k}: {v}" for k, v in CATEGORIES.items()))
    names: list[Concept] = Field(
        default_factory=list, description="concepts the diagnosis names (each: word or synonyms)"
    )

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[Concept]) -> list[Concept]:
        return _concepts(v)


class Evidence(_Strict):
    """What the answer must use from the world: alerts by name, log lines by a fragment."""

    alerts: list[str] = Field(default_factory=list, description="alertnames the answer names")
    logs: list[str] = Field(
        default_factory=list, description="fragments of log lines the answer quotes"
    )


class Cost(_Strict):
    """The most one scenario (all its turns) may cost."""

    model_calls: int = Field(ge=1)
    tokens: int = Field(ge=1)


class Expected(_Strict):
    runbooks: list[str] = Field(
        default_factory=list, description="knowledge-base paths; citing any one of them is right"
    )
    runbooks_each: list[list[str]] = Field(
        default_factory=list,
        description="several symptoms: for each group, one of its runbooks must be cited",
    )
    wrong_runbooks: list[str] = Field(
        default_factory=list, description="paths whose citation is wrong (another technology)"
    )
    no_runbook: bool = Field(
        default=False, description="no runbook covers this: the answer must say it found none"
    )
    cause: Cause | None = None
    names: list[Concept] = Field(
        default_factory=list,
        description="other concepts a right answer names (the steps of a fix, what a code means)",
    )
    evidence: Evidence = Field(default_factory=Evidence)
    forbidden: list[str] = Field(
        default_factory=list,
        description="claims a right answer never makes (the wrong fix, a technology not involved); "
        "a negated mention (不要…, not …) does not count",
    )
    cost: Cost

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[Concept]) -> list[Concept]:
        return _concepts(v)

    @field_validator("runbooks", "wrong_runbooks")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        return _runbook_paths(v)

    @field_validator("runbooks_each")
    @classmethod
    def _groups(cls, v: list[list[str]]) -> list[list[str]]:
        if any(not group for group in v):
            raise ValueError("every group names at least one runbook")
        for group in v:
            _runbook_paths(group)
        return v

    def runbook_groups(self) -> list[list[str]]:
        """What must be cited: one of ``runbooks``, and one of each ``runbooks_each`` group."""
        return ([self.runbooks] if self.runbooks else []) + self.runbooks_each

    def all_runbooks(self) -> list[str]:
        return [p for g in self.runbook_groups() for p in g] + self.wrong_runbooks

    @model_validator(mode="after")
    def _coherent(self) -> Expected:
        if self.no_runbook and self.runbook_groups():
            raise ValueError("no_runbook: true cannot also expect runbooks to be cited")
        if not (self.no_runbook or self.runbook_groups() or self.cause or self.names):
            raise ValueError("expects nothing: give runbooks, cause, names or no_runbook: true")
        return self


def _runbook_paths(v: list[str]) -> list[str]:
    bad = [p for p in v if not RUNBOOK_PATH.match(p)]
    if bad:
        raise ValueError(
            f"not a knowledge-base path: {bad[0]!r} (write it as the answer cites it, "
            "e.g. database/mysql-slow-query.md)"
        )
    return v


class Source(_Strict):
    """Where an exported scenario came from."""

    case_id: str | None = None
    session_id: str | None = None
    exported_at: datetime | None = None


class Scenario(_Strict):
    id: str = Field(description="unique; the file is named <id>.yaml")
    title: str = Field(min_length=1, max_length=255)
    language: Language
    flow: Flow
    intent: Intent
    tags: list[str] = Field(default_factory=list)
    knowledge_base: Literal["shipped", "local"] = Field(
        default="shipped",
        description="shipped: the runbooks in knowledge_base/; local: KNOWLEDGE_BASE_DIR "
        "(scenarios exported from this installation's cases)",
    )
    question: str | None = Field(default=None, description="chat: the question")
    turns: list[str] = Field(
        default_factory=list,
        description="chat: several questions on one conversation; the last one is judged",
    )
    note: str | None = Field(default=None, description="aiops: the operator's wording of the task")
    world: World = Field(default_factory=World)
    expected: Expected
    notes: str = Field(default="", description="for maintainers: why the expectation is right")
    source: Source | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not SCENARIO_ID.match(v):
            raise ValueError(
                "use 3-100 lower-case letters, digits, '-', '_' or '.', e.g. zh-chat-hikari-fix"
            )
        return v

    @model_validator(mode="after")
    def _asks_something(self) -> Scenario:
        if self.flow == "chat":
            if bool(self.question) == bool(self.turns):
                raise ValueError("a chat scenario gives either question or turns (not both)")
            if any(not t.strip() for t in self.turns):
                raise ValueError("turns: every turn needs a question")
        elif self.question or self.turns:
            raise ValueError("an aiops scenario has no question: give note (optional) and alerts")
        if self.intent == "followup" and len(self.turns) < 2:
            raise ValueError("intent followup needs at least two turns")
        return self

    def questions(self) -> list[str]:
        """What the runs are asked, in order: each turn is one run on one conversation."""
        if self.flow == "aiops":
            return [self.note or AIOPS_TASK]
        return self.turns or [self.question or ""]

    @property
    def graph_flow(self) -> str:
        return FLOW_OF[self.flow]
