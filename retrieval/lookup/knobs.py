"""A lookup's knobs: the one list of what a run or a single lookup may change of ``LookupConfig``.

Each knob is one field of :class:`LookupKnobs`: its type and bounds (``Field``, which Studio and the
API show too) and a :class:`Knob` naming the ``LookupConfig`` value it replaces and its label on the
retrieval-test page. ``None`` keeps the server's value (the setting; its default is stated once, in
``settings.py``). A run or a request gets a copy of the configuration with its values in, so one
operator's experiment never changes what the agent or anyone else sees.

Three surfaces map onto this type, so a new knob needs no edit in any of them:
``graph.context.Context`` inherits the fields (LangGraph Studio shows and edits them), the HTTP
lookup request (``api/schemas.py``) is built from :func:`request_fields`, and the retrieval-test
page draws its controls from :func:`describe` (``GET /api/knowledge/lookup/knobs``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, get_args, get_type_hints

from pydantic import Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from retrieval.lookup.config import LookupConfig


@dataclass(frozen=True)
class Knob:
    """Where a knob lands: ``target`` is a ``LookupConfig`` path, e.g. ``thresholds.reference``."""

    target: str
    label: str  # on the retrieval-test page
    run_only: bool = False  # a run's knob (Context, Studio), not a single lookup's (the HTTP test)
    wire: str | None = None  # its name in the HTTP request when not the field's camelCase
    choices: tuple[tuple[str, str], ...] = ()  # (value, label on the page) of an enum knob


@dataclass(kw_only=True)
class LookupKnobs:
    """A run's or a request's overrides of the lookup configuration; each ``None`` keeps it."""

    top_k: Annotated[
        int | None,
        Knob("top_k", "top-k 文档数"),
        Field(
            ge=1,
            le=10,
            description="Documents a lookup shows: the primary and up to top-k − 1 supplements "
            "(unset = the setting).",
        ),
    ] = None
    highly_relevant_threshold: Annotated[
        float | None,
        Knob("thresholds.highly_relevant", "高度相关阈值"),
        Field(ge=0, le=1, description="HIGHLY_RELEVANT threshold, 0..1 (unset = the setting)."),
    ] = None
    reference_threshold: Annotated[
        float | None,
        Knob("thresholds.reference", "参考阈值"),
        Field(ge=0, le=1, description="REFERENCE threshold, 0..1 (unset = the setting)."),
    ] = None
    max_l2_distance: Annotated[
        float | None,
        Knob("thresholds.max_l2_distance", "L2 距离上限"),
        Field(
            gt=0,
            description="L2 distance at which dense similarity reaches 0, > 0 (unset = the "
            "setting).",
        ),
    ] = None
    dense_weight: Annotated[
        float | None,
        Knob("dense_weight", "dense 权重"),
        Field(ge=0, le=10, description="RRF weight of the dense route (unset = the setting)."),
    ] = None
    bm25_weight: Annotated[
        float | None,
        Knob("bm25_weight", "BM25 权重"),
        Field(ge=0, le=10, description="RRF weight of the BM25 route (unset = the setting)."),
    ] = None
    supplement_floor: Annotated[
        float | None,
        Knob("supplement_floor", "补充文档置信度下限"),
        Field(
            ge=0,
            le=1,
            description="Calibrated confidence a supplement needs of its own to be shown, 0..1 "
            "(unset = the setting).",
        ),
    ] = None
    relevance_judge: Annotated[
        Literal["calibrated", "dense"] | None,
        Knob(
            "judge",
            "判定 judge",
            wire="judge",
            choices=(("calibrated", "calibrated 校准"), ("dense", "dense 相似度")),
        ),
        Field(
            description="How lookups are judged: calibrated (one confidence from all the "
            "evidence) or dense (the dense similarity alone; for a multilingual model). Unset = "
            "the setting."
        ),
    ] = None
    lookup_budget: Annotated[
        int | None,
        Knob("budget", "检索次数上限", run_only=True),
        Field(ge=0, description="lookup_knowledge calls served per run (unset = the setting)."),
    ] = None

    def __post_init__(self) -> None:
        # Studio and callers may send anything; a knob out of range would silently misjudge.
        for name in KNOBS:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, _checked(name, value))

    @classmethod
    def of(cls, source: Any) -> LookupKnobs:
        """The knobs an object carrying them by name sets (an HTTP request)."""
        return cls(**{n: v for n in KNOBS if (v := getattr(source, n, None)) is not None})

    def named(self) -> list[str]:
        return [name for name in KNOBS if getattr(self, name) is not None]


KNOBS: dict[str, Knob] = {
    name: next(m for m in get_args(hint)[1:] if isinstance(m, Knob))
    for name, hint in get_type_hints(LookupKnobs, include_extras=True).items()
}


def apply(base: LookupConfig, knobs: LookupKnobs | None) -> LookupConfig:
    """A copy of ``base`` with the values ``knobs`` sets (``base`` itself when it sets none).

    Thresholds are not checked against each other here: the retrieval test refuses a reference
    threshold above the highly-relevant one, a run is judged with what it was given."""
    out = base
    for name in knobs.named() if knobs is not None else []:
        out = _put(out, KNOBS[name].target, getattr(knobs, name))
    return out


def wire(name: str) -> str:
    """A knob's name in the HTTP request and the retrieval test's ``settings``."""
    return KNOBS[name].wire or to_camel(name)


def request_fields() -> dict[str, Any]:
    """The HTTP lookup request's knob fields, as ``pydantic.create_model`` takes them."""
    return {
        name: (Annotated[_hint(name), Field(alias=k.wire)] if k.wire else _hint(name), None)
        for name, k in KNOBS.items()
        if not k.run_only
    }


def effective(cfg: LookupConfig, wanted: LookupKnobs) -> dict[str, Any]:
    """What a retrieval test ran with (wire names), and which of it the request chose."""
    values = {wire(n): _get(cfg, k.target) for n, k in KNOBS.items() if not k.run_only}
    return values | {"overridden": [wire(n) for n in wanted.named()]}


def describe(cfg: LookupConfig) -> list[dict[str, Any]]:
    """The retrieval test's knobs for a form: wire name, label, description, JSON-schema type and
    bounds (``minimum``, ``maximum``, ``exclusiveMinimum``, ``enum`` with ``enumLabels``) and the
    server's value."""
    out = []
    for name, k in KNOBS.items():
        if k.run_only:
            continue
        schema = _adapter(name).json_schema()
        branch = next(s for s in schema.get("anyOf", [schema]) if s.get("type") != "null")
        bounds = {key: branch[key] for key in _SCHEMA_KEYS if key in branch}
        out.append(
            {"name": wire(name), "label": k.label, "description": schema.get("description", "")}
            | bounds
            | ({"enumLabels": dict(k.choices)} if k.choices else {})
            | {"value": _get(cfg, k.target)}
        )
    return out


_SCHEMA_KEYS = ("type", "minimum", "maximum", "exclusiveMinimum", "enum")


@cache
def _hint(name: str) -> Any:
    return get_type_hints(LookupKnobs, include_extras=True)[name]


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(_hint(name))


def _checked(name: str, value: Any) -> Any:
    try:
        return _adapter(name).validate_python(value)
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"]
        raise ValueError(f"{name}: {msg[:1].lower()}{msg[1:]}, or unset (got {value!r})") from None


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _put(obj: Any, path: str, value: Any) -> Any:
    head, _, rest = path.partition(".")
    return dataclasses.replace(
        obj, **{head: _put(getattr(obj, head), rest, value) if rest else value}
    )
