"""Check the retrieval development eval (queries, topics, corpus) and print its counts as JSON.

Queries (``queries_en.yaml``): ids unique, kinds valid, every expected path exists under the
corpus, negatives list nothing and the others list something, no query text twice, no runbook
expected by more than 3 queries. Corpus (``corpus/en/<category>/*.md``, files at the root are not
runbooks): known categories, 40–120 lines per runbook, frontmatter (if any) holding only
``title`` and ``summary``.

Topics (``topics.yaml``, the runbooks the traffic sets are written against): ids and paths unique,
fields complete, a ``present: false`` topic's runbook never written. Traffic sets
(``queries_en_traffic.yaml``, ``queries_zh_traffic.yaml``): ids unique, kinds known, an expected
path either exists or belongs to a ``present: true`` topic whose runbook is not written yet
(counted as "awaiting runbook", not a problem) and never to a ``present: false`` topic; a query of
a missing topic expects nothing (or an existing runbook); ``alert`` objects well-formed, rendered
(no template left) and their description is the query; ``aspects`` (kind ``multi``) partition
``expected``. Exits 1 when anything is wrong, listing every problem.

    .venv/bin/python bench/eval/check_queries.py [--queries PATH] [--corpus DIR] [--topics PATH]
        [--traffic-en PATH] [--traffic-zh PATH] [--zh-corpus DIR] [--knowledge-base DIR]
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

LANGS = ("en", "zh")
TOPIC_KEYS = {"id", "lang", "path", "alertname", "component", "one_line", "style", "present"}
TRAFFIC_KINDS = (*KINDS, "multi")
TRAFFIC_KEYS = {"id", "query", "expected", "kind", "topic"}
TRAFFIC_OPTIONAL = {"alert", "aspects"}
ALERT_KINDS = ("alert_text", "negative")  # a payload from another technology is a negative
TOPIC_PATH_RE = re.compile(r"\A[a-z0-9-]+/[A-Za-z0-9_.-]+\.md\Z")
ALERTNAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
UNRENDERED_RE = re.compile(r"\{\{|\}\}|\$labels|\$value|\$externalLabels")


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


def check_topics(topics: object, written: dict[str, set[str]]) -> tuple[dict, list[str]]:
    """Validate ``topics.yaml`` against the runbooks already written per language; pure."""
    if not isinstance(topics, list):
        return {}, ["topics.yaml must be a YAML list of topics"]
    problems: list[str] = []
    ids: Counter[str] = Counter()
    paths: Counter[tuple[str, str]] = Counter()
    counts: Counter[str] = Counter()
    for n, t in enumerate(topics, 1):
        if not isinstance(t, dict) or set(t) != TOPIC_KEYS:
            problems.append(f"topic {n}: needs exactly the keys {', '.join(sorted(TOPIC_KEYS))}")
            continue
        where = f"topic {t['id']}"
        ids[t["id"]] += 1
        lang, path, present = t["lang"], t["path"], t["present"]
        if lang not in LANGS:
            problems.append(f"{where}: lang {lang!r} is not one of {', '.join(LANGS)}")
            continue
        paths[(lang, path)] += 1
        if not isinstance(path, str) or not TOPIC_PATH_RE.match(path):
            problems.append(f"{where}: path {path!r} must look like <category>/<file>.md")
        elif lang == "en" and path.split("/", 1)[0] not in CATEGORIES:
            problems.append(f"{where}: English folder {path.split('/', 1)[0]!r} is not a category")
        if not isinstance(present, bool):
            problems.append(f"{where}: present must be true or false")
        if t["alertname"] is not None and not ALERTNAME_RE.match(str(t["alertname"])):
            problems.append(f"{where}: alertname {t['alertname']!r} is not a Prometheus name")
        for key in ("component", "one_line", "style"):
            if not isinstance(t[key], str) or not t[key].strip():
                problems.append(f"{where}: {key} must be a non-empty string")
        is_written = path in written.get(lang, set())
        if present is False and is_written:
            problems.append(
                f"{where}: a present: false topic's runbook {path} must never be written"
            )
        counts[f"{lang}_{'present' if present else 'missing'}"] += 1
        counts[f"{lang}_written"] += bool(present and is_written)
    problems += [f"topic {i}: id used {c} times" for i, c in ids.items() if c > 1]
    problems += [f"topic path {lang}/{p} used {c} times" for (lang, p), c in paths.items() if c > 1]
    out = {
        "topics": len(topics),
        **{
            f"{lang}_{k}": counts.get(f"{lang}_{k}", 0)
            for lang in LANGS
            for k in ("present", "missing", "written")
        },
    }
    return out, problems


def check_alert(where: str, alert: object, query: object, topic: dict | None) -> list[str]:
    """An Alertmanager-style alert: alertname, labels, annotations; description == query."""
    if not isinstance(alert, dict) or set(alert) != {"alertname", "labels", "annotations"}:
        return [f"{where}: alert needs exactly alertname, labels, annotations"]
    problems: list[str] = []
    name, labels, ann = alert["alertname"], alert["labels"], alert["annotations"]
    if not isinstance(name, str) or not ALERTNAME_RE.match(name):
        problems.append(f"{where}: alert.alertname {name!r} is not a Prometheus name")
    elif topic and topic.get("alertname") and name != topic["alertname"]:
        problems.append(f"{where}: alert.alertname {name} is not the topic's {topic['alertname']}")
    if not isinstance(labels, dict) or not labels:
        problems.append(f"{where}: alert.labels must be a non-empty mapping")
    else:
        for k, v in labels.items():
            if not ALERTNAME_RE.match(str(k)) or not isinstance(v, str) or not v:
                problems.append(f"{where}: label {k!r}: {v!r} must be name: non-empty string")
            elif UNRENDERED_RE.search(v):
                problems.append(f"{where}: label {k} holds an unrendered template: {v!r}")
        if labels.get("alertname", name) != name:
            problems.append(f"{where}: labels.alertname differs from alert.alertname")
        if "severity" not in labels:
            problems.append(f"{where}: alert.labels has no severity")
    if not isinstance(ann, dict) or not isinstance(ann.get("description"), str):
        return [*problems, f"{where}: alert.annotations needs a description string"]
    for k, v in ann.items():
        if not isinstance(v, str) or not v.strip():
            problems.append(f"{where}: annotation {k} must be a non-empty string")
        elif UNRENDERED_RE.search(v):
            problems.append(f"{where}: annotation {k} is not rendered: {v!r}")
    if query != ann["description"]:
        problems.append(f"{where}: query must be the rendered alert description")
    return problems


def check_expected(
    where: str, q: dict, topic: dict | None, by_path: dict[str, dict], runbooks: set[str]
) -> tuple[set[str], list[str]]:
    """Expected paths exist, or await a present topic's runbook; what a query may expect."""
    kind, expected = q["kind"], q["expected"]
    problems: list[str] = []
    awaiting: set[str] = set()
    if len(set(expected)) != len(expected):
        problems.append(f"{where}: expected lists a runbook twice")
    for path in expected:
        t = by_path.get(path)
        if t and not t["present"]:
            problems.append(f"{where}: expected {path} is a present: false topic, never written")
        elif path not in runbooks and t:
            awaiting.add(path)
        elif path not in runbooks:
            problems.append(f"{where}: expected {path!r} is neither a runbook nor a topic")
    if kind == "negative" and (expected or topic):
        problems.append(f"{where}: a negative has expected: [] and topic: null")
    elif not expected and kind != "negative" and not (topic and not topic["present"]):
        problems.append(f"{where}: expects nothing but is neither a negative nor a missing topic")
    if topic and topic["present"] and topic["path"] not in expected:
        problems.append(f"{where}: its topic's runbook {topic['path']} is not expected")
    aspects = q.get("aspects")
    if (kind == "multi") != (aspects is not None):
        problems.append(f"{where}: aspects go with kind multi, and only with it")
    elif aspects is not None:
        lists = isinstance(aspects, list) and len(aspects) >= 2
        if not lists or not all(
            isinstance(a, list) and a and all(isinstance(x, str) for x in a) for a in aspects
        ):
            problems.append(f"{where}: aspects must be two or more non-empty lists of paths")
        elif {p for a in aspects for p in a} != set(expected):
            problems.append(f"{where}: the union of aspects must equal expected")
    return awaiting, problems


def target_group(kind: str, topic: dict | None) -> str:
    """What a traffic query tests: a new or existing runbook, a missing one, another technology."""
    if kind in ("negative", "multi"):
        return {"negative": "wrong_technology", "multi": "multi"}[kind]
    if topic is None:
        return "existing_runbook"
    return "new_runbook" if topic["present"] else "missing_runbook"


def check_traffic(
    queries: object, lang: str, runbooks: set[str], topics: object, older: object
) -> tuple[dict, set[str], list[str]]:
    """Validate one traffic query file; returns (counts, awaiting runbook paths, problems); pure.

    ``older`` is the language's older query list: a traffic query must not repeat one of its
    texts, or both sets would count the same question.
    """
    if not isinstance(queries, list):
        return {}, set(), [f"{lang} traffic: must be a YAML list of queries"]
    well_formed = [t for t in topics or [] if isinstance(t, dict) and set(t) == TOPIC_KEYS]
    mine = {t["id"]: t for t in well_formed if t["lang"] == lang}
    by_path = {t["path"]: t for t in mine.values()}
    seen = {str(q.get("query", "")).strip().lower() for q in older or [] if isinstance(q, dict)}
    problems: list[str] = []
    ids, texts, kinds, asked, groups = Counter(), Counter(), Counter(), Counter(), Counter()
    awaiting: set[str] = set()
    for n, q in enumerate(queries, 1):
        if not isinstance(q, dict) or not TRAFFIC_KEYS <= set(q) <= TRAFFIC_KEYS | TRAFFIC_OPTIONAL:
            keys = ", ".join(sorted(TRAFFIC_KEYS))
            problems.append(f"{lang} entry {n}: keys are {keys} (and alert, aspects)")
            continue
        where, text, kind = str(q["id"]), q["query"], q["kind"]
        ids[where] += 1
        kinds[kind] += 1
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: query must be a non-empty string")
        else:
            texts[text.strip().lower()] += 1
        if kind not in TRAFFIC_KINDS:
            problems.append(f"{where}: kind {kind!r} is not one of {', '.join(TRAFFIC_KINDS)}")
        topic = mine.get(q["topic"]) if isinstance(q["topic"], str) else None
        if q["topic"] is not None and topic is None:
            problems.append(f"{where}: topic {q['topic']!r} is not a {lang} topic")
        asked.update([topic["id"]] if topic else [])
        if not isinstance(q["expected"], list) or not all(
            isinstance(e, str) for e in q["expected"]
        ):
            problems.append(f"{where}: expected must be a list of paths")
            continue
        waiting, found = check_expected(where, q, topic, by_path, runbooks)
        awaiting |= waiting
        problems += found
        groups[target_group(kind, topic)] += 1
        if kind == "alert_text" and "alert" not in q:
            problems.append(f"{where}: kind alert_text needs the alert object it renders")
        if "alert" in q and kind not in ALERT_KINDS:
            problems.append(f"{where}: an alert object goes with kind alert_text or negative")
        elif "alert" in q:
            problems += check_alert(where, q["alert"], text, topic)
        if kind == "alert_name" and topic and text != topic["alertname"]:
            problems.append(f"{where}: alert_name query is not the topic's alertname")
    problems += [f"{i}: id used {c} times" for i, c in ids.items() if c > 1]
    problems += [f"{lang} query text used {c} times: {t!r}" for t, c in texts.items() if c > 1]
    problems += [f"{lang} query also in queries_{lang}.yaml: {t!r}" for t in texts if t in seen]
    problems += [f"topic {i}: no query asks about it" for i in mine if i not in asked]
    counts = {
        "queries": len(queries),
        "by_kind": {k: kinds.get(k, 0) for k in TRAFFIC_KINDS},
        "by_target": dict(sorted(groups.items())),
        "with_alert_payload": sum(1 for q in queries if isinstance(q, dict) and "alert" in q),
        "answerable": sum(1 for q in queries if isinstance(q, dict) and q.get("expected")),
        "topics_asked": len(asked),
        "max_queries_per_topic": max(asked.values(), default=0),
    }
    return counts, awaiting, problems


def runbook_paths(*roots: Path) -> set[str]:
    """Runbook paths (``<category>/<file>``) under each root; a root's own files are not runbooks."""
    return {f.relative_to(r).as_posix() for r in roots if r.is_dir() for f in r.glob("*/*.md")}


def load_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SystemExit(f"cannot read {path}: {exc}") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=HERE / "queries_en.yaml")
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus" / "en")
    parser.add_argument("--topics", type=Path, default=HERE / "topics.yaml")
    parser.add_argument("--traffic-en", type=Path, default=HERE / "queries_en_traffic.yaml")
    parser.add_argument("--traffic-zh", type=Path, default=HERE / "queries_zh_traffic.yaml")
    parser.add_argument("--queries-zh", type=Path, default=HERE / "queries_zh.yaml")
    parser.add_argument("--zh-corpus", type=Path, default=HERE / "corpus" / "zh")
    parser.add_argument("--knowledge-base", type=Path, default=HERE.parents[1] / "knowledge_base")
    args = parser.parse_args()
    for folder in (args.corpus, args.zh_corpus, args.knowledge_base):
        if not folder.is_dir():
            print(f"corpus folder {folder} does not exist; pass its option", file=sys.stderr)
            return 2
    try:
        queries = load_yaml(args.queries)
        topics = load_yaml(args.topics)
        traffic = {"en": load_yaml(args.traffic_en), "zh": load_yaml(args.traffic_zh)}
        older = {"en": queries, "zh": load_yaml(args.queries_zh)}
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    runbooks, corpus_counts, problems = check_corpus(args.corpus)
    query_counts, query_problems = check_queries(queries, runbooks)
    problems += query_problems
    written = {"en": runbooks, "zh": runbook_paths(args.zh_corpus, args.knowledge_base)}
    topic_counts, topic_problems = check_topics(topics, written)
    problems += topic_problems
    traffic_counts, awaiting = {}, {}
    for lang in LANGS:
        counts, waiting, found = check_traffic(
            traffic[lang], lang, written[lang], topics, older[lang]
        )
        traffic_counts[lang], awaiting[lang] = counts, sorted(waiting)
        problems += found
    report = {
        "corpus": corpus_counts,
        "queries": query_counts,
        "topics": topic_counts,
        "traffic": traffic_counts,
        "awaiting_runbook": {lang: {"count": len(p), "paths": p} for lang, p in awaiting.items()},
        "problems": problems,
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
