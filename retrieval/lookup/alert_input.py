"""A firing alert as lookup input, and label values in any text: context, not evidence. Pure.

Alertmanager renders a rule's annotations with the alert's label values filled in:
``Pod checkout/cart-5c6d7f9d4-p2qvn (container cart) restarted 7 times in 15m on 10.0.3.17``. To a
term-based judge the namespace, the pod's hash suffix, the IP and the numbers are words no runbook
contains — "missing evidence" that pushes the right runbook to NONE. They are context: which pod,
where, how much. ``strip_context`` finds them by shape (namespaced names, pod-hash and ordinal
suffixes, IPs, host:port, numbers with units, percentages, durations, UUIDs and hashes, cluster-like
names) and, when the caller has the alert, by value (every label value). What is left is what a
runbook can match: the condition, its words and identifiers.

Words inside a label value that *are* evidence are kept: a product (``cache/redis-0`` keeps
``redis``), a Kubernetes reason (``reason=OOMKilled``) or any identifier (``CrashLoopBackOff``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from retrieval.judging.entities import technologies_in, vocabulary_words
from retrieval.parsing.textnorm import code_tokens, compact_term

# Annotations that describe the condition (rendered text); others (runbook_url, dashboard) are links.
TEXT_ANNOTATIONS = ("summary", "description", "message")
_VOCABULARY = frozenset(vocabulary_words())
# Lower-case words that legitimately sit around a slash in prose: "read/write", "TCP/UDP".
_SLASH_TEXT = """read write rw ro r w tcp udp in out and or yes no on off get set put post input
    output http https client server request response req resp sec min s i o"""
_SLASH_WORDS = frozenset(_SLASH_TEXT.split())
_UNIT = r"(?:%|ms|us|µs|ns|s|sec|m|min|h|d|w|y|k|K|M|G|T|Ki|Mi|Gi|Ti|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB|B|x|rps|qps|ops|cores?)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx))
    for kind, rx in (
        ("url", r"\bhttps?://\S+"),
        (
            "uuid",
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        ),
        ("ip", r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5}|/\d{1,2})?(?![\w.])"),
        ("ipv6", r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}(?![\w:])"),
        ("host_port", r"(?<![\w.-])[A-Za-z0-9][\w.-]*:\d{2,5}(?![\w.])"),
        # namespace/name (and deeper paths of names), lower-case as Kubernetes names are
        ("namespaced", r"(?<![\w/.-])[a-z0-9][a-z0-9-]*(?:/[a-z0-9][a-z0-9.-]*[a-z0-9])+(?![\w/])"),
        ("fqdn", r"(?<![\w.-])[a-z0-9][a-z0-9-]*(?:\.[a-z0-9][a-z0-9-]*){2,}(?![\w.-])"),
        ("hash", r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}(?![\w-])"),
        # a lower-case name with a part that holds a digit: pod hashes, ordinals, nodes, clusters
        (
            "name",
            r"(?<![\w./-])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?=[a-z]*\d)[a-z0-9]+(?:-[a-z0-9]+)*(?![\w/-])",
        ),
        ("duration", r"(?<![\w.])(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w)){2,}(?![\w.])"),
        ("number", rf"(?<![\w.])[-+]?\d+(?:[.,]\d+)*\s?{_UNIT}?(?![\w.%])"),
    )
)
_STATUS = re.compile(r"[1-5]\d\d")  # HTTP statuses and exit codes (502, 137) are evidence


@dataclass(frozen=True)
class Stripped:
    text: str  # the text with context values blanked out (evidence words kept)
    values: tuple[str, ...] = ()  # what was taken out, in order

    @property
    def changed(self) -> bool:
        return bool(self.values)


def _evidence_words(value: str) -> list[str]:
    """Words inside a context value that are evidence: products, kinds and identifiers."""
    # identifiers with capitals or underscores (OOMKilled, ERR_TIMEOUT); not dotted host parts
    keep = [c for c in code_tokens(value) if c != c.casefold() or "_" in c]
    for part in re.split(r"[^A-Za-z0-9]+", value):
        if compact_term(part) in _VOCABULARY or part.casefold() in _VOCABULARY:
            keep.append(part)
    if technologies_in(value) and not keep:
        keep.append(value)
    return list(dict.fromkeys(keep))


def _name_words(value: str, named: Callable[[list[str]], bool]) -> list[str]:
    """The name inside a label value when the base knows it as one (``logging/fluent-bit-xk7dp``
    keeps ``fluent bit`` in a base with a Fluent Bit runbook): the leading words of its last path
    part, up to the first part with a digit or no vowel (a hash, an ordinal, a pod suffix). One word
    alone is left to the vocabulary (``cache/redis-0`` keeps ``redis``): a single common word of an
    application's name (``cart``) would count as a term the right runbook lacks."""
    last = value.rsplit("/", 1)[-1]
    if "." in last or ":" in last:
        return []
    words: list[str] = []
    for part in last.split("-"):
        if not part.isalpha() or not re.search(r"[aeiouy]", part, re.IGNORECASE):
            break
        words.append(part.casefold())
    return words if len(words) >= 2 and named(words) else []


def _is_context(kind: str, value: str, known: Callable[[str], bool]) -> bool:
    if kind == "namespaced":
        parts = value.split("/")
        plain = all(p.isalpha() for p in parts)
        if plain and any(p in _SLASH_WORDS or len(p) < 2 for p in parts):
            return False
    if kind == "number":
        bare = value.strip("+-")
        if _STATUS.fullmatch(bare) and known(bare):
            return False
    return not (kind == "name" and known(value.casefold()))


def strip_context(
    text: str,
    values: Iterable[str] = (),
    *,
    known: Callable[[str], bool] = lambda term: False,
    named: Callable[[list[str]], bool] = lambda words: False,
) -> Stripped:
    """``text`` without its label-like values (and without ``values``, a structured alert's label
    values, wherever they occur). ``known(term)`` says whether a knowledge-base document holds a
    term: a status code or a hyphenated name that runbooks use is evidence, not context.
    ``named(words)``: do these words together name something the base is about (``fluent bit``)
    — then a label value built on them keeps them (``_name_words``)."""
    spans: list[tuple[int, int]] = []
    for value in sorted({v for v in values if len(v.strip()) >= 2}, key=len, reverse=True):
        if code_tokens(value) and compact_term(value) == compact_term(code_tokens(value)[0]):
            continue  # a label value that is itself an identifier (reason=OOMKilled) is evidence
        for m in re.finditer(re.escape(value), text):
            spans.append((m.start(), m.end()))
    for kind, rx in _PATTERNS:
        for m in rx.finditer(text):
            if _is_context(kind, m.group(0), known):
                spans.append((m.start(), m.end()))
    if not spans:
        return Stripped(text)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, taken, last = [], [], 0
    for start, end in merged:
        value = text[start:end]
        taken.append(value)
        out.append(text[last:start])
        kept = _evidence_words(value)
        kept += [w for w in _name_words(value, named) if w not in {k.casefold() for k in kept}]
        out.append(f" {' '.join(kept)} " if kept else " ")
        last = end
    out.append(text[last:])
    cleaned = re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()
    return Stripped(cleaned, tuple(taken))


# Identifier-shaped tokens that are label values, not evidence (``code_missing``, ``code_only``): a
# daemon's instance (``osd.1``), a host (``ec2.internal``), an acronym's plural (``PVCs``), and a
# piece of a longer name (``mds.ocs`` of ``mds.ocs-storagecluster-a``). On runbooks written
# elsewhere they had the right runbook judged NONE: "an identifier the runbook lacks".
_INSTANCE = re.compile(r"[a-z]+\.\d+")
_HOST_SUFFIX_TEXT = """com net org io dev cloud local localdomain internal intra intranet lan lab corp
    home svc cluster example test cn de uk jp fr ru eu us"""
_HOST_SUFFIXES = frozenset(_HOST_SUFFIX_TEXT.split())
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s")
_JOINED_AFTER, _JOINED_BEFORE = re.compile(r"-[A-Za-z0-9]"), re.compile(r"[A-Za-z0-9]-")


def is_label_code(code: str, text: str) -> bool:
    """Is ``code`` (a ``code_tokens`` match in ``text``) the shape of a label value?"""
    if _INSTANCE.fullmatch(code) or _PLURAL_ACRONYM.fullmatch(code):
        return True
    if code == code.casefold() and "_" not in code and code.rsplit(".", 1)[-1] in _HOST_SUFFIXES:
        return True
    i = text.find(code)
    if i < 0:
        return False
    after, before = text[i + len(code) : i + len(code) + 2], text[max(i - 2, 0) : i]
    return bool(_JOINED_AFTER.fullmatch(after) or _JOINED_BEFORE.fullmatch(before))


class AlertError(ValueError):
    """A malformed alert payload; the message names the field and the expected form."""


def _str_map(obj: Any, name: str) -> dict[str, str]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise AlertError(f"alert.{name} must be an object of strings, got {type(obj).__name__}")
    out = {}
    for k, v in obj.items():
        if not isinstance(k, str) or not isinstance(v, str | int | float | bool):
            raise AlertError(f"alert.{name}.{k} must be a string, got {type(v).__name__}")
        out[k] = str(v)
    return out


@dataclass(frozen=True)
class AlertInput:
    """The firing alert a lookup is about: its name, labels and rendered annotations."""

    alertname: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, obj: Any) -> AlertInput:
        """From ``{alertname?, labels, annotations}`` (Alertmanager's and Prometheus' shape);
        ``alertname`` may sit in the labels instead. Raises ``AlertError`` naming the problem."""
        if isinstance(obj, AlertInput):
            return obj
        if not isinstance(obj, Mapping):
            raise AlertError(
                f"alert must be an object {{alertname, labels, annotations}}, got {type(obj).__name__}"
            )
        labels = _str_map(obj.get("labels"), "labels")
        annotations = _str_map(obj.get("annotations"), "annotations")
        name = obj.get("alertname") or labels.get("alertname") or ""
        if not isinstance(name, str) or not name.strip():
            raise AlertError("alert needs an alertname (alert.alertname or alert.labels.alertname)")
        if not re.fullmatch(r"[A-Za-z_:][\w:.-]{0,199}", name.strip()):
            raise AlertError(f"alert.alertname {name!r} is not a Prometheus alert name")
        return cls(name.strip(), labels, annotations)

    def text(self) -> str:
        """The rendered condition: summary, description, message (what a runbook can match)."""
        parts = [self.annotations[k] for k in TEXT_ANNOTATIONS if self.annotations.get(k)]
        return "\n".join(dict.fromkeys(p.strip() for p in parts if p.strip())) or self.alertname

    def context_values(self) -> list[str]:
        """Label values that are context (which object, where): every label but the name."""
        return [v for k, v in self.labels.items() if k != "alertname" and v.strip()]

    def as_dict(self) -> dict[str, Any]:
        return {"alertname": self.alertname, "labels": self.labels, "annotations": self.annotations}
