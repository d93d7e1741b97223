"""Check the English development eval (queries and corpus) and print its counts as JSON.

Queries (``queries_en.yaml``): ids unique, kinds valid, every expected path exists under the
corpus, negatives list nothing and the others list something, no query text twice, no runbook
expected by more than 3 queries. Corpus (``corpus/en/<category>/*.md``, files at the root are not
runbooks): known categories, 40–120 lines per runbook, frontmatter (if any) holding only
``title`` and ``summary``. Exits 1 when anything is wrong, listing every problem.

    .venv/bin/python bench/eval/check_queries.py [--queries PATH] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
KINDS = ("alert_name", "alert_text", "symptom", "error_message", "question", "negative")
CATEGORIES = (
    "kubernetes",
    "node",
    "control-plane",
    "monitoring",
    "network",
    "storage",
    "database",
    "messaging",
    "application",
)
FRONTMATTER_KEYS = {"title", "summary"}
MAX_QUERIES_PER_RUNBOOK = 3
MIN_LINES, MAX_LINES = 40, 120
FRONTMATTER_RE = re.compile(r"\A---\n(.*?)\n---\n", re.S)
HEADING_RE = re.compile(r"^# (\S.*?)\s*$", re.M)


def check_queries(queries: object, runbooks: set[str]) -> tuple[dict, list[str]]:
    """Validate the parsed query list against the set of runbook paths; pure."""
    problems: list[str] = []
    if not isinstance(queries, list):
        return {}, ["the queries file must be a YAML list of {id, query, expected, kind}"]
    ids: Counter[str] = Counter()
    texts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    per_runbook: Counter[str] = Counter()
    for n, q in enumerate(queries, 1):
        where = f"entry {n}"
        if not isinstance(q, dict) or set(q) != {"id", "query", "expected", "kind"}:
            problems.append(f"{where}: needs exactly the keys id, query, expected, kind")
            continue
        where = f"{q['id']}"
        ids[q["id"]] += 1
        if not isinstance(q["query"], str) or not q["query"].strip():
            problems.append(f"{where}: query must be a non-empty string")
        else:
            texts[q["query"].strip().lower()] += 1
        kind = q["kind"]
        kinds[kind] += 1
        if kind not in KINDS:
            problems.append(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        expected = q["expected"]
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            problems.append(f"{where}: expected must be a list of paths")
            continue
        if kind == "negative" and expected:
            problems.append(f"{where}: a negative query must have expected: []")
        if kind != "negative" and not expected:
            problems.append(f"{where}: an answerable query must list at least one runbook")
        if len(set(expected)) != len(expected):
            problems.append(f"{where}: expected lists a runbook twice")
        for path in set(expected):
            if path not in runbooks:
                problems.append(f"{where}: expected path {path!r} is not a runbook in the corpus")
            per_runbook[path] += 1
    problems += [f"{i}: id used {c} times" for i, c in ids.items() if c > 1]
    problems += [f"query text used {c} times: {t!r}" for t, c in texts.items() if c > 1]
    problems += [
        f"{p}: expected by {c} queries (at most {MAX_QUERIES_PER_RUNBOOK})"
        for p, c in sorted(per_runbook.items())
        if c > MAX_QUERIES_PER_RUNBOOK
    ]
    counts = {
        "queries": len(queries),
        "by_kind": {k: kinds.get(k, 0) for k in KINDS},
        "multi_answer_queries": sum(
            1 for q in queries if isinstance(q, dict) and len(q.get("expected") or []) > 1
        ),
        "runbooks_with_queries": len(per_runbook),
        "runbooks_without_queries": len(runbooks - set(per_runbook)),
        "max_queries_per_runbook": max(per_runbook.values(), default=0),
    }
    return counts, problems


def check_runbook(path: str, text: str) -> tuple[dict, list[str]]:
    """Facts about one runbook (frontmatter, heading, whether the stem names the alert); pure."""
    problems: list[str] = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if not MIN_LINES <= lines <= MAX_LINES:
        problems.append(f"{path}: {lines} lines, expected {MIN_LINES}–{MAX_LINES}")
    match = FRONTMATTER_RE.match(text)
    if match:
        meta = yaml.safe_load(match.group(1))
        if not isinstance(meta, dict) or not meta.get("title"):
            problems.append(f"{path}: frontmatter must be a mapping with a title")
        elif set(meta) - FRONTMATTER_KEYS:
            extra = ", ".join(sorted(set(meta) - FRONTMATTER_KEYS))
            problems.append(f"{path}: frontmatter may hold only title and summary, not {extra}")
    heading = HEADING_RE.search(text)
    if not heading:
        problems.append(f"{path}: no '# AlertName' heading")
    stem = Path(path).stem
    return {
        "frontmatter": bool(match),
        "stem_differs": bool(heading) and heading.group(1) != stem,
    }, problems


def check_corpus(corpus: Path) -> tuple[set[str], dict, list[str]]:
    problems: list[str] = []
    runbooks: set[str] = set()
    by_category: Counter[str] = Counter()
    frontmatter = stem_differs = 0
    for file in sorted(corpus.glob("*/*.md")):
        rel = file.relative_to(corpus).as_posix()
        category = rel.split("/", 1)[0]
        if category not in CATEGORIES:
            problems.append(f"{rel}: folder {category!r} is not one of {', '.join(CATEGORIES)}")
        runbooks.add(rel)
        by_category[category] += 1
        facts, found = check_runbook(rel, file.read_text(encoding="utf-8"))
        problems += found
        frontmatter += facts["frontmatter"]
        stem_differs += facts["stem_differs"]
    counts = {
        "runbooks": len(runbooks),
        "by_category": {c: by_category.get(c, 0) for c in CATEGORIES},
        "with_frontmatter": frontmatter,
        "stem_differs_from_alert": stem_differs,
    }
    return runbooks, counts, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=HERE / "queries_en.yaml")
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus" / "en")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"corpus folder {args.corpus} does not exist; pass --corpus DIR", file=sys.stderr)
        return 2
    try:
        queries = yaml.safe_load(args.queries.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        print(f"cannot read {args.queries}: {exc}", file=sys.stderr)
        return 2
    runbooks, corpus_counts, problems = check_corpus(args.corpus)
    query_counts, query_problems = check_queries(queries, runbooks)
    problems += query_problems
    report = {"corpus": corpus_counts, "queries": query_counts, "problems": problems}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
