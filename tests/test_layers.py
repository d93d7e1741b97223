"""Imports go one way: entry points → api → evals → services → runs → llm → graph → tools →
retrieval → persistence → settings; inside ``retrieval/`` its rooms go one way too (``ROOMS``).

Every import in every product module counts — module-level, inside functions and under
``TYPE_CHECKING`` (a type-only import is still a cycle a reader has to untangle). Only the CLIs
(``__main__.py``) may import upward: they start the whole system.

``python -m tests.test_layers`` prints the package graph (package → package, with the files behind
each edge).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lower rank = lower layer. A module may import its own layer or any lower one.
RANK = {
    "settings": 0,
    "settings_http": 0,  # the HTTP surface's part of the settings
    "telemetry": 0,  # metric definitions: every layer records into them
    "persistence": 1,
    "retrieval": 2,
    "tools": 3,
    "graph": 4,  # pure LangGraph: state, nodes, routing, answers; no persistence
    "llm": 5,  # the chat-model factory and the offline model it serves (which reads graph/ answers)
    "runs": 6,  # a run's lifecycle: start, stream, record, score, resume, replay
    "services": 7,
    # The incident eval suite drives the whole system (services and below); the API reads its
    # scenario schema and exports cases through it, so it sits between the two.
    "evals": 8,
    "api": 9,
    "server": 10,
    "studio": 10,
}
# The rooms of retrieval/, lowest first; a module at the package's top (wiring, CLI) may import any.
ROOMS = {
    "parsing": 0,  # frontmatter, documents, chunks, text forms
    "l0": 1,  # exact keywords and the document catalog
    "l1": 1,  # embeddings and the vector store
    "judging": 2,  # relevance levels and the calibrated judge
    "lookup": 3,  # one lookup: input, routes, judge, memory, payload
    "writing": 3,  # the only writer: import, upload, enable, seed
    "repair": 4,  # reading the stores back and mending them
}
MAX_ROOM_SHARE = 0.20  # no room (package, or a room of retrieval/) holds more of the code
CLI = "__main__.py"
# Only the model factory may reach the offline model; the nodes must not run on its heuristics.
OFFLINE = "llm.offline"
OFFLINE_ALLOWED = {"llm/factory.py"}
SQL = {"sqlalchemy", "sqlmodel"}  # only persistence/ speaks to the database
MAX_LINES = 450


def product_files() -> list[Path]:
    files = []
    for name in RANK:
        module, package = ROOT / f"{name}.py", ROOT / name
        if module.is_file():
            files.append(module)
        if package.is_dir():
            files += sorted(package.rglob("*.py"))
    return files


def imports_in(source: str, package: tuple[str, ...]) -> list[str]:
    """Absolute names of everything ``source`` imports, wherever the import statement stands."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package[: len(package) - node.level + 1]
                out.append(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                out.append(node.module)
    return out


def imported_modules(path: Path) -> list[str]:
    package = path.relative_to(ROOT).parts[:-1]
    return imports_in(path.read_text(encoding="utf-8"), package)


def edges() -> dict[tuple[str, str], set[str]]:
    """(from package, to package) → the files making that edge."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in product_files():
        source = path.relative_to(ROOT).parts[0].removesuffix(".py")
        for module in imported_modules(path):
            target = module.split(".")[0]
            if target in RANK and target != source:
                found[(source, target)].add(path.relative_to(ROOT).as_posix())
    return found


def test_the_api_uses_the_eval_suite_only_to_export_and_describe_scenarios() -> None:
    # Serving pages must not start eval runs: the API reaches the suite's schema, checks and case
    # export, never its runner, workspaces or CLI.
    allowed = {"evals", "evals.export", "evals.loader", "evals.schema"}
    forbidden = {"evals.runner", "evals.suite", "evals.workspace", "evals.__main__"}
    reached = {
        f"{path.relative_to(ROOT).as_posix()}: {m}"
        for path in product_files()
        if path.relative_to(ROOT).parts[0] in ("api", "server.py")
        for m in imported_modules(path)
        if m.split(".")[0] == "evals" and m not in allowed
    }
    assert not reached, "the API imports eval machinery:\n" + "\n".join(sorted(reached))
    # … nor through the modules it may import.
    indirect = {
        f"{path.relative_to(ROOT).as_posix()}: {m}"
        for name in allowed - {"evals"}
        for path in [ROOT / (name.replace(".", "/") + ".py")]
        for m in imported_modules(path)
        if m in forbidden
    }
    assert not indirect, "the API reaches eval machinery through:\n" + "\n".join(sorted(indirect))


def test_no_product_module_imports_a_higher_layer() -> None:
    upward = [
        f"{file}: {source} (layer {RANK[source]}) imports {target} (layer {RANK[target]})"
        for (source, target), files in sorted(edges().items())
        if RANK[target] > RANK[source]
        for file in sorted(files)
        if Path(file).name != CLI
    ]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_only_the_model_factory_reaches_the_offline_model() -> None:
    offenders = []
    for path in product_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("llm/offline/") or rel in OFFLINE_ALLOWED:
            continue
        hits = [m for m in imported_modules(path) if m == OFFLINE or m.startswith(OFFLINE + ".")]
        offenders += [f"{rel} imports {m}" for m in hits]
    assert not offenders, "production code depends on the offline model:\n" + "\n".join(offenders)


def test_the_walker_sees_type_checking_and_function_level_imports() -> None:
    # The rules above are only as good as the walker; prove it reads the hidden forms.
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from services import Services\n"
        "def f():\n    import server\n    from . import nodes\n    from ..tools import x\n"
    )
    found = set(imports_in(source, ("graph", "offline")))
    assert {"services", "server", "graph.offline", "graph.tools"} <= found


def room_of(path: Path) -> str:
    """``retrieval/l1/store.py`` → ``retrieval.l1``; ``graph/diagnosis/x.py`` → ``graph``."""
    parts = path.relative_to(ROOT).parts
    top = parts[0].removesuffix(".py")
    if top == "retrieval" and len(parts) > 2:
        return f"retrieval.{parts[1]}"
    return top


def room_edges() -> dict[tuple[str, str], set[str]]:
    """(room, room) → files, between the rooms of retrieval/."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted((ROOT / "retrieval").rglob("*.py")):
        source = room_of(path)
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "retrieval" and len(parts) > 2 and parts[1] in ROOMS:
                target = f"retrieval.{parts[1]}"
                if target != source:
                    found[(source, target)].add(path.relative_to(ROOT).as_posix())
    return found


def test_retrieval_rooms_import_one_way() -> None:
    unknown = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "retrieval").iterdir()
        if p.is_dir() and p.name != "__pycache__" and p.name not in ROOMS
    )
    assert not unknown, f"retrieval/ has rooms the layer rule does not rank: {unknown}"
    against = [
        f"{file}: {source} imports {target}"
        for (source, target), files in sorted(room_edges().items())
        if source != "retrieval"  # the package's top (wiring, CLI) may import every room
        and ROOMS[target.split(".")[1]] >= ROOMS[source.split(".")[1]]
        for file in sorted(files)
    ]
    # Rooms of one rank stay apart too (l0 and l1; lookup and writing): neither builds on the other.
    assert not against, "retrieval rooms import against their order:\n" + "\n".join(against)


def test_graph_holds_no_persistence() -> None:
    # graph/ is pure LangGraph; runs/ records what it does.
    offenders = [
        f"{path.relative_to(ROOT).as_posix()} imports {m}"
        for path in sorted((ROOT / "graph").rglob("*.py"))
        for m in imported_modules(path)
        if m.split(".")[0] in ("persistence", "runs", "services", *SQL)
    ]
    assert not offenders, "graph/ reaches persistence:\n" + "\n".join(offenders)


def room_sizes() -> dict[str, int]:
    sizes: dict[str, int] = defaultdict(int)
    for path in product_files():
        sizes[room_of(path)] += len(path.read_text(encoding="utf-8").splitlines())
    return dict(sizes)


def test_no_room_holds_more_than_a_fifth_of_the_code() -> None:
    sizes = room_sizes()
    total = sum(sizes.values())
    big = {room: f"{n / total:.0%}" for room, n in sizes.items() if n > MAX_ROOM_SHARE * total}
    assert not big, f"rooms over {MAX_ROOM_SHARE:.0%} of {total} lines: {big}"


def test_retrieval_leaves_sql_to_persistence() -> None:
    # Retrieval reads and writes its rows through persistence's repository functions only; without
    # SQLAlchemy or SQLModel it cannot build a statement (SQLAlchemy refuses plain strings).
    offenders = [
        f"{path.relative_to(ROOT).as_posix()} imports {m}"
        for path in sorted((ROOT / "retrieval").rglob("*.py"))
        for m in imported_modules(path)
        if m.split(".")[0] in SQL
    ]
    assert not offenders, "SQL outside persistence/:\n" + "\n".join(offenders)


def test_no_product_module_is_over_450_lines() -> None:
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in product_files()
    }
    long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not long, f"split these along their seams (limit {MAX_LINES} lines): {long}"


def main() -> None:
    for (source, target), files in sorted(edges().items(), key=lambda e: (-RANK[e[0][0]], e[0])):
        mark = "  UPWARD" if RANK[target] > RANK[source] else ""
        print(f"{source} -> {target}{mark}: {', '.join(sorted(files))}")
    print()
    for (source, target), files in sorted(room_edges().items()):
        print(f"{source} -> {target}: {', '.join(sorted(files))}")
    sizes = room_sizes()
    total = sum(sizes.values())
    print(f"\nrooms ({total} lines):")
    for room, n in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"  {room:<20} {n:>6}  {n / total:.1%}")


if __name__ == "__main__":
    main()
