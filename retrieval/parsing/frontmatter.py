"""Split a runbook into its YAML frontmatter and body, and read the frontmatter within fixed bounds.

A hostile frontmatter must not cost more than its size: aliases are refused (a few hundred bytes of
nested aliases expand to gigabytes), as are blocks over 64 KB, nesting deeper than 20 levels and
more than 10,000 YAML nodes. Every refusal is a :class:`FrontmatterError` naming the line in the
file and what to change. Pure; PyYAML's C parser when it is available.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    NodeEvent,
)

MAX_BYTES = 64 * 1024
MAX_DEPTH = 20
MAX_NODES = 10_000
BOUNDARY = re.compile(r"-{3,}[ \t]*")

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontmatterError(Exception):
    """The frontmatter cannot be read; ``line`` is 1-based in the file (0 when unknown)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}" if line else problem)
        self.line, self.problem = line, problem


@dataclass(frozen=True)
class Split:
    block: str | None  # the YAML between the '---' lines; None when the file has none
    body: str
    first_line: int  # file line of the block's first line


def split(text: str) -> Split:
    """Frontmatter is a '---' line at the top (after blank lines), the YAML, and a '---' line."""
    lines = text.split("\n")
    top = 0
    while top < len(lines) and not lines[top].strip():
        top += 1
    if top == len(lines) or not BOUNDARY.fullmatch(lines[top].rstrip("\r")):
        return Split(None, text.strip(), 0)
    for end in range(top + 1, len(lines)):
        if BOUNDARY.fullmatch(lines[end].rstrip("\r")):
            block = "\n".join(lines[top + 1 : end])
            return Split(block, "\n".join(lines[end + 1 :]).strip(), top + 2)
    raise FrontmatterError(
        top + 1,
        "the frontmatter opened by '---' is never closed; add a '---' line after its last field",
    )


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loading whose conversion failures name the value and its line."""

    first_line = 2

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (FrontmatterError, ConstructorError):
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            raise FrontmatterError(
                node.start_mark.line + self.first_line, _conversion_problem(node, exc)
            ) from None


def _conversion_problem(node: yaml.Node, exc: Exception) -> str:
    shown = str(getattr(node, "value", ""))[:60]
    if node.tag == "tag:yaml.org,2002:timestamp":
        # datetime's own reason is plain words ("month must be in 1..12").
        return (
            f"'{shown}' is not a valid date ({exc}); write dates as YYYY-MM-DD or put the value "
            "in quotes"
        )
    kind = {"int": "whole number", "float": "number"}.get(node.tag.rsplit(":", 1)[-1], "value")
    return f"'{shown}' is not a valid {kind}; put it in quotes to keep it as text"


def _check_shape(block: str, first_line: int) -> None:
    """One pass over the parse events, stopping at the first alias or past the limits."""
    loader = _Loader(block)
    depth = nodes = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            line = event.start_mark.line + first_line if event.start_mark else 0
            if isinstance(event, AliasEvent):
                raise FrontmatterError(
                    line,
                    f"the YAML alias '*{event.anchor}' is not allowed in frontmatter; "
                    "write the value out in full",
                )
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise FrontmatterError(
                        line, f"the frontmatter nests deeper than {MAX_DEPTH} levels; flatten it"
                    )
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            if isinstance(event, NodeEvent):
                nodes += 1
                if nodes > MAX_NODES:
                    raise FrontmatterError(
                        line, f"the frontmatter has more than {MAX_NODES} values; shorten it"
                    )
    finally:
        loader.dispose()


def _describe_yaml_error(exc: yaml.YAMLError, block: str, first_line: int) -> FrontmatterError:
    if isinstance(exc, yaml.reader.ReaderError):
        line = block[: exc.position].count("\n") + first_line
        return FrontmatterError(
            line,
            f"the frontmatter contains the control character #x{exc.character:04x}, which YAML "
            "does not allow; remove it",
        )
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + first_line if mark else 0
    problem = getattr(exc, "problem", None) or "the YAML cannot be read"
    return FrontmatterError(
        line,
        f"the frontmatter is not valid YAML ({problem}); fix the block between the '---' lines",
    )


def load(block: str, first_line: int = 2) -> tuple[dict[str, Any], dict[str, int]]:
    """The frontmatter as a mapping, and the file line of each top-level key."""
    if len(block.encode()) > MAX_BYTES:
        raise FrontmatterError(
            first_line,
            f"the frontmatter is larger than {MAX_BYTES // 1024} KB; move long text into the body",
        )
    if not block.strip():
        return {}, {}
    try:
        _check_shape(block, first_line)
        loader = _Loader(block)
        loader.first_line = first_line
        try:
            node = loader.get_single_node()
            if node is None:
                return {}, {}
            if not isinstance(node, yaml.MappingNode):
                raise FrontmatterError(
                    node.start_mark.line + first_line,
                    "the frontmatter must be a YAML mapping of fields (one 'name: value' per "
                    "line), not a list or a single value",
                )
            lines = {
                str(k.value): k.start_mark.line + first_line
                for k, _ in node.value
                if isinstance(k, yaml.ScalarNode)
            }
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _describe_yaml_error(exc, block, first_line) from None
    if not isinstance(data, dict):  # pragma: no cover - a MappingNode always constructs a dict
        raise FrontmatterError(first_line, "the frontmatter must be a YAML mapping of fields")
    return data, lines
