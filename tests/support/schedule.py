"""The order the test files go to ``make test``'s workers: the longest first.

``make test`` runs ``--dist loadfile`` (a whole file on one worker, its module fixtures built once)
with ``--no-loadscope-reorder``, so the workers take the files in collection order. pytest-xdist's
own order (most tests first) put the slowest files last — a server or two and a handful of tests
each — and one worker ran them alone at the end. Longest-first keeps the two workers' ends close.

``SECONDS`` is one measured run, file by file on one worker (wall seconds, a loaded machine): only
the order matters. A file not listed is estimated from its marks. Outside xdist the order stays
pytest's own.
"""

from __future__ import annotations

import os

import pytest

SLOW_TEST_S = 20.0  # an unlisted file: per test marked slow, mysql or browser …
FAST_TEST_S = 0.5  # … and per other test

SECONDS: dict[str, float] = {}


def estimate(module: str, items: list[pytest.Item]) -> float:
    if module in SECONDS:
        return SECONDS[module]
    heavy = sum(
        1 for it in items if any(it.get_closest_marker(m) for m in ("slow", "mysql", "browser"))
    )
    return heavy * SLOW_TEST_S + (len(items) - heavy) * FAST_TEST_S


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    by_file: dict[object, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    cost = {path: estimate(its[0].path.stem, its) for path, its in by_file.items()}
    items.sort(key=lambda it: -cost[it.path])  # stable: a file's tests keep their order
